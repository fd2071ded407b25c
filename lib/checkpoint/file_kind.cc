#include "checkpoint/file_kind.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "checkpoint/hdf5.h"
#include "common/error.h"

namespace msd {

namespace {

bool has_item(hid_t root, const char* name) { return H5Lexists(root, name, H5P_DEFAULT) > 0; }

}  // namespace

const char* file_kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::trace: return "an msd trace";
    case FileKind::planner_checkpoint: return "an msd planner checkpoint";
    case FileKind::loader_part: return "a part of an msd loader checkpoint";
    case FileKind::other_hdf5: return "an HDF5 file that msd did not write (none of its traces or checkpoints)";
    case FileKind::not_hdf5: return "not an HDF5 file";
    case FileKind::unopened: return "an HDF5 file that does not open now";
  }
  return "?";
}

FileKind file_kind(const std::string& path, const std::string& option) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw ConfigError(str(option, ": cannot open ", path, ": ", std::strerror(errno)));
  if (!S_ISREG(info.st_mode)) throw ConfigError(str(option, ": ", path, " is not a regular file"));
  if (!std::ifstream(path)) throw ConfigError(str(option, ": cannot open ", path, ": ", std::strerror(errno)));
  h5::quiet_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return FileKind::not_hdf5;
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    H5Eclear2(H5E_DEFAULT);
    return FileKind::unopened;
  }
  FileKind kind = FileKind::other_hdf5;
  if (has_item(file, "steps") && has_item(file, "samples") && has_item(file, "pieces")) kind = FileKind::trace;
  else if (has_item(file, "consumed") && has_item(file, "in_flight")) kind = FileKind::planner_checkpoint;
  else if (has_item(file, "records") && has_item(file, "bytes")) kind = FileKind::loader_part;
  H5Fclose(file);
  H5Eclear2(H5E_DEFAULT);
  return kind;
}

void require_file_kind(const std::string& path, FileKind expected, const std::string& option) {
  const FileKind kind = file_kind(path, option);
  if (kind != expected && kind != FileKind::unopened)
    throw ConfigError(str(option, ": ", path, " is ", file_kind_name(kind), ", not ", file_kind_name(expected)));
}

}  // namespace msd
