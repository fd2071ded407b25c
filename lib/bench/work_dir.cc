#include "bench/work_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "common/error.h"
#include "common/files.h"

namespace msd::bench {

WorkDir::WorkDir(const std::string& given, const std::string& name, bool keep)
    : path_(given), remove_(given.empty() && !keep) {
  if (path_.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("msd-bench-" + name + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw IoError(str("cannot create a temporary directory ", pattern));
    path_ = pattern;
  }
  std::error_code error;
  std::filesystem::create_directories(path_, error);
  if (error) throw IoError(str("cannot create ", path_, ": ", error.message()));
}

WorkDir::~WorkDir() {
  std::error_code ignored;
  if (remove_) std::filesystem::remove_all(path_, ignored);
}

std::string WorkDir::file(const std::string& name) const { return join_path(path_, name); }

std::string WorkDir::folder(const std::string& name) const {
  const std::string dir = file(name);
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  std::filesystem::create_directories(dir, error);
  if (error) throw IoError(str("cannot create ", dir, ": ", error.message()));
  return dir;
}

}  // namespace msd::bench
