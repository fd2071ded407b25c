// Pre-flight: what can be checked before any work is checked before any work
// (docs/errors.md "Checked before any work"), at the start of Job::start,
// before windows, sources or files are opened. Every rank takes part; when a
// check fails anywhere, every rank throws the same ConfigError, which names
// the option (exit status 2).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "msd/config.h"

namespace msd {

// The paths the job writes must be writable, checked without creating or
// truncating anything: output.summary_json and output.metrics (an existing
// file, or a new one in an existing directory), checkpoint.trace and
// checkpoint.dir (created with their parents: the nearest existing one must
// be a writable directory). Throws ConfigError naming the option.
void check_output_paths(const Config& config);

// Free bytes of the file system that holds node-shared memory (/dev/shm, or
// Open MPI's shmem_mmap_backing_file_base_dir when set); 0 when unknown.
uint64_t shared_memory_free_bytes(std::string* where = nullptr);

// The loader windows of this node (`window_bytes` is this rank's share)
// against shared_memory_free_bytes(): the error naming loader.window_mb, or
// empty. Collective over `world`.
std::string check_window_room(MPI_Comm world, uint64_t window_bytes, const Config& config);

// The error of the lowest rank of `world` that has one (`mine` non-empty),
// on every rank; empty when no rank has one. Collective over `world`.
std::string agree_on_error(MPI_Comm world, const std::string& mine);

}  // namespace msd
