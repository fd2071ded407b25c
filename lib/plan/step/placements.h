// How pack_step places a step's pieces over the DP buckets: by positions
// (plan_by_tokens), or by cost from three placements, refined, the lightest
// kept (plan_by_cost). Internal to plan/step; MPI-free.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/step/packing.h"
#include "plan/step/zigzag_cost.h"

namespace msd::packing {

// The position-count split: LPT on positions, pack, contiguous runs.
std::vector<BucketPlan> plan_by_tokens(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                       const CostModel& cost);

// Sequences first: the step's pieces (longest first) are packed into as few
// seq_len sequences as first-fit decreasing finds; the sequences are balanced
// over the DP buckets by their cost (pieces + padding), no bucket over
// `capacity` positions.
//
// Made and costed without building its sequences (cp = 1); build() builds
// them when the placement is kept.
class SequencesFirst {
 public:
  SequencesFirst(const std::vector<PlacedPiece>& pieces, const PackOptions& options, const CostModel& cost,
                 ZigzagCost& zigzag, uint64_t capacity);
  double most() const { return most_; }  // its heaviest bucket's cost, as max_bucket_cost(build())
  std::vector<BucketSequences> build();  // once

 private:
  void sort_by_cost();
  std::vector<BucketSequences> distribute(std::vector<PackedSequence> sequences) const;

  const std::vector<PlacedPiece>& pieces_;
  const PackOptions& options_;
  std::vector<uint32_t> scratch_;       // fit_ views it
  FirstFit fit_;                        // the pieces into sequences
  std::vector<double> cost_;            // per sequence, heaviest first (padding included)
  std::vector<uint32_t> order_;         // order_[i]: the fit's sequence that is the i-th heaviest
  std::vector<uint32_t> bucket_of_;     // per sequence, heaviest first
  std::vector<BucketSequences> built_;  // under CP, built to be costed
  double most_ = 0.0;
};

// Pieces first, in sequence slots: every bucket gets room for the sequences
// an even split of the step needs, ceil(ceil(positions / seq_len) / dp)
// (within `capacity`), and the pieces, heaviest first, are balanced over the
// buckets by cost within that room; each bucket then packs its own pieces
// first-fit decreasing. Buckets end with about the same number of sequences,
// so the linear term over them is even and the balance is of the rest.
//
// By positions instead (`by_positions`), the pieces go longest first to the
// bucket with the fewest positions (the msd_tokens split) and are packed the
// same way: a third placement, for steps where even positions do best.
// `pieces` come longest first for by_positions, heaviest first otherwise.
//
// The pieces are assigned and the placement costed when it is made; its
// sequences are built only when it is kept (build()): most placements made
// are thrown away.
class PiecesFirst {
 public:
  PiecesFirst(const std::vector<PlacedPiece>& pieces, const PackOptions& options, const CostModel& cost,
              ZigzagCost& zigzag, uint64_t capacity, bool by_positions);
  double most() const { return most_; }  // its heaviest bucket's cost, as max_bucket_cost(build())
  std::vector<BucketSequences> build();  // once

 private:
  std::span<const PlacedPiece> bucket(uint32_t b) const;  // longest first
  std::vector<BucketSequences> make() const;              // the sequences built

  const PackOptions& options_;
  const CostModel& cost_;
  ZigzagCost& zigzag_;
  std::vector<PlacedPiece> grouped_;  // by bucket
  std::vector<size_t> offsets_;       // bucket b: [offsets_[b], offsets_[b + 1]) of grouped_
  std::vector<BucketSequences> built_;  // under CP, built to be costed
  double most_ = 0.0;
};

// Cost balance, padding-aware: a sequence costs its pieces plus the linear
// term over its padding (its GEMMs run over all seq_len positions). Three
// placements are made, sequences first, pieces first by cost and by
// positions (above), no bucket over micro_batches x budget positions; the
// one whose heaviest bucket costs least is kept (ties: the earlier, so
// sequences first, which pads least, wins a tie), and each bucket's
// sequences are balanced over its micro-batches (none over the budget).
std::vector<BucketPlan> plan_by_cost(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                     const CostModel& cost, uint64_t budget);

}  // namespace msd::packing
