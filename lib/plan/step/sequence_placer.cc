#include "plan/step/sequence_placer.h"

#include <algorithm>

namespace msd::packing {

SequencePlacer::SequencePlacer(const PackOptions& options, const CostModel& cost, uint64_t capacity,
                               uint32_t max_sequences, double target)
    : seq_len_(options.seq_len), cost_(cost), capacity_(capacity), max_sequences_(max_sequences), target_(target),
      buckets_(options.dp), in_room_(options.dp, false) {
  for (uint32_t b = 0; b < options.dp; ++b) {
    by_cost_.insert({0.0, b});
    short_of_room_.push({0, b});
  }
}

std::vector<BucketSequences> SequencePlacer::place(const std::vector<PlacedPiece>& heaviest, const PackOptions& options,
                                                   ZigzagCost& zigzag) {
  for (const PlacedPiece& placed : heaviest)
    if (!add(placed)) return {};
  std::vector<BucketSequences> out(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (PackedSequence& sequence : buckets_[b].sequences)
      std::sort(sequence.pieces.begin(), sequence.pieces.end(), [](const Piece& x, const Piece& y) {
        return x.doc != y.doc ? x.doc < y.doc : x.begin < y.begin;
      });
    out[b].sequences = std::move(buckets_[b].sequences);
    out[b].cost = std::move(buckets_[b].cost);
    if (options.cp > 1) {
      zigzag.apply(out[b].sequences, out[b].cost);
      add_padding_cost(out[b].sequences, out[b].cost, seq_len_, cost_);
    }
    sort_sequences(out[b].sequences, out[b].cost);
  }
  return out;
}

bool SequencePlacer::add(const PlacedPiece& placed) {
  const uint32_t length = placed.piece.length;
  while (!short_of_room_.empty() && short_of_room_.top().first >= length) {
    const uint32_t b = short_of_room_.top().second;
    short_of_room_.pop();
    in_room_[b] = true;
    room_.insert({buckets_[b].total, b});
  }
  const double extra = placed.cost - cost_.padding(length);
  const double alone = placed.cost + cost_.padding(seq_len_ - length);
  const Spot spot = target_ < INFINITY ? fullest(length, extra, alone) : lightest(length, extra, alone);
  if (spot.bucket == UINT32_MAX) return false;
  put(placed, spot.bucket, spot.into_room, spot.total);
  return true;
}

bool SequencePlacer::has_room(std::set<std::pair<double, uint32_t>>::iterator& it, uint32_t length) {
  const uint32_t b = it->second;
  if (buckets_[b].most_free >= length) return true;
  it = room_.erase(it);
  in_room_[b] = false;
  short_of_room_.push({buckets_[b].most_free, b});
  return false;
}

bool SequencePlacer::may_open(const Open& bucket, uint32_t length) const {
  return bucket.sequences.size() < max_sequences_ && bucket.positions + length <= capacity_;
}

SequencePlacer::Spot SequencePlacer::lightest(uint32_t length, double extra, double alone) {
  Spot best;
  size_t tried = 0;
  for (auto it = room_.begin(); it != room_.end() && tried < kCandidates; ++tried) {
    if (!has_room(it, length)) continue;
    if (buckets_[it->second].positions + length <= capacity_) {
      best = {it->second, true, it->first + extra};
      break;
    }
    ++it;
  }
  tried = 0;
  for (auto it = by_cost_.begin(); it != by_cost_.end() && tried < kCandidates; ++it, ++tried) {
    const auto& [load, b] = *it;
    if (load + alone >= best.total) break;
    if (may_open(buckets_[b], length)) {
      best = {b, false, load + alone};
      break;
    }
  }
  return best;
}

SequencePlacer::Spot SequencePlacer::fullest(uint32_t length, double extra, double alone) {
  Spot best;
  double most = -INFINITY;
  size_t tried = 0;
  for (auto it = room_.upper_bound({target_ - extra, UINT32_MAX}); it != room_.begin() && tried < kCandidates;
       ++tried) {
    --it;
    if (!has_room(it, length)) continue;  // erased: it is the one above, and --it the one below
    if (buckets_[it->second].positions + length <= capacity_) {
      best = {it->second, true, it->first + extra}, most = best.total;
      break;
    }
  }
  tried = 0;
  for (auto it = by_cost_.upper_bound({target_ - alone, UINT32_MAX}); it != by_cost_.begin() && tried < kCandidates;
       ++tried) {
    --it;
    const auto& [load, b] = *it;
    if (load + alone <= most) break;
    if (may_open(buckets_[b], length)) {
      best = {b, false, load + alone};
      break;
    }
  }
  return best;
}

void SequencePlacer::put(const PlacedPiece& placed, uint32_t b, bool into_room, double total) {
  Open& bucket = buckets_[b];
  const uint32_t length = placed.piece.length;
  // The sets' nodes are moved to the new cost, not reallocated.
  auto by_cost = by_cost_.extract({bucket.total, b});
  auto room = in_room_[b] ? room_.extract({bucket.total, b}) : decltype(room_)::node_type{};
  size_t into = bucket.sequences.size();
  if (into_room) {
    for (size_t s = 0; s < bucket.sequences.size(); ++s)
      if (seq_len_ - bucket.sequences[s].used >= length && (into == bucket.sequences.size() ||
                                                            bucket.sequences[s].used > bucket.sequences[into].used))
        into = s;
  } else {
    bucket.sequences.emplace_back();
    bucket.cost.push_back(cost_.padding(seq_len_));
  }
  bucket.sequences[into].pieces.push_back(placed.piece);
  bucket.sequences[into].used += length;
  bucket.cost[into] += placed.cost - cost_.padding(length);
  bucket.total = total;
  bucket.positions += length;
  bucket.most_free = 0;
  for (const PackedSequence& sequence : bucket.sequences)
    bucket.most_free = std::max(bucket.most_free, seq_len_ - sequence.used);
  const auto reinsert = [&](std::set<std::pair<double, uint32_t>>& set, auto& node) {
    if (node.empty()) return set.insert({total, b}), void();
    node.value() = {total, b};
    set.insert(std::move(node));
  };
  reinsert(by_cost_, by_cost);
  if (in_room_[b] && bucket.most_free >= length) {
    reinsert(room_, room);
  } else {
    in_room_[b] = false;
    short_of_room_.push({bucket.most_free, b});
  }
}

}  // namespace msd::packing
