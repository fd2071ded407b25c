#include "plan/step/bucket_refiner.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace msd::packing {

BucketRefiner::BucketRefiner(std::span<const PlacedPiece> pieces, const PackOptions& options, const CostModel& cost,
                             uint64_t capacity, uint32_t max_sequences)
    : seq_len_(options.seq_len), cost_(cost), capacity_(capacity), max_sequences_(max_sequences) {
  for (const PlacedPiece& p : pieces) {
    floor_ = std::max(floor_, p.cost + cost.padding(seq_len_ - p.piece.length));
    if (p.patches > 0) patches_[key(p.piece)] = p.patches;  // image pieces only: text is costed from its length
  }
}

void BucketRefiner::run(std::vector<BucketSequences>& buckets) {
  if (max_bucket_cost(buckets) <= floor_ * (1.0 + 1e-12)) return;  // already optimal
  load(buckets);
  const size_t rounds = std::min<size_t>(2 * buckets.size(), 512);
  for (size_t round = 0; round < rounds && step(); ++round) {
  }
  store(buckets);
}

void BucketRefiner::load(const std::vector<BucketSequences>& buckets) {
  buckets_.assign(buckets.size(), {});
  changed_.assign(buckets.size(), false);
  by_cost_.clear();
  for (size_t b = 0; b < buckets.size(); ++b) {
    buckets_[b].sequences.reserve(buckets[b].sequences.size());
    for (const PackedSequence& sequence : buckets[b].sequences) {
      Sequence& loaded = buckets_[b].sequences.emplace_back();
      loaded.used = sequence.used;
      loaded.pieces.reserve(sequence.pieces.size());
      for (const Piece& piece : sequence.pieces) {
        const auto it = patches_.find(key(piece));
        const double c = cost_.document(piece.length, it == patches_.end() ? 0 : it->second);  // as cut_into_pieces
        loaded.pieces.push_back({piece, c, c - cost_.padding(piece.length)});
      }
    }
    update(b);
  }
}

void BucketRefiner::update(size_t b) {
  Bucket& bucket = buckets_[b];
  by_cost_.erase({bucket.cost, b});
  bucket.cost = 0.0;
  bucket.positions = 0;
  bucket.most_free = 0;
  for (const Sequence& sequence : bucket.sequences) {
    bucket.cost += cost_.padding(seq_len_ - sequence.used);
    for (const Item& item : sequence.pieces) bucket.cost += item.cost;
    bucket.positions += sequence.used;
    bucket.most_free = std::max(bucket.most_free, seq_len_ - sequence.used);
  }
  by_cost_.insert({bucket.cost, b});
}

bool BucketRefiner::step() {
  const size_t heavy = std::prev(by_cost_.end())->second;  // ties: the higher index
  if (buckets_[heavy].cost <= floor_ * (1.0 + 1e-12)) return false;
  Change best;
  best.worse = buckets_[heavy].cost * (1.0 - 1e-12);
  find_move(heavy, best);
  find_exchange(heavy, best);
  if (best.to == SIZE_MAX) return false;
  apply(heavy, best);
  return true;
}

void BucketRefiner::find_move(size_t heavy, Change& best) const {
  constexpr size_t kMovePartners = 64;
  const Bucket& from = buckets_[heavy];
  for (size_t s = 0; s < from.sequences.size(); ++s) {
    const Sequence& sequence = from.sequences[s];
    for (size_t i = 0; i < sequence.pieces.size(); ++i) {
      const Item& item = sequence.pieces[i];
      const Piece& piece = item.piece;
      const double alone = item.cost + cost_.padding(seq_len_ - piece.length);
      const double left = from.cost - (sequence.pieces.size() == 1 ? alone : item.extra);
      if (left >= best.worse) continue;
      // Lightest first: past a bucket that the piece's extra alone takes
      // to the best so far, or past the first with room for it, none
      // helps; only the kMovePartners lightest are tried (bounded time).
      size_t tried = 0;
      for (auto it = by_cost_.begin(); it != by_cost_.end() && tried < kMovePartners; ++it, ++tried) {
        const auto& [load, b] = *it;
        if (load + item.extra >= best.worse) break;
        const Bucket& to = buckets_[b];
        if (b == heavy || to.positions + piece.length > capacity_) continue;
        const bool room = to.most_free >= piece.length;
        if (!room && to.sequences.size() >= max_sequences_) continue;
        const double worse = std::max(left, load + (room ? item.extra : alone));
        if (worse < best.worse) best = Change{worse, s, i, b, SIZE_MAX, {}};
        if (room) break;
      }
    }
  }
}

