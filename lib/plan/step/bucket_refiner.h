// Refines a placement of pack_step (placements.h) by moves and exchanges of
// pieces out of its heaviest bucket. Internal to plan/step; MPI-free.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/step/packing.h"

namespace msd::packing {

// Moves and exchanges pieces out of the heaviest bucket, padding-aware: a
// piece moved into another bucket's sequence with room costs that bucket its
// extra (cost less the linear term over its positions, which the padding
// paid already), into a new sequence its cost plus that sequence's padding;
// leaving its sequence empty spares the heaviest bucket the whole sequence.
// An exchange puts a piece into a light bucket's sequence without room for
// it, in return for that sequence's pieces of least extra per position that
// make the room (they fit where it was): a long piece's attention for short
// pieces' GEMMs, which cost the same wherever they sit. Each round makes the
// change that leaves the pair's heavier side lowest, if it is below the
// heaviest bucket: moves to the 64 lightest buckets, exchanges with the 16
// lightest. No bucket goes over `capacity` positions or `max_sequences`
// sequences. It stops when no change helps, at the heaviest piece in a
// sequence of its own (no plan does better), or after min(2 * dp, 512)
// rounds. For cp = 1 (under CP a sequence's cost depends on where its pieces
// sit). Deterministic: ties go to the lighter bucket, then the lower index.
class BucketRefiner {
 public:
  BucketRefiner(std::span<const PlacedPiece> pieces, const PackOptions& options, const CostModel& cost,
                uint64_t capacity, uint32_t max_sequences);

  void run(std::vector<BucketSequences>& buckets);

 private:
  struct Item {
    Piece piece;
    double cost = 0.0;
    double extra = 0.0;  // cost less the linear term over its positions
  };
  struct Sequence {
    std::vector<Item> pieces;
    uint32_t used = 0;
  };
  struct Bucket {
    std::vector<Sequence> sequences;
    double cost = 0.0;
    uint64_t positions = 0;
    uint32_t most_free = 0;  // the most room in one of its sequences
  };

  static uint64_t key(const Piece& piece) { return uint64_t{piece.doc} << 32 | piece.begin; }

  void load(const std::vector<BucketSequences>& buckets);

  // Recomputes bucket b and its place in by_cost_.
  void update(size_t b);

  // A change out of the heaviest bucket: piece `piece` of its sequence
  // `sequence` goes to bucket `to` (into its sequence `into`, or the one with
  // the least room that fits when `into` is none), and the pieces `back` of
  // that sequence come into the freed room. `worse`: the pair's heavier side.
  struct Change {
    double worse = INFINITY;
    size_t sequence = 0, piece = 0, to = SIZE_MAX, into = SIZE_MAX;
    std::vector<size_t> back;
  };

  // One change; false when none lowers the heaviest bucket.
  bool step();

  // The best move of one piece to any bucket.
  void find_move(size_t heavy, Change& best) const;

  // The best exchange with the lightest buckets: a piece of the heaviest
  // bucket into a sequence without room for it, for that sequence's pieces
  // of least extra per position that make the room (and fit where it was).
  void find_exchange(size_t heavy, Change& best);

  void apply(size_t from, const Change& change);

  // The buckets a change touched; the others are as they came.
  void store(std::vector<BucketSequences>& buckets) const;

  uint32_t seq_len_;
  const CostModel& cost_;
  uint64_t capacity_;
  uint32_t max_sequences_;
  double floor_ = 0.0;
  std::unordered_map<uint64_t, uint32_t> patches_;  // (doc << 32 | begin) -> image patches, of pieces with any
  std::vector<Bucket> buckets_;
  std::vector<bool> changed_;  // buckets a change touched
  std::set<std::pair<double, size_t>> by_cost_;  // (cost, bucket), lightest first
  std::vector<size_t> order_;
  std::vector<uint64_t> freed_;
  std::vector<double> given_;
};

}  // namespace msd::packing
