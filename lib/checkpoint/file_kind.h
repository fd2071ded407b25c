// Which of msd's HDF5 files a path holds (a trace, a planner checkpoint, a
// loader checkpoint part), told by the items at its root, so that a tool
// given the wrong file names what it is instead of reporting it damaged or
// tampered with (docs/errors.md, msd-replay).
#pragma once

#include <string>

namespace msd {

// unopened: an HDF5 file that does not open now (a writer holds its lock):
// its kind is left to the reader that opens it.
enum class FileKind { trace, planner_checkpoint, loader_part, other_hdf5, not_hdf5, unopened };

// "an msd trace", "a planner checkpoint", ...
const char* file_kind_name(FileKind kind);

// Throws ConfigError when `path` is missing or unreadable (naming `option`).
FileKind file_kind(const std::string& path, const std::string& option);

// Throws ConfigError naming `option`, the path and what it holds, unless it
// is of kind `expected` (or unopened).
void require_file_kind(const std::string& path, FileKind expected, const std::string& option);

}  // namespace msd
