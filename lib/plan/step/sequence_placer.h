// One of pack_step's placements (placements.h): pieces into sequences, by cost.
// Internal to plan/step; MPI-free; one placement per object.
#pragma once

#include <cmath>
#include <cstdint>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "plan/step/packing.h"
#include "plan/step/zigzag_cost.h"

namespace msd::packing {

// Pieces into sequences, by cost: the pieces, heaviest first, each go where
// they leave their bucket lightest. Into a sequence with room a piece costs
// its bucket only its extra (cost less the linear term over its positions:
// the padding it fills was paid already); into a new sequence its cost plus
// that sequence's padding. So a long piece opens a sequence in the lightest
// bucket, and a mid-length one fills a light bucket's room rather than open
// a sequence beside a long piece: a bucket's sequences, not only its pieces,
// are balanced. Within a bucket, the sequence with the least room that fits
// (keeps room for longer pieces). No bucket over `capacity` positions or
// `max_sequences` sequences. Buckets with room for the piece are kept apart
// from the rest (pieces come about longest first, so a bucket only rejoins
// them when the pieces get shorter than its room): O(log dp) a piece.
// Deterministic: ties go to a sequence with room, then the lighter bucket,
// then the lower index. Empty when some piece fits nowhere (the placement
// is then not used). Under a target (best fit, fit_under_target) each piece
// goes where it leaves its bucket heaviest without passing the target.
class SequencePlacer {
 public:
  // `target`: none (infinity) places each piece where it leaves its bucket
  // lightest; a cost places it where it leaves its bucket heaviest without
  // going over the target (best fit), and the placement fails when a piece
  // fits under it nowhere.
  SequencePlacer(const PackOptions& options, const CostModel& cost, uint64_t capacity, uint32_t max_sequences,
                 double target = INFINITY);

  // `heaviest`: the step's pieces, heaviest first (sort_heaviest_first).
  std::vector<BucketSequences> place(const std::vector<PlacedPiece>& heaviest, const PackOptions& options,
                                     ZigzagCost& zigzag);

 private:
  static constexpr size_t kCandidates = 64;
  struct Open {
    std::vector<PackedSequence> sequences;
    std::vector<double> cost;  // pieces plus padding, per sequence
    double total = 0.0;
    uint64_t positions = 0;
    uint32_t most_free = 0;  // the most room in one of its sequences
  };

  bool add(const PlacedPiece& placed);

  struct Spot {
    uint32_t bucket = UINT32_MAX;
    bool into_room = false;
    double total = INFINITY;  // the bucket's cost with the piece
  };

  // Whether the bucket at `it` in room_ still has room for pieces of
  // `length`; when not, erases it (`it` then points past it).
  bool has_room(std::set<std::pair<double, uint32_t>>::iterator& it, uint32_t length);

  bool may_open(const Open& bucket, uint32_t length) const;

  // Where the piece leaves its bucket lightest (no target).
  Spot lightest(uint32_t length, double extra, double alone);

  // Where the piece leaves its bucket heaviest, at most target_ (best fit):
  // the heaviest bucket under target_ less what the piece adds, with room
  // for it or a new sequence. Ties: into room, then the higher bucket.
  Spot fullest(uint32_t length, double extra, double alone);

  void put(const PlacedPiece& placed, uint32_t b, bool into_room, double total);

  uint32_t seq_len_;
  const CostModel& cost_;
  uint64_t capacity_;
  uint32_t max_sequences_;
  double target_;
  std::vector<Open> buckets_;
  std::vector<bool> in_room_;                         // whether in room_ (else in short_of_room_)
  std::set<std::pair<double, uint32_t>> by_cost_;     // (cost, bucket), every bucket, lightest first
  std::set<std::pair<double, uint32_t>> room_;        // the same, of the buckets with room for the current piece
  std::priority_queue<std::pair<uint32_t, uint32_t>> short_of_room_;  // (most room, bucket) of the others
};

}  // namespace msd::packing
