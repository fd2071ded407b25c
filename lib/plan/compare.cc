#include "plan/compare.h"

#include <algorithm>

#include "common/error.h"

namespace msd {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 1.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The step's documents indexed by id, as shape_of wants them.
std::vector<PlanDoc> by_id(const std::vector<PlanDoc>& docs) {
  std::vector<PlanDoc> out(docs.size());
  for (const PlanDoc& doc : docs) out.at(doc.id) = doc;
  return out;
}

}  // namespace

StepTime step_time_of(const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs_by_id,
                      uint32_t seq_len, const DeviceModel& device, const Parallel& parallel, bool varlen) {
  std::vector<std::vector<MicroBatchShape>> shapes(buckets.size());
  for (size_t r = 0; r < buckets.size(); ++r)
    for (const MicroBatchPlan& mb : buckets[r].micro_batches)
      shapes[r].push_back(shape_of(mb, seq_len, docs_by_id, varlen));
  return step_time(device, parallel, shapes);
}

ModeEvaluation evaluate_mode(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                             const PackOptions& options, const CostModel& cost, const DeviceModel& device,
                             const Parallel& parallel) {
  MSD_CHECK_EQ(options.dp, parallel.dp);
  MSD_CHECK_EQ(options.cp, parallel.cp);
  ModeEvaluation e;
  e.mode = mode;
  e.steps = steps.size();
  std::vector<double> dp_ratio, mb_ratio, fit;
  double bubble = 0.0;
  for (const std::vector<PlanDoc>& step_docs : steps) {
    const std::vector<PlanDoc> docs = by_id(step_docs);
    const std::vector<BucketPlan> buckets = place_step(mode, step_docs, options, cost);
    // The baselines keep Megatron's fixed rows; msd's modes the planner's.
    const bool varlen = options.varlen && !is_baseline(mode);
    const StepTime t = step_time_of(buckets, docs, options.seq_len, device, parallel, varlen);
    std::vector<double> predicted, actual;
    for (const BucketPlan& bucket : buckets) {
      for (const MicroBatchPlan& mb : bucket.micro_batches) {
        e.real_positions += mb.positions;
        for (const PackedSequence& sequence : mb.sequences)
          e.computed_positions += row_positions(sequence.used, options.seq_len, varlen);
        if (mb.positions == 0) continue;
        const MicroBatchShape shape = shape_of(mb, options.seq_len, docs, varlen);
        predicted.push_back(planner_cost(varlen ? cost.unpadded() : cost, shape, options.cp));
        actual.push_back(micro_batch_seconds(device, parallel, shape));
      }
    }
    e.seconds += t.step_seconds;
    bubble += t.bubble_fraction;
    dp_ratio.push_back(t.dp_max_over_mean);
    mb_ratio.push_back(t.microbatch_max_over_mean);
    fit.push_back(cost_model_fit(predicted, actual).spearman);
  }
  e.tokens_per_s = e.seconds > 0 ? static_cast<double>(e.real_positions) / e.seconds : 0.0;
  e.padding_fraction = e.computed_positions > 0
                           ? 1.0 - static_cast<double>(e.real_positions) / static_cast<double>(e.computed_positions)
                           : 0.0;
  e.dp_max_over_mean = median(dp_ratio);
  e.dp_max_over_mean_worst = dp_ratio.empty() ? 1.0 : *std::max_element(dp_ratio.begin(), dp_ratio.end());
  e.microbatch_max_over_mean = median(mb_ratio);
  e.bubble_fraction = steps.empty() ? 0.0 : bubble / static_cast<double>(steps.size());
  e.cost_model_fit = median(fit);
  return e;
}

}  // namespace msd
