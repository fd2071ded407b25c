// Start-up over many files (docs/scaling.md, "Start-up"): the loaders that
// serve a source split its files. Each builds the index caches of its share
// and fingerprints it, tells the others, waits (bounded) to hear from them,
// and only then opens the whole source, whose other files' indexes come from
// the caches its peers wrote. A source's files are indexed once, not once
// per loader; a peer that is slow or writes its caches where this loader
// cannot see them (another node's loader.cache_dir) costs time, never
// correctness: what is not cached is indexed by whoever opens it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "runtime/context.h"

namespace msd {

// A loader's share of one source's files: every `loaders`-th file from its
// position among the source's loaders.
struct FileShare {
  size_t position = 0;
  size_t loaders = 1;
  bool holds(size_t file) const { return file % loaders == position; }
};

// Loader `loader`'s share of source `source`, or nullopt when it does not
// serve it (a shadow, which opens every source, takes no share).
std::optional<FileShare> file_share(const SourceAssignment& assignment, uint32_t source, int loader);

// The loader indexes that loader `loader` tells its share is built and hears
// from: the other loaders of each of its sources that has several, and the
// shadows (which wait for every share before they open). Symmetric.
std::set<int> index_peers(const JobContext& job, int loader);

// Tells every peer that this loader's caches are built, then waits for
// every peer's word, at most half of job.startup_timeout_s (so that a loader
// waiting on a stalled peer still says hello in time, and the planner names
// the stalled one). Returns the peers not heard from. Collective in effect
// over the loaders that share sources; call it exactly once per loader,
// also when building the share failed.
std::vector<int> exchange_index_shares(const JobContext& job, int loader);

}  // namespace msd
