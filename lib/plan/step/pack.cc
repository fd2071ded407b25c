#include "plan/step/pack.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "common/error.h"
#include "plan/step/bound.h"
#include "plan/step/budget_enforcer.h"
#include "plan/step/modes.h"
#include "plan/step/outlier_hold.h"
#include "plan/step/packing.h"
#include "plan/step/placements.h"
#include "plan/step/spread.h"

namespace msd {
namespace {

using packing::BudgetEnforcer;
using packing::PlacedPiece;
using packing::cut_into_pieces;
using packing::plan_by_cost;
using packing::plan_by_tokens;
using packing::sort_longest_first;

// Variable-length rows: each micro-batch's packed sequences become one, their
// pieces concatenated in order.
void join_rows(std::vector<MicroBatchPlan>& micro_batches) {
  for (MicroBatchPlan& mb : micro_batches) {
    if (mb.sequences.size() <= 1) continue;
    PackedSequence row;
    for (PackedSequence& sequence : mb.sequences) {
      row.pieces.insert(row.pieces.end(), sequence.pieces.begin(), sequence.pieces.end());
      row.used += sequence.used;
    }
    mb.sequences.assign(1, std::move(row));
  }
}

// pack_step by the spread placement (spread.h), with its statistics.
PackedStep pack_spread(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost) {
  SpreadPlan plan = place_spread(docs, options, cost);
  PackedStep step;
  step.buckets = std::move(plan.buckets);
  if (options.pp > 1)
    for (BucketPlan& bucket : step.buckets) order_for_pipeline(bucket.micro_batches);
  step.stats = plan_stats(step.buckets, plan.piece_costs);
  for (const BucketPlan& bucket : step.buckets) {
    uint64_t with_work = 0;
    for (const MicroBatchPlan& mb : bucket.micro_batches) with_work += mb.sequences.size();
    step.stats.sequences += with_work;
    step.stats.max_micro_batches = std::max(step.stats.max_micro_batches, with_work);
  }
  step.stats.positions_budget = plan.budget;
  step.stats.budget_exceeded = plan.budget_exceeded;
  step.stats.pieces = plan.pieces;
  step.stats.megatron_pieces = plan.megatron_pieces;
  if (step.stats.bound_cost > 0.0) step.stats.max_over_bound = step.stats.max_cost / step.stats.bound_cost;
  return step;
}

}  // namespace

PackedStep pack_step(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& model) {
  if (options.varlen && options.cp > 1) {  // THD: every piece split over the CP ranks on its own
    PackOptions per_piece = options;
    per_piece.cp = 1;
    return pack_step(docs, per_piece, model);
  }
  if (spreads(options)) return pack_spread(docs, options, model);
  const CostModel cost = options.varlen ? model.unpadded() : model;  // varlen rows compute no padding
  MSD_CHECK_LE(1u, options.seq_len);
  MSD_CHECK_LE(1u, options.dp);
  MSD_CHECK_LE(1u, options.micro_batches);
  std::vector<PlacedPiece> pieces = cut_into_pieces(docs, options, cost);
  uint64_t total = 0;
  for (const PlacedPiece& p : pieces) total += p.piece.length;
  const uint64_t budget = micro_batch_budget(total, options);
  PackedStep step;
  sort_longest_first(pieces, options.seq_len);
  if (options.balance == BalanceMethod::tokens)
    step.buckets = plan_by_tokens(pieces, options, cost);
  else
    step.buckets = plan_by_cost(pieces, options, cost, budget);
  std::vector<double> costs(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) costs[i] = pieces[i].cost;
  BudgetEnforcer enforcer(docs, options, cost);
  bool exceeded = false;
  const bool binding = enforcer.apply(step.buckets, budget, exceeded);
  if (options.pp > 1)
    for (BucketPlan& bucket : step.buckets) order_for_pipeline(bucket.micro_batches);
  if (options.varlen)
    for (BucketPlan& bucket : step.buckets) join_rows(bucket.micro_batches);
  std::vector<uint32_t> lengths;
  if (binding) costs.clear();  // pieces were cut: the bounds are over the pieces placed
  for (BucketPlan& bucket : step.buckets) {
    for (const MicroBatchPlan& mb : bucket.micro_batches) {
      bucket.positions += mb.positions;
      bucket.cost += mb.cost;
      for (const PackedSequence& sequence : mb.sequences) {
        ++step.stats.sequences;
        if (!binding) continue;
        for (const Piece& piece : sequence.pieces) {
          lengths.push_back(piece.length);
          costs.push_back(cost.document(piece.length, enforcer.patches_of(piece)));
        }
      }
    }
  }
  if (!binding)
    for (const PlacedPiece& p : pieces) lengths.push_back(p.piece.length);
  const uint64_t slots = uint64_t{options.dp} * options.micro_batches;
  const uint64_t limit = std::max<uint64_t>(budget, (total + slots - 1) / slots);
  std::vector<double> sorted_costs(costs);
  std::sort(sorted_costs.begin(), sorted_costs.end(), std::greater<>());  // tokens: sorted by length, not cost
  const uint64_t sequences = step.stats.sequences;
  step.stats = plan_stats(step.buckets, sorted_costs);
  step.stats.sequences = sequences;
  step.stats.positions_budget = budget;
  step.stats.budget_binding = binding;
  step.stats.budget_exceeded = exceeded;
  step.stats.pieces = lengths.size();
  if (!options.lower_bound || options.varlen) {  // the piece bounds of plan_stats only
    if (step.stats.bound_cost > 0.0) step.stats.max_over_bound = step.stats.max_cost / step.stats.bound_cost;
    return step;
  }
  const BoundShape shape{options.seq_len, options.dp, options.micro_batches, limit};
  const StepBound bound = step_bound(lengths, costs, shape, cost, step.stats.max_cost);
  step.stats.min_sequences = bound.min_sequences;
  step.stats.bound_cost = std::max(step.stats.bound_cost, bound.cost);
  if (step.stats.mean_cost > 0.0) {
    step.stats.lower_bound = std::max(step.stats.lower_bound, bound.cost / step.stats.mean_cost);
    step.stats.pigeonhole_bound = std::max(step.stats.pigeonhole_bound, step.stats.bound_cost / step.stats.mean_cost);
  }
  step.stats.max_over_bound = step.stats.bound_cost > 0.0 ? step.stats.max_cost / step.stats.bound_cost : 1.0;
  return step;
}

uint64_t row_positions(uint64_t used, uint32_t seq_len, bool varlen) {
  return varlen ? varlen_row_positions(used) : seq_len;
}

uint64_t row_positions(const PackedSequence& row, uint32_t seq_len, bool varlen, uint32_t cp) {
  if (!varlen || cp <= 1) return row_positions(row.used, seq_len, varlen);
  uint64_t padded = 0;
  for (const Piece& piece : row.pieces) padded += thd_piece_positions(piece.length, cp);
  return thd_row_positions(padded, cp);
}

void order_for_pipeline(std::vector<MicroBatchPlan>& micro_batches) {
  const auto with_work = std::stable_partition(micro_batches.begin(), micro_batches.end(),
                                               [](const MicroBatchPlan& mb) { return mb.positions > 0; });
  std::vector<MicroBatchPlan> lightest(std::make_move_iterator(micro_batches.begin()), std::make_move_iterator(with_work));
  std::stable_sort(lightest.begin(), lightest.end(),
                   [](const MicroBatchPlan& x, const MicroBatchPlan& y) { return x.cost < y.cost; });
  size_t front = 0, back = lightest.size();
  for (size_t i = 0; i < lightest.size(); ++i) micro_batches[i % 2 == 0 ? front++ : --back] = std::move(lightest[i]);
}

uint64_t micro_batch_budget(uint64_t total_positions, const PackOptions& options) {
  if (options.max_positions_per_micro_batch > 0) return options.max_positions_per_micro_batch;
  const uint64_t bins = uint64_t{options.dp} * options.micro_batches * options.seq_len;
  return std::max<uint64_t>(1, (total_positions + bins - 1) / bins) * options.seq_len;
}

std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                            const CostModel& cost) {
  return pack_step(docs, options, cost).buckets;
}

