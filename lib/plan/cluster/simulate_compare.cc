#include "plan/cluster/simulate_compare.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "common/error.h"
#include "common/json_writer.h"

namespace msd {

bool parse_micro_batch_shape(const std::string& name, const std::string& what) {
  if (name == "fixed") return false;
  if (name == "varlen") return true;
  throw ConfigError(str(what, ": '", name, "' is not a micro-batch shape; give fixed or varlen"));
}

bool parse_cost_model(const std::string& name, const std::string& what) {
  if (name == "calibrated") return true;
  if (name == "analytic") return false;
  throw ConfigError(str(what, ": '", name, "' is not a cost model; give calibrated or analytic"));
}

DeviceModel compare_device_model(const CompareOptions& compare) {
  DeviceModel device;
  device.model = model_spec_preset(compare.model_preset, "--model");
  if (compare.vision_preset != "none") device.vision = model_spec_preset(compare.vision_preset, "--vision");
  device.device = device_spec_preset(compare.device_preset, "--device");
  device.device.gemm_efficiency *= compare.gemm_efficiency_scale;
  MSD_CHECK(compare.flash_attention == 2 || compare.flash_attention == 3);  // the tables there are
  device.device.flash_attention = compare.flash_attention;
  return device;
}

namespace {

// options.steps synthetic steps of `seed`, each in its arrival order.
std::vector<std::vector<PlanDoc>> arrived_steps(SimulateOptions options, const CostModel& cost, uint64_t seed) {
  options.seed = seed;
  std::vector<std::vector<PlanDoc>> steps;
  for (uint32_t s = 0; s < options.steps; ++s) {
    const std::vector<PlanDoc> docs = synthetic_step(options, cost, s);
    std::vector<PlanDoc> arrived;
    for (uint32_t i : arrival_order(seed, s, static_cast<uint32_t>(docs.size()))) arrived.push_back(docs[i]);
    steps.push_back(std::move(arrived));
  }
  return steps;
}

// At most 8 steps of `seed` for the held-out fit.
std::vector<std::vector<PlanDoc>> held_out_steps(SimulateOptions options, const CostModel& cost, uint64_t seed) {
  options.steps = std::min(options.steps, 8u);
  return arrived_steps(options, cost, seed);
}

// The held-out fit: the sequences of `steps` placed by colocated_tokens
// (documents cut at sequence edges, as Megatron cuts them) and msd_tokens in
// fixed rows, each alone and each with the next as one micro-batch (the
// sequence count must vary for the fit to tell positions from
// per-micro-batch overhead), timed on the device model.
Calibration calibrate_on_steps(const DeviceModel& device, const Parallel& parallel, const CostModel& cost,
                               const std::vector<std::vector<PlanDoc>>& steps, PackOptions pack) {
  pack.varlen = false;
  std::vector<SequenceShape> sequences;
  for (TrainingMode mode : {TrainingMode::colocated_tokens, TrainingMode::msd_tokens}) {
    for (const std::vector<PlanDoc>& step : steps) {
      const std::vector<PlanDoc> docs = by_id(step);
      for (const BucketPlan& bucket : place_step(mode, step, pack, cost))
        for (const MicroBatchPlan& mb : bucket.micro_batches)
          for (SequenceShape& sequence : shape_of(mb, pack.seq_len, docs, false)) sequences.push_back(std::move(sequence));
    }
  }
  std::vector<MicroBatchShape> shapes;
  for (size_t i = 0; i < sequences.size(); ++i) {
    shapes.push_back({sequences[i]});
    if (i + 1 < sequences.size()) shapes.push_back({sequences[i], sequences[i + 1]});
  }
  std::vector<double> seconds;
  for (const MicroBatchShape& shape : shapes) seconds.push_back(micro_batch_seconds(device, parallel, shape));
  return calibrate(shapes, seconds, cost, pack.cp);
}

// The run cut at Megatron's whole global batches (whole_global_batches),
// each step's ids made dense again (0..n-1 in their old order) where the cut
// removed documents.
ComparedRun compared_run(const std::vector<std::vector<PlanDoc>>& steps, const PackOptions& pack, uint64_t seed) {
  ComparedRun run = whole_global_batches(steps, pack, seed, "--steps");
  for (std::vector<PlanDoc>& step : run.steps) {
    std::vector<uint32_t> ids;
    for (const PlanDoc& doc : step) ids.push_back(doc.id);
    std::sort(ids.begin(), ids.end());
    for (PlanDoc& doc : step)
      doc.id = static_cast<uint32_t>(std::lower_bound(ids.begin(), ids.end(), doc.id) - ids.begin());
  }
  return run;
}

// The modes to evaluate: compare.modes, each checked (naming --cp), or when
// empty every evaluation mode that places under `pack`.
std::vector<TrainingMode> modes_of(const CompareOptions& compare, const PackOptions& pack) {
  std::vector<TrainingMode> modes;
  for (TrainingMode mode : kEvaluationModes) {
    try {
      check_mode(mode, pack, "--cp");
      modes.push_back(mode);
    } catch (const ConfigError&) {
    }
  }
  if (compare.modes.empty()) return modes;
  for (TrainingMode mode : compare.modes) check_mode(mode, pack, "--cp");
  return compare.modes;
}

}  // namespace

CompareReport compare_modes(const SimulateOptions& options, const CompareOptions& compare) {
  // simulate()'s checks and dp, on one cheap step.
  SimulateOptions probe = options;
  probe.steps = 1;
  probe.methods = {BalanceMethod::greedy};
  CompareReport report;
  report.options = options;
  report.compare = compare;
  report.dp = simulate(probe).dp;
  if (options.cp > 1 && options.seq_len % (2 * options.cp) != 0)
    throw ConfigError(str("--seq-len ", options.seq_len, " is not divisible by 2 * cp = ", 2 * options.cp));
  const DeviceModel device = compare_device_model(compare);
  const Parallel parallel{report.dp, options.pp, options.cp, options.tp};
  report.cost = simulate_cost(options);
  PackOptions pack = simulate_pack_options(options, report.dp);
  pack.lower_bound = false;  // the statistics' bound changes no plan, and the comparison reads none
  if (compare.calibrate) {
    report.calibration = compare.calibration        ? *compare.calibration
                         : compare.calibration_seed == 0
                             ? calibrate_on_device(device, parallel, report.cost, options.seq_len)
                             : calibrate_on_steps(device, parallel, report.cost, held_out_steps(options, report.cost, compare.calibration_seed), pack);
    report.cost = calibrated(report.cost, report.calibration);
  }
  const CostModel& cost = report.cost;
  const std::vector<TrainingMode> modes = modes_of(compare, pack);
  const ComparedRun run = compared_run(arrived_steps(options, cost, options.seed), pack, options.seed);
  report.positions = run.positions;
  report.dropped_positions = run.dropped_positions;
  report.megatron = run.stream;
  for (TrainingMode mode : modes)
    report.modes.push_back(evaluate_mode(mode, run.steps, pack, cost, device, parallel, run.stream));
  return report;
}

double speedup(const CompareReport& report, TrainingMode mode, TrainingMode baseline) {
  double mine = 0.0, theirs = 0.0;
  for (const ModeEvaluation& e : report.modes) {
    if (e.mode == mode) mine = e.tokens_per_s;
    if (e.mode == baseline) theirs = e.tokens_per_s;
  }
  return theirs > 0 ? mine / theirs : 0.0;
}

std::string cost_model_line(const CompareReport& report) {
  const Calibration& c = report.calibration;
  char line[384];
  if (c.probes == 0) {
    std::snprintf(line, sizeof line, "planner cost: analytic, a = %.0f, vision_scale = %.4f", report.cost.a,
                  report.cost.vision_scale);
  } else {
    std::snprintf(line, sizeof line,
                  "planner cost: calibrated on %llu probe micro-batches timed on the device model: a = %.0f, "
                  "vision_scale = %.4f (fit R^2 %.4f, largest error %.1f%%)",
                  static_cast<unsigned long long>(c.probes), c.a, c.vision_scale, c.r_squared,
                  100 * c.max_relative_error);
  }
  return line;
}

void write_cost_model(JsonWriter& json, const CostModel& cost, const Calibration& calibration) {
  json.begin_object("cost_model");
  json.value("calibrated", calibration.probes > 0).value("a", cost.a).value("vision_scale", cost.vision_scale);
  if (calibration.probes > 0) {
    json.value("probes", calibration.probes).value("r_squared", calibration.r_squared);
    json.value("max_relative_error", calibration.max_relative_error);
  }
  json.end_object();
}

void print_compare(const CompareReport& report, std::ostream& out) {
  const SimulateOptions& o = report.options;
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-plan simulate --compare: %u DP ranks x tp %u pp %u cp %u, seq_len %u, %u micro-batches, %u "
                "samples per DP rank, %u steps; %s on %s (vision: %s); msd's micro-batches: %s (rows: each mode's)\n",
                report.dp, o.tp, o.pp, o.cp, o.seq_len, o.micro_batches, o.samples_per_gpu, o.steps,
                report.compare.model_preset.c_str(), report.compare.device_preset.c_str(),
                report.compare.vision_preset.c_str(), o.varlen ? "variable-length rows" : "fixed rows");
  out << line << cost_model_line(report) << '\n';
  std::snprintf(line, sizeof line,
                "every mode places the same %llu positions: the steps cut at Megatron's last whole global batch "
                "(%llu positions dropped; megatron: %u micro-batches of %u samples a DP rank and step)\n",
                static_cast<unsigned long long>(report.positions),
                static_cast<unsigned long long>(report.dropped_positions), report.megatron.micro_batches,
                report.megatron.micro_batch_size);
  out << line;
  std::snprintf(line, sizeof line, "%-21s %6s %8s %12s %6s %9s %9s %10s %10s %9s %9s\n", "mode", "rows", "attends",
                "tokens/s", "steps", "step s", "padding", "DP max/mn", "mb max/mn", "bubble", "seq/rank");
  out << line;
  for (const ModeEvaluation& e : report.modes) {
    const std::string per_rank = str(e.sequences_per_rank_min, "-", e.sequences_per_rank_max);
    std::snprintf(line, sizeof line, "%-21s %6s %8s %12.0f %6llu %9.4f %8.1f%% %10.3f %10.3f %8.1f%% %9s\n",
                  training_mode_name(e.mode), e.varlen ? "varlen" : "fixed", attention_name(e.mode), e.tokens_per_s,
                  static_cast<unsigned long long>(e.steps), e.steps ? e.seconds / e.steps : 0.0,
                  100 * e.padding_fraction, e.dp_max_over_mean, e.microbatch_max_over_mean, 100 * e.bubble_fraction,
                  per_rank.c_str());
    out << line;
  }
  out << "(tokens/s: the same documents over each mode's time to train them; attends: each row as one causal span "
         "(row) or each document piece (document); seq/rank: fewest-most sequences a DP rank got in a step, for "
         "megatron_dynamic_cp samples a rank of the dp x cp domain computed)\n";
  for (const ModeEvaluation& e : report.modes) {
    if (is_baseline(e.mode)) continue;
    out << "speedup of " << training_mode_name(e.mode) << ":";
    for (const ModeEvaluation& b : report.modes) {
      if (!is_baseline(b.mode)) continue;
      std::snprintf(line, sizeof line, "  %.3fx over %s%s", speedup(report, e.mode, b.mode), training_mode_name(b.mode),
                    e.varlen == b.varlen ? "" : (e.varlen ? " (varlen over fixed rows)" : " (fixed over varlen rows)"));
      out << line;
    }
    out << '\n';
  }
}

