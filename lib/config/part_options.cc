#include "config/part_options.h"

#include <algorithm>

#include "plan/step/modes.h"

namespace msd {

CostOptions cost_options(const Config& config) {
  const ModelConfig& m = config.model;
  return CostOptions{m.hidden, m.layers, m.vision_hidden, m.vision_layers, m.cost_a, m.cost_vision_scale,
                     m.preset, m.cost_micro_batch};
}

CostModel make_cost_model(const Config& config) { return make_cost_model(cost_options(config)); }

std::vector<std::vector<WeightPoint>> weight_curves(const Config& config) {
  std::vector<std::vector<WeightPoint>> curves;
  for (const SourceConfig& source : config.sources) curves.push_back(source.weight);
  return curves;
}

Schedule make_schedule(const Config& config) { return Schedule(config.schedule, weight_curves(config)); }

HoldOptions make_hold_options(const Config& config) {
  HoldOptions options;
  options.above = static_cast<uint32_t>(config.job.hold_above * config.job.seq_len);
  options.max_steps = config.job.hold_steps;
  options.release = static_cast<uint32_t>(std::max(1, config.topology.dp));
  options.last_step = config.job.steps - 1;
  return options;
}

PackOptions make_pack_options(const Config& config) {
  PackOptions options;
  options.seq_len = config.job.seq_len;
  options.dp = static_cast<uint32_t>(config.topology.dp);
  options.micro_batches = config.job.micro_batches;
  options.long_docs = config.job.long_docs;
  options.balance = config.job.balance;
  const TrainingMode mode = config.job.mode();
  // A mode that names its balance (msd_tokens, msd_greedy, msd_kk) overrides job.balance.
  if (const auto balance = mode_balance(mode)) options.balance = *balance;
  options.cp = static_cast<uint32_t>(config.topology.cp);
  options.pp = static_cast<uint32_t>(config.topology.pp);
  // The colocated baselines keep Megatron's fixed rows.
  options.varlen = config.job.micro_batch_shape == RowShape::varlen && !is_baseline(mode);
  options.max_positions_per_micro_batch = config.job.max_positions_per_micro_batch;
  // The baselines keep Megatron's cuts, micro-batch counts and steps
  // (configuration validation refuses the options with them).
  if (!is_baseline(mode)) {
    options.cuts = config.job.cuts;
    options.variable_micro_batches = config.job.micro_batch_count == MicroBatchCount::variable;
    options.hold = make_hold_options(config);
  }
  return options;
}

DeviceModel make_device_model(const Config& config) {
  return make_device_model(cost_options(config), config.device.preset);
}

Parallel parallel_of(const Config& config) {
  const TopologyConfig& t = config.topology;
  return Parallel{static_cast<uint32_t>(t.dp), static_cast<uint32_t>(t.pp), static_cast<uint32_t>(t.cp),
                  static_cast<uint32_t>(t.tp)};
}

DemandOptions demand_options(const Config& config) {
  DemandOptions job;
  for (const SourceConfig& source : config.sources) job.names.push_back(source.name);
  job.weights = weight_curves(config);
  job.schedule = config.schedule;
  job.steps = config.job.steps;
  job.global_batch = config.job.global_batch;
  job.mode = config.job.mode();
  job.pack = make_pack_options(config);
  job.cost = make_cost_model(config);
  job.device = make_device_model(config);
  job.parallel = parallel_of(config);
  job.time_scale = config.emulator.time_scale;
  return job;
}

PartitionDemand make_demand(const Config& config, const std::vector<SourceProfile>& profiles, double steps_per_s) {
  return make_demand(demand_options(config), profiles, steps_per_s);
}

PipelineOptions pipeline_options(const Config& config) {
  return PipelineOptions{.sources = config.sources,
                         .tokenizer = config.tokenizer,
                         .image = ImageOptions{config.image.max_side, config.image.patch},
                         .cache_dir = config.loader.cache_dir};
}

LoaderFit loader_fit(const Config& config) {
  return LoaderFit{static_cast<uint32_t>(config.topology.loaders), config.loader.threads};
}

}  // namespace msd
