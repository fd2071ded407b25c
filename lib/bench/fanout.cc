#include "bench/fanout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <tuple>

#include <sched.h>

#include "bench/launch.h"
#include "bench/work_dir.h"
#include "common/digest.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "msd/config.h"
#include "plan/step/cost.h"
#include "plan/step/pack.h"

namespace msd::bench {

namespace {

// Synthetic steps pack_step is timed on: as many as each run has (at least
// 7), since the runs' placement is a mean over their steps. Steps vary (at
// 128 groups some end after the first placement, others refine and try two
// more), so a median of a few would not compare with that mean.
int placement_steps(const FanoutOptions& options) {
  return static_cast<int>(std::clamp<uint64_t>(options.steps, 7, 1000));
}

// A pre-tokenized Megatron corpus of `documents` documents of 32..543
// tokens: the loaders do little work (no tokenizer), so the planner's
// share of the node is what the rows vary.
std::string write_corpus(const std::string& dir, int s, uint64_t documents) {
  return write_random_corpus(str(dir, "/corpus", s, "-", documents), documents, 32, 512, 30000,
                             0xfa0000ULL + static_cast<uint64_t>(s));
}

// Above the largest transformed sample of write_corpus's documents (543
// tokens), so nothing is skipped as too_large.
constexpr uint64_t kMaxSampleBytes = 16384;

// FanoutOptions::new_placement's [job] lines.
constexpr const char* kNewPlacement =
    "micro_batch_shape = varlen\ncuts = balance\nmicro_batch_count = variable\nhold_above = 0.5\n";

void set_new_placement(JobConfig& job) {
  job.micro_batch_shape = RowShape::varlen;
  job.cuts = Cuts::balance;
  job.micro_batch_count = MicroBatchCount::variable;
  job.hold_above = 0.5;
}

std::string write_config(const FanoutOptions& options, const std::string& work, const std::vector<std::string>& paths,
                         int clients, int tp) {
  const int dp = clients / tp;
  const std::string path = str(work, "/fanout-c", clients, "-t", tp, ".ini");
  std::ofstream out(path);
  out << "[job]\nsteps = " << options.steps << "\nglobal_batch = " << options.samples_per_group * dp
      << "\nseq_len = " << options.seq_len << "\nmicro_batches = 1\nprefetch_steps = 2\nseed = 3\n"
      // The corpus' documents take at most a few KiB: a window budget that
      // reserves 1 MiB (the default) per request would hold each loader to
      // 32 requests in flight and split every step's requests into many.
      << "max_sample_bytes = " << kMaxSampleBytes << "\n"
      << (options.new_placement ? kNewPlacement : "") << "\n"
      << "[topology]\ndp = " << dp << "\ntp = " << tp << "\nloaders = " << options.loaders << "\n\n[mix]\nsources = ";
  for (size_t s = 0; s < paths.size(); ++s) out << (s ? ", " : "") << "corpus" << s;
  out << "\n\n";
  for (size_t s = 0; s < paths.size(); ++s)
    out << "[source.corpus" << s << "]\nformat = indexed\npath = " << paths[s] << "\nweight = 1\n\n";
  // A loader shares its CPU with every client: on a busy node it can wait
  // past the default 2 s deadline for a core, which is no failure here.
  out << "[loader]\nwindow_mb = 32\ndeadline_ms = 30000\n\n[emulator]\ntime_scale = 0\n\n[output]\nprogress_every = 0\nlog_level = warn\n";
  if (!out) throw IoError(str("cannot write ", path));
  return path;
}

// The CPUs of the planner rank and of every other rank (taskset lists):
// the first CPU this process may use, and the rest; both empty when it may
// use only one, or when `options.planner_core` is off.
std::pair<std::string, std::string> cpu_split(const FanoutOptions& options) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (!options.planner_core || ::sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) return {};
  std::string others;
  for (size_t i = 1; i < cpus.size(); ++i) others += str(i > 1 ? "," : "", cpus[i]);
  return {std::to_string(cpus[0]), others};
}

// mpirun with three program contexts (MPMD): the planner (rank 0), the
// loaders (ranks 1..loaders), the clients; each under taskset where CPUs
// are given, the clients under nice, the pinned planner with
// mpi_yield_when_idle off.
std::vector<std::string> row_command(const FanoutOptions& options, const FanoutReport& report, int clients,
                                     const std::vector<std::string>& args) {
  const std::string program = executable_dir() + "/msd-run";
  auto context = [&](const std::string& cpus, std::vector<std::string> prefix) {
    std::vector<std::string> words;
    if (!cpus.empty()) words = {"taskset", "-c", cpus};
    words.insert(words.end(), prefix.begin(), prefix.end());
    words.push_back(program);
    return words;
  };
  std::vector<std::string> planner =
      context(report.planner_cpus, report.planner_cpus.empty() ? std::vector<std::string>{}
                                                               : std::vector<std::string>{"env", "OMPI_MCA_mpi_yield_when_idle=0"});
  planner.insert(planner.end(), args.begin(), args.end());
  std::vector<std::string> command = mpirun_command(1, planner[0], {planner.begin() + 1, planner.end()});
  auto append = [&](int ranks, std::vector<std::string> words) {
    command.insert(command.end(), {":", "-n", std::to_string(ranks)});
    command.insert(command.end(), words.begin(), words.end());
    command.insert(command.end(), args.begin(), args.end());
  };
  append(options.loaders, context(report.other_cpus, {}));
  std::vector<std::string> nice;
  if (options.client_nice != 0) nice = {"nice", "-n", std::to_string(options.client_nice)};
  append(clients, context(report.other_cpus, nice));
  return command;
}

FanoutRow run_row(const FanoutOptions& options, const FanoutReport& report, const std::string& work,
                  const std::vector<std::string>& paths, int clients, int tp, int repeat) {
  FanoutRow row;
  row.clients = clients;
  row.tp = tp;
  row.groups = clients / tp;
  row.samples_per_step = static_cast<uint64_t>(options.samples_per_group) * static_cast<uint64_t>(row.groups);
  const std::string config = write_config(options, work, paths, clients, tp);
  const std::string stem = str(config.substr(0, config.size() - 4), repeat > 0 ? str("-", repeat) : "");
  const int ranks = 1 + options.loaders + clients;
  std::fprintf(stderr, "msd-bench fanout: %d clients in %d data groups of %d, %d ranks (log %s.log)\n", clients,
               row.groups, tp, ranks, stem.c_str());
  const std::vector<std::string> args = {"--config", config, "--summary-json", stem + ".json"};
  const std::vector<std::string> command = row_command(options, report, clients, args);
  const int rc = run_command(command, stem + ".log");
  if (rc != 0) throw Error(str("the run of ", clients, " clients failed with exit code ", rc, "; see ", stem, ".log"));
  const JsonValue s = read_json_file(stem + ".json");
  auto number = [&](const std::string& key) {
    const double v = json_number(s, key);
    if (std::isnan(v)) throw Error(str(stem, ".json has no number ", key));
    return v;
  };
  if (number("bad_samples.too_large") != 0)
    throw Error(str(stem, ".json: samples skipped as too_large; the bench's job.max_sample_bytes (", kMaxSampleBytes,
                    ") is below its corpus' samples"));
  row.ms_per_step = number("planner_work.ms_per_step");
  row.cpu_ms_per_step = number("planner_work.cpu_ms_per_step");
  row.placement_cpu_ms_per_step = number("planner_work.placement_cpu_ms_per_step");
  row.received_per_step = number("planner_work.messages_received_per_step");
  row.sent_per_step = number("planner_work.messages_sent_per_step");
  row.passes_per_step = number("planner_work.busy_passes_per_step");
  row.wall_s = number("wall_s");
  return row;
}

// Solves the k x k system m x = v (Gaussian elimination, partial pivoting);
// false when it is singular relative to its scale.
bool solve(std::vector<std::vector<double>> m, std::vector<double> v, std::vector<double>& x) {
  const size_t k = v.size();
  double scale = 0;
  for (const auto& r : m)
    for (double e : r) scale = std::max(scale, std::fabs(e));
  for (size_t c = 0; c < k; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[pivot][c])) pivot = r;
    if (std::fabs(m[pivot][c]) <= 1e-9 * scale) return false;
    std::swap(m[c], m[pivot]);
    std::swap(v[c], v[pivot]);
    for (size_t r = c + 1; r < k; ++r) {
      const double f = m[r][c] / m[c][c];
      for (size_t j = c; j < k; ++j) m[r][j] -= f * m[c][j];
      v[r] -= f * v[c];
    }
  }
  x.assign(k, 0);
  for (size_t c = k; c-- > 0;) {
    double sum = v[c];
    for (size_t j = c + 1; j < k; ++j) sum -= m[c][j] * x[j];
    x[c] = sum / m[c][c];
  }
  return true;
}

