#include "bench/sweep.h"

#include <algorithm>
#include <cstdio>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench/launch.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"

#ifndef MSD_TOOLS_DIR_DEFAULT
#define MSD_TOOLS_DIR_DEFAULT "tools"
#endif

namespace msd::bench {
namespace {

const TrainingMode kBaselines[] = {TrainingMode::colocated_samples, TrainingMode::colocated_tokens};

SweepMix find_mix(const std::string& name) {
  for (const SweepMix& mix : sweep_mixes())
    if (mix.name == name) return mix;
  throw ConfigError(str("--mixes: '", name, "' is not a mix (longtail_text, text_image, demo)"));
}

SweepRow run_row(const SweepOptions& options, uint32_t seq_len, uint32_t dp, uint32_t pp, const SweepMix& mix) {
  SimulateOptions sim;
  sim.dp = dp;
  sim.tp = options.tp;
  sim.pp = pp;
  sim.seq_len = seq_len;
  sim.samples_per_gpu = options.samples_per_gpu;
  sim.micro_batches = options.micro_batches_per_stage * pp;
  sim.steps = options.steps;
  sim.seed = options.seed;
  sim.long_share = mix.long_share;
  sim.image_share = mix.image_share;
  sim.varlen = options.varlen;
  CompareOptions compare = options.compare;
  compare.modes = {TrainingMode::colocated_samples, TrainingMode::colocated_tokens, TrainingMode::msd_greedy};
  const CompareReport report = compare_modes(sim, compare);
  SweepRow row{seq_len, dp, pp, mix.name, {}, report.modes.back().dp_max_over_mean, {}, {}, report.cost,
               report.calibration};
  for (TrainingMode baseline : kBaselines)
    row.speedup[training_mode_name(baseline)] = speedup(report, TrainingMode::msd_greedy, baseline);
  for (const ModeEvaluation& e : report.modes) {
    row.dp_max_over_mean[training_mode_name(e.mode)] = e.dp_max_over_mean;
    row.padding_fraction[training_mode_name(e.mode)] = e.padding_fraction;
  }
  return row;
}

// The planner's cost over the rows: analytic, or calibrated with the range
// of fitted a and the worst fit.
std::string cost_model_summary(const SweepReport& report) {
  if (report.rows.empty()) return "";
  double a_min = report.rows[0].cost.a, a_max = a_min, r2 = 1.0, error = 0.0;
  for (const SweepRow& row : report.rows) {
    a_min = std::min(a_min, row.cost.a);
    a_max = std::max(a_max, row.cost.a);
    r2 = std::min(r2, row.calibration.r_squared);
    error = std::max(error, row.calibration.max_relative_error);
  }
  char line[256];
  if (report.rows[0].calibration.probes == 0)
    std::snprintf(line, sizeof line, "  planner cost: analytic, a = %.0f", a_min);
  else
    std::snprintf(line, sizeof line,
                  "  planner cost: calibrated per row on probe micro-batches timed on the device model: a = %.0f..%.0f "
                  "(fit R^2 >= %.4f, largest error %.1f%%)",
                  a_min, a_max, r2, 100 * error);
  return line;
}

}  // namespace

std::vector<SweepMix> sweep_mixes() {
  return {{"longtail_text", 0.15, 0.0}, {"text_image", 0.15, 0.4}, {"demo", 0.3, 0.2}};
}

SweepReport run_sweep(const SweepOptions& options) {
  if (options.seq_lens.empty() || options.dps.empty() || options.pps.empty() || options.mixes.empty())
    throw ConfigError("--seq-lens, --dps, --pps and --mixes need a value each");
  if (options.steps == 0 || options.samples_per_gpu == 0 || options.micro_batches_per_stage == 0)
    throw ConfigError("--steps, --samples-per-gpu and --micro-batches-per-stage must be at least 1");
  std::vector<SweepMix> mixes;
  for (const std::string& name : options.mixes) mixes.push_back(find_mix(name));
  SweepReport report;
  report.options = options;
  std::map<uint32_t, std::map<std::string, int>> counts;
  for (uint32_t seq_len : options.seq_lens)
    for (uint32_t dp : options.dps)
      for (const SweepMix& mix : mixes)
        for (uint32_t pp : options.pps) {
          report.rows.push_back(run_row(options, seq_len, dp, pp, mix));
          for (const auto& [baseline, x] : report.rows.back().speedup) {
            report.average[baseline] += x;
            report.best[baseline] = std::max(report.best[baseline], x);
            report.by_seq_len[seq_len][baseline] += x;
            counts[seq_len][baseline] += 1;
          }
        }
  for (auto& [baseline, sum] : report.average) sum /= static_cast<double>(report.rows.size());
  for (auto& [seq_len, by_baseline] : report.by_seq_len)
    for (auto& [baseline, sum] : by_baseline) sum /= counts[seq_len][baseline];
  return report;
}

std::string sweep_json(const SweepReport& report) {
  JsonWriter w;
  w.begin_object();
  w.value("model", report.options.compare.model_preset).value("device", report.options.compare.device_preset);
  w.value("tp", report.options.tp).value("samples_per_gpu", report.options.samples_per_gpu);
  w.value("steps", report.options.steps).value("micro_batch_shape", report.options.varlen ? "varlen" : "fixed");
  w.begin_array("rows");
  for (const SweepRow& row : report.rows) {
    w.begin_object();
    w.value("seq_len", row.seq_len).value("dp", row.dp).value("pp", row.pp).value("mix", row.mix);
    w.begin_object("speedup");
    for (const auto& [baseline, x] : row.speedup) w.value(baseline, x);
    w.end_object();
    w.value("msd_greedy_dp_max_over_mean", row.greedy_dp_max_over_mean);
    for (const auto& [key, values] : {std::pair{"dp_max_over_mean", &row.dp_max_over_mean},
                                      std::pair{"padding_fraction", &row.padding_fraction}}) {
      w.begin_object(key);
      for (const auto& [mode, x] : *values) w.value(mode, x);
      w.end_object();
    }
    write_cost_model(w, row.cost, row.calibration);
    w.end_object();
  }
  w.end_array();
  for (const auto& [key, values] : {std::pair{"average", &report.average}, std::pair{"best", &report.best}}) {
    w.begin_object(key);
    for (const auto& [baseline, x] : *values) w.value(baseline, x);
    w.end_object();
  }
  w.begin_object("by_seq_len");
  for (const auto& [seq_len, by_baseline] : report.by_seq_len) {
    w.begin_object(std::to_string(seq_len));
    for (const auto& [baseline, x] : by_baseline) w.value(baseline, x);
    w.end_object();
  }
  w.end_object();
  w.end_object();
  return w.str();
}

std::string sweep_csv(const SweepReport& report) {
  std::ostringstream out;
  out << "seq_len,dp,pp,mix,over_colocated_samples,over_colocated_tokens,msd_greedy_dp_max_over_mean\n";
  for (const SweepRow& row : report.rows)
    out << row.seq_len << ',' << row.dp << ',' << row.pp << ',' << row.mix << ','
        << row.speedup.at("colocated_samples") << ',' << row.speedup.at("colocated_tokens") << ','
        << row.greedy_dp_max_over_mean << '\n';
  return out.str();
}

void write_sweep_text(const SweepReport& report, std::ostream& out) {
  const SweepOptions& o = report.options;
  char line[256];
  out << "msd-bench sweep: msd_greedy's tokens/s over each baseline's, on the device model (" << o.compare.model_preset
      << " on " << o.compare.device_preset << ", tp " << o.tp << ", " << o.samples_per_gpu
      << " samples per DP rank, " << o.steps << " steps per row; msd_greedy's micro-batches: "
      << (o.varlen ? "variable-length rows" : "fixed rows") << ")\n" << cost_model_summary(report) << '\n';
  std::snprintf(line, sizeof line, "  %8s %5s %3s %-14s %18s %18s\n", "seq_len", "dp", "pp", "mix",
                "/colocated_samples", "/colocated_tokens");
  out << line;
  for (const SweepRow& row : report.rows) {
    std::snprintf(line, sizeof line, "  %8u %5u %3u %-14s %17.3fx %17.3fx\n", row.seq_len, row.dp, row.pp,
                  row.mix.c_str(), row.speedup.at("colocated_samples"), row.speedup.at("colocated_tokens"));
    out << line;
  }
  for (const auto& [seq_len, by] : report.by_seq_len) {
    std::snprintf(line, sizeof line, "  average at seq_len %-6u %28.3fx %17.3fx\n", seq_len, by.at("colocated_samples"),
                  by.at("colocated_tokens"));
    out << line;
  }
  std::snprintf(line, sizeof line, "  average over %zu rows %30.3fx %17.3fx\n  best %47.3fx %17.3fx\n",
                report.rows.size(), report.average.at("colocated_samples"), report.average.at("colocated_tokens"),
                report.best.at("colocated_samples"), report.best.at("colocated_tokens"));
  out << line;
  out << "  published (docs/evaluation.md): 1.77x average, 4.54x best, 3.09x average at 16k over the colocated\n"
         "  baseline; WLB-LLM 1.23x from balancing alone\n";
}

}  // namespace msd::bench

namespace msd::bench {

void write_sweep_files(const SweepReport& report, const std::string& csv, const std::string& png) {
  const std::string csv_path = !csv.empty() ? csv : png + ".csv";
  {
    std::ofstream out(csv_path);
    out << sweep_csv(report);
    if (!out) throw IoError(str("cannot write ", csv_path));
  }
  if (png.empty()) return;
  const std::string script = std::string(MSD_TOOLS_DIR_DEFAULT) + "/plot_sweep.py";
  const std::string log = png + ".log";
  const int rc = run_command({"/usr/bin/python3", script, csv_path, png}, log);
  if (rc != 0) throw IoError(str("plotting ", png, " failed (exit code ", rc, "); see ", log));
  if (csv.empty()) std::remove(csv_path.c_str());
}

}  // namespace msd::bench
