// The loaders' checkpoint: one file, DIR/loaders-<step>.h5, written together
// by every loader rank through parallel HDF5 over MPI-IO
// (docs/checkpoint.md, "Loader checkpoint"). Each loader records snapshots of
// the transformed samples it holds of the sources in
// checkpoint.snapshot_sources (sources whose transform is expensive: on resume
// they are taken from the snapshot rather than read and transformed again).
// Nothing else is needed: the planner's checkpoint says which samples come
// next. Written rarely (checkpoint.loader_every).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace msd {

// docs/checkpoint.md, "Loader checkpoint": bump on any change of the layout.
// Version 2 dropped version 1's per-source `served` cursors, which nothing
// read; version 3 added the integrity record.
inline constexpr uint64_t kLoaderCheckpointVersion = 3;

// A transformed sample as a loader holds it in its window slot.
struct SnapshotRecord {
  uint32_t source = 0;
  uint64_t cursor = 0;
  uint64_t index = 0;
  uint32_t text_tokens = 0;
  uint32_t patches = 0;
  uint32_t patch_bytes = 0;          // bytes per patch
  std::vector<unsigned char> bytes;  // the slot's bytes (docs/window-slot.md)
  bool operator==(const SnapshotRecord&) const = default;
};

// One loader's share of the checkpoint.
struct LoaderCheckpointPart {
  uint32_t loader = 0;                  // loader index (0 .. loaders-1)
  std::vector<SnapshotRecord> records;  // may be empty
  bool operator==(const LoaderCheckpointPart&) const = default;
};

// DIR/loaders-<step, 12 digits>.h5
std::string loader_checkpoint_path(const std::string& dir, uint64_t step);

// Collective over `loaders` (every loader rank calls it with the same dir and
// step): writes loader_checkpoint_path(dir, step) through its temporary file;
// after the collective close rank 0 of `loaders` reopens it alone to seal it
// (its integrity record, integrity.h: every item read back once), fsyncs it,
// renames it, and keeps only the newest `keep` loader checkpoints (0: all). Returns once the
// file is in place on every rank. Throws IoError (on the ranks that saw the
// failure; HDF5's collective calls fail on all ranks alike) or MpiError.
void write_loader_checkpoint(MPI_Comm loaders, const std::string& dir, uint64_t step, const LoaderCheckpointPart& mine,
                             uint32_t keep = 2);

// Every part of a loader checkpoint, in loader-rank order (serial HDF5; no
// MPI needed). Throws IoError when the file is unreadable, inconsistent, or
// changed after it was written (its integrity record disagrees).
std::vector<LoaderCheckpointPart> read_loader_checkpoint(const std::string& path);

// The snapshot records of the sources in `sources` from every part of the
// file, ordered by (source, cursor): what a loader that now serves these
// sources — under any number of loaders — can take instead of reloading.
std::vector<SnapshotRecord> read_loader_snapshot(const std::string& path, std::span<const uint32_t> sources);

// The newest loader checkpoint in `dir` with step <= max_step that reads
// back, or nullopt. Unreadable files are skipped with a warning.
std::optional<std::string> latest_loader_checkpoint(const std::string& dir, uint64_t max_step);

}  // namespace msd
