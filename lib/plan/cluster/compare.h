// Evaluating training modes on a device model, without MPI: place each step's
// documents with every mode (plan/step/modes.h), charge each DP rank the device
// time of its micro-batches, and report throughput, padding, balance and
// bubbles per mode. `msd-plan simulate --compare`, `msd-bench sweep` and the
// simulated side of `msd-bench throughput` all go through evaluate_mode.
// docs/evaluation.md.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/cluster/device_model.h"
#include "plan/step/modes.h"

namespace msd {

// One mode over a run of steps. Ratios are medians over steps.
struct ModeEvaluation {
  TrainingMode mode = TrainingMode::msd_greedy;
  uint64_t steps = 0;                // steps placed (a stream mode's may differ from the run's)
  bool varlen = false;               // its rows: variable-length (varlen_rows) or fixed [sequences, seq_len]
  uint64_t real_positions = 0;       // tokens + patches placed (padding excluded)
  uint64_t computed_positions = 0;   // rows' positions (sequences x seq_len, or varlen rows): what the GPUs compute
  double seconds = 0.0;              // sum over steps of StepTime::step_seconds
  double tokens_per_s = 0.0;         // real_positions / seconds
  double padding_fraction = 0.0;     // 1 - real / computed
  double dp_max_over_mean = 1.0;     // StepTime's: device time over DP ranks
  double dp_max_over_mean_worst = 1.0;
  double microbatch_max_over_mean = 1.0;  // StepTime's: slowest micro-batch over the mean
  double bubble_fraction = 0.0;      // StepTime's, mean over steps
  // Spearman rank correlation between the planner's cost of a micro-batch and
  // its device time, over the step's micro-batches (median over steps; 1 when
  // a step has fewer than 3 micro-batches with work).
  double cost_model_fit = 1.0;
  // The fewest and most sequences (rows) a DP rank got in a step: equal for
  // the megatron modes (megatron_dynamic_cp: samples a rank of the dp x cp
  // domain computed in a step).
  uint64_t sequences_per_rank_min = 0, sequences_per_rank_max = 0;
};

// `steps[t]` holds step t's documents in arrival order, with ids 0..n-1
// (any order), placed by place_run (ids made unique over the run; `stream`
// for the stream modes) or, for megatron_dynamic_cp, place_dynamic_cp per
// step. The tokens/s is the run's positions over its time: every mode places
// the same documents (for megatron, a run cut by whole_global_batches), so
// it compares the time to train the same tokens. options.dp and options.cp
// must equal parallel.dp and .cp. Throws ConfigError (check_mode) for a mode
// that cannot place under `options`.
ModeEvaluation evaluate_mode(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                             const PackOptions& options, const CostModel& cost, const DeviceModel& device,
                             const Parallel& parallel, const StreamOptions& stream = StreamOptions{});

// A step's documents (ids 0..n-1, any order) indexed by id, as shape_of and
// step_time_of want them.
std::vector<PlanDoc> by_id(const std::vector<PlanDoc>& docs);

// One step placed by `mode`, on the device model: rows `varlen` or fixed,
// attending as `attention` says (row_attention of the mode).
StepTime step_time_of(const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs_by_id,
                      uint32_t seq_len, const DeviceModel& device, const Parallel& parallel, bool varlen = false,
                      RowAttention attention = RowAttention::segments);

}  // namespace msd
