#include "common/files.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "common/error.h"

namespace msd {

std::vector<std::string> split_patterns(const std::string& patterns) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= patterns.size()) {
    size_t comma = patterns.find(',', start);
    if (comma == std::string::npos) comma = patterns.size();
    items.push_back(patterns.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool is_msd_own_file(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.ends_with(kIndexCacheSuffix)) return true;
  const size_t tmp = name.rfind(".tmp.");
  return tmp != std::string::npos && tmp + 5 < name.size() &&
         name.find_first_not_of("0123456789", tmp + 5) == std::string::npos;
}

std::vector<std::string> expand_globs(const std::string& patterns, const std::string& what) {
  std::vector<std::string> files;
  for (std::string pattern : split_patterns(patterns)) {
    pattern.erase(0, pattern.find_first_not_of(" \t"));
    pattern.erase(pattern.find_last_not_of(" \t") + 1);
    if (pattern.empty()) continue;
    glob_t result{};
    int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &result);
    size_t matched = 0;
    std::string own;  // the first of msd's own files the pattern matched
    if (rc == 0) {
      for (size_t i = 0; i < result.gl_pathc; ++i) {
        struct stat st {};
        if (::stat(result.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) {
          if (is_msd_own_file(result.gl_pathv[i]) && own.empty()) own = result.gl_pathv[i];
          files.emplace_back(result.gl_pathv[i]);
          ++matched;
        }
      }
    }
    globfree(&result);
    if (!own.empty())
      throw ConfigError(str(what, ": '", pattern, "' matches ", own,
                            ", msd's own index cache or temporary file, not data; narrow the pattern or remove the "
                            "file (caches live in a hidden .msd/ folder beside the data)"));
    if (matched == 0)
      throw ConfigError(str(what, ": '", pattern, "' matches no file"));
  }
  if (files.empty()) throw ConfigError(str(what, ": no path given"));
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(str("cannot open ", path, ": ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw IoError(str("cannot stat ", path, ": ", std::strerror(err)));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw IoError(str("cannot map ", path, ": ", std::strerror(err)));
    }
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

FileReader::FileReader(size_t max_open) : max_open_(std::max<size_t>(max_open, 1)) {}

FileReader::~FileReader() = default;

FileReader::Descriptor::~Descriptor() { ::close(fd); }

FileReader::FileReader(FileReader&& other) noexcept : max_open_(other.max_open_) {
  const std::lock_guard lock(other.mutex_);
  uses_ = other.uses_;
  open_ = std::exchange(other.open_, {});
}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    const std::scoped_lock lock(mutex_, other.mutex_);
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

std::shared_ptr<const FileReader::Descriptor> FileReader::acquire(size_t file, const std::string& path,
                                                                  std::string& error) {
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(open_.begin(), open_.end(), [file](const Open& o) { return o.file == file; });
  if (it == open_.end()) {
    int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0 && (errno == EMFILE || errno == ENFILE) && !open_.empty()) {
      // Out of descriptors (many sources in one process): give back ours, once
      // (those other threads still read stay open until their reads end).
      open_.clear();
      descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (descriptor < 0) {
      error = str("cannot open ", path, ": ", std::strerror(errno));
      return nullptr;
    }
    auto opened = std::make_shared<const Descriptor>(descriptor);
    if (open_.size() >= max_open_)
      open_.erase(std::min_element(open_.begin(), open_.end(),
                                   [](const Open& a, const Open& b) { return a.last_use < b.last_use; }));
    open_.push_back({file, std::move(opened), 0});
    it = open_.end() - 1;
  }
  it->last_use = ++uses_;
  return it->descriptor;
}

bool FileReader::read(size_t file, const std::string& path, uint64_t offset, void* out, size_t bytes,
                      std::string& error) {
  const std::shared_ptr<const Descriptor> descriptor = acquire(file, path, error);
  if (!descriptor) return false;
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(descriptor->fd, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = str("cannot read ", bytes, " bytes at offset ", offset, " of ", path, ": ", std::strerror(errno));
      return false;
    }
    if (n == 0) {
      error = str("cannot read ", bytes, " bytes at offset ", offset, " of ", path, ": the file ends ", done,
                  " bytes into them");
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

FileStamp file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(str("cannot stat ", path, ": ", std::strerror(errno)));
  return {static_cast<uint64_t>(st.st_size), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes) {
  std::string temp = str(path, ".tmp.", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(str("cannot create ", temp, ": ", std::strerror(errno)));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw IoError(str("cannot write ", temp));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    throw IoError(str("cannot rename ", temp, " to ", path, ": ", std::strerror(err)));
  }
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(str("cannot open ", path, ": ", std::strerror(errno)));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || (!name.empty() && name[0] == '/')) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace msd
