// `msd-plan simulate`: plans steps for an emulated cluster from synthetic
// heavy-tailed metadata (no data, no MPI) with every balance method, and
// reports the planner's time per step and the balance it reaches. The logic
// lives here so tests reach it; app/msd_plan.cc only parses the command line.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"

namespace msd {

struct SimulateOptions {
  uint32_t gpus = 4096;            // emulated GPUs; dp = gpus / (tp * pp * cp) unless dp is set
  uint32_t dp = 0;                 // data-parallel ranks (buckets). Default: 0, derive from gpus
  uint32_t tp = 8, pp = 1, cp = 1;
  uint32_t samples_per_gpu = 8;    // samples per step per data-parallel rank (one model replica)
  uint32_t seq_len = 32768;
  uint32_t micro_batches = 4;
  uint32_t steps = 20;
  uint64_t seed = 1;
  LongDocs long_docs = LongDocs::split;
  bool varlen = false;             // variable-length micro-batches for msd's placements (PackOptions::varlen)
  CostOptions model{4096, 32, 1024, 24, 0.0, 0.0, ""};  // hidden, layers, vision_hidden, vision_layers
  double cost_a = 0.0;             // CostModel::from's a_override; 0: 6 * hidden
  double tflops = 400.0;           // emulated device speed for the step-time estimate
  // The synthetic mix (shares of samples; the rest is short web text).
  double long_share = 0.15;        // long documents: Pareto lengths from seq_len / 4, alpha 1.1
  double image_share = 0.2;        // image-text: 64..1024 patches and a short caption
  // Lengths of the text documents (the samples not image-text): "pareto"
  // (short web text and long_share long documents, above), a published
  // corpus mix (corpus_mix), or "file:PATH", lengths measured on a dataset
  // (one a line, drawn uniformly; measured_lengths); long_share then unused.
  std::string lengths = "pareto";
  std::vector<BalanceMethod> methods = {BalanceMethod::tokens, BalanceMethod::greedy, BalanceMethod::karmarkar_karp};
  // msd's placement options, as the job's (job.cuts, job.micro_batch_count,
  // job.max_positions_per_micro_batch, model.cost_micro_batch, job.hold_above,
  // job.hold_steps; docs/cost-and-balance.md). cuts = balance and variable
  // micro-batches place variable-length rows.
  Cuts cuts = Cuts::whole;
  bool variable_micro_batches = false;
  uint64_t max_positions_per_micro_batch = 0;
  double cost_micro_batch = 0.0;
  double hold_above = 0.0;  // x seq_len; 0: no hold
  uint32_t hold_steps = 8;
};

// The hold's threshold (x seq_len) of the compared `_hold` placements, in
// msd-plan place and msd-bench sweep alike (docs/cost-and-balance.md
// "Choosing the defaults").
inline constexpr double kComparedHoldAbove = 0.625;

// msd's packing options for `options` at `dp` ranks (the hold releasing dp
// documents together, its last step options.steps - 1).
PackOptions simulate_pack_options(const SimulateOptions& options, uint32_t dp);
// The planner's analytic cost for `options`: CostModel::from(model, cost_a)
// with cost_micro_batch.
CostModel simulate_cost(const SimulateOptions& options);

// One method over all steps. Medians and worsts are over steps; a step's
// micro-batch figure is its worst micro-batch index.
struct MethodReport {
  BalanceMethod method = BalanceMethod::greedy;
  double ms_median = 0.0, ms_max = 0.0;              // pack_step wall time per step
  // pack_step's thread CPU time per step: what one core spends, whatever
  // else shares the machine (wall time counts the waits for a core too).
  double cpu_ms_median = 0.0, cpu_ms_max = 0.0;
  double imbalance_median = 0.0, imbalance_worst = 0.0;  // DP max/mean cost
  double lower_bound_median = 0.0, lower_bound_worst = 0.0;
  double pigeonhole_median = 0.0, pigeonhole_worst = 0.0;   // PlanStats::pigeonhole_bound
  // The heaviest bucket over the step's padding-aware lower bound
  // (PlanStats::bound_cost, with the pigeonhole bounds): 1 is optimal.
  double over_bound_median = 0.0, over_bound_worst = 0.0;
  double micro_batch_median = 0.0, micro_batch_worst = 0.0;  // per-index max/mean cost
  double positions_median = 0.0, positions_worst = 0.0;      // DP max/mean positions
  double step_seconds_median = 0.0;  // the slowest bucket's compute time at `tflops`
  // Sum over steps of the heaviest bucket's cost (the run's compute time in
  // units of cost), the pieces placed per step against Megatron's cut of the
  // same documents (cuts = balance; else 0), and the most micro-batches a
  // bucket had.
  double max_cost_sum = 0.0;
  double pieces_per_step = 0.0, megatron_pieces_per_step = 0.0;
  uint64_t max_micro_batches = 0;
  // Steps whose heaviest bucket is within 1% of the lower bound.
  uint32_t steps_on_target = 0;
};

struct SimulateReport {
  SimulateOptions options;
  uint32_t dp = 0;
  double docs_per_step = 0.0, pieces_per_step = 0.0;
  std::vector<MethodReport> methods;
  HoldStats hold;  // the outlier hold's delays (options.hold_above > 0)
};

// A corpus's documents as published: per component, the share of its tokens
// in the mix and its mean document length in tokens. Lengths are drawn
// log-normal (sigma 1) around each component's mean.
struct CorpusComponent {
  const char* name;
  double token_share;
  double mean_tokens;
};
// "pile": the Pile (Gao et al. 2021, arXiv:2101.00027, Table 1): every
// component's effective size (weight) and mean document size, at 4 bytes a
// token. "llama": LLaMA's pre-training mix (Touvron et al. 2023,
// arXiv:2302.13971, Table 1, sampling proportions) with the mean document
// size of the Pile's component of the same kind (CommonCrawl and C4: Pile-CC;
// GitHub; Wikipedia; Books: Books3; ArXiv; StackExchange). ConfigError
// naming `what` for another name.
std::vector<CorpusComponent> corpus_mix(const std::string& name, const std::string& what);

// The lengths in PATH, one whole number > 0 a line (read once, then kept).
// Throws ConfigError naming the file and line.
const std::vector<uint32_t>& measured_lengths(const std::string& path);

// The documents of step `step`: a pure function of (options, step).
std::vector<PlanDoc> synthetic_step(const SimulateOptions& options, const CostModel& cost, uint64_t step);

// Throws ConfigError for a layout that does not divide (gpus by tp*pp*cp) or a
// zero size.
SimulateReport simulate(const SimulateOptions& options);

void print_report(const SimulateReport& report, std::ostream& out);
std::string report_json(const SimulateReport& report);

}  // namespace msd
