// Parquet files (parquet_file.h): one sample per row, its text from a
// byte-array column; with an image column, image-text samples (the image's
// bytes and the caption from the text column). A file's index (the rows of
// each row group and where the needed column chunks lie) comes from its
// footer on the first open and is cached (source/index_cache.h). Row groups
// are the restart points: a read decodes the needed column chunks of its
// row group whole, into a cache of decoded row groups shared by the source's
// readers and bounded in bytes (block_cache.h), so the records of one row
// group read close together in the stream (the locality order,
// permutation.h) cost one decode.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/storage.h"
#include "source/block_cache.h"
#include "source/index_cache.h"
#include "source/parquet/parquet_file.h"
#include "source/source.h"

namespace msd {

// Default bound of a source's cache of decoded blocks (source.NAME.cache_mib).
inline constexpr uint64_t kDefaultBlockCacheBytes = uint64_t{64} << 20;
// The most rows a row group may hold: a reader decodes one whole.
inline constexpr uint64_t kMaxRowGroupRows = uint64_t{1} << 28;

// The decoded columns of one row group.
struct ParquetRowGroup {
  ParquetValues text, image;
  uint64_t memory_bytes() const { return sizeof(*this) + text.memory_bytes() + image.memory_bytes(); }
};

struct ParquetOptions {
  std::string text_column = "text";  // text samples: the text; image-text: the caption ("a.b": field b of group a)
  std::string image_column;          // non-empty: image-text samples, the image's bytes in this column
  std::string cache_dir;             // see index_cache_path(); empty: beside the data
  uint64_t cache_bytes = kDefaultBlockCacheBytes;  // decoded row groups kept
  // How messages name the options that set the columns (e.g.
  // "source.web.text_field"); empty: the column's role.
  std::string text_option, image_option;
};

// Reads samples from `files` in the given order (open_source passes them
// sorted): each file's rows in order. Throws ConfigError when a file lacks a
// named column or the column is not a flat byte array, IoError when a file
// cannot be read, is not Parquet, is truncated (a footer or column chunk past
// its end) or uses a codec this reader lacks. A null value (definition
// level below the column's maximum) is BadKind::missing_field, text that is
// not UTF-8 invalid_utf8, a row group whose pages cannot be decoded
// read_error naming the file, the row group, the column and the page; the
// reason names the row group and the row. locate() gives the file and the
// row's number in it (its "offset"); length_hint() the row group's mean
// uncompressed bytes per row of the needed columns.
class ParquetSource final : public Source {
 public:
  ParquetSource(std::vector<std::string> files, const ParquetOptions& options);

  SampleKind kind() const override { return options_.image_column.empty() ? SampleKind::text : SampleKind::image_text; }
  uint64_t size() const override { return offsets_.total(); }
  uint64_t length_hint(uint64_t index) const override;
  void read(uint64_t index, RawSample& out) override;
  SampleLocation locate(uint64_t index) const override;
  std::vector<uint64_t> file_samples() const override { return offsets_.samples_per_file(); }
  uint64_t state_bytes() const override;

  size_t file_count() const { return files_.size(); }
  IndexCounts index_counts() const override { return index_counts_; }
  size_t row_groups(size_t file) const { return files_[file].text_chunks.size(); }
  const ParquetChunk& text_chunk(size_t file, size_t row_group) const { return files_[file].text_chunks[row_group]; }
  const BlockCache<ParquetRowGroup>& cache() const { return cache_; }

  static constexpr uint32_t cache_tag = 0x5451504d;  // "MPQT"
  static constexpr uint32_t cache_version = 1;

 private:
  struct File {
    std::string path;
    std::vector<uint64_t> row_starts;  // first row of each row group, then the file's rows
    std::vector<ParquetChunk> text_chunks, image_chunks;  // per row group (image: image-text only)
    ParquetColumnInfo text, image;
  };

  void index_file(File& file, size_t number, const FileStamp& stamp);
  bool load_cache(File& file, const FileStamp& stamp, const std::string& cache_path);
  void store_cache(const File& file, const FileStamp& stamp, const std::string& cache_path);
  void take_footer(File& file, const ParquetFooter& footer);
  std::shared_ptr<const ParquetRowGroup> decode(size_t file, size_t row_group, std::string& error);

  ParquetOptions options_;
  std::vector<File> files_;
  FileReader reader_;
  FileOffsets offsets_;
  IndexCounts index_counts_;
  BlockCache<ParquetRowGroup> cache_;
  std::atomic<bool> warned_big_group_{false};
};

}  // namespace msd
