// Scratch directories for unit tests, under the build tree (MSD_BINARY_DIR)
// so a test never writes next to the sources or into a shared /tmp name.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/error.h"

namespace msd::test {

// A fresh directory of a unique name, removed with everything in it when the
// object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = std::string(MSD_BINARY_DIR) + "/test-scratch.XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) throw IoError("cannot create a scratch directory from " + pattern);
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A directory of a fixed name, emptied first and left in place afterwards
// (for inspecting what a test wrote).
inline std::string scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::path(MSD_BINARY_DIR) / "test-scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace msd::test