PlanStats plan_stats(const std::vector<BucketPlan>& buckets, std::span<const double> piece_costs) {
  PlanStats stats;
  const double largest_piece_cost = piece_costs.empty() ? 0.0 : piece_costs.front();
  stats.largest_piece_cost = largest_piece_cost;
  if (buckets.empty()) return stats;
  size_t count = 0;  // a bucket with fewer micro-batches counts as 0 beyond them
  for (const BucketPlan& bucket : buckets) count = std::max(count, bucket.micro_batches.size());
  const double dp = static_cast<double>(buckets.size());
  double total = 0.0, max_positions = 0.0, total_positions = 0.0;
  stats.micro_batch_mean_cost.assign(count, 0.0);
  stats.micro_batch_max_cost.assign(count, 0.0);
  for (const BucketPlan& bucket : buckets) {
    total += bucket.cost;
    stats.max_cost = std::max(stats.max_cost, bucket.cost);
    total_positions += static_cast<double>(bucket.positions);
    max_positions = std::max(max_positions, static_cast<double>(bucket.positions));
    for (size_t m = 0; m < bucket.micro_batches.size(); ++m) {
      stats.micro_batch_mean_cost[m] += bucket.micro_batches[m].cost;
      stats.micro_batch_max_cost[m] = std::max(stats.micro_batch_max_cost[m], bucket.micro_batches[m].cost);
    }
  }
  const auto ratio = [](double high, double mean) { return mean > 0.0 ? high / mean : 1.0; };
  stats.mean_cost = total / dp;
  stats.imbalance = ratio(stats.max_cost, stats.mean_cost);
  stats.lower_bound = ratio(std::max(largest_piece_cost, stats.mean_cost), stats.mean_cost);
  const size_t k = buckets.size();
  double pigeonhole = largest_piece_cost;
  std::vector<double> prefix(piece_costs.size() + 1, 0.0);
  for (size_t i = 0; i < piece_costs.size(); ++i) prefix[i + 1] = prefix[i] + piece_costs[i];
  for (size_t t = 1; t * k < piece_costs.size(); ++t) {
    // The t + 1 lightest of the t*k + 1 heaviest: indices [t*k - t, t*k].
    pigeonhole = std::max(pigeonhole, prefix[t * k + 1] - prefix[t * k - t]);
  }
  stats.bound_cost = std::max(pigeonhole, stats.mean_cost);
  stats.pigeonhole_bound = ratio(std::max(pigeonhole, stats.mean_cost), stats.mean_cost);
  stats.positions_imbalance = ratio(max_positions, total_positions / dp);
  stats.micro_batch_imbalance.assign(count, 1.0);
  for (const BucketPlan& bucket : buckets)
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      stats.max_micro_batch_positions = std::max(stats.max_micro_batch_positions, mb.positions);
  for (size_t m = 0; m < count; ++m) {
    stats.micro_batch_mean_cost[m] /= dp;
    stats.micro_batch_imbalance[m] = ratio(stats.micro_batch_max_cost[m], stats.micro_batch_mean_cost[m]);
    stats.worst_micro_batch_imbalance = std::max(stats.worst_micro_batch_imbalance, stats.micro_batch_imbalance[m]);
  }
  const double mb_mean = count > 0 ? total / (dp * static_cast<double>(count)) : 0.0;
  stats.micro_batch_lower_bound = ratio(std::max(largest_piece_cost, mb_mean), mb_mean);
  return stats;
}

}  // namespace msd
