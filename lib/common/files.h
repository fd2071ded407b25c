// File helpers shared by the source readers: glob expansion, read-only
// memory maps, atomic writes of small files (index caches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace msd {

// Expands comma-separated glob patterns into a sorted, de-duplicated list of
// regular files. A pattern that matches nothing throws ConfigError naming it
// and `what` (e.g. "source.web.path").
std::vector<std::string> expand_globs(const std::string& patterns, const std::string& what);
// The comma-separated items of `patterns`, as written (not trimmed; an empty
// text is one empty item).
std::vector<std::string> split_patterns(const std::string& patterns);

// A read-only memory map of a whole file. Move-only. A zero-length file maps to
// an empty span. Throws IoError with the path on failure.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const unsigned char> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

struct FileStamp {
  uint64_t size_bytes = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp file_stamp(const std::string& path);  // throws IoError

// Writes `bytes` to `path` through a temporary file and a rename, so readers
// never see a torn file. Throws IoError.
void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes);
std::vector<unsigned char> read_file(const std::string& path);  // throws IoError
bool file_exists(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace msd