// Least squares of y on the given columns (plus a constant first).
bool least_squares(const std::vector<std::vector<double>>& columns, const std::vector<double>& y,
                   std::vector<double>& x) {
  std::vector<std::vector<double>> cols = {std::vector<double>(y.size(), 1.0)};
  cols.insert(cols.end(), columns.begin(), columns.end());
  const size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k, 0));
  std::vector<double> v(k, 0);
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < k; ++j)
      for (size_t n = 0; n < y.size(); ++n) m[i][j] += cols[i][n] * cols[j][n];
    for (size_t n = 0; n < y.size(); ++n) v[i] += cols[i][n] * y[n];
  }
  return solve(m, v, x);
}

}  // namespace

std::string estimate_key(const FanoutPoint& p) { return str("gpus", p.gpus, "_tp", p.tp); }

FanoutFit fit_fanout(const std::vector<double>& groups, const std::vector<double>& clients,
                     const std::vector<double>& y) {
  FanoutFit fit;
  std::vector<double> x;
  if (y.size() >= 3 && least_squares({groups, clients}, y, x)) {
    fit.base = x[0];
    fit.per_group = x[1];
    fit.per_client = x[2];
    return fit;
  }
  fit.separated = false;
  if (y.size() >= 2 && least_squares({clients}, y, x)) {
    fit.base = x[0];
    fit.per_client = x[1];
  } else if (!y.empty()) {
    fit.base = y[0];
  }
  return fit;
}

