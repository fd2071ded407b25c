// JSON lines: one JSON object per line, the text in a string field. Empty (or
// whitespace-only) lines are not samples. Each file's line-offset index is
// built on first open (the file mapped for the scan only) and cached
// (source/index_cache.h); a record is read with pread (FileReader). A file
// whose name ends in .zst or .gz is compressed (zstd or gzip; jsonl/compressed.h):
// its records are those of its decompressed bytes, its index holds their
// uncompressed offsets and the file's restart points.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/storage.h"
#include "source/block_cache.h"
#include "source/jsonl/compressed.h"
#include "source/index_cache.h"
#include "source/source.h"

namespace msd {

struct JsonlOptions {
  std::string text_field = "text";  // the string member holding the text
  std::string cache_dir;            // see index_cache_path(); empty: beside the data
  // gzip files: least uncompressed bytes between two restart points (zstd
  // files restart at every frame). Default kRestartSpacingBytes (1 MiB); an
  // index cached with another spacing is rebuilt.
  uint64_t restart_spacing_bytes = kRestartSpacingBytes;
  // Compressed files: the restart intervals, decompressed whole, kept in a
  // cache of this many bytes shared by the source's readers (block_cache.h),
  // so records read close together (the locality order, permutation.h)
  // decompress their interval once. An interval bigger than an eighth of the
  // cache is not cached: its reads decompress from the restart point up to
  // the record, as without a cache. 0 (the default): no cache.
  uint64_t cache_bytes = 0;
};

// A compressed file's restart interval, decompressed.
struct DecompressedInterval {
  std::string bytes;
  uint64_t memory_bytes() const { return sizeof(*this) + bytes.capacity(); }
};

// Reads samples from `files` in the given order (open_source passes them
// sorted). Throws IoError when a file cannot be opened. A line that is not a
// JSON object is BadKind::invalid_json, a missing or non-string field
// missing_field, text that is not UTF-8 after unescaping invalid_utf8; the
// reason names the byte offset within the line; a line the file no longer
// holds (it shrank after indexing) or that cannot be read is read_error.
// length_hint() is the line's stored bytes including its newline (and any
// blank lines that follow it); uncompressed bytes for a compressed file, whose
// locate() offsets are uncompressed offsets too. A compressed file whose data
// is corrupt or truncated throws IoError naming it and the compressed offset
// when it is indexed (a file is decompressed whole then).
class JsonlSource final : public Source {
 public:
  JsonlSource(std::vector<std::string> files, const JsonlOptions& options);

  SampleKind kind() const override { return SampleKind::text; }
  uint64_t size() const override { return offsets_.total(); }
  uint64_t length_hint(uint64_t index) const override;
  void read(uint64_t index, RawSample& out) override;
  SampleLocation locate(uint64_t index) const override;
  std::vector<uint64_t> file_samples() const override { return offsets_.samples_per_file(); }
  uint64_t state_bytes() const override;

  size_t file_count() const { return files_.size(); }
  IndexCounts index_counts() const override { return index_counts_; }
  // File `file`'s restart points (compression none for a plain file).
  const CompressedIndex& compressed_index(size_t file) const { return files_[file].compressed; }
  const BlockCache<DecompressedInterval>& cache() const { return cache_; }
  // Reads of compressed records that decompressed from a restart point
  // without the cache (no cache, or an interval too big for it).
  uint64_t uncached_reads() const { return uncached_reads_.load(std::memory_order_relaxed); }

  // Cache format tag and version of this reader's index (index_cache.h).
  static constexpr uint32_t cache_tag = 0x4c534a4d;  // "MJSL"
  static constexpr uint32_t cache_version = 1;
  // The same for compressed files: line starts and restart points.
  static constexpr uint32_t compressed_cache_tag = 0x5a534a4d;  // "MJSZ"
  static constexpr uint32_t compressed_cache_version = 1;

 private:
  struct File {
    std::string path;
    // Byte offset of each record's line, plus the file size at the end, so
    // record i spans [line_starts[i], line_starts[i + 1]).
    std::vector<uint64_t> line_starts;
    CompressedIndex compressed;  // compression none for a plain file
  };

  void index_file(File& file, const FileStamp& stamp, const std::string& cache_dir);
  void index_compressed_file(File& file, Compression compression, const FileStamp& stamp, const std::string& cache_dir);
  bool load_compressed_cache(File& file, Compression compression, const FileStamp& stamp, const std::string& cache_path);
  // Uncompressed bytes [start, limit) of file `number` into `region`; false
  // with `error` set when they cannot be read.
  bool read_region(size_t number, uint64_t start, uint64_t limit, std::string& region, std::string& error);
  bool read_cached(size_t number, uint64_t start, uint64_t limit, std::string& region, std::string& error);

  std::vector<File> files_;
  FileReader reader_;
  FileOffsets offsets_;
  std::string text_field_;
  uint64_t restart_spacing_bytes_;
  IndexCounts index_counts_;
  BlockCache<DecompressedInterval> cache_;
  std::atomic<uint64_t> uncached_reads_{0};
};

// Finds the starts of the non-blank lines of bytes fed to it a piece at a
// time (a compressed file's output as it is decompressed).
class JsonlLineScanner {
 public:
  void feed(std::span<const unsigned char> bytes);
  // The line starts, followed by the number of bytes fed.
  std::vector<uint64_t> finish();

 private:
  std::vector<uint64_t> starts_;
  uint64_t fed_ = 0;
  uint64_t line_start_ = 0;
  bool blank_ = true;  // the current line holds only spaces, tabs and CRs so far
};

// The line-start offsets of the non-blank lines of `bytes`, followed by
// bytes.size().
std::vector<uint64_t> scan_jsonl_lines(std::span<const unsigned char> bytes);

}  // namespace msd
