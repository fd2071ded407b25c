// JSON lines: one JSON object per line, the text in a string field. Empty (or
// whitespace-only) lines are not samples. Each file's line-offset index is
// built on first open (the file mapped for the scan only) and cached
// (source/index_cache.h); a record is read with pread (FileReader).
#pragma once

#include <string>
#include <vector>

#include "common/files.h"
#include "source/index_cache.h"
#include "source/source.h"

namespace msd {

struct JsonlOptions {
  std::string text_field = "text";  // the string member holding the text
  std::string cache_dir;            // see index_cache_path(); empty: beside the data
};

// Reads samples from `files` in the given order (open_source passes them
// sorted). Throws IoError when a file cannot be opened. A line that is not a
// JSON object is BadKind::invalid_json, a missing or non-string field
// missing_field, text that is not UTF-8 after unescaping invalid_utf8; the
// reason names the byte offset within the line; a line the file no longer
// holds (it shrank after indexing) or that cannot be read is read_error.
// length_hint() is the line's stored bytes including its newline (and any
// blank lines that follow it).
class JsonlSource final : public Source {
 public:
  JsonlSource(std::vector<std::string> files, const JsonlOptions& options);

  SampleKind kind() const override { return SampleKind::text; }
  uint64_t size() const override { return offsets_.total(); }
  uint64_t length_hint(uint64_t index) const override;
  void read(uint64_t index, RawSample& out) override;
  SampleLocation locate(uint64_t index) const override;
  uint64_t state_bytes() const override;

  size_t file_count() const { return files_.size(); }
  const IndexCounts& index_counts() const { return index_counts_; }

  // Cache format tag and version of this reader's index (index_cache.h).
  static constexpr uint32_t cache_tag = 0x4c534a4d;  // "MJSL"
  static constexpr uint32_t cache_version = 1;

 private:
  struct File {
    std::string path;
    // Byte offset of each record's line, plus the file size at the end, so
    // record i spans [line_starts[i], line_starts[i + 1]).
    std::vector<uint64_t> line_starts;
  };

  void index_file(File& file, const FileStamp& stamp, const std::string& cache_dir);

  std::vector<File> files_;
  FileReader reader_;
  FileOffsets offsets_;
  std::string text_field_;
  IndexCounts index_counts_;
};

// The line-start offsets of the non-blank lines of `bytes`, followed by
// bytes.size().
std::vector<uint64_t> scan_jsonl_lines(std::span<const unsigned char> bytes);

}  // namespace msd
