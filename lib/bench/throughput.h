// msd-bench throughput: every training mode (plan/step/modes.h) on the same
// configuration, back to back, through the same msd-run binary under mpirun,
// on the same documents each step; the trainer emulator sleeps the device
// model's time (plan/cluster/device_model.h). Per mode: measured tokens/s, step time
// and data wait from the run's summary; padding, DP and micro-batch balance,
// bubbles and the planner cost's fit from the same steps on the device model
// (MPI-free, plan/cluster/compare.h), whose tokens/s is set beside the measurement.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "plan/cluster/compare.h"

namespace msd::bench {

struct ThroughputOptions {
  std::string config;                  // msd-run configuration file
  std::vector<std::string> overrides;  // extra msd-run options, every mode
  std::string work_dir;                // summaries and logs; default: a temp dir
  std::vector<TrainingMode> modes{std::begin(kTrainingModes), std::end(kTrainingModes)};
};

struct ModeResult {
  TrainingMode mode = TrainingMode::msd_greedy;
  int ranks = 0;
  // Measured (the MPI run's summary).
  double tokens_per_s = 0, wall_s = 0, data_wait_s = 0, tokens = 0, steps = 0;
  // The same steps on the device model; tokens/s in emulated time (the run
  // sleeps emulator.time_scale x device seconds).
  ModeEvaluation simulated;
  double simulated_tokens_per_s = 0;
  double simulation_error = 0;  // measured / simulated tokens/s - 1
};

struct ThroughputReport {
  std::vector<ModeResult> modes;
  double time_scale = 1.0;
  // Whether every mode trained on as many positions as the device-model
  // evaluation of the stream places (the same documents, by their sum).
  bool same_positions = true;
};

// Measured tokens/s of `mode` over `baseline`'s (0 when either is missing).
double measured_speedup(const ThroughputReport& report, TrainingMode mode, TrainingMode baseline);

// The planner cost's fit to device time (ModeEvaluation::cost_model_fit) of
// msd_greedy, else msd_kk, else msd_tokens; 1 when none ran.
double planner_fit(const ThroughputReport& report);

// Throws ConfigError for a bad configuration (before running anything) and
// Error when a run fails (its log is named).
ThroughputReport run_throughput_bench(const ThroughputOptions& options);
std::string throughput_json(const ThroughputReport& report);
void write_throughput_text(const ThroughputReport& report, std::ostream& out);

}  // namespace msd::bench