double placement_cpu_ms(const FanoutOptions& options, int groups, int steps, bool lower_bound) {
  MSD_CHECK(steps > 0);
  Config config;
  config.job.seq_len = options.seq_len;
  config.job.micro_batches = 1;
  config.job.global_batch = options.samples_per_group * static_cast<uint64_t>(groups);
  config.topology.dp = groups;
  if (options.new_placement) set_new_placement(config.job);
  PackOptions pack = make_pack_options(config);
  pack.lower_bound = lower_bound;  // the planner places without it (PlannerRole)
  const CostModel cost = make_cost_model(config);
  uint64_t state = 0xfa0001ULL;
  double sum_ms = 0.0;
  // One untimed step first: the runs' mean over many steps hardly counts
  // their first one's page faults and cold caches.
  for (int rep = -1; rep < steps; ++rep) {
    std::vector<PlanDoc> docs(config.job.global_batch);
    for (uint32_t i = 0; i < docs.size(); ++i) {
      const auto tokens = static_cast<uint32_t>(32 + splitmix64(state) % 512);  // as write_corpus's documents
      docs[i] = PlanDoc{i, tokens, 0, cost.document(tokens, 0)};
    }
    timespec from{}, to{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &from);
    const PackedStep packed = pack_step(docs, pack, cost);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &to);
    if (packed.buckets.size() != static_cast<size_t>(groups)) throw Error("pack_step: wrong number of buckets");
    if (rep >= 0)
      sum_ms += 1e3 * (static_cast<double>(to.tv_sec - from.tv_sec) + 1e-9 * static_cast<double>(to.tv_nsec - from.tv_nsec));
  }
  return sum_ms / steps;
}

