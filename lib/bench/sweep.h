// msd-bench sweep: the gain at scale, without MPI. For every seq_len x dp x
// mix x pp row, msd_greedy against each baseline on the device model
// (plan/simulate_compare.h), with the average and best over rows and the
// average per seq_len, as text, JSON, CSV and a PNG plot.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "plan/simulate_compare.h"

namespace msd::bench {

// A synthetic document mix (SimulateOptions' shares).
struct SweepMix {
  std::string name;
  double long_share = 0.0;   // long documents (Pareto from seq_len / 4)
  double image_share = 0.0;  // image-text samples
};
// "longtail_text" (15% long, no images), "text_image" (15% long, 40%
// image-text), "demo" (the demo dataset's mix: 30% long books, 20% images).
std::vector<SweepMix> sweep_mixes();

struct SweepOptions {
  std::vector<uint32_t> seq_lens = {4096, 8192, 16384, 32768, 65536};
  std::vector<uint32_t> dps = {8, 16, 32, 64, 128, 256, 512};
  std::vector<uint32_t> pps = {1, 4};
  std::vector<std::string> mixes = {"longtail_text", "text_image", "demo"};
  uint32_t tp = 8;
  uint32_t samples_per_gpu = 16;  // samples per DP rank and step
  uint32_t micro_batches_per_stage = 2;  // micro-batches = this x pp (at least pp, for 1F1B)
  uint32_t steps = 4;
  uint64_t seed = 1;
  bool varlen = false;     // msd_greedy's micro-batches as variable-length rows (PackOptions::varlen)
  CompareOptions compare;  // model and device presets
};

struct SweepRow {
  uint32_t seq_len = 0, dp = 0, pp = 0;
  std::string mix;
  std::map<std::string, double> speedup;  // msd_greedy over each baseline, by baseline name
  double greedy_dp_max_over_mean = 1.0;
  // Device-time DP max/mean and padding fraction of each mode placed (by mode
  // name): a baseline's DP max/mean is about the most that balancing alone
  // can win over it.
  std::map<std::string, double> dp_max_over_mean, padding_fraction;
  CostModel cost;           // the planner's in this row (calibrated per row unless --cost-model analytic)
  Calibration calibration;  // probes == 0: analytic
};

struct SweepReport {
  SweepOptions options;
  std::vector<SweepRow> rows;
  std::map<std::string, double> average, best;                   // by baseline
  std::map<uint32_t, std::map<std::string, double>> by_seq_len;  // average per seq_len, by baseline
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
