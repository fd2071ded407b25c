#include "plan/step/zigzag_cost.h"

namespace msd::packing {

ZigzagCost::ZigzagCost(std::span<const PlacedPiece> pieces, const PackOptions& options, const CostModel& cost)
    : options_(options), cost_(cost) {
  if (options.cp <= 1) return;
  for (const PlacedPiece& p : pieces)
    if (p.patches > 0) patches_[uint64_t{p.piece.doc} << 32 | p.piece.begin] = p.patches;
}

void ZigzagCost::apply(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost) {
  if (options_.cp <= 1) return;
  for (size_t i = 0; i < sequences.size(); ++i) {
    lengths_.clear();
    counts_.clear();
    for (const Piece& piece : sequences[i].pieces) {
      lengths_.push_back(piece.length);
      const auto it = patches_.find(uint64_t{piece.doc} << 32 | piece.begin);
      counts_.push_back(it == patches_.end() ? 0 : it->second);
    }
    sequence_cost[i] = cost_.zigzag_sequence(lengths_, counts_, options_.seq_len, options_.cp);
  }
}

}  // namespace msd::packing
