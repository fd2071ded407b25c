#include "plan/simulate_compare.h"

#include <cstdio>
#include <ostream>

#include "common/error.h"
#include "common/json_writer.h"

namespace msd {

DeviceModel compare_device_model(const CompareOptions& compare) {
  DeviceModel device;
  device.model = model_spec_preset(compare.model_preset, "--model");
  if (compare.vision_preset != "none") device.vision = model_spec_preset(compare.vision_preset, "--vision");
  device.device = device_spec_preset(compare.device_preset, "--device");
  return device;
}

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
  const CostModel cost = CostModel::from(options.model, options.cost_a);
  std::vector<std::vector<PlanDoc>> steps;
  for (uint32_t s = 0; s < options.steps; ++s) {
    const std::vector<PlanDoc> docs = synthetic_step(options, cost, s);
    std::vector<PlanDoc> arrived;
    for (uint32_t i : arrival_order(options.seed, s, static_cast<uint32_t>(docs.size()))) arrived.push_back(docs[i]);
    steps.push_back(std::move(arrived));
  }
  PackOptions pack;
  pack.seq_len = options.seq_len;
  pack.dp = report.dp;
  pack.micro_batches = options.micro_batches;
  pack.long_docs = options.long_docs;
  pack.cp = options.cp;
  const Parallel parallel{report.dp, options.pp, options.cp, options.tp};
  for (TrainingMode mode : compare.modes) report.modes.push_back(evaluate_mode(mode, steps, pack, cost, device, parallel));
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

void print_compare(const CompareReport& report, std::ostream& out) {
  const SimulateOptions& o = report.options;
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-plan simulate --compare: %u DP ranks x tp %u pp %u cp %u, seq_len %u, %u micro-batches, %u "
                "samples per DP rank, %u steps; %s on %s (vision: %s)\n",
                report.dp, o.tp, o.pp, o.cp, o.seq_len, o.micro_batches, o.samples_per_gpu, o.steps,
                report.compare.model_preset.c_str(), report.compare.device_preset.c_str(),
                report.compare.vision_preset.c_str());
  out << line;
  std::snprintf(line, sizeof line, "%-18s %12s %9s %9s %10s %10s %9s %9s\n", "mode", "tokens/s", "step s", "padding",
                "DP max/mn", "mb max/mn", "bubble", "cost fit");
  out << line;
  for (const ModeEvaluation& e : report.modes) {
    std::snprintf(line, sizeof line, "%-18s %12.0f %9.4f %8.1f%% %10.3f %10.3f %8.1f%% %9.3f\n",
                  training_mode_name(e.mode), e.tokens_per_s, e.steps ? e.seconds / e.steps : 0.0,
                  100 * e.padding_fraction, e.dp_max_over_mean, e.microbatch_max_over_mean, 100 * e.bubble_fraction,
                  e.cost_model_fit);
    out << line;
  }
  for (const ModeEvaluation& e : report.modes) {
    if (is_baseline(e.mode)) continue;
    out << "speedup of " << training_mode_name(e.mode) << ":";
    for (const ModeEvaluation& b : report.modes) {
      if (!is_baseline(b.mode)) continue;
      std::snprintf(line, sizeof line, "  %.3fx over %s", speedup(report, e.mode, b.mode), training_mode_name(b.mode));
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
  json.value("model", report.compare.model_preset).value("device", report.compare.device_preset);
  json.begin_object("modes");
  for (const ModeEvaluation& e : report.modes) {
    json.begin_object(training_mode_name(e.mode));
    json.value("tokens_per_s", e.tokens_per_s).value("step_s", e.steps ? e.seconds / e.steps : 0.0);
    json.value("padding_fraction", e.padding_fraction).value("dp_max_over_mean", e.dp_max_over_mean);
    json.value("microbatch_max_over_mean", e.microbatch_max_over_mean).value("bubble_fraction", e.bubble_fraction);
    json.value("cost_model_fit", e.cost_model_fit);
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
