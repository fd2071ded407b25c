// Megatron-LM indexed datasets (MMIDIDX, version 1): pre-tokenized sequences
// in a `.bin` file of raw token ids and an `.idx` file that locates them.
//
// Path rule: a source's globs name the `.idx` files (e.g.
// "data/corpus_*.idx"); each `.bin` is the same path with the extension
// replaced. One sample = one sequence.
//
// .idx layout (little-endian), as Megatron's MMapIndexedDataset writes it:
//   9 bytes  magic "MMIDIDX\x00\x00"
//   u64      version = 1
//   u8       dtype code (IndexedDtype)
//   u64      sequence count S
//   u64      document count D
//   i32      sizes[S]             tokens per sequence
//   i64      pointers[S]          byte offset of each sequence in .bin
//   i64      document_indices[D]  first sequence of each document, then S
// The arrays start at byte 34, unaligned; they are read with memcpy.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "common/storage.h"
#include "source/index_cache.h"
#include "source/source.h"

namespace msd {

// Megatron's DType codes. Only the integer types are valid token types.
enum class IndexedDtype : uint8_t {
  uint8 = 1,
  int8 = 2,
  int16 = 3,
  int32 = 4,
  int64 = 5,
  float64 = 6,
  float32 = 7,
  uint16 = 8,
};
// Bytes per token of an integer dtype code; 0 for a code that is not one.
size_t indexed_dtype_bytes(uint8_t code);
const char* indexed_dtype_name(uint8_t code);

// The .bin file beside an .idx path ("x.idx" -> "x.bin").
std::string indexed_bin_path(const std::string& idx_path);

// source.NAME.path of an indexed source, with each comma-separated pattern
// that names a Megatron data-path prefix (path/to/corpus_text_document: the
// .bin/.idx pair) turned into its .idx file. Patterns ending in .idx, and
// prefixes without a PATTERN.idx match, are kept as given.
std::string indexed_idx_patterns(const std::string& patterns);

// Opens the pairs named by `idx_files`, in the given order, and validates each
// at open: magic, version, dtype, that the .idx length matches its counts, and
// that every sequence lies inside its .bin. Any mismatch is an IoError naming
// both files (and the first offending sequence). The .idx is memory-mapped and
// read in place; length_hint() reads only it. read() reads a sequence's tokens
// from the .bin with pread (FileReader: the .bin is never mapped) and converts
// them to int32; an int64 id outside int32, or a .bin that can no longer be
// read there (it shrank after opening), is BadKind::read_error. state_bytes()
// counts the mapped .idx bytes (validation touches them) but not the .bin.
class IndexedSource final : public Source {
 public:
  explicit IndexedSource(std::vector<std::string> idx_files);

  SampleKind kind() const override { return SampleKind::tokens; }
  uint64_t size() const override { return offsets_.total(); }
  uint64_t length_hint(uint64_t index) const override;
  void read(uint64_t index, RawSample& out) override;
  SampleLocation locate(uint64_t index) const override;
  std::vector<uint64_t> file_samples() const override { return offsets_.samples_per_file(); }
  uint64_t state_bytes() const override;

  size_t file_count() const { return pairs_.size(); }
  // Documents of pair `file` (document_indices has one more entry).
  uint64_t document_count(size_t file) const;

 private:
  struct Pair {
    std::string idx_path, bin_path;
    MappedFile idx;
    uint64_t bin_bytes = 0;  // the .bin's size at open
    uint64_t sequences = 0;
    uint64_t documents = 0;  // entries of document_indices
    size_t token_bytes = 0;
    uint8_t dtype = 0;
  };

  int32_t sequence_tokens(const Pair& pair, uint64_t sequence) const;
  int64_t sequence_pointer(const Pair& pair, uint64_t sequence) const;

  std::vector<Pair> pairs_;
  FileOffsets offsets_;
  FileReader bins_;
};

// Writes "<prefix>.bin" and "<prefix>.idx" in the layout above, one sequence
// (and one document) per element of `documents`. Throws Error when a token
// does not fit `dtype` or `dtype` is not an integer type, IoError on write
// failure. Files appear atomically (temporary names, then renames).
void write_indexed_dataset(const std::string& prefix, std::span<const std::vector<int32_t>> documents,
                           IndexedDtype dtype);

// The streaming form of write_indexed_dataset, for corpora that should not be
// held in memory: tokens go to the .bin as documents arrive; finish() writes
// the .idx and renames both into place. Not thread-safe.
class IndexedDatasetWriter {
 public:
  IndexedDatasetWriter(const std::string& prefix, IndexedDtype dtype);
  ~IndexedDatasetWriter();  // without finish(): removes the temporary files
  IndexedDatasetWriter(const IndexedDatasetWriter&) = delete;
  IndexedDatasetWriter& operator=(const IndexedDatasetWriter&) = delete;

  void add_document(std::span<const int32_t> tokens);
  void finish();

 private:
  std::string bin_path_, idx_path_, bin_temp_;
  std::FILE* bin_ = nullptr;
  IndexedDtype dtype_;
  size_t token_bytes_;
  std::vector<int32_t> sizes_;
  std::vector<int64_t> pointers_;
  int64_t bin_bytes_ = 0;
  std::vector<unsigned char> scratch_;
};

}  // namespace msd
