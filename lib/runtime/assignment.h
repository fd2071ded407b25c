// Which loader ranks serve which sources. Every rank computes the same
// assignment from the configuration, so it is never sent.
#pragma once

#include <cstdint>
#include <vector>

#include "msd/config.h"

namespace msd {

struct SourceAssignment {
  std::vector<std::vector<int>> loaders_of_source;  // loader indices per source
  std::vector<std::vector<uint32_t>> sources_of_loader;
};

// With at least as many loaders as sources, source s gets loader s and the
// remaining loaders go to the sources with the largest peak weight (largest
// remainder); with fewer, sources share loaders round-robin.
SourceAssignment assign_sources(const Config& config);

}  // namespace msd
