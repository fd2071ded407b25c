// The loaders' checkpoint: in each round every loader writes its own part,
// DIR/loaders-<step>-<loader>.h5, alone and serially (docs/checkpoint.md,
// "Loader checkpoint"), so a loader stopped or failing in a round holds no
// other rank. Each part records snapshots of the transformed samples its
// loader holds of the sources in checkpoint.snapshot_sources (sources whose
// transform is expensive: on resume they are taken from the snapshot rather
// than read and transformed again). Nothing else is needed: the planner's
// checkpoint says which samples come next, and a sample missing from a
// snapshot is read again. Written rarely (checkpoint.loader_every).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace msd {

// docs/checkpoint.md, "Loader checkpoint": bump on any change of the layout.
// Version 2 dropped version 1's per-source `served` cursors, which nothing
// read; version 3 added the integrity record; version 4 split the file into
// one part per loader and added the round's identity.
inline constexpr uint64_t kLoaderCheckpointVersion = 4;

// What a round was taken over. A part serves a resume only when all three
// equal the resuming run's: the same seed, the same options the stream
// depends on (stream_config_digest) and the same data (fingerprint_digest).
// Each is kept to 63 bits (kIdentityMask) so it travels as a non-negative
// int64_t in the start-up agreement.
struct LoaderCheckpointIdentity {
  uint64_t seed = 0;
  uint64_t config_digest = 0;
  uint64_t data_digest = 0;
  bool operator==(const LoaderCheckpointIdentity&) const = default;
};
inline constexpr uint64_t kIdentityMask = (uint64_t{1} << 63) - 1;

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

// One round as its parts record it.
struct LoaderCheckpointRound {
  uint64_t step = 0;
  uint32_t writers = 0;  // the loaders the planner asked: the parts a whole round has
  LoaderCheckpointIdentity identity;
  bool operator==(const LoaderCheckpointRound&) const = default;
};

// One loader's part of a round.
struct LoaderCheckpointPart {
  uint32_t loader = 0;                  // loader index (0 .. loaders-1)
  std::vector<SnapshotRecord> records;  // may be empty
  bool operator==(const LoaderCheckpointPart&) const = default;
};

// DIR/loaders-<step, 12 digits>-<loader, 5 digits>.h5
std::string loader_checkpoint_path(const std::string& dir, uint64_t step, uint32_t loader);

// Writes `part` of `round` to loader_checkpoint_path through its temporary
// file: written, sealed (its integrity record, integrity.h), fsynced and
// renamed. `before_rename`, when set, runs between the fsync and the rename
// (fault.kind = checkpoint_stall stops the loader there). Serial HDF5; no
// MPI. Throws IoError naming the file.
void write_loader_checkpoint(const std::string& dir, const LoaderCheckpointRound& round,
                             const LoaderCheckpointPart& part, const std::function<void()>& before_rename = {});

// One part and the round it belongs to. Throws IoError when the file is
// unreadable, of another format version, inconsistent, or changed after it
// was written (its integrity record disagrees).
struct LoaderCheckpointFile {
  LoaderCheckpointRound round;
  LoaderCheckpointPart part;
};
LoaderCheckpointFile read_loader_checkpoint(const std::string& path);

// The snapshot records of the sources in `sources` from the parts in
// `paths`, ordered by (source, cursor): what a loader that now serves these
// sources — under any number of loaders — can take instead of reloading.
std::vector<SnapshotRecord> read_loader_snapshot(std::span<const std::string> paths,
                                                 std::span<const uint32_t> sources);

// The parts of the newest round in `dir` with step <= max_step that were
// taken over `identity`, or nullopt. Parts that do not read back are skipped
// with a warning; a round taken over another seed, configuration or data is
// skipped with a warning naming which; a round with fewer parts than it had
// writers (a writer taken over in it) is used with a warning: the samples of
// the missing parts are read again.
std::optional<std::vector<std::string>> latest_loader_checkpoint(const std::string& dir, uint64_t max_step,
                                                                 const LoaderCheckpointIdentity& identity);

// Removes the parts of all but the newest `keep` rounds (0: none removed).
void prune_loader_checkpoints(const std::string& dir, uint32_t keep);

}  // namespace msd
