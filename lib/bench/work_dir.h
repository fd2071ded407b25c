// A benchmark's work directory: the one given (kept), or a new one under
// $TMPDIR named after the benchmark, removed with everything in it at the end
// unless asked to keep it.
#pragma once

#include <string>

namespace msd::bench {

class WorkDir {
 public:
  // `given`: the directory to use (created if missing, never removed), or
  // empty for a new one named msd-bench-`name`-XXXXXX.
  WorkDir(const std::string& given, const std::string& name, bool keep = false);
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of `name` inside.
  std::string file(const std::string& name) const;
  // A fresh (emptied) folder `name` inside.
  std::string folder(const std::string& name) const;

 private:
  std::string path_;
  bool remove_;
};

}  // namespace msd::bench