FanoutReport run_fanout_bench(const FanoutOptions& options) {
  if (options.clients.empty() || options.tps.empty()) throw ConfigError("--clients and --tps need a value each");
  if (options.steps < 2) throw ConfigError("--steps must be at least 2");
  if (options.samples_per_group < 1) throw ConfigError("--samples-per-group must be at least 1");
  if (options.loaders < 1) throw ConfigError("--loaders must be at least 1");
  if (options.client_nice < 0 || options.client_nice > 19) throw ConfigError("--client-nice must be in 0..19");
  if (options.repeats < 1) throw ConfigError("--repeats must be at least 1");
  std::vector<std::pair<int, int>> layouts;
  for (int c : options.clients)
    for (int t : options.tps) {
      if (c < 1 || t < 1) throw ConfigError("--clients and --tps must be at least 1");
      if (c % t == 0) layouts.push_back({c, t});
    }
  if (layouts.empty()) throw ConfigError("--tps: no value divides any of --clients");
  const WorkDir work_dir(options.work_dir, "fanout", true);  // kept, for inspection
  const std::string& work = work_dir.path();
  const std::vector<std::string> paths = {write_corpus(work, 0, options.documents),
                                          write_corpus(work, 1, options.documents)};
  FanoutReport report;
  report.target_ms = options.target_ms;
  report.samples_per_group = options.samples_per_group;
  report.client_nice = options.client_nice;
  std::vector<double> groups, clients, cpu, handling, messages;
  report.repeats = options.repeats;
  report.new_placement = options.new_placement;
  std::tie(report.planner_cpus, report.other_cpus) = cpu_split(options);
  if (options.planner_core && report.planner_cpus.empty())
    std::fprintf(stderr, "msd-bench fanout: one CPU only: the planner is not given a core of its own\n");
  for (const auto& [c, t] : layouts) {
    std::vector<FanoutRow> runs;
    for (int r = 0; r < options.repeats; ++r) runs.push_back(run_row(options, report, work, paths, c, t, r));
    std::sort(runs.begin(), runs.end(),
              [](const FanoutRow& x, const FanoutRow& y) { return x.cpu_ms_per_step < y.cpu_ms_per_step; });
    report.rows.push_back(runs[runs.size() / 2]);
    const FanoutRow& row = report.rows.back();
    groups.push_back(row.groups);
    clients.push_back(row.clients);
    cpu.push_back(row.cpu_ms_per_step);
    handling.push_back(row.cpu_ms_per_step - row.placement_cpu_ms_per_step);
    messages.push_back(row.received_per_step + row.sent_per_step);
  }
  report.cpu_ms = fit_fanout(groups, clients, cpu);
  report.handling_cpu_ms = fit_fanout(groups, clients, handling);
  report.messages = fit_fanout(groups, clients, messages);
  const auto largest = std::max_element(report.rows.begin(), report.rows.end(),
                                        [](const FanoutRow& x, const FanoutRow& y) { return x.groups < y.groups; });
  report.factor_groups = largest->groups;
  const double alone = placement_cpu_ms(options, largest->groups, placement_steps(options), false);
  if (alone > 0) report.placement_in_run_factor = largest->placement_cpu_ms_per_step / alone;
  for (int t : options.extrapolate_tps) report.extrapolated.push_back(extrapolate(options, report, options.gpus, t));
  // A size --gpus and --extrapolate-tps asked for already is not measured again.
  for (const auto& [gpus, tp] : kEstimateSizes) {
    const auto same = std::find_if(report.extrapolated.begin(), report.extrapolated.end(),
                                   [&](const FanoutPoint& p) { return p.gpus == gpus && p.tp == tp; });
    report.estimates.push_back(same != report.extrapolated.end() ? *same : extrapolate(options, report, gpus, tp));
  }
  return report;
}

