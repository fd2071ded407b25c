#include "plan/step/budget_enforcer.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "common/error.h"

namespace msd::packing {

BudgetEnforcer::BudgetEnforcer(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost)
    : options_(options), cost_(cost) {
  for (const PlanDoc& doc : docs)
    if (doc.fixed > 0) fixed_[doc.id] = doc.fixed;
}

bool BudgetEnforcer::apply(std::vector<BucketPlan>& buckets, uint64_t budget, bool& exceeded) {
  const uint32_t count = options_.micro_batches;
  std::vector<MicroBatchPlan*> mbs;
  for (BucketPlan& bucket : buckets)
    for (MicroBatchPlan& mb : bucket.micro_batches) mbs.push_back(&mb);
  uint64_t total = 0;
  for (const MicroBatchPlan* mb : mbs) total += mb->positions;
  // A step with more positions than the budget holds keeps every document:
  // the budget rises to the even share, and the step is reported.
  const uint64_t limit = std::max<uint64_t>(budget, (total + mbs.size() - 1) / mbs.size());
  exceeded = limit > budget;
  if (std::none_of(mbs.begin(), mbs.end(), [&](const MicroBatchPlan* mb) { return mb->positions > limit; }))
    return false;
  std::vector<std::vector<PlacedPiece>> contents(mbs.size());
  std::vector<bool> touched(mbs.size(), false);
  std::vector<PlacedPiece> pool;
  for (size_t k = 0; k < mbs.size(); ++k) {
    if (mbs[k]->positions <= limit) continue;
    touch(*mbs[k], contents[k], touched[k]);
    auto& pieces = contents[k];
    std::sort(pieces.begin(), pieces.end(), [](const PlacedPiece& x, const PlacedPiece& y) {
      return std::tuple(x.piece.length, x.piece.doc, x.piece.begin) < std::tuple(y.piece.length, y.piece.doc, y.piece.begin);
    });
    size_t removed = 0;
    for (uint64_t held = mbs[k]->positions; held > limit; ++removed) held -= pieces[removed].piece.length;
    for (size_t i = 0; i < removed; ++i) mbs[k]->positions -= pieces[i].piece.length;
    pool.insert(pool.end(), pieces.begin(), pieces.begin() + static_cast<ptrdiff_t>(removed));
    pieces.erase(pieces.begin(), pieces.begin() + static_cast<ptrdiff_t>(removed));
  }
  place(pool, mbs, contents, touched, limit, exceeded);
  for (size_t k = 0; k < mbs.size(); ++k)
    if (touched[k]) repack(*mbs[k], contents[k]);
  if (options_.balance != BalanceMethod::tokens)
    for (BucketPlan& bucket : buckets)
      std::stable_sort(bucket.micro_batches.begin(), bucket.micro_batches.end(),
                       [](const MicroBatchPlan& x, const MicroBatchPlan& y) { return x.cost > y.cost; });
  MSD_CHECK_EQ(mbs.size(), buckets.size() * count);
  return true;
}

uint32_t BudgetEnforcer::patches_of(const Piece& piece) const {
  const auto it = fixed_.find(piece.doc);
  return it == fixed_.end() || piece.begin >= it->second ? 0 : std::min(it->second - piece.begin, piece.length);
}

PlacedPiece BudgetEnforcer::placed(const Piece& piece) const {
  const uint32_t patches = patches_of(piece);
  return {piece, patches, cost_.document(piece.length, patches)};
}

void BudgetEnforcer::touch(const MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces,
                           std::vector<bool>::reference touched) const {
  if (touched) return;
  touched = true;
  for (const PackedSequence& sequence : mb.sequences)
    for (const Piece& piece : sequence.pieces) pieces.push_back(placed(piece));
}

void BudgetEnforcer::place(std::vector<PlacedPiece>& pool, const std::vector<MicroBatchPlan*>& mbs,
                           std::vector<std::vector<PlacedPiece>>& contents, std::vector<bool>& touched, uint64_t limit,
                           bool& exceeded) const {
  std::sort(pool.begin(), pool.end(), [](const PlacedPiece& x, const PlacedPiece& y) {
    return std::tuple(y.piece.length, x.piece.doc, x.piece.begin) < std::tuple(x.piece.length, y.piece.doc, y.piece.begin);
  });
  std::priority_queue<std::pair<uint64_t, int64_t>> room;  // (room, -index)
  for (size_t k = 0; k < mbs.size(); ++k)
    if (mbs[k]->positions < limit) room.emplace(limit - mbs[k]->positions, -static_cast<int64_t>(k));
  for (PlacedPiece piece : pool) {
    while (true) {
      if (room.empty()) room.emplace(0, -static_cast<int64_t>(fullest_last(mbs)));  // only after an image overflowed
      auto [free, index] = room.top();
      room.pop();
      const size_t k = static_cast<size_t>(-index);
      touch(*mbs[k], contents[k], touched[k]);
      PlacedPiece part = piece;
      const bool cut = piece.piece.length > free && piece.patches < free;
      if (cut) part = placed(Piece{piece.piece.doc, piece.piece.begin, static_cast<uint32_t>(free)});
      exceeded = exceeded || part.piece.length > free;
      contents[k].push_back(part);
      mbs[k]->positions += part.piece.length;
      if (mbs[k]->positions < limit) room.emplace(limit - mbs[k]->positions, index);
      if (!cut) break;
      piece = placed(Piece{piece.piece.doc, piece.piece.begin + part.piece.length,
                           piece.piece.length - part.piece.length});
    }
  }
}

size_t BudgetEnforcer::fullest_last(const std::vector<MicroBatchPlan*>& mbs) {
  size_t best = 0;
  for (size_t k = 1; k < mbs.size(); ++k)
    if (mbs[k]->positions < mbs[best]->positions) best = k;
  return best;
}

void BudgetEnforcer::repack(MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces) {
  std::sort(pieces.begin(), pieces.end(), [](const PlacedPiece& x, const PlacedPiece& y) {
    if (x.piece.length != y.piece.length) return x.piece.length > y.piece.length;
    return x.piece.doc != y.piece.doc ? x.piece.doc < y.piece.doc : x.piece.begin < y.piece.begin;
  });
  mb.sequences = pack(pieces, options_.seq_len, scratch_, sequence_cost_);
  if (options_.cp > 1) {
    for (size_t i = 0; i < mb.sequences.size(); ++i) {
      lengths_.clear();
      counts_.clear();
      for (const Piece& piece : mb.sequences[i].pieces) {
        lengths_.push_back(piece.length);
        counts_.push_back(patches_of(piece));
      }
      sequence_cost_[i] = cost_.zigzag_sequence(lengths_, counts_, options_.seq_len, options_.cp);
    }
  }
  add_padding_cost(mb.sequences, sequence_cost_, options_.seq_len, cost_);
  mb.positions = 0;
  mb.cost = 0.0;
  for (size_t i = 0; i < mb.sequences.size(); ++i) {
    mb.positions += mb.sequences[i].used;
    mb.cost += sequence_cost_[i];
  }
}

}  // namespace msd::packing
