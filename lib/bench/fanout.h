// msd-bench fanout: the planner's own work per step as the job grows. Each
// row runs msd-run with C client ranks in data groups of T (tp = T, dp =
// C / T) on one node, tiny compute (emulator.time_scale = 0) and a global
// batch of samples_per_group samples per data group, and reads the summary's
// planner_work (docs/summary.md): wall and CPU time of the passes of the
// planner's loop that handled something, the part of the CPU time spent
// packing and balancing (placement), and the messages it received and sent,
// per step. A least-squares fit of the handling (CPU less placement) ms per
// step = base + per_group x groups + per_client x clients over the rows
// extrapolates to a large job, where the placement is measured
// (docs/planner-scaling.md). CPU time, not wall: on a node with more ranks
// than cores the planner's wall time counts the time it waited for a core.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace msd::bench {

struct FanoutOptions {
  std::vector<int> clients = {16, 32, 64};  // C per row
  std::vector<int> tps = {1, 4, 8};         // T per row (rows where T divides C)
  uint64_t steps = 30;
  uint32_t samples_per_group = 8;           // global_batch = this x data groups
  uint32_t seq_len = 1024;
  int loaders = 2;
  uint64_t documents = 20000;               // per generated source
  int gpus = 4096;                          // the extrapolation's job size
  std::vector<int> extrapolate_tps = {8, 1};  // data groups of this many GPUs at `gpus`
  double target_ms = 10.0;
  // The client ranks run under `nice -n client_nice` (mpirun MPMD: the
  // planner and loaders first, at normal priority), so that on a node of
  // more ranks than cores the planner gets a core when it has work, as it
  // has one of its own on a cluster node. 0: every rank at one priority.
  int client_nice = 19;
  // The planner rank runs alone on the first CPU this process may use, its
  // MPI polls not yielding (nothing else runs there), and every other rank
  // on the other CPUs: the core of its own it has on a cluster node. Needs
  // two CPUs or more; on one, nothing is pinned (the report says so).
  bool planner_core = true;
  int repeats = 1;                          // runs per row; the row kept is the one of median planner CPU time
  // msd's placement options in the runs and in the placement measured
  // alone: off (today's placement), or on: variable-length rows, job.cuts =
  // balance, job.micro_batch_count = variable and the outlier hold above
  // seq_len / 2 (docs/cost-and-balance.md).
  bool new_placement = false;
  std::string work_dir;                     // data, configurations, summaries, logs; default: a temp dir
};

struct FanoutRow {
  int clients = 0, tp = 0, groups = 0;
  uint64_t samples_per_step = 0;
  double ms_per_step = 0, cpu_ms_per_step = 0;  // planner_work
  double placement_cpu_ms_per_step = 0;         // of cpu_ms_per_step, packing and balancing (pack_step)
  double received_per_step = 0, sent_per_step = 0;
  double passes_per_step = 0;  // the planner loop's busy passes (each polls MPI once more and yields)
  double wall_s = 0;  // the run's summary wall_s
};

// y = base + per_group * groups + per_client * clients (least squares). When
// the rows do not vary groups apart from clients (one tp), per_group is 0 and
// `separated` false.
struct FanoutFit {
  double base = 0, per_group = 0, per_client = 0;
  bool separated = true;
  double at(double groups, double clients) const { return base + per_group * groups + per_client * clients; }
};

// At a large job: the handling (the planner's CPU time apart from packing
// and balancing) from its fit over the rows, which grows linearly with the
// groups and clients; the placement (pack_step) measured at that size on
// synthetic steps of the rows' documents (the mean over as many steps as a
// run has, the planner's pack options), since balancing is not linear in
// the groups; cpu = their sum.
// linear_cpu: the fit of the whole CPU time. in_run_cpu: the handling plus
// the placement slowed by FanoutReport::placement_in_run_factor, as the
// runs slowed it (the fit's handling was measured in the runs). The target
// is met when both cpu and in_run_cpu are within it.
struct FanoutPoint {
  int gpus = 0, tp = 0, groups = 0;
  double handling_cpu_ms_per_step = 0, placement_cpu_ms_per_step = 0;
  double placement_with_bound_cpu_ms_per_step = 0;  // pack_step with PackOptions::lower_bound, for comparison
  double cpu_ms_per_step = 0, linear_cpu_ms_per_step = 0, messages_per_step = 0;
  double in_run_cpu_ms_per_step = 0;
  bool meets_target = false;
};

// The sizes of FanoutReport::estimates, whatever --gpus and
// --extrapolate-tps say: (GPUs, tp).
inline constexpr std::pair<int, int> kEstimateSizes[] = {{4096, 1}, {4096, 8}, {16384, 8}};

struct FanoutReport {
  std::vector<FanoutRow> rows;
  FanoutFit cpu_ms, handling_cpu_ms, messages;  // messages: received + sent per step
  std::vector<FanoutPoint> extrapolated;
  // The same at kEstimateSizes, for comparing runs: the JSON's estimates_ms,
  // keyed by estimate_key ("gpus4096_tp1"), holds their cpu_ms_per_step.
  std::vector<FanoutPoint> estimates;
  double target_ms = 0;
  uint32_t samples_per_group = 0;
  int client_nice = 0;
  std::string planner_cpus, other_cpus;  // taskset CPU lists; empty: not pinned
  int repeats = 1;
  bool new_placement = false;  // FanoutOptions::new_placement
  // The placement CPU per step of the row of most groups in its run over
  // pack_step's measured alone at as many groups (the mean over as many steps
  // as a run has): how much the runs (a planner beside the job's other
  // ranks) slowed the same work.
  double placement_in_run_factor = 1.0;
  int factor_groups = 0;
};

FanoutFit fit_fanout(const std::vector<double>& groups, const std::vector<double>& clients,
                     const std::vector<double>& y);
FanoutReport run_fanout_bench(const FanoutOptions& options);
// The point of `gpus` GPUs in data groups of `tp` from the report's fits
// (placement_in_run_factor set), the placement measured at that size.
FanoutPoint extrapolate(const FanoutOptions& options, const FanoutReport& report, int gpus, int tp);
std::string estimate_key(const FanoutPoint& p);  // "gpus<G>_tp<T>"
// Thread CPU ms per step of pack_step for `groups` data groups of the bench's
// steps (samples_per_group documents of 32..543 tokens each), the mean over
// `steps` of them after one untimed; with the planner's pack options
// (PackOptions::lower_bound off) unless `lower_bound`.
double placement_cpu_ms(const FanoutOptions& options, int groups, int steps, bool lower_bound);
std::string fanout_json(const FanoutReport& report);
std::string fanout_text(const FanoutReport& report);

}  // namespace msd::bench
