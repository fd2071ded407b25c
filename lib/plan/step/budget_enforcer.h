// pack_step's memory budget (PackOptions::max_positions_per_micro_batch),
// applied to a balanced plan. Internal to plan/step; MPI-free.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "plan/step/packing.h"

namespace msd::packing {

// The memory budget (PackOptions::max_positions_per_micro_batch), applied
// after balancing: micro-batches over it give up their shortest pieces (the
// least cost per position) until within it; the freed pieces, longest first,
// go to the micro-batch with the most room, and a text piece longer than
// that room is cut at it (each part its own document under document
// masking). A plan already within the budget is left exactly as it was.
class BudgetEnforcer {
 public:
  BudgetEnforcer(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost);

  // Returns true when the budget bound (the plan changed); sets `exceeded`
  // when some micro-batch still holds more than `budget` positions.
  bool apply(std::vector<BucketPlan>& buckets, uint64_t budget, bool& exceeded);

  uint32_t patches_of(const Piece& piece) const;

 private:
  PlacedPiece placed(const Piece& piece) const;

  void touch(const MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces,
             std::vector<bool>::reference touched) const;

  // Longest first, each to the micro-batch with the most room (ties: lower
  // index); cut at that room when it does not fit and holds no patches there.
  void place(std::vector<PlacedPiece>& pool, const std::vector<MicroBatchPlan*>& mbs,
             std::vector<std::vector<PlacedPiece>>& contents, std::vector<bool>& touched, uint64_t limit,
             bool& exceeded) const;

  // The micro-batch holding the fewest positions (ties: lower index).
  static size_t fullest_last(const std::vector<MicroBatchPlan*>& mbs);

  void repack(MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces);

  const PackOptions& options_;
  const CostModel& cost_;
  std::unordered_map<uint32_t, uint32_t> fixed_;
  std::vector<uint32_t> scratch_, lengths_, counts_;
  std::vector<double> sequence_cost_;
};

}  // namespace msd::packing
