// File helpers shared by the source readers: glob expansion, read-only
// memory maps (for scanning a file once, or an index read in place), reads of
// byte ranges (for samples), atomic writes of small files (index caches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace msd {

// Expands comma-separated glob patterns into a sorted, de-duplicated list of
// regular files. A pattern that matches nothing throws ConfigError naming it
// and `what` (e.g. "source.web.path"), and so does one that matches msd's own
// files (is_msd_own_file): they are never data.
std::vector<std::string> expand_globs(const std::string& patterns, const std::string& what);

// msd's own files beside data: index caches live in a hidden folder there
// (no glob such as `*` matches them), as "<data file>.msdidx"; a file being
// written is "<path>.tmp.<pid>" until its rename (write_file_atomic).
inline constexpr char kIndexCacheFolder[] = ".msd";
inline constexpr char kIndexCacheSuffix[] = ".msdidx";
// Whether `path` names an index cache or a temporary file of
// write_file_atomic, by its name.
bool is_msd_own_file(const std::string& path);
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

// Reads byte ranges of files with pread(2), for the samples a source serves.
// Nothing is mapped: a mapped file's pages join the process's resident set as
// they are touched (and the kernel maps up to 16 neighbouring pages with each
// fault), so a reader that maps its data grows by tens of KB per record read,
// towards the size of all the data it has read; pages read here stay in the
// kernel's page cache only. A file is opened on its first read and kept open,
// at most `max_open` at once (the least recently used is closed first), so a
// source of thousands of shards holds few descriptors; when the process runs
// out of descriptors (EMFILE), the reader closes its own and tries once more.
// Thread-safe: read() may be called from several threads at once (a loader
// reads a batch's samples on its threads); they share the descriptors and
// read with pread, and a descriptor closed to make room stays open until the
// reads still using it end. Move-only; moving one while it is read is not
// allowed.
class FileReader {
 public:
  // One per source: a colocated rank opening 128 sources holds at most 512.
  static constexpr size_t kDefaultMaxOpen = 4;
  explicit FileReader(size_t max_open = kDefaultMaxOpen);
  ~FileReader();
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads exactly `bytes` bytes at `offset` of `path` into `out`; `file` is
  // the caller's stable number for `path` (its descriptor is kept under it).
  // Returns false with `error` set (the path, the offset and why: the
  // system's message, or how many bytes the file had there) when the file
  // cannot be opened or read, or ends before offset + bytes. Never throws for
  // I/O: a record that cannot be read is the caller's bad sample.
  bool read(size_t file, const std::string& path, uint64_t offset, void* out, size_t bytes, std::string& error);

  size_t open_files() const;

 private:
  // An open file, closed when the last read using it lets go.
  struct Descriptor {
    explicit Descriptor(int descriptor) : fd(descriptor) {}
    ~Descriptor();
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    const int fd;
  };
  struct Open {
    size_t file = 0;
    std::shared_ptr<const Descriptor> descriptor;
    uint64_t last_use = 0;
  };
  // The descriptor of `file`, opened (and the least recently used closed)
  // when it is not open; null with `error` set when it cannot be opened.
  std::shared_ptr<const Descriptor> acquire(size_t file, const std::string& path, std::string& error);
  size_t max_open_;
  mutable std::mutex mutex_;  // guards uses_ and open_; never held during a read
  uint64_t uses_ = 0;
  std::vector<Open> open_;
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
