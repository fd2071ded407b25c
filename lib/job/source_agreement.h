// Start-up's check that the loaders read the same data: every loader and
// shadow opens its sources itself (on its own node, through its own view of
// the file system), so two of them could match different files with the same
// glob and serve diverging streams. The planner compares what each saw.
#pragma once

#include <span>
#include <vector>

#include "msd/config.h"
#include "source/fingerprint.h"
#include "transport/wire.h"

namespace msd {

// One loader's hello, with who sent it.
struct LoaderHello {
  int world_rank = 0;
  int loader = 0;  // loader index (shadows: >= topology.loaders)
  HelloMessage hello;
};

// One SourceInfo per source any loader opened, in source order. Throws
// DataError naming the source, both loaders and the files that differ when
// two loaders of a source saw other files (paths or sizes) or counted other
// samples.
std::vector<SourceInfo> agree_on_sources(std::span<const LoaderHello> hellos, const Config& config);

// The data's fingerprint from the loaders' shares of it (each loader
// fingerprints a share of its sources' files, docs/scaling.md "Start-up"), for
// the sources `infos` (agree_on_sources'), with each file's samples; the
// vocabulary is not in it (fingerprint_vocabulary). Throws ProtocolError when
// a file was fingerprinted by no loader.
DataFingerprint fingerprint_of_sources(std::span<const LoaderHello> hellos, const std::vector<SourceInfo>& infos);

}  // namespace msd
