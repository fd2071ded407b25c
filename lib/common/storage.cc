#include "common/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace msd {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw IoError(str(what, " ", path, ": ", std::strerror(err)));
}

class PosixFile final : public ReadableFile {
 public:
  PosixFile(std::string path, int fd, uint64_t size) : ReadableFile(std::move(path)), fd_(fd), size_(size) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  uint64_t size() const override { return size_; }

  size_t read_at(uint64_t offset, void* out, size_t bytes) const override {
    auto* p = static_cast<unsigned char*>(out);
    size_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw IoError(str("cannot read ", bytes, " bytes at offset ", offset, " of ", path(), ": ", std::strerror(errno)));
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  const int fd_;
  const uint64_t size_;
};

// Closes `fd` on every path out of a scope.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Writes all of `bytes` to `fd`; the errno of a failure, else 0.
int write_all(int fd, std::span<const unsigned char> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

std::atomic<Storage*> installed{nullptr};

}  // namespace

MappedFile::MappedFile(const std::string& path) : MappedFile(default_storage().map(path)) {}

MappedFile::MappedFile(std::string path, std::span<const unsigned char> bytes, std::function<void()> release)
    : bytes_(bytes), release_(std::move(release)), path_(std::move(path)) {}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (release_) std::exchange(release_, nullptr)();
  bytes_ = {};
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : bytes_(std::exchange(other.bytes_, {})), release_(std::exchange(other.release_, nullptr)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    bytes_ = std::exchange(other.bytes_, {});
    release_ = std::exchange(other.release_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::vector<unsigned char> Storage::read_all(const std::string& path) {
  const std::unique_ptr<ReadableFile> file = open(path);
  // The size is a hint: files such as /proc's say 0 and hold more.
  std::vector<unsigned char> bytes(std::max<uint64_t>(file->size(), 4096));
  size_t done = 0;
  for (;;) {
    const size_t n = file->read_at(done, bytes.data() + done, bytes.size() - done);
    done += n;
    if (done < bytes.size()) break;
    bytes.resize(bytes.size() * 2);
  }
  bytes.resize(done);
  return bytes;
}

FileStamp Storage::stamp(const std::string& path) {
  const std::optional<FileStamp> found = stat(path);
  if (!found) fail("cannot stat", path, ENOENT);
  return *found;
}

std::unique_ptr<ReadableFile> PosixStorage::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot stat", path, err);
  }
  return std::make_unique<PosixFile>(path, fd, static_cast<uint64_t>(st.st_size));
}

MappedFile PosixStorage::map(const std::string& path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail("cannot stat", path, errno);
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return MappedFile(path, {}, nullptr);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) fail("cannot map", path, errno);
  return MappedFile(path, {static_cast<const unsigned char*>(p), size}, [p, size] { ::munmap(p, size); });
}

std::optional<FileStamp> PosixStorage::stat(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    fail("cannot stat", path, errno);
  }
  return FileStamp{static_cast<uint64_t>(st.st_size), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

std::vector<std::string> PosixStorage::glob(const std::string& pattern) {
  std::vector<std::string> files;
  glob_t result{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &result) == 0)
    for (size_t i = 0; i < result.gl_pathc; ++i) {
      struct stat st {};
      if (::stat(result.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) files.emplace_back(result.gl_pathv[i]);
    }
  globfree(&result);
  return files;
}

std::vector<std::string> PosixStorage::list(const std::string& dir) {
  std::vector<std::string> paths;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return paths;
    fail("cannot list", dir, errno);
  }
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") paths.push_back(join_path(dir, name));
  }
  ::closedir(handle);
  return paths;
}

