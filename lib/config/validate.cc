// Checks a parsed Config before any work starts: every message names the
// option to fix (msd/config.h validate).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "common/error.h"
#include "config/bounds.h"
#include "config/option_table.h"
#include "msd/config.h"
#include "source/format.h"

namespace msd {
namespace {

using option_table::split_list;

bool valid_weight_curve(const std::vector<WeightPoint>& curve) {
  if (curve.empty()) return false;
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i].weight) || curve[i].weight < 0) return false;
    if (i > 0 && curve[i].step <= curve[i - 1].step) return false;
  }
  return true;
}

// A curve's raw (unnormalized) weight at `step`, as lib/plan/step/mix.cc's Schedule
// evaluates it.
double curve_at(ScheduleKind kind, const std::vector<WeightPoint>& curve, uint64_t step) {
  if (kind == ScheduleKind::constant || step <= curve.front().step) return curve.front().weight;
  if (step >= curve.back().step) return curve.back().weight;
  size_t next = 1;
  while (curve[next].step <= step) ++next;
  const WeightPoint& a = curve[next - 1];
  if (kind == ScheduleKind::piecewise) return a.weight;
  const WeightPoint& b = curve[next];
  const double t = static_cast<double>(step - a.step) / static_cast<double>(b.step - a.step);
  return a.weight + (b.weight - a.weight) * t;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

template <typename T>
void require_at_least(T value, T minimum, const char* key) {
  require(value >= minimum, str(key, ": must be at least ", +minimum, " (got ", +value, ")"));
}

template <typename T>
void require_at_most(T value, T maximum, const char* key, const char* why) {
  require(value <= maximum, str(key, ": must be at most ", +maximum, " (got ", +value, "; ", why, ")"));
}

// Bounds on the waits and the window, so that no product or shift of them
// overflows and no wait is unbounded in practice: a week, and 1 TiB.
void validate_limits(const Config& config) {
  require_at_least(config.loader.window_mb, uint64_t{1}, "loader.window_mb");
  constexpr uint64_t kWeekS = 7 * 24 * 3600, kWeekMs = kWeekS * 1000;
  require_at_most(config.job.stall_timeout_s, kWeekS, "job.stall_timeout_s", "a week");
  require_at_most(config.job.startup_timeout_s, kWeekS, "job.startup_timeout_s", "a week");
  require_at_most(config.loader.deadline_ms, kWeekMs, "loader.deadline_ms", "a week");
  require_at_most(config.fault.stall_ms, kWeekMs, "fault.stall_ms", "a week");
  require_at_most(config.loader.window_mb, uint64_t{1} << 20, "loader.window_mb", "1 TiB");
}

void require_one_of(const std::string& value, std::initializer_list<const char*> allowed, const std::string& key) {
  std::string list;
  for (const char* name : allowed) {
    if (value == name) return;
    list += (list.empty() ? "" : " | ") + std::string(name);
  }
  throw ConfigError(str(key, ": '", value, "' is not a valid value (expected ", list, ")"));
}

}  // namespace

int Config::world_size() const {
  return trainers_load(job.mode()) ? clients() : 1 + topology.loaders + topology.shadow_loaders + clients();
}

namespace {
// [model], [device], [emulator] and the activation budget the planner packs to.
void validate_model_and_device(const Config& config) {
  const auto& job = config.job;
  require_at_least(config.model.hidden, uint32_t{1}, "model.hidden");
  require_at_least(config.model.layers, uint32_t{1}, "model.layers");
  require(std::isfinite(config.emulator.time_scale) && config.emulator.time_scale >= 0,
          str("emulator.time_scale: must be >= 0 (got ", config.emulator.time_scale, ")"));
  if (!config.model.preset.empty())
    require_one_of(config.model.preset, {"llama3-8b", "llama3-70b", "vit-l"}, "model.preset");
  require_one_of(config.device.preset, {"h100", "h200"}, "device.preset");
  require(job.max_positions_per_micro_batch == 0 || job.max_positions_per_micro_batch >= job.seq_len,
          str("job.max_positions_per_micro_batch: ", job.max_positions_per_micro_batch,
              " cannot hold one sequence; give 0 or at least job.seq_len (", job.seq_len, ")"));
}

// [fault]: what it injects, and where.
void validate_fault(const Config& config) {
  const auto& topo = config.topology;
  const auto& job = config.job;
  const auto& fault = config.fault;
  require_one_of(fault.kind, {"hang", "stall", "checkpoint_stall", "startup_stall", "finish_stall", "fail", "crash"},
                 "fault.kind");
  require(fault.rank < config.world_size(),
          str("fault.rank: ", fault.rank, " is not a rank of this job (", config.world_size(), " ranks)"));
  require(fault.rank < 0 || ((fault.kind == "crash" || fault.kind == "finish_stall") && !trainers_load(job.mode())),
          "fault.rank: only fault.kind = crash or finish_stall names a rank, and only in a mode with loader ranks");
  require(fault.loader < topo.loaders,
          str("fault.loader: ", fault.loader, " is not a loader index (topology.loaders = ", topo.loaders, ")"));
}
void validate_tokenizer(const TokenizerConfig& tokenizer, bool needed) {
  if (needed)
    require(!tokenizer.vocab.empty() || !tokenizer.hf.empty(),
            "tokenizer.vocab: missing; jsonl and wds sources need a vocabulary (tokenizer.vocab or tokenizer.hf)");
  require(tokenizer.vocab.empty() || tokenizer.hf.empty(), "tokenizer.hf: set with tokenizer.vocab; give one of the two");
  require(!tokenizer.append_eod || !tokenizer.hf.empty(),
          "tokenizer.append_eod: needs tokenizer.hf (a tiktoken vocabulary has no end-of-document token)");
  require(!tokenizer.pattern.empty(), "tokenizer.pattern: must not be empty");
  require_one_of(tokenizer.normalize, {"none", "nfc", "nfkc", "nfd", "nfkd"}, "tokenizer.normalize");
}

}  // namespace