FanoutPoint extrapolate(const FanoutOptions& options, const FanoutReport& report, int gpus, int tp) {
  FanoutPoint p;
  p.gpus = gpus;
  p.tp = tp;
  p.groups = gpus / tp;
  p.linear_cpu_ms_per_step = report.cpu_ms.at(p.groups, p.gpus);
  p.handling_cpu_ms_per_step = report.handling_cpu_ms.at(p.groups, p.gpus);
  p.placement_cpu_ms_per_step = placement_cpu_ms(options, p.groups, placement_steps(options), false);
  p.placement_with_bound_cpu_ms_per_step = placement_cpu_ms(options, p.groups, placement_steps(options), true);
  p.cpu_ms_per_step = p.handling_cpu_ms_per_step + p.placement_cpu_ms_per_step;
  p.messages_per_step = report.messages.at(p.groups, p.gpus);
  p.in_run_cpu_ms_per_step = p.handling_cpu_ms_per_step + p.placement_cpu_ms_per_step * report.placement_in_run_factor;
  p.meets_target = std::max(p.cpu_ms_per_step, p.in_run_cpu_ms_per_step) <= options.target_ms;
  return p;
}

namespace {
void write_fit(JsonWriter& w, const std::string& key, const FanoutFit& fit) {
  w.begin_object(key)
      .value("base", fit.base)
      .value("per_group", fit.per_group)
      .value("per_client", fit.per_client)
      .value("separated", fit.separated)
      .end_object();
}
}  // namespace

std::string fanout_json(const FanoutReport& report) {
  JsonWriter w;
  w.begin_object();
  w.value("samples_per_group", report.samples_per_group);
  w.value("client_nice", report.client_nice);
  w.value("planner_cpus", report.planner_cpus);
  w.value("other_cpus", report.other_cpus);
  w.value("repeats", report.repeats);
  w.value("new_placement", report.new_placement);
  w.value("placement_in_run_factor", report.placement_in_run_factor);
  w.value("factor_groups", report.factor_groups);
  w.begin_array("rows");
  for (const FanoutRow& row : report.rows)
    w.begin_object()
        .value("clients", row.clients)
        .value("tp", row.tp)
        .value("groups", row.groups)
        .value("samples_per_step", row.samples_per_step)
        .value("ms_per_step", row.ms_per_step)
        .value("cpu_ms_per_step", row.cpu_ms_per_step)
        .value("placement_cpu_ms_per_step", row.placement_cpu_ms_per_step)
        .value("messages_received_per_step", row.received_per_step)
        .value("messages_sent_per_step", row.sent_per_step)
        .value("busy_passes_per_step", row.passes_per_step)
        .value("wall_s", row.wall_s)
        .end_object();
  w.end_array();
  write_fit(w, "fit_cpu_ms_per_step", report.cpu_ms);
  write_fit(w, "fit_handling_cpu_ms_per_step", report.handling_cpu_ms);
  write_fit(w, "fit_messages_per_step", report.messages);
  w.value("target_ms", report.target_ms);
  w.begin_array("extrapolated");
  for (const FanoutPoint& p : report.extrapolated)
    w.begin_object()
        .value("gpus", p.gpus)
        .value("tp", p.tp)
        .value("groups", p.groups)
        .value("samples_per_step", static_cast<uint64_t>(p.groups) * report.samples_per_group)
        .value("handling_cpu_ms_per_step", p.handling_cpu_ms_per_step)
        .value("placement_cpu_ms_per_step", p.placement_cpu_ms_per_step)
        .value("placement_with_bound_cpu_ms_per_step", p.placement_with_bound_cpu_ms_per_step)
        .value("cpu_ms_per_step", p.cpu_ms_per_step)
        .value("linear_cpu_ms_per_step", p.linear_cpu_ms_per_step)
        .value("in_run_cpu_ms_per_step", p.in_run_cpu_ms_per_step)
        .value("messages_per_step", p.messages_per_step)
        .value("meets_target", p.meets_target)
        .end_object();
  w.end_array();
  w.begin_object("estimates_ms");
  for (const FanoutPoint& p : report.estimates) w.value(estimate_key(p), p.cpu_ms_per_step);
  w.end_object();
  w.end_object();
  return w.str();
}

