// The spread placement (PackOptions::cuts = balance or
// variable_micro_batches; docs/cost-and-balance.md "Cut-aware packing" and
// "Variable micro-batches"): a step's pieces over the DP ranks by cost with
// no equal token count per rank, cuts spent where they lower the heaviest
// rank, and each rank's pieces in variable-length rows under the
// micro-batch budget. Internal to plan/step (pack_step calls it); MPI-free.
#pragma once

#include <vector>

#include "plan/step/pack.h"

namespace msd {

// The buckets of a step and what pack_step reports of them beyond its
// PlanStats: the budget held to and whether some micro-batch exceeds it.
struct SpreadPlan {
  std::vector<BucketPlan> buckets;
  uint64_t budget = 0;           // positions per micro-batch (micro_batch_budget)
  bool budget_exceeded = false;  // a micro-batch holds more (fixed count only)
  uint64_t pieces = 0;           // pieces placed
  uint64_t megatron_pieces = 0;  // megatron_piece_count (cuts = balance; else 0)
  std::vector<double> piece_costs;  // each piece's cost, heaviest first
};

// Places one step. REQUIRES options.varlen and options.cp <= 1.
// Deterministic: the result depends only on the documents' (id, positions,
// fixed) multiset and the options, not on their order in `docs`.
//
// 1. Pieces: cut_into_pieces (long documents near-equal with cuts = balance).
// 2. The pieces, heaviest first (ties: doc, begin), over the dp ranks with
//    balance_within (LPT and its swaps; karmarkar_karp or, for tokens, by
//    positions), each weighing its cost plus cost.micro_batch per budget of
//    positions it fills; no rank over micro_batches x budget positions with a
//    fixed count, no limit with a variable one.
// 3. cuts = balance (cost methods): while pieces are fewer than
//    megatron_piece_count, the heaviest rank's heaviest text piece is cut
//    and its tail moved to the lightest rank where that lowers the heavier of
//    the two (the cut that evens them: x = gap / (2 (a' + L)) positions for
//    a piece of L, a' = a + micro_batch / budget), or moved whole where that
//    does better; it stops when the heaviest rank is within kCutTolerance of
//    the mean, or no cut lowers it.
// 4. Each rank's pieces, heaviest first, each to its lightest micro-batch
//    with room for it: max(micro_batches, ceil(positions / budget))
//    micro-batches to start with, and one more when none has room
//    (variable), or the one with the most room (fixed: over the budget).
//    A micro-batch is one row, its pieces in (doc, begin) order; it costs its
//    pieces plus cost.micro_batch when it holds any. Micro-batches heaviest
//    first (ties: the lower), the empty ones last.
SpreadPlan place_spread(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost);

// Step 3 stops once the heaviest rank is within 1% of the mean: a cut that
// gains less is not worth a document's broken context. Measured
// (tools/placement-model.py, DP 16, S 8192, Pile): 0 cuts to 99.5% of
// Megatron's piece count for 1.848x over Megatron, 1% to 99.0% for 1.847x,
// 10% to 97.2% for 1.804x, 30% to 94.5% for 1.654x.
inline constexpr double kCutTolerance = 0.01;

}  // namespace msd