std::string compare_json(const CompareReport& report) {
  const SimulateOptions& o = report.options;
  JsonWriter json;
  json.begin_object();
  json.value("dp", report.dp).value("tp", o.tp).value("pp", o.pp).value("cp", o.cp).value("seq_len", o.seq_len);
  json.value("micro_batches", o.micro_batches).value("steps", o.steps);
  json.value("micro_batch_shape", o.varlen ? "varlen" : "fixed");
  json.value("model", report.compare.model_preset).value("device", report.compare.device_preset);
  json.value("positions", report.positions).value("dropped_positions", report.dropped_positions);
  json.begin_object("megatron_batch").value("micro_batch_size", report.megatron.micro_batch_size);
  json.value("micro_batches", report.megatron.micro_batches).end_object();
  write_cost_model(json, report.cost, report.calibration);
  json.begin_object("modes");
  for (const ModeEvaluation& e : report.modes) {
    json.begin_object(training_mode_name(e.mode));
    json.value("tokens_per_s", e.tokens_per_s).value("step_s", e.steps ? e.seconds / e.steps : 0.0);
    json.value("padding_fraction", e.padding_fraction).value("dp_max_over_mean", e.dp_max_over_mean);
    json.value("microbatch_max_over_mean", e.microbatch_max_over_mean).value("bubble_fraction", e.bubble_fraction);
    json.value("cost_model_fit", e.cost_model_fit).value("rows", e.varlen ? "varlen" : "fixed");
    json.value("attention", attention_name(e.mode)).value("positions", e.real_positions);
    json.value("steps", e.steps);
    json.begin_object("sequences_per_rank");
    json.value("min", e.sequences_per_rank_min).value("max", e.sequences_per_rank_max);
    json.end_object();
    json.end_object();
  }
  json.end_object();
  json.begin_object("speedup");
  for (const ModeEvaluation& e : report.modes)
    for (const ModeEvaluation& b : report.modes)
      if (!is_baseline(e.mode) && is_baseline(b.mode))
        json.value(str(training_mode_name(e.mode), "_over_", training_mode_name(b.mode)), speedup(report, e.mode, b.mode));
  json.end_object();
  json.end_object();
  return json.str();
}

}  // namespace msd
