#include "plan/cluster/compare.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "common/error.h"

namespace msd {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 1.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

std::vector<PlanDoc> by_id(const std::vector<PlanDoc>& docs) {
  std::vector<PlanDoc> out(docs.size());
  for (const PlanDoc& doc : docs) out.at(doc.id) = doc;
  return out;
}

StepTime step_time_of(const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs_by_id,
                      uint32_t seq_len, const DeviceModel& device, const Parallel& parallel, bool varlen) {
  std::vector<std::vector<MicroBatchShape>> shapes(buckets.size());
  for (size_t r = 0; r < buckets.size(); ++r)
    for (const MicroBatchPlan& mb : buckets[r].micro_batches)
      shapes[r].push_back(shape_of(mb, seq_len, docs_by_id, varlen));
  return step_time(device, parallel, shapes);
}

namespace {

// The run's documents with ids unique over it (step t's id plus the
// documents before it), and the same indexed by id.
struct RunDocs {
  std::vector<std::vector<PlanDoc>> steps;
  std::vector<PlanDoc> by_id;
};

RunDocs number_run(const std::vector<std::vector<PlanDoc>>& steps) {
  RunDocs run;
  for (const std::vector<PlanDoc>& step : steps) {
    const uint32_t offset = checked_cast<uint32_t>(run.by_id.size());
    std::vector<PlanDoc> local = by_id(step);
    for (PlanDoc& doc : local) doc.id += offset;
    run.by_id.insert(run.by_id.end(), local.begin(), local.end());
    run.steps.push_back(step);
    for (PlanDoc& doc : run.steps.back()) doc.id += offset;
  }
  return run;
}

// Adds one placed step's positions, rows and cost fit to `e`.
void add_step(ModeEvaluation& e, const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs,
              const PackOptions& options, const CostModel& cost, const DeviceModel& device,
              const Parallel& parallel, std::vector<double>& fit) {
  std::vector<double> predicted, actual;
  for (const BucketPlan& bucket : buckets) {
    for (const MicroBatchPlan& mb : bucket.micro_batches) {
      e.real_positions += mb.positions;
      for (const PackedSequence& sequence : mb.sequences)
        e.computed_positions += row_positions(sequence.used, options.seq_len, e.varlen);
      if (mb.positions == 0) continue;
      const MicroBatchShape shape = shape_of(mb, options.seq_len, docs, e.varlen);
      predicted.push_back(planner_cost(e.varlen ? cost.unpadded() : cost, shape, options.cp));
      actual.push_back(micro_batch_seconds(device, parallel, shape));
    }
  }
  fit.push_back(cost_model_fit(predicted, actual).spearman);
}

uint64_t sequences_of(const BucketPlan& bucket) {
  uint64_t n = 0;
  for (const MicroBatchPlan& mb : bucket.micro_batches) n += mb.sequences.size();
  return n;
}

// sequences_per_rank_min / max over the steps (a stream mode's last one
// aside when it holds fewer sequences than the first).
void count_sequences(ModeEvaluation& e, const std::vector<std::vector<BucketPlan>>& placed) {
  std::vector<std::vector<uint64_t>> counts;  // per step, per rank
  for (const std::vector<BucketPlan>& step : placed) {
    counts.emplace_back();
    for (const BucketPlan& bucket : step) counts.back().push_back(sequences_of(bucket));
  }
  auto total = [](const std::vector<uint64_t>& c) { return std::accumulate(c.begin(), c.end(), uint64_t{0}); };
  if (is_stream_mode(e.mode) && counts.size() > 1 && total(counts.back()) < total(counts.front())) counts.pop_back();
  e.sequences_per_rank_min = UINT64_MAX;
  for (const std::vector<uint64_t>& c : counts)
    for (uint64_t n : c) {
      e.sequences_per_rank_min = std::min(e.sequences_per_rank_min, n);
      e.sequences_per_rank_max = std::max(e.sequences_per_rank_max, n);
    }
  if (e.sequences_per_rank_min == UINT64_MAX) e.sequences_per_rank_min = 0;
}

}  // namespace

ModeEvaluation evaluate_mode(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                             const PackOptions& options, const CostModel& cost, const DeviceModel& device,
                             const Parallel& parallel) {
  MSD_CHECK_EQ(options.dp, parallel.dp);
  MSD_CHECK_EQ(options.cp, parallel.cp);
  ModeEvaluation e;
  e.mode = mode;
  e.varlen = varlen_rows(mode, options.varlen);
  const RunDocs run = number_run(steps);
  const std::vector<std::vector<BucketPlan>> placed = place_run(mode, run.steps, options, cost);
  e.steps = placed.size();
  std::vector<double> dp_ratio, mb_ratio, fit;
  double bubble = 0.0;
  for (const std::vector<BucketPlan>& buckets : placed) {
    const StepTime t = step_time_of(buckets, run.by_id, options.seq_len, device, parallel, e.varlen);
    add_step(e, buckets, run.by_id, options, cost, device, parallel, fit);
    e.seconds += t.step_seconds;
    bubble += t.bubble_fraction;
    dp_ratio.push_back(t.dp_max_over_mean);
    mb_ratio.push_back(t.microbatch_max_over_mean);
  }
  count_sequences(e, placed);
  e.tokens_per_s = e.seconds > 0 ? static_cast<double>(e.real_positions) / e.seconds : 0.0;
  e.padding_fraction = e.computed_positions > 0
                           ? 1.0 - static_cast<double>(e.real_positions) / static_cast<double>(e.computed_positions)
                           : 0.0;
  e.dp_max_over_mean = median(dp_ratio);
  e.dp_max_over_mean_worst = dp_ratio.empty() ? 1.0 : *std::max_element(dp_ratio.begin(), dp_ratio.end());
  e.microbatch_max_over_mean = median(mb_ratio);
  e.bubble_fraction = placed.empty() ? 0.0 : bubble / static_cast<double>(placed.size());
  e.cost_model_fit = median(fit);
  return e;
}

}  // namespace msd
