// The storage seam: every byte msd reads from or writes to a data set, an
// index cache or a checkpoint directory's plain files goes through a
// `Storage` (after leveldb's Env). `PosixStorage` is the local or network
// file system; FaultyStorage (faulty_storage.h) wraps another to inject
// failures in tests; an object store would be one more implementation
// (docs/design.md, "The storage seam"). HDF5 opens its own files: the
// checkpoints' HDF5 bytes do not pass here, their renames, syncs, listings
// and removals do.
//
// Which storage a caller uses: the process's default (default_storage()).
// The readers are opened from many places (loaders, colocated clients,
// msd-plan profile, msd-inspect, the benchmarks), and the index caches and
// fingerprints sit several calls below them, so passing a `Storage&` down
// would change dozens of signatures for one choice made once per process.
// Objects that keep files open (FileReader, a reader's maps) take the default
// when they are made and keep it; a test or a loader that injects faults
// installs its storage (ScopedDefaultStorage) before opening anything.
// Functions whose callers are few take a `Storage&` that defaults to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace msd {

struct FileStamp {
  uint64_t size_bytes = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// A file open for reading. Thread-safe: read_at may be called from several
// threads at once.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual uint64_t size() const = 0;
  // Reads up to `bytes` bytes at `offset` into `out`; returns how many were
  // read, fewer only where the file ends. Throws IoError naming the file, the
  // offset and why.
  virtual size_t read_at(uint64_t offset, void* out, size_t bytes) const = 0;
  const std::string& path() const { return path_; }

