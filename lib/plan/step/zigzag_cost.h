// A packed sequence's cost under context parallelism (CostModel::zigzag_sequence).
// Internal to plan/step; MPI-free; not thread-safe (scratch vectors).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "plan/step/packing.h"

namespace msd::packing {

// Under context parallelism a sequence costs what its busiest CP rank does
// (CostModel::zigzag_sequence), which depends on where its pieces sit, so
// once packed its cost replaces the sum of its pieces'. `patches` maps a
// piece (doc << 32 | begin) with image patches to their count.
class ZigzagCost {
 public:
  ZigzagCost(std::span<const PlacedPiece> pieces, const PackOptions& options, const CostModel& cost);
  // Replaces sequence_cost[i] by the CP cost of sequences[i]; no-op for cp = 1.
  void apply(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost);

 private:
  const PackOptions& options_;
  const CostModel& cost_;
  std::unordered_map<uint64_t, uint32_t> patches_;
  std::vector<uint32_t> lengths_, counts_;
};

}  // namespace msd::packing
