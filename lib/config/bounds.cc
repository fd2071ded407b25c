// Bounds on what options hold, so that no value a user (or a fuzzer) gives is
// accepted and then overflows, sleeps forever, plans with NaN or is ignored
// (bounds.h). Each bound says why it is where it is.
#include "config/bounds.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "source/format.h"

namespace msd {
namespace {

template <typename T>
void at_most(T value, T bound, const std::string& key, const char* why) {
  if (value > bound) throw ConfigError(str(key, ": ", +value, " is above its bound of ", +bound, " (", why, ")"));
}

void finite_at_most(double value, double bound, const std::string& key, const char* why) {
  if (!std::isfinite(value)) throw ConfigError(str(key, ": ", value, " is not a finite number"));
  at_most(value, bound, key, why);
}

// "format = parquet": the formats that read source.NAME.image_field, as needs() names them.
std::string image_field_formats() {
  std::string out;
  for (const FormatSpec* spec : registered_formats())
    if (spec->reads_image_field) out += (out.empty() ? "format = " : " or ") + std::string(spec->name);
  return out;
}

void needs(bool set, bool needed, const char* key, const char* what) {
  if (set && !needed) throw ConfigError(str(key, ": does nothing without ", what, "; remove it or set that too"));
}

constexpr uint32_t k16Mi = uint32_t{1} << 24;
constexpr int kMaxRanks = 1 << 20;  // per axis or pool, before their product is checked against MPI's int
constexpr uint64_t kTiB = uint64_t{1} << 40;

void job_and_topology_bounds(const Config& c) {
  const JobConfig& job = c.job;
  at_most(job.steps, kMaxSteps, "job.steps", "checkpoint files name steps with 12 digits");
  at_most(job.global_batch, k16Mi, "job.global_batch", "16 Mi samples per step");
  at_most(job.seq_len, k16Mi, "job.seq_len", "16 Mi positions per sequence");
  at_most(job.micro_batches, uint32_t{65536}, "job.micro_batches", "micro-batches per DP rank and step");
  at_most(job.prefetch_steps, uint32_t{1024}, "job.prefetch_steps", "steps planned ahead hold loader window room");
  at_most(job.max_positions_per_micro_batch, kTiB, "job.max_positions_per_micro_batch", "1 Ti positions");
  // A held document waits in loader window slots: more than 1024 steps, or a
  // threshold above 1024 sequences (no document is that long), holds nothing useful.
  finite_at_most(job.hold_above, 1024.0, "job.hold_above", "a document of 1024 sequences");
  at_most(job.hold_steps, uint32_t{1024}, "job.hold_steps", "held documents keep their loader slots");
  const TopologyConfig& t = c.topology;
  for (const auto& [value, key] : {std::pair{t.dp, "topology.dp"}, {t.pp, "topology.pp"}, {t.cp, "topology.cp"},
                                   {t.tp, "topology.tp"}, {t.loaders, "topology.loaders"},
                                   {t.shadow_loaders, "topology.shadow_loaders"}, {t.ranks_per_node, "topology.ranks_per_node"}})
    at_most(value, kMaxRanks, key, "ranks");
  at_most(t.scaling_lookahead_steps, kMaxSteps, "topology.scaling_lookahead_steps", "a step count");
  at_most(t.scaling_interval_steps, kMaxSteps, "topology.scaling_interval_steps", "a step count");
}

void model_and_output_bounds(const Config& c) {
  at_most(c.image.max_side, uint32_t{65535}, "image.max_side", "the largest side a JPEG has");
  at_most(c.image.token_id, int64_t{std::numeric_limits<int32_t>::max()}, "image.token_id", "token ids are 32-bit");
  at_most(c.loader.threads, uint32_t{1024}, "loader.threads", "threads per loader");
  at_most(c.model.hidden, uint32_t{1} << 20, "model.hidden", "a hidden size");
  at_most(c.model.layers, uint32_t{1} << 16, "model.layers", "a layer count");
  at_most(c.model.vision_hidden, uint32_t{1} << 20, "model.vision_hidden", "a hidden size");
  at_most(c.model.vision_layers, uint32_t{1} << 16, "model.vision_layers", "a layer count");
  // A step's cost sums a*L + L^2 over its documents: with a <= 1e9 and L <=
  // 16 Mi positions it stays far inside a double, so balancing never sees inf or NaN.
  finite_at_most(c.model.cost_a, 1e9, "model.cost_a", "a step's costs must stay finite");
  finite_at_most(c.model.cost_vision_scale, 1e6, "model.cost_vision_scale", "a step's costs must stay finite");
  // One micro-batch's fixed cost, in a*L + L^2 units: a whole 16 Mi-position
  // sequence's attention is 2.8e14, so 1e15 is above any real calibration.
  finite_at_most(c.model.cost_micro_batch, 1e15, "model.cost_micro_batch", "a step's costs must stay finite");
  finite_at_most(c.emulator.time_scale, 1000.0, "emulator.time_scale", "a thousand times the device model's time");
  at_most(uint64_t{c.output.progress_every}, kMaxSteps, "output.progress_every", "a step count");
  const CheckpointConfig& ckpt = c.checkpoint;
  at_most(ckpt.planner_every, kMaxSteps, "checkpoint.planner_every", "a step count");
  at_most(ckpt.loader_every, kMaxSteps, "checkpoint.loader_every", "a step count");
  at_most(ckpt.keep, uint32_t{1000000}, "checkpoint.keep", "files kept per kind");
  at_most(c.fault.step, kMaxSteps, "fault.step", "a step count");
}

void source_bounds(const SourceConfig& source) {
  const std::string key = "source." + source.name;
  at_most(source.read_delay_us, uint64_t{60'000'000}, key + ".read_delay_us", "a minute per sample read");
  at_most(source.max_read_bytes, kTiB, key + ".max_read_bytes", "1 TiB");
  // A window's records (block x window) index a permutation: kept far inside 64 bits.
  at_most(source.shuffle_block_records, uint64_t{1} << 30, key + ".shuffle_block_records", "2^30 records");
  at_most(source.shuffle_window_blocks, uint64_t{1} << 20, key + ".shuffle_window_blocks", "2^20 blocks");
  at_most(source.shuffle_block_records * source.shuffle_window_blocks, uint64_t{1} << 40,
          key + ".shuffle_window_blocks", "a window of 2^40 records (shuffle_block_records x shuffle_window_blocks)");
  at_most(source.cache_mib, kTiB >> 20, key + ".cache_mib", "1 TiB");
  for (const WeightPoint& point : source.weight) {
    at_most(point.step, kMaxSteps, key + ".weight", "a curve point's step is a step count");
    finite_at_most(point.weight, 1e9, key + ".weight", "weights are relative; their sum must stay finite");
  }
}

// Settings that change nothing unless another option is set: a silent
// misconfiguration, refused. (Settings of a mode, such as topology.scaling_*
// for scaling = online, may stay in a file for runs that pick the mode.)
void dependent_options(const Config& c) {
  const Config defaults;
  const TokenizerConfig& tok = c.tokenizer;
  needs(!tok.eod_token.empty(), tok.append_eod, "tokenizer.eod_token", "tokenizer.append_eod = true (with tokenizer.hf)");
  needs(tok.pattern != defaults.tokenizer.pattern, tok.hf.empty(), "tokenizer.pattern",
        "tokenizer.vocab (a tokenizer.hf file brings its own pre-tokenizer)");
  needs(tok.normalize != defaults.tokenizer.normalize, tok.hf.empty(), "tokenizer.normalize",
        "tokenizer.vocab (a tokenizer.hf file brings its own normalizer)");
  const CheckpointConfig& ckpt = c.checkpoint;
  needs(!ckpt.snapshot_sources.empty(), ckpt.loader_every > 0, "checkpoint.snapshot_sources", "checkpoint.loader_every");
  needs(ckpt.accept_changed_data, ckpt.resuming(), "checkpoint.accept_changed_data", "--resume or --resume-step");
  needs(ckpt.accept_changed_mix, ckpt.resuming(), "checkpoint.accept_changed_mix", "--resume or --resume-step");
  for (const SourceConfig& source : c.sources)
    needs(!source.image_field.empty(), format_spec(source).reads_image_field,
          ("source." + source.name + ".image_field").c_str(), image_field_formats().c_str());
  needs(ckpt.start_over, !ckpt.dir.empty(), "checkpoint.start_over", "checkpoint.dir");
  if (ckpt.start_over && ckpt.resume_step)
    throw ConfigError("checkpoint.start_over: cannot start over with checkpoint.resume_step (a resume at the "
                      "trainer's step needs that run's checkpoints)");
}

}  // namespace

void validate_bounds(const Config& config) {
  job_and_topology_bounds(config);
  model_and_output_bounds(config);
  for (const SourceConfig& source : config.sources) source_bounds(source);
  dependent_options(config);
}

}  // namespace msd
