// Files named PREFIX-<step>.h5 in a checkpoint directory, or, where several
// writers each write their own part of a step, PREFIX-<step>-<part>.h5: their names, how
// they reach the disk whole (temporary file, fsync, rename, fsync of the
// directory), listing and retention. docs/checkpoint.md describes the names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msd {

// DIR/PREFIX-<step as 12 decimal digits>.h5 ("planner-000000000120.h5").
std::string step_file_path(const std::string& dir, const std::string& prefix, uint64_t step);
// DIR/PREFIX-<step, 12 digits>-<part, 5 digits>.h5 ("loaders-000000000120-00003.h5").
std::string step_part_path(const std::string& dir, const std::string& prefix, uint64_t step, uint32_t part);
// The step in a PREFIX-<digits>.h5 or PREFIX-<digits>-<digits>.h5 file name
// (any directory), or nullopt.
std::optional<uint64_t> step_in_file_name(const std::string& path, const std::string& prefix);
// Where a file is written before its rename: PATH.tmp.
std::string temporary_path(const std::string& path);

// Creates `dir` (and parents) when missing. Throws IoError.
void make_directory(const std::string& dir);
// fsync of a file or a directory. Throws IoError naming it.
void sync_path(const std::string& path);
// Renames `from` to `to` and syncs `to`'s directory, so the new name survives
// a crash. Throws IoError.
void rename_durably(const std::string& from, const std::string& to);

// (step, path) of every step file and part of DIR with this prefix, newest
// step first. Temporary files and other names are not listed. A missing
// directory lists nothing.
std::vector<std::pair<uint64_t, std::string>> list_step_files(const std::string& dir, const std::string& prefix);
// Removes the files of all but the newest `keep` steps of PREFIX (keep 0:
// none removed), and any temporary file of this prefix older than the newest
// step (left by a crash). Failures to remove are logged, not thrown.
void prune_step_files(const std::string& dir, const std::string& prefix, uint32_t keep);

}  // namespace msd
