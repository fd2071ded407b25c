// msd-bench sweep: the gain at scale on the device model, without MPI. For
// every seq_len x dp x mix x pp row (and the context-parallel rows: cp x
// seq_len x mix at the first dp, pp 1) and every seed, the same synthetic
// steps are placed by Megatron-LM as it runs (megatron, megatron_docmask,
// megatron_dp_balanced; megatron_dynamic_cp in the CP rows), by the published
// system's colocated_samples, and by msd's placements (sweep_placements), and
// each comparison's tokens/s ratio is summarised as a geometric mean over
// rows and seeds with a 95% bootstrap interval. The planner's cost is
// analytic for the headline; a calibrated cost, fitted on another seed's
// steps, is shown beside it. Sensitivity rows vary the device model (GEMM
// efficiency, FlashAttention 2 against 3) and the share of long documents.
// Text, JSON, CSV and a PNG.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "plan/cluster/simulate_compare.h"

namespace msd::bench {

// A document mix (SimulateOptions' shares and lengths).
struct SweepMix {
  std::string name;
  std::string lengths = "pareto";  // SimulateOptions::lengths
  double long_share = 0.0;         // long documents (pareto: Pareto from seq_len / 4)
  double image_share = 0.0;        // image-text samples
};
// "longtail_text" (15% long, no images), "text_image" (15% long, 40%
// image-text), "demo" (the demo dataset's shares: 30% long, 20% images),
// "pile" and "llama" (text lengths of the published corpora, corpus_mix),
// and "measured" (the lengths in `lengths_file`, SweepOptions; none without one).
std::vector<SweepMix> sweep_mixes(const std::string& lengths_file = "");

// One of msd's placements in the sweep, compared with every baseline. Adding
// a placement to the sweep is one line in sweep_placements().
struct SweepPlacement {
  std::string name;  // its key: e.g. msd_greedy_varlen, calibrated_msd_greedy
  TrainingMode mode;
  bool varlen;      // variable-length rows
  bool calibrated;  // placed by the calibrated cost
  // msd's placement options (SimulateOptions'): cuts = balance and variable
  // micro-batches place variable-length rows; the outlier hold's threshold
  // (x seq_len, 0: none). Variable-length rows under CP are split per
  // document piece (THD, docs/batch.md).
  Cuts cuts = Cuts::whole;
  bool variable_micro_batches = false;
  double hold_above = 0.0;
  // Placed in the CP rows too (msd_greedy_varlen and its calibrated twin
  // are not: their whole-document THD rows add a third to the sweep's time
  // there and msd_greedy_cut_vmb covers variable-length rows under CP).
  bool cp_rows = true;
};
// msd_tokens and msd_greedy (fixed rows), msd_greedy_varlen (cp 1 rows),
// msd_greedy with cuts and variable micro-batch counts (msd_greedy_cut_vmb),
// the same with the outlier hold (msd_greedy_cut_vmb_hold, above
// kComparedHoldAbove x seq_len), and msd_greedy placed by the calibrated cost in
// both row shapes (varlen: cp 1 rows).
const std::vector<SweepPlacement>& sweep_placements();
// The baseline msd's best placement is chosen over (SweepReport::best).
inline constexpr TrainingMode kBestChosenOver = TrainingMode::megatron_docmask;
// The Megatron baselines every placement is compared with: megatron,
// megatron_docmask, megatron_dp_balanced, megatron_dynamic_cp (cp > 1 rows).
const std::vector<TrainingMode>& sweep_megatron_baselines();

// One comparison: the evaluation `mine` over `theirs` (keys: a placement's
// name or a baseline mode's), each in its row shape. A row has it when it
// has both (megatron_dynamic_cp only in CP rows, varlen placements only in
// the others).
struct SweepComparison {
  std::string name;  // e.g. msd_greedy_over_megatron_docmask
  std::string mine, theirs;
  bool mine_varlen, theirs_varlen;
};
// Every placement over every Megatron baseline, msd_greedy over
// colocated_samples, and Megatron's among themselves (megatron_docmask over
// megatron, megatron_dp_balanced over megatron_docmask, megatron_dynamic_cp
// over megatron_dp_balanced).
const std::vector<SweepComparison>& sweep_comparisons();

// The geometric mean of ratios > 0 (0 for none).
double geomean(const std::vector<double>& ratios);

// A geometric mean of ratios with its 95% bootstrap interval.
struct Summary {
  double geomean = 0.0, low = 0.0, high = 0.0;
  uint64_t n = 0;
};
// Deterministic (fixed seed) percentile bootstrap over `ratios`, `resamples`
// times (0: no interval, low = high = the mean). REQUIRES every ratio > 0.
Summary summarize(const std::vector<double>& ratios, uint32_t resamples);

struct SweepOptions {
  std::vector<uint32_t> seq_lens = {4096, 16384, 32768, 65536};
  std::vector<uint32_t> dps = {16, 128};
  std::vector<uint32_t> pps = {1, 4};
  // The context-parallel rows: every cp x cp_seq_len x mix, at dps.front()
  // and pp 1 (Megatron's hybrid CP runs without pipeline stages). Empty cps: none.
  std::vector<uint32_t> cps = {2, 4, 8};
  std::vector<uint32_t> cp_seq_lens = {65536, 131072};
  std::vector<std::string> mixes = {"longtail_text", "text_image", "demo", "pile", "llama"};
  std::string lengths_file;  // the "measured" mix's document lengths, one a line (e.g. a dataset's)
  uint32_t tp = 8;
  // A step's size: documents per DP rank such that a rank holds about this
  // many seq_len sequences of tokens on average (the mix's mean length
  // measured on a pilot step), so that Megatron's global batch (megatron_batch:
  // about a step's samples; fewer micro-batches of one sample than the row's
  // when a step holds fewer) holds as many tokens as the others' steps, and
  // as many gradient all-reduces train the stream. 0: samples_per_gpu as given.
  double sequences_per_rank = 2.0;
  uint32_t samples_per_gpu = 16;         // documents per DP rank and step when sequences_per_rank is 0
  uint32_t micro_batches_per_stage = 2;  // micro-batches = this x pp (at least pp, for 1F1B)
  uint32_t steps = 50;                   // steps per row and seed
  uint32_t seeds = 5;                    // seeds 1..seeds per row
  uint32_t resamples = 2000;             // bootstrap resamples
  bool sensitivity = true;               // the sensitivity rows
  bool progress = true;                  // a line on stderr per row
  CompareOptions compare;                // model and device presets
};

struct SweepRow {
  uint32_t seq_len = 0, dp = 0, pp = 0, cp = 1, samples_per_gpu = 0;
  std::string mix;
  std::map<std::string, std::vector<double>> ratios;  // by comparison (those the row has), one per seed
  // Of the first seed, by evaluation key (a mode's name, a placement's):
  // device-time DP max/mean, padding fraction, fewest and most sequences a
  // DP rank got in a step.
  std::map<std::string, double> dp_max_over_mean, padding_fraction;
  std::map<std::string, std::pair<uint64_t, uint64_t>> sequences_per_rank;
  Calibration calibration;  // the first seed's held-out fit
};

struct SensitivityRow {
  std::string name;  // e.g. "gemm_efficiency x0.8"
  std::map<std::string, Summary> summary;  // by comparison, over seeds
};

struct SweepReport {
  SweepOptions options;
  std::vector<SweepRow> rows;
  // By comparison: over the cp 1 rows, those of seq_len >= 32768, and the CP rows.
  std::map<std::string, Summary> overall, long_context, context_parallel;
  // msd's best placement overall: of sweep_placements(), the one whose
  // tokens/s over kBestChosenOver has the highest geometric mean over every
  // (row, seed), cp 1 and CP rows together. Its comparisons are the summaries
  // of "<best>_over_<baseline>" (every placement's stay in the maps above).
  // Choosing it on the same rows favours msd slightly.
  std::string best;
  std::vector<SensitivityRow> sensitivity;
};

// Throws ConfigError for an unknown mix or an empty list.
SweepReport run_sweep(const SweepOptions& options);
std::string sweep_json(const SweepReport& report);
std::string sweep_csv(const SweepReport& report);
void write_sweep_text(const SweepReport& report, std::ostream& out);
// Writes the CSV to `csv` (when not empty) and draws `png` (when not empty)
// from it with tools/plot_sweep.py under /usr/bin/python3. Throws IoError when
// a file cannot be written or the plot script fails.
void write_sweep_files(const SweepReport& report, const std::string& csv, const std::string& png);

}  // namespace msd::bench
