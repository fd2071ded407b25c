#include "bench/throughput.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench/launch.h"
#include "bench/step_stream.h"
#include "bench/work_dir.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "msd/config.h"
#include "plan/cluster/device_model.h"

namespace msd::bench {

namespace {

Invocation parse_for(const ThroughputOptions& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"msd-run"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::vector<std::string> mode_args(const ThroughputOptions& options, TrainingMode mode) {
  std::vector<std::string> args = {"--config", options.config, "--mode", training_mode_name(mode)};
  args.insert(args.end(), options.overrides.begin(), options.overrides.end());
  return args;
}

void run_mode(const ThroughputOptions& options, const std::string& work, ModeResult& result) {
  const std::string name = training_mode_name(result.mode);
  std::vector<std::string> args = mode_args(options, result.mode);
  result.ranks = parse_for(options, args).config.world_size();
  const std::string summary = work + "/" + name + ".json";
  const std::string log = work + "/" + name + ".log";
  args.insert(args.end(), {"--summary-json", summary, "--output.progress_every=0"});
  std::fprintf(stderr, "msd-bench throughput: running %s on %d ranks (log %s)\n", name.c_str(), result.ranks,
               log.c_str());
  const int rc = run_command(mpirun_command(result.ranks, executable_dir() + "/msd-run", args), log);
  if (rc != 0) throw Error(str("the ", name, " run failed with exit code ", rc, "; see ", log));
  const JsonValue s = read_json_file(summary);
  result.tokens_per_s = json_number(s, "tokens_per_s");
  result.wall_s = json_number(s, "wall_s");
  result.data_wait_s = json_number(s, "data_wait_s");
  result.tokens = json_number(s, "tokens");
  result.steps = json_number(s, "steps");
}

}  // namespace

// The planner's cost against device time over a step's micro-batches
// (Spearman, median over steps), for the planner's own placement (msd_greedy;
// else the first msd mode run).
double planner_fit(const ThroughputReport& report) {
  for (TrainingMode mode : {TrainingMode::msd_greedy, TrainingMode::msd_kk, TrainingMode::msd_tokens})
    for (const ModeResult& m : report.modes)
      if (m.mode == mode) return m.simulated.cost_model_fit;
  return 1.0;
}

double measured_speedup(const ThroughputReport& report, TrainingMode mode, TrainingMode baseline) {
  double mine = 0, theirs = 0;
  for (const ModeResult& m : report.modes) {
    if (m.mode == mode) mine = m.tokens_per_s;
    if (m.mode == baseline) theirs = m.tokens_per_s;
  }
  return mine > 0 && theirs > 0 ? mine / theirs : 0.0;
}

ThroughputReport run_throughput_bench(const ThroughputOptions& options) {
  if (options.modes.empty()) throw ConfigError("--modes: name at least one mode");
  // Parse every mode's command line first: a bad configuration fails before
  // anything runs, and the simulation reads the same configuration.
  for (TrainingMode mode : options.modes) parse_for(options, mode_args(options, mode));
  const Config config = parse_for(options, mode_args(options, TrainingMode::msd_greedy)).config;
  const WorkDir work_dir(options.work_dir, "throughput", true);  // kept, for inspection
  const std::string& work = work_dir.path();
  std::fprintf(stderr, "msd-bench throughput: reading the stream's %llu steps for the device-model evaluation\n",
               static_cast<unsigned long long>(config.job.steps));
  std::vector<std::vector<PlanDoc>> steps;
  for (StepDocuments& step : job_step_documents(config, config.job.steps)) steps.push_back(std::move(step.docs));
  const DeviceModel device = make_device_model(config);
  const Parallel parallel{static_cast<uint32_t>(config.topology.dp), static_cast<uint32_t>(config.topology.pp),
                          static_cast<uint32_t>(config.topology.cp), static_cast<uint32_t>(config.topology.tp)};
  ThroughputReport report;
  report.time_scale = config.emulator.time_scale;
  for (TrainingMode mode : options.modes) {
    ModeResult result;
    result.mode = mode;
    result.simulated = evaluate_mode(mode, steps, make_pack_options(config), make_cost_model(config), device, parallel);
    const double emulated_s = result.simulated.seconds * report.time_scale;
    result.simulated_tokens_per_s = emulated_s > 0 ? static_cast<double>(result.simulated.real_positions) / emulated_s : 0;
    run_mode(options, work, result);
    result.simulation_error = result.simulated_tokens_per_s > 0 ? result.tokens_per_s / result.simulated_tokens_per_s - 1 : 0;
    report.same_positions = report.same_positions && result.tokens == static_cast<double>(result.simulated.real_positions);
    report.modes.push_back(result);
  }
  return report;
}

std::string throughput_json(const ThroughputReport& r) {
  JsonWriter w;
  w.begin_object();
  w.begin_object("modes");
  for (const ModeResult& m : r.modes) {
    const ModeEvaluation& e = m.simulated;
    w.begin_object(training_mode_name(m.mode));
    w.value("tokens_per_s", m.tokens_per_s).value("step_s", m.steps > 0 ? m.wall_s / m.steps : 0.0);
    w.value("padding_fraction", e.padding_fraction).value("dp_max_over_mean", e.dp_max_over_mean);
    w.value("microbatch_max_over_mean", e.microbatch_max_over_mean).value("bubble_fraction", e.bubble_fraction);
    w.value("data_wait_s", m.data_wait_s).value("tokens", m.tokens).value("wall_s", m.wall_s).value("ranks", m.ranks);
    w.value("simulated_tokens_per_s", m.simulated_tokens_per_s).value("simulation_error", m.simulation_error);
    w.value("simulated_step_s", e.steps ? e.seconds / static_cast<double>(e.steps) : 0.0);
    w.end_object();
  }
  w.end_object();
  w.begin_object("speedup");
  for (const ModeResult& m : r.modes)
    for (const ModeResult& b : r.modes)
      if (!is_baseline(m.mode) && is_baseline(b.mode))
        w.value(str(training_mode_name(m.mode), "_over_", training_mode_name(b.mode)), measured_speedup(r, m.mode, b.mode));
  w.end_object();
  w.begin_object("simulated_speedup");
  for (const ModeResult& m : r.modes)
    for (const ModeResult& b : r.modes)
      if (!is_baseline(m.mode) && is_baseline(b.mode) && b.simulated.tokens_per_s > 0)
        w.value(str(training_mode_name(m.mode), "_over_", training_mode_name(b.mode)),
                m.simulated.tokens_per_s / b.simulated.tokens_per_s);
  w.end_object();
  w.value("cost_model_fit", planner_fit(r));
  w.value("time_scale", r.time_scale).value("same_positions", r.same_positions);
  w.end_object();
  return w.str();
}

void write_throughput_text(const ThroughputReport& r, std::ostream& out) {
  char line[320];
  out << "msd-bench throughput: every mode on the same documents; measured by the MPI run, balance, padding and\n"
         "bubbles from the device model on the same steps (simulated tokens/s in emulated time, time scale "
      << r.time_scale << ")\n";
  std::snprintf(line, sizeof line, "  %-18s %6s %11s %8s %8s %8s %9s %9s %8s %11s %7s\n", "mode", "ranks", "tokens/s",
                "step s", "wait s", "padding", "DP max/mn", "mb max/mn", "bubble", "simulated", "error");
  out << line;
  for (const ModeResult& m : r.modes) {
    const ModeEvaluation& e = m.simulated;
    std::snprintf(line, sizeof line, "  %-18s %6d %11.0f %8.3f %8.3f %7.1f%% %9.3f %9.3f %7.1f%% %11.0f %+6.1f%%\n",
                  training_mode_name(m.mode), m.ranks, m.tokens_per_s, m.steps > 0 ? m.wall_s / m.steps : 0.0,
                  m.data_wait_s, 100 * e.padding_fraction, e.dp_max_over_mean, e.microbatch_max_over_mean,
                  100 * e.bubble_fraction, m.simulated_tokens_per_s, 100 * m.simulation_error);
    out << line;
  }
  for (const ModeResult& m : r.modes) {
    if (is_baseline(m.mode)) continue;
    out << "  " << training_mode_name(m.mode) << ":";
    for (const ModeResult& b : r.modes) {
      if (!is_baseline(b.mode)) continue;
      std::snprintf(line, sizeof line, "  %.3fx over %s (simulated %.3fx)", measured_speedup(r, m.mode, b.mode),
                    training_mode_name(b.mode),
                    b.simulated.tokens_per_s > 0 ? m.simulated.tokens_per_s / b.simulated.tokens_per_s : 0.0);
      out << line;
    }
    out << '\n';
  }
  std::snprintf(line, sizeof line, "  cost_model_fit (planner cost vs device time, Spearman over a step's micro-batches): %.3f\n",
                planner_fit(r));
  out << line;
  if (!r.same_positions)
    out << "  note: a run's token count differs from the stream's (a bad sample dropped or replaced?)\n";
}

}  // namespace msd::bench
