#include "job/preflight.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "transport/mpi.h"

namespace msd {

namespace fs = std::filesystem;

namespace {

// `path` (a file the job writes, never created here): an existing
// non-directory this process may write, or a new name in an existing
// writable directory.
void check_writable_file(const std::string& path, const char* option) {
  if (path.empty()) return;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw ConfigError(str(option, ": '", path, "' is a directory, not a file"));
    if (::access(path.c_str(), W_OK) != 0)
      throw ConfigError(str(option, ": cannot write '", path, "': ", std::strerror(errno)));
    return;
  }
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (::stat(parent.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw ConfigError(str(option, ": cannot write '", path, "': its directory '", parent.string(), "' does not exist"));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(str(option, ": cannot write '", path, "': its directory '", parent.string(), "': ",
                          std::strerror(errno)));
}

// `dir` (created with its parents when missing): the nearest existing
// ancestor must be a directory this process may write.
void check_writable_dir(const std::string& dir, const char* option) {
  if (dir.empty()) return;
  fs::path at = fs::path(dir);
  struct stat info {};
  while (::stat(at.c_str(), &info) != 0) {
    if (!at.has_parent_path() || at.parent_path() == at) break;
    at = at.parent_path();
  }
  if (!S_ISDIR(info.st_mode))
    throw ConfigError(str(option, ": cannot create '", dir, "': '", at.string(), "' is not a directory"));
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(str(option, ": cannot create or write '", dir, "': '", at.string(), "': ", std::strerror(errno)));
}

}  // namespace

void check_output_paths(const Config& config) {
  check_writable_file(config.output.summary_json, "output.summary_json");
  check_writable_file(config.output.metrics, "output.metrics");
  const CheckpointConfig& ckpt = config.checkpoint;
  check_writable_dir(ckpt.dir, "checkpoint.dir");
  if (!ckpt.trace.empty()) {
    struct stat info {};
    if (::stat(ckpt.trace.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      throw ConfigError(str("checkpoint.trace: '", ckpt.trace, "' is a directory, not a file"));
    check_writable_dir(fs::path(ckpt.trace).parent_path().string(), "checkpoint.trace");
  }
}

uint64_t shared_memory_free_bytes(std::string* where) {
  const char* configured = std::getenv("OMPI_MCA_shmem_mmap_backing_file_base_dir");
  const std::string dir = configured != nullptr && *configured != '\0' ? configured : "/dev/shm";
  if (where) *where = dir;
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) return 0;
  return static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
}

std::string check_window_room(MPI_Comm world, uint64_t window_bytes, const Config& config) {
  const Comm node = Comm::split_by_node(world, "finding this node's ranks for the windows' room");
  uint64_t total = 0;
  MPI_Request request;
  MSD_MPI(MPI_Iallreduce(&window_bytes, &total, 1, MPI_UINT64_T, MPI_SUM, node.get(), &request),
          "summing this node's loader windows");
  wait(request, "summing this node's loader windows");
  std::string where;
  const uint64_t free_bytes = shared_memory_free_bytes(&where);
  if (window_bytes == 0 || free_bytes == 0 || total <= free_bytes) return {};
  const uint64_t mib = uint64_t{1} << 20;
  return str("loader.window_mb: the loader windows of this node need ", total / mib, " MiB (",
             total / std::max<uint64_t>(config.loader.window_mb * mib, 1), " loader(s) x ", config.loader.window_mb,
             " MiB) of node-shared memory, and ", where, " has ", free_bytes / mib,
             " MiB free; lower loader.window_mb or place fewer loaders on a node (docs/layout.md)");
}

std::string agree_on_error(MPI_Comm world, const std::string& mine) {
  int rank = 0;
  MSD_MPI(MPI_Comm_rank(world, &rank), "agreeing on the pre-flight checks");
  const int candidate = mine.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Request request;
  MSD_MPI(MPI_Iallreduce(&candidate, &first, 1, MPI_INT, MPI_MIN, world, &request), "agreeing on the pre-flight checks");
  wait(request, "agreeing on the pre-flight checks");
  if (first == INT_MAX) return {};
  uint64_t length = rank == first ? mine.size() : 0;
  MSD_MPI(MPI_Ibcast(&length, 1, MPI_UINT64_T, first, world, &request), "sharing a pre-flight error");
  wait(request, "sharing a pre-flight error");
  std::string text = rank == first ? mine : std::string(length, '\0');
  MSD_MPI(MPI_Ibcast(text.data(), checked_cast<int>(length), MPI_CHAR, first, world, &request),
          "sharing a pre-flight error");
  wait(request, "sharing a pre-flight error");
  return text;
}

}  // namespace msd
