// The step's lower bound on the heaviest DP bucket's cost, padding included
// (PlanStats::bound_cost): no placement of the step's pieces into buckets,
// sequences and micro-batches within the memory budget does better.
// docs/cost-and-balance.md states each term. MPI-free; no state.
#pragma once

#include <cstdint>
#include <span>

#include "plan/step/cost.h"

namespace msd {

// What a plan of the pieces must respect: `dp` buckets, each of
// `micro_batches` micro-batches of at most `limit` positions; a sequence is
// `seq_len` positions computed (its padding costs CostModel::padding) and
// sits in one micro-batch. Under CP the bound holds too: a sequence never
// costs less than the sum of its pieces (CostModel::zigzag_sequence).
struct BoundShape {
  uint32_t seq_len = 1;
  uint32_t dp = 1;
  uint32_t micro_batches = 1;
  uint64_t limit = UINT64_MAX;  // positions per micro-batch
};

struct StepBound {
  uint64_t min_sequences = 0;  // the fewest sequences any packing within the limit needs
  double cost = 0.0;           // no plan's heaviest bucket costs less
  double class_cost = 0.0;     // the sequence-class term alone (below); 0 when it adds nothing
  double whole_cost = 0.0;     // class_cost when it kept the huge pieces whole (below); else 0
  double room_cost = 0.0;      // class_cost when a u_k proved it (sequences' room, below); else 0
};

// The bound over pieces of `lengths` positions costing `costs` (each
// CostModel::document of the piece), the largest of:
//  - the mean over buckets with the fewest sequences, the bucket holding
//    ceil(min_sequences / dp) of them, the heaviest piece in a sequence of its
//    own, and a padding-aware pigeonhole (cost-and-balance.md);
//  - the sequence-class bound: a bucket of j sequences costs j * padding(seq_len)
//    plus its pieces' extra cost (cost less the linear term over their
//    positions), holds at most j * min(seq_len, limit) and micro_batches *
//    limit positions, and only pieces whose extra cost fits in what is left
//    of a candidate maximum C. If no fractional assignment of the pieces to
//    dp buckets so classed exists, no plan reaches C. A weighting of the
//    pieces that gives every feasible bucket at most 1 and sums over dp
//    (the LP's dual) proves it; the bound is the largest C so proven, found by
//    bisection between `low` and `high` (a plan's heaviest bucket). The
//    pieces of the most extra are kept whole (not split over buckets) when
//    no bucket under C can hold two of them: classes are then also split by
//    whether they hold one. The class's room is counted in positions, and
//    again by each of Fekete and Schepers' dual-feasible functions u_1 and u_2
//    of a piece's share of a sequence (u_1 counts a piece over half a
//    sequence as a whole one): a fractional plan can then no longer put two
//    such pieces in one sequence. C is proven when any of these proves it.
// REQUIRES lengths.size() == costs.size(), lengths within seq_len.
// O(pieces * log(pieces)) plus O(groups * classes) per dual evaluation
// (groups: pieces bucketed by extra cost per position, at most 2048 per class).
StepBound step_bound(std::span<const uint32_t> lengths, std::span<const double> costs, const BoundShape& shape,
                     const CostModel& cost, double high);

}  // namespace msd