 protected:
  explicit ReadableFile(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// A read-only view of a whole file's bytes (for the POSIX storage, a memory
// map: the indexed reader's .idx is read in place). Move-only. A zero-length
// file is an empty span.
class MappedFile {
 public:
  MappedFile() = default;
  // default_storage().map(path). Throws IoError with the path.
  explicit MappedFile(const std::string& path);
  // The view `bytes` of `path`, kept valid until `release` runs (at the
  // destruction of the last owner). For Storage implementations.
  MappedFile(std::string path, std::span<const unsigned char> bytes, std::function<void()> release);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const unsigned char> bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  const std::string& path() const { return path_; }

 private:
  void reset();
  std::span<const unsigned char> bytes_;
  std::function<void()> release_;
  std::string path_;
};

// Where files live. Every call is thread-safe. I/O failures throw IoError
// naming the path (and the offset, for reads) and the system's reason.
class Storage {
 public:
  virtual ~Storage() = default;

  // Opens `path` for reading.
  virtual std::unique_ptr<ReadableFile> open(const std::string& path) = 0;
  // The whole of `path`, read-only.
  virtual MappedFile map(const std::string& path) = 0;
  // Size and modification time of `path`, or nullopt when nothing is there.
  // Throws only for errors other than a missing file.
  virtual std::optional<FileStamp> stat(const std::string& path) = 0;
  // The regular files `pattern` (glob(7)) matches, in no particular order;
  // none is no error.
  virtual std::vector<std::string> glob(const std::string& pattern) = 0;
  // The paths of the entries of directory `dir`; a missing directory lists
  // nothing.
  virtual std::vector<std::string> list(const std::string& dir) = 0;
  // Writes `bytes` to `path` whole or not at all: a temporary file
  // ("<path>.tmp.<pid>", is_msd_own_file), fsync, rename.
  virtual void write_atomic(const std::string& path, std::span<const unsigned char> bytes) = 0;
  // Creates `path` holding `bytes` only when nothing is there (a lock:
  // O_CREAT | O_EXCL); false when something is.
  virtual bool create_exclusive(const std::string& path, std::span<const unsigned char> bytes) = 0;
  // Renames `from` to `to` and makes the new name durable (fsync of `to`'s
  // directory).
  virtual void rename(const std::string& from, const std::string& to) = 0;
  // Makes what was written to `path` (a file or a directory) durable.
  virtual void sync(const std::string& path) = 0;
  // Removes the file `path`; false when there was none.
  virtual bool remove(const std::string& path) = 0;
  // Creates directory `dir` and its parents when missing.
  virtual void make_dirs(const std::string& dir) = 0;
  // Whether this process may create files in directory `dir`.
  virtual bool can_write(const std::string& dir) = 0;

  // Helpers over the calls above.
  std::vector<unsigned char> read_all(const std::string& path);
  FileStamp stamp(const std::string& path);  // throws IoError when missing
  bool exists(const std::string& path) { return stat(path).has_value(); }
};

// The local (or mounted network) file system through POSIX calls: pread,
// mmap, glob(3), rename(2), fsync(2).
class PosixStorage final : public Storage {
 public:
  std::unique_ptr<ReadableFile> open(const std::string& path) override;
  MappedFile map(const std::string& path) override;
  std::optional<FileStamp> stat(const std::string& path) override;
  std::vector<std::string> glob(const std::string& pattern) override;
  std::vector<std::string> list(const std::string& dir) override;
  void write_atomic(const std::string& path, std::span<const unsigned char> bytes) override;
  bool create_exclusive(const std::string& path, std::span<const unsigned char> bytes) override;
  void rename(const std::string& from, const std::string& to) override;
  void sync(const std::string& path) override;
  bool remove(const std::string& path) override;
  void make_dirs(const std::string& dir) override;
  bool can_write(const std::string& dir) override;
};

// The process's storage: a PosixStorage unless one is installed.
Storage& default_storage();

// Installs `storage` as the process's default while it lives, then restores
// the one before. Install before opening what should use it; `storage` must
// outlive everything opened through it.
class ScopedDefaultStorage {
 public:
  explicit ScopedDefaultStorage(Storage& storage);
  ~ScopedDefaultStorage();
  ScopedDefaultStorage(const ScopedDefaultStorage&) = delete;
  ScopedDefaultStorage& operator=(const ScopedDefaultStorage&) = delete;

 private:
  Storage* outer_;
};

// Reads byte ranges of files through a Storage, for the samples a source
// serves. Nothing is mapped: a mapped file's pages join the process's
// resident set as they are touched (and the kernel maps up to 16
// neighbouring pages with each fault), so a reader that maps its data grows
// by tens of KB per record read, towards the size of all the data it has
// read; pages read here stay in the kernel's page cache only. A file is
// opened on its first read and kept open, at most `max_open` at once (the
// least recently used is closed first), so a source of thousands of shards
// holds few descriptors; when an open fails while it holds files (the
// process out of descriptors: EMFILE), the reader closes its own and tries
// once more. Thread-safe: read() may be called from several threads at once
// (a loader reads a batch's samples on its threads); they share the open
// files, and a file closed to make room stays open until the reads still
// using it end. Move-only; moving one while it is read is not allowed.
class FileReader {
 public:
  // One per source: a colocated rank opening 128 sources holds at most 512.
  static constexpr size_t kDefaultMaxOpen = 4;
  explicit FileReader(size_t max_open = kDefaultMaxOpen) : FileReader(default_storage(), max_open) {}
  FileReader(Storage& storage, size_t max_open);
  ~FileReader();
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads exactly `bytes` bytes at `offset` of `path` into `out`; `file` is
  // the caller's stable number for `path` (its open file is kept under it).
  // Returns false with `error` set (the path, the offset and why: the
  // storage's message, or how many bytes the file had there) when the file
  // cannot be opened or read, or ends before offset + bytes. Never throws for
  // I/O: a record that cannot be read is the caller's bad sample.
  bool read(size_t file, const std::string& path, uint64_t offset, void* out, size_t bytes, std::string& error);

  size_t open_files() const;

 private:
  struct Open {
    size_t file = 0;
    std::shared_ptr<const ReadableFile> handle;
    uint64_t last_use = 0;
  };
  // The open file `file`, opened (and the least recently used closed) when
  // it is not open; null with `error` set when it cannot be opened.
  std::shared_ptr<const ReadableFile> acquire(size_t file, const std::string& path, std::string& error);
  Storage* storage_;
  size_t max_open_;
  mutable std::mutex mutex_;  // guards uses_ and open_; never held during a read
  uint64_t uses_ = 0;
  std::vector<Open> open_;
};

// Whole-file helpers over default_storage(), for the callers outside the
// data path (vocabularies, generated data sets, benchmarks' files).
FileStamp file_stamp(const std::string& path);  // throws IoError
void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes);  // throws IoError
std::vector<unsigned char> read_file(const std::string& path);  // throws IoError
bool file_exists(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace msd