// msd's placement options (job.cuts, job.micro_batch_count, the hold): msd
// modes only; the first two place variable-length rows.
static void validate_placement(const JobConfig& job) {
  const bool colocated = !mode_balance(job.mode());  // the colocated modes balance nothing
  const std::string mode = str("job.mode = ", job.mode_name());
  const bool varlen = job.micro_batch_shape == RowShape::varlen;
  if (job.cuts == Cuts::balance) {
    require(!colocated, str("job.cuts: balance is msd's placement; ", mode, " keeps the baseline's cuts"));
    require(varlen, "job.cuts: balance places variable-length rows; set job.micro_batch_shape = varlen (got fixed)");
  }
  if (job.micro_batch_count == MicroBatchCount::variable) {
    require(!colocated, str("job.micro_batch_count: variable is msd's placement; ", mode,
                            " keeps job.micro_batches per rank"));
    require(varlen,
            "job.micro_batch_count: variable places variable-length rows; set job.micro_batch_shape = varlen (got fixed)");
  }
  if (job.hold_above > 0) {
    require(!colocated, str("job.hold_above: the outlier hold is msd's placement; ", mode, " places every step's own"));
    require(job.hold_above * job.seq_len >= 1,
            str("job.hold_above: ", job.hold_above, " x job.seq_len is under one position; give 0 (no hold) or more"));
  }
  require(job.hold_steps >= 1, "job.hold_steps: 0 holds nothing; give at least 1, or job.hold_above = 0 for no hold");
}

// topology.order names each axis once.
static void validate_order(const std::string& order) {
  std::vector<std::string> sorted = split_list(order);
  std::sort(sorted.begin(), sorted.end());
  require(sorted == std::vector<std::string>{"cp", "dp", "pp", "tp"},
          str("topology.order: '", order, "' is not a valid value (expected a permutation of tp,cp,dp,pp)"));
}

