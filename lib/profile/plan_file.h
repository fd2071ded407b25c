// The partition plan as a file: `msd-plan partition --json/--out` writes it,
// `msd-run` with topology.scaling = partition reads it
// (topology.partition_plan) or receives the same text from the planner.
// docs/scaling.md "The plan file".
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "msd/source_config.h"
#include "pipeline/pipeline.h"
#include "plan/pool/partition.h"

namespace msd {

// The plan and what it was planned for: {"loader_ranks", "memory_bytes",
// "rate_met", "worst_margin", "worst_step", "exact", "spare_ranks",
// "headroom", "max_threads", "global_batch", "steps_per_s_min",
// "steps_per_s_max", "points", "groups": [{"sources": [NAME...], "ranks",
// "threads", "rank_bytes", "peak_load", "read_load", "transform_load"}],
// "sources": {NAME: {"ranks", "threads", "memory_bytes", "peak_load",
// "group", and the profile's seconds_per_sample, read_seconds_per_sample,
// transform_seconds_per_sample, bytes_per_sample, open_bytes,
// positions_per_sample, patches_per_sample}}}.
// With `baseline` (the static assignment evaluated for the same demand):
// "static": {"loader_ranks", "memory_bytes", "rate_met", "worst_margin", "worst_step"}.
std::string plan_json(const PartitionPlan& plan, const PartitionDemand& demand, const PartitionOptions& options,
                      const PartitionPlan* baseline = nullptr);

// The groups of a plan text (plan_json's), in the indices of `sources` (the
// job's mix.sources): every source in exactly one group, ranks >= 1,
// threads >= 1; each group's read_load and transform_load as written (a
// plan without them: its peak_load as transform). Throws ConfigError naming `option` (and `what`, the file or
// "the planner's plan") otherwise.
PartitionPlan parse_plan_json(const std::string& text, std::span<const SourceConfig> sources,
                              const std::string& option, const std::string& what);
// The same, from a file.
PartitionPlan read_plan_json(const std::string& path, std::span<const SourceConfig> sources,
                             const std::string& option);

}  // namespace msd

namespace msd {

// What a plan must fit: the job's loader ranks (topology.loaders) and the
// threads each may run (loader.threads).
struct LoaderFit {
  uint32_t loaders = 1;
  uint32_t threads = 1;
};

// A plan's groups made to fit: ConfigError naming topology.loaders when it
// needs more loader ranks than `fit` has, loader.threads when a group runs
// more threads per loader; spare ranks go to the heaviest groups
// (add_spare_ranks).
void fit_to_loaders(PartitionPlan& plan, const LoaderFit& fit);

// The plan msd-run computes at start-up for topology.scaling = partition
// without topology.partition_plan: profile_sources on kStartUpProfileSamples
// samples of each source, the device model's rate (make_demand of `demand`),
// partition with `fit`'s threads and a 10% headroom, spare ranks up to its
// loaders (fit_to_loaders). Returns plan_json's text. Throws ConfigError
// naming topology.loaders when the plan needs more ranks.
inline constexpr uint64_t kStartUpProfileSamples = 64;
std::string start_up_plan(PipelineOptions sources, const DemandOptions& demand, const LoaderFit& fit);

}  // namespace msd
