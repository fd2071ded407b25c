// part_options: the options each part of lib/ takes, made from the job's
// Config. The parts below (plan/step, plan/cluster, plan/pool, pipeline,
// profile, source, transform) know nothing of Config: each declares the small struct it needs, and the parts that
// assemble a job (config, job, the roles' rooms, bench, app/) make them here.
#pragma once

#include <vector>

#include "msd/config.h"
#include "pipeline/pipeline.h"
#include "profile/plan_file.h"
#include "plan/cluster/device_model.h"
#include "plan/pool/partition.h"
#include "plan/step/cost.h"
#include "plan/step/mix.h"
#include "plan/step/pack.h"

namespace msd {

// model.*: the model's shape and the cost model's weights.
CostOptions cost_options(const Config& config);
// make_cost_model(cost_options(config)).
CostModel make_cost_model(const Config& config);

// Each source's weight curve (source.NAME.weight), in the sources' order.
std::vector<std::vector<WeightPoint>> weight_curves(const Config& config);
// The schedule of a job: each source's weight curve (source.*.weight) under
// mix.schedule.
Schedule make_schedule(const Config& config);

// The hold of a job: job.hold_above x job.seq_len positions (rounded down),
// job.hold_steps, topology.dp documents released together, job.steps - 1.
HoldOptions make_hold_options(const Config& config);

// The planner's packing options for a job: seq_len, dp, micro_batches,
// long_docs and balance from the configuration (a mode that names its
// balance overrides job.balance; the colocated baselines keep Megatron's
// fixed rows, cuts and micro-batch counts). The planner and msd-replay both
// use it, so a replay packs exactly as the run did.
PackOptions make_pack_options(const Config& config);

// The job's device model: model.* and device.preset.
DeviceModel make_device_model(const Config& config);
// The Parallel of a configuration's topology.
Parallel parallel_of(const Config& config);

// What the job's loader demand is computed from: the sources' weight curves,
// job.steps, job.global_batch, its mode, packing, cost, device model and
// mesh, and emulator.time_scale.
DemandOptions demand_options(const Config& config);
// make_demand(demand_options(config), profiles, steps_per_s).
PartitionDemand make_demand(const Config& config, const std::vector<SourceProfile>& profiles, double steps_per_s);

// The sample pipeline's options: the sources, the tokenizer, image.* and
// loader.cache_dir.
PipelineOptions pipeline_options(const Config& config);

// What a partition plan must fit: topology.loaders ranks, loader.threads each.
LoaderFit loader_fit(const Config& config);

}  // namespace msd