void validate(const Config& config) {
  validate_bounds(config);  // first: no check below may overflow
  const auto& job = config.job;
  const auto& topo = config.topology;
  require_at_least(job.steps, uint64_t{1}, "job.steps");
  require_at_least(topo.dp, 1, "topology.dp");
  require_at_least(topo.pp, 1, "topology.pp");
  require_at_least(topo.cp, 1, "topology.cp");
  require_at_least(topo.tp, 1, "topology.tp");
  if (!trainers_load(job.mode())) require_at_least(topo.loaders, 1, "topology.loaders");
  require_at_least(topo.loaders, 0, "topology.loaders");
  require_at_least(topo.shadow_loaders, 0, "topology.shadow_loaders");
  // The rank count is an int for MPI; a product that overflows is a typo.
  const double ranks = double{1.0} * topo.dp * topo.pp * topo.cp * topo.tp + topo.loaders + topo.shadow_loaders + 1;
  require(ranks <= std::numeric_limits<int>::max(),
          str("topology: dp*pp*cp*tp + loaders + 1 = ", ranks, " ranks is more than MPI can address"));
  require(job.global_batch >= static_cast<uint32_t>(topo.dp),
          str("job.global_batch: must be at least topology.dp = ", topo.dp, " so every DP group gets a sample (got ",
              job.global_batch, ")"));
  require_at_least(job.seq_len, uint32_t{16}, "job.seq_len");
  require(topo.cp <= 1 || job.seq_len % (2 * static_cast<uint32_t>(topo.cp)) == 0,
          str("job.seq_len: ", job.seq_len, " must be divisible by 2 * topology.cp = ", 2 * topo.cp,
              " (each context-parallel rank takes two equal chunks of every sequence)"));
  require_at_least(topo.ranks_per_node, 0, "topology.ranks_per_node");
  require(topo.partition_plan.empty() || topo.scaling == Scaling::partition,
          "topology.partition_plan: a plan is used only with topology.scaling = partition");
  require_at_least(job.micro_batches, uint32_t{1}, "job.micro_batches");
  require_at_least(job.prefetch_steps, uint32_t{1}, "job.prefetch_steps");
  validate_order(topo.order);

  require(!config.sources.empty(), "mix.sources: at least one source is needed");
  bool needs_tokenizer = false;
  bool has_images = false;
  std::set<std::string> names;
  for (const auto& source : config.sources) {
    const std::string key = "source." + source.name;
    require(!source.name.empty(), "mix.sources: a source has an empty name");
    require(names.insert(source.name).second, str("mix.sources: source '", source.name, "' is listed twice"));
    require(source.format.has_value(), str(key, ".format: missing (expected ", format_names(), ")"));
    require(!source.path.empty(), str(key, ".path: missing (comma-separated globs of the source's files)"));
    require(valid_weight_curve(source.weight),
            str(key, ".weight: expected at least one point, steps increasing, weights finite and >= 0"));
    require(!source.text_field.empty(), str(key, ".text_field: must not be empty"));
    require(!source.caption_field.empty(), str(key, ".caption_field: must not be empty"));
    require_at_least(source.shuffle_block_records, uint64_t{1}, (key + ".shuffle_block_records").c_str());
    require_at_least(source.shuffle_window_blocks, uint64_t{1}, (key + ".shuffle_window_blocks").c_str());
    needs_tokenizer = needs_tokenizer || msd::needs_tokenizer(source);
    has_images = has_images || msd::has_images(source);
  }
  // The weights may be zero for some sources, never for all at once: a step
  // would have nothing to draw from. The total is piecewise constant (or
  // piecewise linear) between the steps of the points, so checking it at step
  // 0 and at every point's step covers every step.
  std::set<uint64_t> steps{0};
  if (config.schedule != ScheduleKind::constant)
    for (const auto& source : config.sources)
      for (const auto& point : source.weight) steps.insert(point.step);
  for (uint64_t step : steps) {
    double total = 0;
    for (const auto& source : config.sources) total += curve_at(config.schedule, source.weight, step);
    require(total > 0, str("source.*.weight: the weights of all sources are zero at step ", step));
  }

  validate_tokenizer(config.tokenizer, needs_tokenizer);

  const auto& image = config.image;
  require_at_least(image.patch, uint32_t{1}, "image.patch");
  require(image.patch <= image.max_side,
          str("image.patch: ", image.patch, " is larger than image.max_side = ", image.max_side));
  require_at_least(image.token_id, int64_t{-1}, "image.token_id");
  if (has_images) {
    // The image transform rounds the longest side down to a multiple of the
    // patch (max_patches in lib/transform/image/image.h); the patches are never
    // split across sequences, so the largest image and one caption token must
    // fit one sequence.
    const uint64_t side = image.max_side / image.patch;
    const uint64_t largest = side * side;
    require(largest + 1 <= job.seq_len,
            str("job.seq_len: ", job.seq_len, " cannot hold the largest image (", largest, " patches at image.max_side = ",
                image.max_side, ", image.patch = ", image.patch, ") plus a caption token"));
  }

  validate_limits(config);
  require_at_least(job.max_sample_bytes, uint64_t{64}, "job.max_sample_bytes");
  require(trainers_load(job.mode()) || (config.loader.window_mb << 20) >= job.max_sample_bytes,
          str("loader.window_mb: ", config.loader.window_mb, " MiB cannot hold one sample of job.max_sample_bytes = ",
              job.max_sample_bytes, " bytes; raise loader.window_mb or lower job.max_sample_bytes"));
  validate_model_and_device(config);
  validate_placement(job);
  require_one_of(config.output.log_level, {"debug", "info", "warn", "error", "quiet"}, "output.log_level");
  require_at_least(config.loader.deadline_ms, uint64_t{1}, "loader.deadline_ms");
  require_at_least(config.loader.threads, uint32_t{1}, "loader.threads");

  const auto& ckpt = config.checkpoint;
  require_at_least(ckpt.planner_every, uint64_t{1}, "checkpoint.planner_every");
  require_at_least(ckpt.keep, uint32_t{1}, "checkpoint.keep");
  const std::string resume_key = ckpt.resume_step ? "checkpoint.resume_step" : "checkpoint.resume";
  require(!ckpt.resuming() || !ckpt.dir.empty(), resume_key + ": needs checkpoint.dir (where to find checkpoints)");
  require(ckpt.loader_every == 0 || !ckpt.dir.empty(), "checkpoint.loader_every: needs checkpoint.dir");
  require(!ckpt.resuming() || !trainers_load(job.mode()), resume_key + ": the colocated mode does not checkpoint");
  require(!ckpt.resume_step || *ckpt.resume_step < job.steps,
          str("checkpoint.resume_step: ", ckpt.resume_step.value_or(0), " is beyond the run (job.steps = ", job.steps,
              "; the last step is ", job.steps - 1, ")"));
  for (const auto& name : split_list(ckpt.snapshot_sources))
    require(name.empty() || names.count(name) > 0, str("checkpoint.snapshot_sources: '", name, "' is not a source in mix.sources"));

  validate_fault(config);
}

}  // namespace msd
