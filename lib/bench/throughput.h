// msd-bench throughput: the colocated baseline and msd's disaggregated mode on
// the same configuration, back to back, through the same msd-run binary;
// tokens/s of each and their ratio, per-step max/mean cost over DP ranks,
// micro-batch balance and data wait, read from each run's summary.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace msd::bench {

struct ThroughputOptions {
  std::string config;                 // msd-run configuration file
  std::vector<std::string> overrides;  // extra msd-run options, both modes
  std::string work_dir;               // summaries and logs; default: a temp dir
};

struct ModeResult {
  std::string mode;
  int ranks = 0;
  double tokens_per_s = 0, wall_s = 0, data_wait_s = 0;
  double dp_median = 0, dp_max = 0, mb_median = 0, mb_max = 0;
  double bound_median = 0, bound_max = 0;
  double tokens = 0, steps = 0;
  std::string batch_digest;
};

struct ThroughputReport {
  ModeResult colocated, disaggregated;
  double speedup = 0;  // disaggregated tokens/s over colocated
};

// Throws ConfigError for a bad configuration (before running anything) and
// Error when a run fails (its log is named).
ThroughputReport run_throughput_bench(const ThroughputOptions& options);
std::string throughput_json(const ThroughputReport& report);
void write_throughput_text(const ThroughputReport& report, std::ostream& out);

}  // namespace msd::bench