void PosixStorage::write_atomic(const std::string& path, std::span<const unsigned char> bytes) {
  const std::string temp = str(path, ".tmp.", ::getpid());
  {
    FdGuard fd{::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (fd.fd < 0) fail("cannot create", temp, errno);
    if (const int err = write_all(fd.fd, bytes); err != 0) {
      ::unlink(temp.c_str());
      fail(str("cannot write ", bytes.size(), " bytes to"), temp, err);
    }
    if (::fsync(fd.fd) != 0 && errno != EINVAL && errno != EROFS) {
      const int err = errno;
      ::unlink(temp.c_str());
      fail("fsync of", temp, err);
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw IoError(str("cannot rename ", temp, " to ", path, ": ", std::strerror(err)));
  }
}

bool PosixStorage::create_exclusive(const std::string& path, std::span<const unsigned char> bytes) {
  FdGuard fd{::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (fd.fd < 0) {
    if (errno == EEXIST) return false;
    fail("cannot create", path, errno);
  }
  if (const int err = write_all(fd.fd, bytes); err != 0) fail(str("cannot write ", bytes.size(), " bytes to"), path, err);
  return true;
}

void PosixStorage::rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) fail(str("cannot rename ", from, " to"), to, errno);
  const size_t slash = to.find_last_of('/');
  sync(slash == std::string::npos ? "." : slash == 0 ? "/" : to.substr(0, slash));
}

void PosixStorage::sync(const std::string& path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail("cannot open for fsync", path, errno);
  // Some file systems cannot fsync a directory; a rename is still atomic.
  if (::fsync(fd.fd) != 0 && errno != EINVAL && errno != EROFS) fail("fsync of", path, errno);
}

bool PosixStorage::remove(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  fail("cannot remove", path, errno);
}

void PosixStorage::make_dirs(const std::string& dir) {
  std::string prefix;
  size_t start = 0;
  while (start <= dir.size()) {
    size_t slash = dir.find('/', start);
    if (slash == std::string::npos) slash = dir.size();
    prefix = dir.substr(0, slash);
    start = slash + 1;
    if (prefix.empty() || prefix == "." || prefix == "..") continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create directory", prefix, errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) fail("cannot create directory", dir, ENOTDIR);
}

bool PosixStorage::can_write(const std::string& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::access(dir.c_str(), W_OK) == 0;
}

Storage& default_storage() {
  static PosixStorage posix;
  Storage* storage = installed.load(std::memory_order_acquire);
  return storage != nullptr ? *storage : posix;
}

ScopedDefaultStorage::ScopedDefaultStorage(Storage& storage)
    : outer_(installed.exchange(&storage, std::memory_order_acq_rel)) {}

ScopedDefaultStorage::~ScopedDefaultStorage() { installed.store(outer_, std::memory_order_release); }

FileReader::FileReader(Storage& storage, size_t max_open) : storage_(&storage), max_open_(std::max<size_t>(max_open, 1)) {}

FileReader::~FileReader() = default;

FileReader::FileReader(FileReader&& other) noexcept : storage_(other.storage_), max_open_(other.max_open_) {
  const std::lock_guard lock(other.mutex_);
  uses_ = other.uses_;
  open_ = std::exchange(other.open_, {});
}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    const std::scoped_lock lock(mutex_, other.mutex_);
    storage_ = other.storage_;
    max_open_ = other.max_open_;
    uses_ = other.uses_;
    open_ = std::exchange(other.open_, {});
  }
  return *this;
}

size_t FileReader::open_files() const {
  const std::lock_guard lock(mutex_);
  return open_.size();
}

std::shared_ptr<const ReadableFile> FileReader::acquire(size_t file, const std::string& path, std::string& error) {
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(open_.begin(), open_.end(), [file](const Open& o) { return o.file == file; });
  if (it == open_.end()) {
    std::shared_ptr<const ReadableFile> opened;
    try {
      opened = storage_->open(path);
    } catch (const IoError&) {
      // Out of descriptors (many sources in one process)? Give back ours,
      // once (those other threads still read stay open until their reads end).
      try {
        if (open_.empty()) throw;
        open_.clear();
        opened = storage_->open(path);
      } catch (const IoError& e) {
        error = e.what();
        return nullptr;
      }
    }
    if (open_.size() >= max_open_)
      open_.erase(std::min_element(open_.begin(), open_.end(),
                                   [](const Open& a, const Open& b) { return a.last_use < b.last_use; }));
    open_.push_back({file, std::move(opened), 0});
    it = open_.end() - 1;
  }
  it->last_use = ++uses_;
  return it->handle;
}

bool FileReader::read(size_t file, const std::string& path, uint64_t offset, void* out, size_t bytes,
                      std::string& error) {
  const std::shared_ptr<const ReadableFile> handle = acquire(file, path, error);
  if (!handle) return false;
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  try {
    while (done < bytes) {
      const size_t n = handle->read_at(offset + done, p + done, bytes - done);
      if (n == 0) {
        error = str("cannot read ", bytes, " bytes at offset ", offset, " of ", path, ": the file ends ", done,
                    " bytes into them");
        return false;
      }
      done += n;
    }
  } catch (const IoError& e) {
    error = e.what();
    return false;
  }
  return true;
}

FileStamp file_stamp(const std::string& path) { return default_storage().stamp(path); }

void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes) {
  default_storage().write_atomic(path, bytes);
}

std::vector<unsigned char> read_file(const std::string& path) { return default_storage().read_all(path); }

bool file_exists(const std::string& path) {
  try {
    return default_storage().exists(path);
  } catch (const IoError&) {
    return false;  // as stat(2) failing: not there for us
  }
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || (!name.empty() && name[0] == '/')) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace msd
