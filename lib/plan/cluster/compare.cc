#include "plan/cluster/compare.h"

#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "common/stats.h"
#include "plan/step/compared_steps.h"

namespace msd {
namespace {

}  // namespace

std::vector<PlanDoc> by_id(const std::vector<PlanDoc>& docs) {
  std::vector<PlanDoc> out(docs.size());
  for (const PlanDoc& doc : docs) out.at(doc.id) = doc;
  return out;
}

namespace {

// Every rank's micro-batch shapes of one placed step.
std::vector<std::vector<MicroBatchShape>> shapes_of(const std::vector<BucketPlan>& buckets,
                                                    const std::vector<PlanDoc>& docs_by_id, uint32_t seq_len,
                                                    bool varlen, RowAttention attention, uint32_t cp) {
  std::vector<std::vector<MicroBatchShape>> shapes(buckets.size());
  for (size_t r = 0; r < buckets.size(); ++r)
    for (const MicroBatchPlan& mb : buckets[r].micro_batches)
      shapes[r].push_back(shape_of(mb, seq_len, docs_by_id, varlen, attention, cp));
  return shapes;
}

}  // namespace

StepTime step_time_of(const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs_by_id,
                      uint32_t seq_len, const DeviceModel& device, const Parallel& parallel, bool varlen,
                      RowAttention attention) {
  return step_time(device, parallel, shapes_of(buckets, docs_by_id, seq_len, varlen, attention, parallel.cp));
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

// Adds one placed step's positions, rows and cost fit to `e`: its shapes
// (shapes_of) and their device seconds (StepTime::micro_batch_seconds).
void add_step(ModeEvaluation& e, const std::vector<BucketPlan>& buckets,
              const std::vector<std::vector<MicroBatchShape>>& shapes, const StepTime& time,
              const PackOptions& options, const CostModel& cost, std::vector<double>& fit) {
  std::vector<double> predicted, actual;
  for (size_t r = 0; r < buckets.size(); ++r) {
    for (size_t m = 0; m < buckets[r].micro_batches.size(); ++m) {
      const MicroBatchPlan& mb = buckets[r].micro_batches[m];
      e.real_positions += mb.positions;
      for (const PackedSequence& sequence : mb.sequences)
        e.computed_positions += row_positions(sequence, options.seq_len, e.varlen, options.cp);
      if (mb.positions == 0) continue;
      predicted.push_back(planner_cost(e.varlen ? cost.unpadded() : cost, shapes[r][m], options.cp));
      actual.push_back(time.micro_batch_seconds[r][m]);
    }
  }
  fit.push_back(cost_model_fit(predicted, actual).spearman);
}

uint64_t sequences_of(const BucketPlan& bucket) {
  uint64_t n = 0;
  for (const MicroBatchPlan& mb : bucket.micro_batches) n += mb.sequences.size();
  return n;
}

// sequences_per_rank_min / max over the steps.
void count_sequences(ModeEvaluation& e, const std::vector<std::vector<BucketPlan>>& placed) {
  e.sequences_per_rank_min = UINT64_MAX;
  for (const std::vector<BucketPlan>& step : placed)
    for (const BucketPlan& bucket : step) {
      const uint64_t n = sequences_of(bucket);
      e.sequences_per_rank_min = std::min(e.sequences_per_rank_min, n);
      e.sequences_per_rank_max = std::max(e.sequences_per_rank_max, n);
    }
  if (e.sequences_per_rank_min == UINT64_MAX) e.sequences_per_rank_min = 0;
}

// The ratios of `e` from the per-step figures.
void finish(ModeEvaluation& e, const std::vector<double>& dp_ratio, const std::vector<double>& mb_ratio,
            const std::vector<double>& fit, double bubble) {
  e.tokens_per_s = e.seconds > 0 ? static_cast<double>(e.real_positions) / e.seconds : 0.0;
  e.padding_fraction = e.computed_positions > 0
                           ? 1.0 - static_cast<double>(e.real_positions) / static_cast<double>(e.computed_positions)
                           : 0.0;
  e.dp_max_over_mean = median(dp_ratio, 1.0);
  e.dp_max_over_mean_worst = dp_ratio.empty() ? 1.0 : *std::max_element(dp_ratio.begin(), dp_ratio.end());
  e.microbatch_max_over_mean = median(mb_ratio, 1.0);
  e.bubble_fraction = e.steps == 0 ? 0.0 : bubble / static_cast<double>(e.steps);
  e.cost_model_fit = median(fit, 1.0);
}

// megatron_dynamic_cp: each step's groups timed as dynamic_cp_step_time does;
// in a compared run (stream's batch given) the steps of compared_steps, as
// place_run places the other step modes.
ModeEvaluation evaluate_dynamic_cp(const RunDocs& run, const PackOptions& options, const CostModel& cost,
                                   const DeviceModel& device, const Parallel& parallel, const StreamOptions& stream) {
  ModeEvaluation e;
  e.mode = TrainingMode::megatron_dynamic_cp;
  e.varlen = true;
  e.sequences_per_rank_min = UINT64_MAX;
  std::vector<double> dp_ratio, mb_ratio, fit;
  const uint64_t global = global_batch_positions(stream, options);
  const ComparedSteps compared = global > 0 ? compared_steps(run.steps, global) : ComparedSteps{};
  for (const std::vector<PlanDoc>& step : global > 0 ? compared.steps : run.steps) {
    std::vector<CpGroupShape> shapes;
    std::vector<uint64_t> samples_of_rank(uint64_t{options.dp} * options.cp, 0);
    std::vector<double> predicted, actual;
    for (CpGroup& group : place_dynamic_cp(step, options)) {
      CpGroupShape& shape = shapes.emplace_back();
      for (CpTeam& team : group) {
        if (global > 0) restore_pieces(team.samples, compared.origins);
        CpTeamShape& t = shape.emplace_back();
        t.first_rank = team.first_rank;
        t.ranks = team.ranks;
        for (const Piece& p : team.samples) {
          const uint32_t fixed = run.by_id.at(p.doc).fixed;
          t.samples.push_back(cp_sample_shape(p.length, p.begin < fixed ? std::min(fixed - p.begin, p.length) : 0,
                                              team.ranks));
          e.real_positions += p.length;
          e.computed_positions += t.samples.back().positions();
          predicted.push_back(planner_cost(cost.unpadded(), {t.samples.back()}, team.ranks));
          actual.push_back(micro_batch_seconds(device, {parallel.dp, 1, team.ranks, parallel.tp}, {t.samples.back()}));
        }
        for (uint32_t r = team.first_rank; r < team.first_rank + team.ranks; ++r)
          samples_of_rank[r] += team.samples.size();
      }
    }
    const StepTime t = dynamic_cp_step_time(device, parallel, shapes);
    ++e.steps;
    e.seconds += t.step_seconds;
    dp_ratio.push_back(t.dp_max_over_mean);
    mb_ratio.push_back(t.microbatch_max_over_mean);
    fit.push_back(cost_model_fit(predicted, actual).spearman);
    for (uint64_t n : samples_of_rank) {
      e.sequences_per_rank_min = std::min(e.sequences_per_rank_min, n);
      e.sequences_per_rank_max = std::max(e.sequences_per_rank_max, n);
    }
  }
  if (e.sequences_per_rank_min == UINT64_MAX) e.sequences_per_rank_min = 0;
  finish(e, dp_ratio, mb_ratio, fit, 0.0);
  return e;
}

}  // namespace

ModeEvaluation evaluate_mode(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                             const PackOptions& options, const CostModel& cost, const DeviceModel& device,
                             const Parallel& parallel, const StreamOptions& stream) {
  MSD_CHECK_EQ(options.dp, parallel.dp);
  MSD_CHECK_EQ(options.cp, parallel.cp);
  check_mode(mode, options, "mode");
  const RunDocs run = number_run(steps);
  if (mode == TrainingMode::megatron_dynamic_cp)
    return evaluate_dynamic_cp(run, options, cost, device, parallel, stream);
  ModeEvaluation e;
  e.mode = mode;
  e.varlen = varlen_rows(mode, options.varlen);
  const RowAttention attention = row_attention(mode, options.varlen);
  const std::vector<std::vector<BucketPlan>> placed = place_run(mode, run.steps, options, cost, stream);
  e.steps = placed.size();
  std::vector<double> dp_ratio, mb_ratio, fit;
  double bubble = 0.0;
  for (const std::vector<BucketPlan>& buckets : placed) {
    const auto shapes = shapes_of(buckets, run.by_id, options.seq_len, e.varlen, attention, options.cp);
    const StepTime t = step_time(device, parallel, shapes);
    add_step(e, buckets, shapes, t, options, cost, fit);
    e.seconds += t.step_seconds;
    bubble += t.bubble_fraction;
    dp_ratio.push_back(t.dp_max_over_mean);
    mb_ratio.push_back(t.microbatch_max_over_mean);
  }
  count_sequences(e, placed);
  finish(e, dp_ratio, mb_ratio, fit, bubble);
  return e;
}

}  // namespace msd