void BucketRefiner::find_exchange(size_t heavy, Change& best) {
  constexpr size_t kPartners = 16;
  const Bucket& from = buckets_[heavy];
  size_t partners = 0;
  for (auto it = by_cost_.begin(); it != by_cost_.end() && partners < kPartners; ++it, ++partners) {
    const size_t b = it->second;
    const Bucket& to = buckets_[b];
    if (to.cost >= best.worse) break;  // lightest first: no later partner helps
    if (b == heavy) continue;
    for (size_t t = 0; t < to.sequences.size(); ++t) {
      const Sequence& target = to.sequences[t];
      // Its pieces by extra per position; prefix sums of positions and extras.
      order_.resize(target.pieces.size());
      std::iota(order_.begin(), order_.end(), size_t{0});
      std::sort(order_.begin(), order_.end(), [&](size_t x, size_t y) {
        const double rx = target.pieces[x].extra / target.pieces[x].piece.length;
        const double ry = target.pieces[y].extra / target.pieces[y].piece.length;
        return rx != ry ? rx < ry : x < y;
      });
      freed_.assign(1, 0);
      given_.assign(1, 0.0);
      for (const size_t k : order_) {
        freed_.push_back(freed_.back() + target.pieces[k].piece.length);
        given_.push_back(given_.back() + target.pieces[k].extra);
      }
      const uint32_t free = seq_len_ - target.used;
      for (size_t s = 0; s < from.sequences.size(); ++s) {
        const Sequence& source = from.sequences[s];
        for (size_t i = 0; i < source.pieces.size(); ++i) {
          const Item& item = source.pieces[i];
          const uint32_t length = item.piece.length;
          if (free >= length) continue;  // a move, not an exchange
          // The fewest pieces of least extra per position that make room.
          const size_t k = static_cast<size_t>(
              std::lower_bound(freed_.begin(), freed_.end(), uint64_t{length - free}) - freed_.begin());
          if (k >= freed_.size()) continue;
          const uint64_t freed = freed_[k];
          if (freed > uint64_t{seq_len_} - source.used + length) continue;
          if (to.positions + length - freed > capacity_ || from.positions + freed - length > capacity_) continue;
          const double delta = item.extra - given_[k];
          if (delta <= 0.0) continue;
          const double worse = std::max(from.cost - delta, to.cost + delta);
          if (worse < best.worse)
            best = Change{worse, s, i, b, t, std::vector<size_t>(order_.begin(), order_.begin() + static_cast<ptrdiff_t>(k))};
        }
      }
    }
  }
}

void BucketRefiner::apply(size_t from, const Change& change) {
  Sequence& source = buckets_[from].sequences[change.sequence];
  const Item item = source.pieces[change.piece];
  const uint32_t length = item.piece.length;
  source.pieces.erase(source.pieces.begin() + static_cast<ptrdiff_t>(change.piece));
  source.used -= length;
  std::vector<Sequence>& target = buckets_[change.to].sequences;
  if (change.into != SIZE_MAX) {
    Sequence& into = target[change.into];
    std::vector<size_t> back = change.back;
    std::sort(back.begin(), back.end(), std::greater<>());
    for (const size_t k : back) {
      source.pieces.push_back(into.pieces[k]);
      source.used += into.pieces[k].piece.length;
      into.used -= into.pieces[k].piece.length;
      into.pieces.erase(into.pieces.begin() + static_cast<ptrdiff_t>(k));
    }
    into.pieces.push_back(item);
    into.used += length;
  } else {
    // Into the sequence with the least room that fits it (keeps room for
    // longer pieces), else a new one.
    Sequence* into = nullptr;
    for (Sequence& candidate : target)
      if (seq_len_ - candidate.used >= length && (!into || candidate.used > into->used)) into = &candidate;
    if (!into) into = &target.emplace_back();
    into->pieces.push_back(item);
    into->used += length;
  }
  if (source.pieces.empty())
    buckets_[from].sequences.erase(buckets_[from].sequences.begin() + static_cast<ptrdiff_t>(change.sequence));
  update(from);
  update(change.to);
  changed_[from] = true;
  changed_[change.to] = true;
}

void BucketRefiner::store(std::vector<BucketSequences>& buckets) const {
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (!changed_[b]) continue;
    BucketSequences& out = buckets[b];
    out.sequences.clear();
    out.cost.clear();
    for (const Sequence& sequence : buckets_[b].sequences) {
      PackedSequence packed;
      packed.used = sequence.used;
      packed.pieces.reserve(sequence.pieces.size());
      double c = cost_.padding(seq_len_ - sequence.used);
      for (const Item& item : sequence.pieces) {
        packed.pieces.push_back(item.piece);
        c += item.cost;
      }
      std::sort(packed.pieces.begin(), packed.pieces.end(), [](const Piece& x, const Piece& y) {
        return x.doc != y.doc ? x.doc < y.doc : x.begin < y.begin;
      });
      out.sequences.push_back(std::move(packed));
      out.cost.push_back(c);
    }
    sort_sequences(out.sequences, out.cost);
  }
}

}  // namespace msd::packing