std::string fanout_text(const FanoutReport& report) {
  std::string out = str("msd-bench fanout: the planner's work per step (", report.samples_per_group,
                        " samples per data group; CPU time of its thread, wall time of its busy passes; clients at nice ",
                        report.client_nice, "; ",
                        report.planner_cpus.empty()
                            ? std::string("no core of its own")
                            : str("planner on CPU ", report.planner_cpus, ", the other ranks on ", report.other_cpus),
                        "; median of ", report.repeats, report.repeats == 1 ? " run" : " runs", " per row)\n");
  char line[256];
  std::snprintf(line, sizeof line, "  %7s %3s %6s %8s %10s %9s %10s %9s %9s %7s\n", "clients", "tp", "groups",
                "samples", "cpu ms", "place ms", "wall ms", "received", "sent", "passes");
  out += line;
  for (const FanoutRow& r : report.rows) {
    std::snprintf(line, sizeof line, "  %7d %3d %6d %8llu %10.3f %9.3f %10.3f %9.1f %9.1f %7.1f\n", r.clients, r.tp,
                  r.groups, static_cast<unsigned long long>(r.samples_per_step), r.cpu_ms_per_step,
                  r.placement_cpu_ms_per_step, r.ms_per_step, r.received_per_step, r.sent_per_step, r.passes_per_step);
    out += line;
  }
  const FanoutFit& f = report.cpu_ms;
  const FanoutFit& h = report.handling_cpu_ms;
  const FanoutFit& m = report.messages;
  std::snprintf(line, sizeof line, "  fit: cpu ms/step = %.4f + %.5f x groups + %.5f x clients%s\n", f.base,
                f.per_group, f.per_client, f.separated ? "" : " (groups not separable: one tp)");
  out += line;
  std::snprintf(line, sizeof line, "  fit: handling (cpu - place) ms/step = %.4f + %.5f x groups + %.5f x clients\n",
                h.base, h.per_group, h.per_client);
  out += line;
  std::snprintf(line, sizeof line, "  fit: messages/step = %.2f + %.3f x groups + %.3f x clients\n", m.base,
                m.per_group, m.per_client);
  out += line;
  std::snprintf(line, sizeof line,
                "  placement in the runs: %.2fx pack_step's measured alone (mean per step, at %d groups, the largest row)\n",
                report.placement_in_run_factor, report.factor_groups);
  out += line;
  for (const FanoutPoint& p : report.extrapolated) {
    std::snprintf(line, sizeof line,
                  "  at %d GPUs, tp %d (%d groups): %.2f ms CPU per step = handling %.2f (fit) + placement %.2f "
                  "(measured; %.2f with the lower bound); %.2f with the placement slowed as in the runs; linear fit "
                  "%.2f; %.0f messages (target %.0f ms: %s)\n",
                  p.gpus, p.tp, p.groups, p.cpu_ms_per_step, p.handling_cpu_ms_per_step, p.placement_cpu_ms_per_step,
                  p.placement_with_bound_cpu_ms_per_step, p.in_run_cpu_ms_per_step, p.linear_cpu_ms_per_step,
                  p.messages_per_step, report.target_ms, p.meets_target ? "met" : "missed");
    out += line;
  }
  out += "  estimates (CPU ms per step: handling fit + placement measured):";
  for (const FanoutPoint& p : report.estimates) {
    std::snprintf(line, sizeof line, " %s %.2f (%d groups)", estimate_key(p).c_str(), p.cpu_ms_per_step, p.groups);
    out += line;
  }
  return out + "\n";
}

}  // namespace msd::bench
