// Which loader ranks serve which sources. Every rank computes the same
// assignment from the configuration (and, with topology.scaling =
// partition, the same plan text), so it is never sent.
#pragma once

#include <cstdint>
#include <vector>

#include "msd/options.h"
#include "plan/pool/partition.h"

namespace msd {

struct SourceAssignment {
  std::vector<std::vector<int>> loaders_of_source;  // loader indices per source
  std::vector<std::vector<uint32_t>> sources_of_loader;
  // Threads of each loader (the partition plan's); empty: loader.threads for all.
  std::vector<unsigned> threads_of_loader;
};

// The `loaders` (topology.loaders) over the sources, one weight curve each
// (source.NAME.weight): with at least as many loaders as sources, source s
// gets loader s and the remaining loaders go to the sources with the largest
// peak weight (largest remainder); with fewer, sources share loaders
// round-robin.
SourceAssignment assign_sources(int loaders, const std::vector<std::vector<WeightPoint>>& curves);

// An assignment as partition groups (loaders serving the same sources form
// one group), each loader on `threads` threads: what the static assignment
// amounts to, for comparing it with a partition plan (evaluate).
std::vector<LoaderGroup> groups_of(const SourceAssignment& assignment, uint32_t threads);

// The partition plan's assignment (topology.scaling = partition): the
// groups' ranks in order, loader 0 first, each serving every source of its
// group with the group's threads, over `sources` sources. REQUIRES
// plan.loader_ranks == topology.loaders (fit_to_loaders, profile/plan_file.h).
SourceAssignment assign_from_plan(const PartitionPlan& plan, size_t sources);

}  // namespace msd
