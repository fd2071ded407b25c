#include "bench/throughput.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "bench/launch.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "msd/config.h"

namespace msd::bench {

namespace {
ModeResult run_mode(const ThroughputOptions& options, const std::string& mode, const std::string& work) {
  std::vector<std::string> args = {"--config", options.config, "--mode", mode};
  args.insert(args.end(), options.overrides.begin(), options.overrides.end());
  // Parse here first: a bad configuration fails before anything runs, and
  // the rank count comes from the same code msd-run uses.
  std::vector<const char*> argv = {"msd-run"};
  for (const auto& a : args) argv.push_back(a.c_str());
  const Invocation inv = parse_command_line(static_cast<int>(argv.size()), argv.data());
  ModeResult result;
  result.mode = mode;
  result.ranks = inv.config.world_size();
  const std::string summary = work + "/" + mode + ".json";
  const std::string log = work + "/" + mode + ".log";
  args.push_back("--summary-json");
  args.push_back(summary);
  args.push_back("--output.progress_every=0");
  std::fprintf(stderr, "msd-bench throughput: running %s on %d ranks (log %s)\n", mode.c_str(), result.ranks,
               log.c_str());
  const int rc = run_command(mpirun_command(result.ranks, executable_dir() + "/msd-run", args), log);
  if (rc != 0) throw Error(str("the ", mode, " run failed with exit code ", rc, "; see ", log));
  const JsonValue s = read_json_file(summary);
  result.tokens_per_s = json_number(s, "tokens_per_s");
  result.wall_s = json_number(s, "wall_s");
  result.data_wait_s = json_number(s, "data_wait_s");
  result.dp_median = json_number(s, "dp_max_over_mean.median");
  result.dp_max = json_number(s, "dp_max_over_mean.max");
  result.mb_median = json_number(s, "microbatch_max_over_mean.median");
  result.mb_max = json_number(s, "microbatch_max_over_mean.max");
  result.bound_median = json_number(s, "lower_bound.median");
  result.bound_max = json_number(s, "lower_bound.max");
  result.tokens = json_number(s, "tokens");
  result.steps = json_number(s, "steps");
  if (const JsonValue* d = s.find("batch_digest")) result.batch_digest = d->string;
  return result;
}
}  // namespace

ThroughputReport run_throughput_bench(const ThroughputOptions& options) {
  std::string work = options.work_dir;
  if (work.empty()) {
    char pattern[] = "/tmp/msd-bench-XXXXXX";
    if (!::mkdtemp(pattern)) throw IoError("cannot create a temporary directory under /tmp");
    work = pattern;
  }
  ThroughputReport report;
  report.colocated = run_mode(options, "colocated", work);
  report.disaggregated = run_mode(options, "disaggregated", work);
  report.speedup = report.colocated.tokens_per_s > 0 ? report.disaggregated.tokens_per_s / report.colocated.tokens_per_s : 0;
  return report;
}

std::string throughput_json(const ThroughputReport& r) {
  JsonWriter w;
  w.begin_object();
  w.begin_object("tokens_per_s")
      .value("colocated", r.colocated.tokens_per_s)
      .value("disaggregated", r.disaggregated.tokens_per_s)
      .end_object();
  w.value("speedup", r.speedup);
  w.begin_object("dp_max_over_mean");
  for (const ModeResult* m : {&r.colocated, &r.disaggregated})
    w.begin_object(m->mode).value("median", m->dp_median).value("max", m->dp_max).end_object();
  w.end_object();
  w.begin_object("microbatch_max_over_mean");
  for (const ModeResult* m : {&r.colocated, &r.disaggregated})
    w.begin_object(m->mode).value("median", m->mb_median).value("max", m->mb_max).end_object();
  w.end_object();
  // The bound depends on the documents of a step; msd's steps are the
  // reference (the baseline takes the same mix, not the same documents).
  w.begin_object("lower_bound")
      .value("median", r.disaggregated.bound_median)
      .value("max", r.disaggregated.bound_max)
      .end_object();
  w.begin_object("data_wait_s")
      .value("colocated", r.colocated.data_wait_s)
      .value("disaggregated", r.disaggregated.data_wait_s)
      .end_object();
  w.begin_object("wall_s").value("colocated", r.colocated.wall_s).value("disaggregated", r.disaggregated.wall_s).end_object();
  w.begin_object("ranks").value("colocated", r.colocated.ranks).value("disaggregated", r.disaggregated.ranks).end_object();
  w.end_object();
  return w.str();
}

void write_throughput_text(const ThroughputReport& r, std::ostream& out) {
  char line[256];
  out << "msd-bench throughput: the same configuration, colocated baseline vs disaggregated\n";
  std::snprintf(line, sizeof line, "  %-14s %8s %12s %8s %10s %19s %19s\n", "mode", "ranks", "tokens/s", "wall s",
                "wait s", "DP max/mean med|max", "mb max/mean med|max");
  out << line;
  for (const ModeResult* m : {&r.colocated, &r.disaggregated}) {
    std::snprintf(line, sizeof line, "  %-14s %8d %12.0f %8.2f %10.3f %9.3f|%-9.3f %9.3f|%-9.3f\n", m->mode.c_str(),
                  m->ranks, m->tokens_per_s, m->wall_s, m->data_wait_s, m->dp_median, m->dp_max, m->mb_median,
                  m->mb_max);
    out << line;
  }
  std::snprintf(line, sizeof line, "  speedup (disaggregated / colocated tokens/s): %.2fx\n", r.speedup);
  out << line;
  std::snprintf(line, sizeof line, "  lower bound of DP max/mean (msd's steps): median %.3f, max %.3f\n",
                r.disaggregated.bound_median, r.disaggregated.bound_max);
  out << line;
}

}  // namespace msd::bench
