#include "plan/pack.h"

#include "plan/balance.h"
#include "plan/bound.h"
#include "plan/modes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <bit>
#include <functional>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>
#include <span>
#include <unordered_map>
#include <utility>

#include "common/error.h"

namespace msd {
namespace {

struct PlacedPiece {
  Piece piece;
  uint32_t patches = 0;  // leading image patches inside this piece
  double cost = 0.0;     // cost.document(length, patches)
};

// A stable LSD radix sort of `pieces` by the low `bytes` bytes of key(piece),
// ascending, skipping bytes all keys share: several times faster than a
// comparison sort at 100k pieces a step.
template <typename Key>
void radix_sort(std::vector<PlacedPiece>& pieces, Key key, int bytes) {
  std::vector<std::array<size_t, 256>> counts(static_cast<size_t>(bytes));
  for (auto& count : counts) count.fill(0);
  for (const PlacedPiece& piece : pieces) {
    const uint64_t k = key(piece);
    for (int byte = 0; byte < bytes; ++byte) ++counts[byte][(k >> (8 * byte)) & 0xff];
  }
  std::vector<PlacedPiece> buffer(pieces.size());
  for (int byte = 0; byte < bytes; ++byte) {
    auto& count = counts[byte];
    if (std::any_of(count.begin(), count.end(), [&](size_t c) { return c == pieces.size(); })) continue;
    size_t offset = 0;
    for (size_t& c : count) offset += std::exchange(c, offset);
    for (const PlacedPiece& piece : pieces) buffer[count[(key(piece) >> (8 * byte)) & 0xff]++] = piece;
    pieces.swap(buffer);
  }
}

// Longest first, ties by doc id, then begin: a total order, so the plan does
// not depend on the order documents arrive in. Stable, and cut_into_pieces
// emits a document's pieces in begin order, so one document's equal-length
// pieces stay in begin order.
void sort_longest_first(std::vector<PlacedPiece>& pieces, uint32_t seq_len) {
  radix_sort(pieces, [seq_len](const PlacedPiece& p) {
    return (static_cast<uint64_t>(seq_len - p.piece.length) << 32) | p.piece.doc;
  }, 8);
}

// Heaviest first, ties by doc id, then begin. Costs are non-negative doubles,
// whose bit patterns order like their values; complemented, descending.
void sort_heaviest_first(std::vector<PlacedPiece>& pieces) {
  radix_sort(pieces, [](const PlacedPiece& p) { return static_cast<uint64_t>(p.piece.doc); }, 4);
  radix_sort(pieces, [](const PlacedPiece& p) { return ~std::bit_cast<uint64_t>(p.cost); }, 8);
}

std::vector<PlacedPiece> cut_into_pieces(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                         const CostModel& cost) {
  const uint32_t seq_len = options.seq_len;
  std::vector<PlacedPiece> pieces;
  pieces.reserve(docs.size());
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LT(0u, doc.positions);
    MSD_CHECK_LE(doc.fixed, doc.positions);
    MSD_CHECK_LE(doc.fixed, seq_len);
    // Image patches cannot be split, so a long image-text document keeps the
    // patches plus the text that fits, whatever long_docs says.
    const bool split = options.long_docs == LongDocs::split && doc.fixed == 0;
    const uint32_t kept = split ? doc.positions : std::min(doc.positions, seq_len);
    for (uint32_t begin = 0; begin < kept; begin += seq_len) {
      const uint32_t length = std::min(seq_len, kept - begin);
      const uint32_t patches = begin < doc.fixed ? std::min(doc.fixed - begin, length) : 0;
      pieces.push_back({Piece{doc.id, begin, length}, patches, cost.document(length, patches)});
    }
  }
  return pieces;
}

// Groups `pieces` by bin, keeping their order within a bin: bin b holds
// [offsets[b], offsets[b + 1]) of the result.
std::vector<PlacedPiece> group(std::span<const PlacedPiece> pieces, const std::vector<uint32_t>& bin_of, uint32_t bins,
                               std::vector<size_t>& offsets) {
  offsets.assign(bins + 1, 0);
  for (uint32_t bin : bin_of) ++offsets[bin + 1];
  for (uint32_t b = 0; b < bins; ++b) offsets[b + 1] += offsets[b];
  std::vector<PlacedPiece> grouped(pieces.size());
  std::vector<size_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t i = 0; i < pieces.size(); ++i) grouped[next[bin_of[i]]++] = pieces[i];
  return grouped;
}

// First-fit decreasing over `pieces` (already longest first). A max-tree over
// the free space of every bin that could be opened (one per piece at most)
// finds the first bin with room in O(log n); unopened bins have seq_len free,
// so "first with room" opens a new bin exactly when no open one fits.
// sequence_cost[i] is the cost of sequence i. The pieces are assigned
// first and each sequence's list allocated once, at its size.
std::vector<PackedSequence> pack(std::span<const PlacedPiece> pieces, uint32_t seq_len,
                                 std::vector<uint32_t>& free_space, std::vector<double>& sequence_cost) {
  sequence_cost.clear();
  const size_t n = pieces.size();
  if (n == 0) return {};
  size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  free_space.assign(2 * leaves + n, 0);  // the tree, then each piece's sequence
  for (size_t i = 0; i < n; ++i) free_space[leaves + i] = seq_len;
  for (size_t i = leaves - 1; i >= 1; --i) free_space[i] = std::max(free_space[2 * i], free_space[2 * i + 1]);
  uint32_t* const sequence_of = free_space.data() + 2 * leaves;

  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t length = pieces[i].piece.length;
    MSD_CHECK_LE(length, free_space[1]);
    size_t node = 1;
    while (node < leaves) node = free_space[2 * node] >= length ? 2 * node : 2 * node + 1;
    const size_t bin = node - leaves;
    MSD_CHECK_LE(bin, count);
    if (bin == count) {
      ++count;
      sequence_cost.push_back(0.0);
    }
    sequence_cost[bin] += pieces[i].cost;
    sequence_of[i] = static_cast<uint32_t>(bin);
    free_space[node] -= length;
    for (node /= 2; node >= 1; node /= 2) free_space[node] = std::max(free_space[2 * node], free_space[2 * node + 1]);
  }
  std::vector<PackedSequence> sequences(count);
  for (size_t i = 0; i < n; ++i) ++sequences[sequence_of[i]].used;  // its pieces, for now
  for (size_t b = 0; b < count; ++b) {
    sequences[b].pieces.reserve(sequences[b].used);
    sequences[b].used = seq_len - free_space[leaves + b];
  }
  for (size_t i = 0; i < n; ++i) sequences[sequence_of[i]].pieces.push_back(pieces[i].piece);
  for (PackedSequence& sequence : sequences) {
    std::sort(sequence.pieces.begin(), sequence.pieces.end(), [](const Piece& a, const Piece& b) {
      return a.doc != b.doc ? a.doc < b.doc : a.begin < b.begin;
    });
  }
  return sequences;
}

// Runs needed when no run may exceed `capacity` positions (greedy, in order).
uint32_t runs_needed(const std::vector<PackedSequence>& sequences, uint64_t capacity) {
  uint32_t runs = 1;
  uint64_t load = 0;
  for (const PackedSequence& sequence : sequences) {
    if (load + sequence.used > capacity) {
      ++runs;
      load = 0;
    }
    load += sequence.used;
  }
  return runs;
}

// Contiguous runs of `sequences` into `count` micro-batches minimizing the
// largest run (binary search on that maximum), then cut greedily under it,
// cutting early only to leave one sequence for each micro-batch still empty.
std::vector<MicroBatchPlan> deal(std::vector<PackedSequence> sequences, const std::vector<double>& sequence_cost,
                                 uint32_t count) {
  std::vector<MicroBatchPlan> micro_batches(count);
  if (sequences.empty()) return micro_batches;
  uint64_t low = 0, high = 0;
  for (const PackedSequence& sequence : sequences) {
    low = std::max<uint64_t>(low, sequence.used);
    high += sequence.used;
  }
  while (low < high) {
    const uint64_t mid = low + (high - low) / 2;
    if (runs_needed(sequences, mid) <= count)
      high = mid;
    else
      low = mid + 1;
  }
  const uint64_t capacity = low;
  size_t run = 0;
  uint64_t load = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const size_t left = sequences.size() - i;
    const size_t empty_after = count - run - 1;  // micro-batches after the current one
    const bool current_used = !micro_batches[run].sequences.empty();
    if (current_used && (load + sequences[i].used > capacity || left <= empty_after)) {
      ++run;
      load = 0;
    }
    MSD_CHECK_LT(run, static_cast<size_t>(count));
    load += sequences[i].used;
    micro_batches[run].positions += sequences[i].used;
    micro_batches[run].cost += sequence_cost[i];
    micro_batches[run].sequences.push_back(std::move(sequences[i]));
  }
  return micro_batches;
}


// A sequence's GEMMs run over all seq_len positions, so its padding costs
// the linear term (CostModel::padding); attention masks it.
void add_padding_cost(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost,
                      uint32_t seq_len, const CostModel& cost) {
  for (size_t i = 0; i < sequences.size(); ++i) sequence_cost[i] += cost.padding(seq_len - sequences[i].used);
}

// Under context parallelism a sequence costs what its busiest CP rank does
// (CostModel::zigzag_sequence), which depends on where its pieces sit, so
// once packed its cost replaces the sum of its pieces'. `patches` maps a
// piece (doc << 32 | begin) with image patches to their count.
class ZigzagCost {
 public:
  ZigzagCost(std::span<const PlacedPiece> pieces, const PackOptions& options, const CostModel& cost)
      : options_(options), cost_(cost) {
    if (options.cp <= 1) return;
    for (const PlacedPiece& p : pieces)
      if (p.patches > 0) patches_[uint64_t{p.piece.doc} << 32 | p.piece.begin] = p.patches;
  }
  // Replaces sequence_cost[i] by the CP cost of sequences[i]; no-op for cp = 1.
  void apply(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost) {
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

 private:
  const PackOptions& options_;
  const CostModel& cost_;
  std::unordered_map<uint64_t, uint32_t> patches_;
  std::vector<uint32_t> lengths_, counts_;
};

// The position-count split: LPT on positions, pack, contiguous runs.
std::vector<BucketPlan> plan_by_tokens(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                       const CostModel& cost) {
  ZigzagCost zigzag(pieces, options, cost);
  std::vector<double> positions(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) positions[i] = pieces[i].piece.length;
  std::vector<size_t> offsets;
  const std::vector<PlacedPiece> grouped =
      group(pieces, balance(positions, options.dp, BalanceMethod::greedy), options.dp, offsets);
  std::vector<BucketPlan> plans(options.dp);
  std::vector<uint32_t> scratch;
  std::vector<double> sequence_cost;
  for (uint32_t b = 0; b < options.dp; ++b) {
    const std::span<const PlacedPiece> bucket(grouped.data() + offsets[b], offsets[b + 1] - offsets[b]);
    std::vector<PackedSequence> sequences = pack(bucket, options.seq_len, scratch, sequence_cost);
    zigzag.apply(sequences, sequence_cost);
    add_padding_cost(sequences, sequence_cost, options.seq_len, cost);
    plans[b].micro_batches = deal(std::move(sequences), sequence_cost, options.micro_batches);
  }
  return plans;
}

// The sequences and their costs in heaviest-first order (ties: the first
// piece's doc and begin, unique to a sequence), a total order.
void sort_sequences(std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost) {
  const auto before = [&](size_t x, size_t y) {
    if (sequence_cost[x] != sequence_cost[y]) return sequence_cost[x] > sequence_cost[y];
    const Piece& px = sequences[x].pieces.front();
    const Piece& py = sequences[y].pieces.front();
    return px.doc != py.doc ? px.doc < py.doc : px.begin < py.begin;
  };
  // A bucket holds a few sequences: insertion sort in place, no allocation
  // (the order is total, so any sort gives the same result).
  if (sequences.size() <= 16) {
    for (size_t i = 1; i < sequences.size(); ++i)
      for (size_t j = i; j > 0 && before(j, j - 1); --j) {
        std::swap(sequences[j], sequences[j - 1]);
        std::swap(sequence_cost[j], sequence_cost[j - 1]);
      }
    return;
  }
  std::vector<uint32_t> order(sequences.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), before);
  std::vector<PackedSequence> sorted(sequences.size());
  std::vector<double> sorted_cost(sequences.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted[i] = std::move(sequences[order[i]]);
    sorted_cost[i] = sequence_cost[order[i]];
  }
  sequences.swap(sorted);
  sequence_cost.swap(sorted_cost);
}

// One bucket's sequences (heaviest first) over `count` micro-batches by cost,
// none over `budget` positions where the sequences allow, ordered heaviest
// first (ties: lower bin), so micro-batch i is the i-th heaviest on every
// rank; the empty ones come last.
std::vector<MicroBatchPlan> sequences_into_micro_batches(std::vector<PackedSequence> sequences,
                                                         const std::vector<double>& sequence_cost, uint32_t count,
                                                         uint64_t budget, BalanceMethod method) {
  std::vector<uint64_t> used(sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) used[i] = sequences[i].used;
  // No more sequences than micro-batches, each within the budget: one each,
  // in order, which is what LPT and its swaps give; spared the allocations
  // (a step at 4096 DP ranks has thousands of such buckets).
  const bool one_each = sequences.size() <= count &&
                        std::all_of(used.begin(), used.end(), [&](uint64_t u) { return u <= budget; });
  std::vector<uint32_t> mb_of(sequences.size());
  if (one_each)
    for (uint32_t i = 0; i < mb_of.size(); ++i) mb_of[i] = i;
  else if (count > 1)  // one micro-batch takes them all, as balance_within would put them
    mb_of = balance_within(sequence_cost, used, budget, count, method);
  std::vector<MicroBatchPlan> micro_batches(count);
  for (size_t i = 0; i < sequences.size(); ++i) {
    MicroBatchPlan& mb = micro_batches[mb_of[i]];
    mb.positions += sequences[i].used;
    mb.cost += sequence_cost[i];
    mb.sequences.push_back(std::move(sequences[i]));
  }
  std::stable_sort(micro_batches.begin(), micro_batches.end(),
                   [](const MicroBatchPlan& x, const MicroBatchPlan& y) { return x.cost > y.cost; });
  return micro_batches;
}

// One bucket's packed sequences and their costs (pieces or CP zigzag, plus
// padding), heaviest first.
struct BucketSequences {
  std::vector<PackedSequence> sequences;
  std::vector<double> cost;
};

// Sequences first: the step's pieces (longest first) are packed into as few
// seq_len sequences as first-fit decreasing finds; the sequences are balanced
// over the DP buckets by their cost (pieces + padding), no bucket over
// `capacity` positions.
std::vector<BucketSequences> sequences_first(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                             const CostModel& cost, ZigzagCost& zigzag, uint64_t capacity) {
  std::vector<uint32_t> scratch;
  std::vector<double> sequence_cost;
  std::vector<PackedSequence> sequences = pack(pieces, options.seq_len, scratch, sequence_cost);
  zigzag.apply(sequences, sequence_cost);
  add_padding_cost(sequences, sequence_cost, options.seq_len, cost);
  sort_sequences(sequences, sequence_cost);
  std::vector<uint64_t> used(sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) used[i] = sequences[i].used;
  const std::vector<uint32_t> bucket_of = balance_within(sequence_cost, used, capacity, options.dp, options.balance);
  std::vector<BucketSequences> buckets(options.dp);
  for (size_t i = 0; i < sequences.size(); ++i) {  // heaviest first within each bucket too
    buckets[bucket_of[i]].sequences.push_back(std::move(sequences[i]));
    buckets[bucket_of[i]].cost.push_back(sequence_cost[i]);
  }
  return buckets;
}

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
std::vector<BucketSequences> pieces_first(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                          const CostModel& cost, ZigzagCost& zigzag, uint64_t capacity,
                                          bool by_positions) {
  uint64_t total = 0;
  for (const PlacedPiece& p : pieces) total += p.piece.length;
  const uint64_t sequences = std::max<uint64_t>(1, (total + options.seq_len - 1) / options.seq_len);
  const uint64_t slots = (sequences + options.dp - 1) / options.dp;
  std::vector<double> weights(pieces.size());
  std::vector<uint64_t> sizes(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    weights[i] = by_positions ? pieces[i].piece.length : pieces[i].cost;
    sizes[i] = pieces[i].piece.length;
  }
  const uint64_t room = by_positions ? capacity : std::min(capacity, slots * options.seq_len);
  const BalanceMethod method = by_positions ? BalanceMethod::tokens : options.balance;
  std::vector<size_t> offsets;
  std::vector<PlacedPiece> grouped =
      group(pieces, balance_within(weights, sizes, room, options.dp, method), options.dp, offsets);
  std::vector<BucketSequences> buckets(options.dp);
  std::vector<uint32_t> scratch;
  for (uint32_t b = 0; b < options.dp; ++b) {
    const auto first = grouped.begin() + static_cast<ptrdiff_t>(offsets[b]);
    const auto last = grouped.begin() + static_cast<ptrdiff_t>(offsets[b + 1]);
    std::sort(first, last, [](const PlacedPiece& x, const PlacedPiece& y) {
      if (x.piece.length != y.piece.length) return x.piece.length > y.piece.length;
      return x.piece.doc != y.piece.doc ? x.piece.doc < y.piece.doc : x.piece.begin < y.piece.begin;
    });
    BucketSequences& bucket = buckets[b];
    bucket.sequences = pack(std::span<const PlacedPiece>(grouped.data() + offsets[b], offsets[b + 1] - offsets[b]),
                            options.seq_len, scratch, bucket.cost);
    zigzag.apply(bucket.sequences, bucket.cost);
    add_padding_cost(bucket.sequences, bucket.cost, options.seq_len, cost);
    sort_sequences(bucket.sequences, bucket.cost);
  }
  return buckets;
}

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
                 double target = INFINITY)
      : seq_len_(options.seq_len), cost_(cost), capacity_(capacity), max_sequences_(max_sequences), target_(target),
        buckets_(options.dp), in_room_(options.dp, false) {
    for (uint32_t b = 0; b < options.dp; ++b) {
      by_cost_.insert({0.0, b});
      short_of_room_.push({0, b});
    }
  }

  // `heaviest`: the step's pieces, heaviest first (sort_heaviest_first).
  std::vector<BucketSequences> place(const std::vector<PlacedPiece>& heaviest, const PackOptions& options,
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

 private:
  static constexpr size_t kCandidates = 64;
  struct Open {
    std::vector<PackedSequence> sequences;
    std::vector<double> cost;  // pieces plus padding, per sequence
    double total = 0.0;
    uint64_t positions = 0;
    uint32_t most_free = 0;  // the most room in one of its sequences
  };

  bool add(const PlacedPiece& placed) {
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

  struct Spot {
    uint32_t bucket = UINT32_MAX;
    bool into_room = false;
    double total = INFINITY;  // the bucket's cost with the piece
  };

  // Whether the bucket at `it` in room_ still has room for pieces of
  // `length`; when not, erases it (`it` then points past it).
  bool has_room(std::set<std::pair<double, uint32_t>>::iterator& it, uint32_t length) {
    const uint32_t b = it->second;
    if (buckets_[b].most_free >= length) return true;
    it = room_.erase(it);
    in_room_[b] = false;
    short_of_room_.push({buckets_[b].most_free, b});
    return false;
  }

  bool may_open(const Open& bucket, uint32_t length) const {
    return bucket.sequences.size() < max_sequences_ && bucket.positions + length <= capacity_;
  }

  // Where the piece leaves its bucket lightest (no target).
  Spot lightest(uint32_t length, double extra, double alone) {
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

  // Where the piece leaves its bucket heaviest, at most target_ (best fit):
  // the heaviest bucket under target_ less what the piece adds, with room
  // for it or a new sequence. Ties: into room, then the higher bucket.
  Spot fullest(uint32_t length, double extra, double alone) {
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

  void put(const PlacedPiece& placed, uint32_t b, bool into_room, double total) {
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

// Each bucket's sequences into its micro-batches (none over the budget).
std::vector<BucketPlan> into_micro_batches(std::vector<BucketSequences> buckets, const PackOptions& options,
                                           uint64_t budget) {
  std::vector<BucketPlan> plans(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b)
    plans[b].micro_batches = sequences_into_micro_batches(std::move(buckets[b].sequences), buckets[b].cost,
                                                          options.micro_batches, budget, options.balance);
  return plans;
}


// The cost of the heaviest bucket of a placement.
double max_bucket_cost(const std::vector<BucketSequences>& buckets) {
  double most = 0.0;
  for (const BucketSequences& bucket : buckets)
    most = std::max(most, std::accumulate(bucket.cost.begin(), bucket.cost.end(), 0.0));
  return most;
}

// How far a placement's heaviest bucket may sit above its mean and still be
// called flat (plan_by_cost): 0.1%.
constexpr double kFlat = 1e-3;

// Whether the heaviest bucket of a placement (cp = 1) is within kFlat of its
// mean. A bucket costs its sequences' linear term (padding included) plus
// its pieces' extras (cost less the linear term over their positions), so
// the mean over buckets is fixed by the number of sequences: no placement of
// as many sequences or more has a heaviest bucket more than kFlat lighter.
bool flat(const std::vector<BucketSequences>& buckets) {
  double most = 0.0, total = 0.0;
  for (const BucketSequences& bucket : buckets) {
    const double c = std::accumulate(bucket.cost.begin(), bucket.cost.end(), 0.0);
    most = std::max(most, c);
    total += c;
  }
  return most <= total / static_cast<double>(buckets.size()) * (1.0 + kFlat);
}

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
                uint64_t capacity, uint32_t max_sequences)
      : seq_len_(options.seq_len), cost_(cost), capacity_(capacity), max_sequences_(max_sequences) {
    for (const PlacedPiece& p : pieces) {
      floor_ = std::max(floor_, p.cost + cost.padding(seq_len_ - p.piece.length));
      if (p.patches > 0) patches_[key(p.piece)] = p.patches;  // image pieces only: text is costed from its length
    }
  }

  void run(std::vector<BucketSequences>& buckets) {
    if (max_bucket_cost(buckets) <= floor_ * (1.0 + 1e-12)) return;  // already optimal
    load(buckets);
    const size_t rounds = std::min<size_t>(2 * buckets.size(), 512);
    for (size_t round = 0; round < rounds && step(); ++round) {
    }
    store(buckets);
  }

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

  void load(const std::vector<BucketSequences>& buckets) {
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

  // Recomputes bucket b and its place in by_cost_.
  void update(size_t b) {
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
  bool step() {
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

  // The best move of one piece to any bucket.
  void find_move(size_t heavy, Change& best) const {
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

  // The best exchange with the lightest buckets: a piece of the heaviest
  // bucket into a sequence without room for it, for that sequence's pieces
  // of least extra per position that make the room (and fit where it was).
  void find_exchange(size_t heavy, Change& best) {
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

  void apply(size_t from, const Change& change) {
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

  // The buckets a change touched; the others are as they came.
  void store(std::vector<BucketSequences>& buckets) const {
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

// The sequence placement under a target (best fit), the target bisected
// between the step's cheap lower bound (bound.h without the classes) and
// `lightest`, a plan's heaviest bucket: the lightest placement that fits,
// or empty when none beats `lightest`. At most kTargetTries placements, the
// first kFirstStep below `lightest` (plans land within a few percent of the
// bound), then halving.
std::vector<BucketSequences> fit_under_target(const std::vector<PlacedPiece>& heaviest, const PackOptions& options,
                                              const CostModel& cost, uint64_t capacity, uint32_t sequences,
                                              ZigzagCost& zigzag, double lightest) {
  constexpr int kTargetTries = 4;
  constexpr double kTolerance = 5e-4;
  constexpr double kFirstStep = 0.015;
  std::vector<uint32_t> lengths;
  std::vector<double> costs;
  lengths.reserve(heaviest.size());
  costs.reserve(heaviest.size());
  for (const PlacedPiece& p : heaviest) lengths.push_back(p.piece.length), costs.push_back(p.cost);
  const BoundShape shape{options.seq_len, options.dp, options.micro_batches, capacity / options.micro_batches};
  double lo = step_bound(lengths, costs, shape, cost, 0.0).cost, hi = lightest;
  std::vector<BucketSequences> best;
  for (int it = 0; it < kTargetTries && hi > lo * (1.0 + kTolerance); ++it) {
    const double target = it == 0 ? std::max(0.5 * (lo + hi), hi * (1.0 - kFirstStep)) : 0.5 * (lo + hi);
    std::vector<BucketSequences> placed =
        SequencePlacer(options, cost, capacity, sequences, target).place(heaviest, options, zigzag);
    if (placed.empty()) {
      lo = target;
      continue;
    }
    hi = max_bucket_cost(placed);
    best = std::move(placed);
  }
  return best;
}

// Cost balance, padding-aware: a sequence costs its pieces plus the linear
// term over its padding (its GEMMs run over all seq_len positions). Three
// placements are made, sequences first, pieces first by cost and by
// positions (above), no bucket over micro_batches x budget positions; the
// one whose heaviest bucket costs least is kept (ties: the earlier, so
// sequences first, which pads least, wins a tie), and each bucket's
// sequences are balanced over its micro-batches (none over the budget).
std::vector<BucketPlan> plan_by_cost(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                     const CostModel& cost, uint64_t budget) {
  const uint32_t count = options.micro_batches;
  const uint64_t capacity = budget > UINT64_MAX / count ? UINT64_MAX : budget * count;
  // No plan is lighter than the heaviest piece in a sequence of its own: a
  // placement that reaches it is kept as it is.
  double floor = 0.0;
  for (const PlacedPiece& p : pieces) floor = std::max(floor, p.cost + cost.padding(options.seq_len - p.piece.length));
  ZigzagCost zigzag(pieces, options, cost);
  std::vector<BucketSequences> kept = sequences_first(pieces, options, cost, zigzag, capacity);
  double lightest = max_bucket_cost(kept);
  const auto optimal = [&] { return lightest <= floor * (1.0 + 1e-12); };
  if (optimal()) return into_micro_batches(std::move(kept), options, budget);
  std::vector<PlacedPiece> heaviest(pieces);
  sort_heaviest_first(heaviest);
  for (bool by_positions : {false, true}) {
    if (optimal()) break;
    std::vector<BucketSequences> other =
        pieces_first(by_positions ? pieces : heaviest, options, cost, zigzag, capacity, by_positions);
    const double most = max_bucket_cost(other);
    if (most < lightest) {
      lightest = most;
      kept = std::move(other);
    }
  }
  // Whole sequences per micro-batch within the budget: no bucket over
  // micro_batches x floor(budget / seq_len) sequences.
  const uint32_t sequences =
      static_cast<uint32_t>(std::min<uint64_t>(uint64_t{count} * (budget / options.seq_len), UINT32_MAX));
  if (optimal() || sequences == 0) return into_micro_batches(std::move(kept), options, budget);
  if (options.cp <= 1) {
    // The refiner on the lightest of the three, then the sequence placement
    // and best fit under a target, each refined and kept when lighter (ties:
    // the former). A refined plan
    // that is flat is kept as it is: a plan lighter by more than kFlat needs
    // fewer sequences (flat()), and the sequence placement, which like LPT
    // opens sequences in the lightest buckets, ends with about as many: on
    // such steps (512 groups of 8 documents of 32..543 tokens, seq_len 1024)
    // it gained 0.01-0.04% for a third of the placement's time.
    BucketRefiner refiner(pieces, options, cost, capacity, sequences);
    refiner.run(kept);
    lightest = max_bucket_cost(kept);
    if (optimal() || flat(kept)) return into_micro_batches(std::move(kept), options, budget);
    const auto keep_if_lighter = [&](std::vector<BucketSequences> placed) {
      if (placed.empty()) return;
      refiner.run(placed);
      const double most = max_bucket_cost(placed);
      if (most < lightest) kept = std::move(placed), lightest = most;
    };
    keep_if_lighter(SequencePlacer(options, cost, capacity, sequences).place(heaviest, options, zigzag));
    keep_if_lighter(fit_under_target(heaviest, options, cost, capacity, sequences, zigzag, lightest));
    return into_micro_batches(std::move(kept), options, budget);
  }
  std::vector<BucketSequences> placed = SequencePlacer(options, cost, capacity, sequences).place(heaviest, options, zigzag);
  if (!placed.empty() && max_bucket_cost(placed) < lightest) kept = std::move(placed);
  return into_micro_batches(std::move(kept), options, budget);
}

// The memory budget (PackOptions::max_positions_per_micro_batch), applied
// after balancing: micro-batches over it give up their shortest pieces (the
// least cost per position) until within it; the freed pieces, longest first,
// go to the micro-batch with the most room, and a text piece longer than
// that room is cut at it (each part its own document under document
// masking). A plan already within the budget is left exactly as it was.
class BudgetEnforcer {
 public:
  BudgetEnforcer(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost)
      : options_(options), cost_(cost) {
    for (const PlanDoc& doc : docs)
      if (doc.fixed > 0) fixed_[doc.id] = doc.fixed;
  }

  // Returns true when the budget bound (the plan changed); sets `exceeded`
  // when some micro-batch still holds more than `budget` positions.
  bool apply(std::vector<BucketPlan>& buckets, uint64_t budget, bool& exceeded) {
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

  uint32_t patches_of(const Piece& piece) const {
    const auto it = fixed_.find(piece.doc);
    return it == fixed_.end() || piece.begin >= it->second ? 0 : std::min(it->second - piece.begin, piece.length);
  }

 private:
  PlacedPiece placed(const Piece& piece) const {
    const uint32_t patches = patches_of(piece);
    return {piece, patches, cost_.document(piece.length, patches)};
  }

  void touch(const MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces, std::vector<bool>::reference touched) const {
    if (touched) return;
    touched = true;
    for (const PackedSequence& sequence : mb.sequences)
      for (const Piece& piece : sequence.pieces) pieces.push_back(placed(piece));
  }

  // Longest first, each to the micro-batch with the most room (ties: lower
  // index); cut at that room when it does not fit and holds no patches there.
  void place(std::vector<PlacedPiece>& pool, const std::vector<MicroBatchPlan*>& mbs,
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

  // The micro-batch holding the fewest positions (ties: lower index).
  static size_t fullest_last(const std::vector<MicroBatchPlan*>& mbs) {
    size_t best = 0;
    for (size_t k = 1; k < mbs.size(); ++k)
      if (mbs[k]->positions < mbs[best]->positions) best = k;
    return best;
  }

  void repack(MicroBatchPlan& mb, std::vector<PlacedPiece>& pieces) {
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

  const PackOptions& options_;
  const CostModel& cost_;
  std::unordered_map<uint32_t, uint32_t> fixed_;
  std::vector<uint32_t> scratch_, lengths_, counts_;
  std::vector<double> sequence_cost_;
};

// Variable-length rows: each micro-batch's packed sequences become one, their
// pieces concatenated in order.
void join_rows(std::vector<MicroBatchPlan>& micro_batches) {
  for (MicroBatchPlan& mb : micro_batches) {
    if (mb.sequences.size() <= 1) continue;
    PackedSequence row;
    for (PackedSequence& sequence : mb.sequences) {
      row.pieces.insert(row.pieces.end(), sequence.pieces.begin(), sequence.pieces.end());
      row.used += sequence.used;
    }
    mb.sequences.assign(1, std::move(row));
  }
}

}  // namespace

PackedStep pack_step(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& model) {
  const CostModel cost = options.varlen ? model.unpadded() : model;  // varlen rows compute no padding
  MSD_CHECK(!options.varlen || options.cp <= 1);
  MSD_CHECK_LE(1u, options.seq_len);
  MSD_CHECK_LE(1u, options.dp);
  MSD_CHECK_LE(1u, options.micro_batches);
  std::vector<PlacedPiece> pieces = cut_into_pieces(docs, options, cost);
  uint64_t total = 0;
  for (const PlacedPiece& p : pieces) total += p.piece.length;
  const uint64_t budget = micro_batch_budget(total, options);
  PackedStep step;
  sort_longest_first(pieces, options.seq_len);
  if (options.balance == BalanceMethod::tokens)
    step.buckets = plan_by_tokens(pieces, options, cost);
  else
    step.buckets = plan_by_cost(pieces, options, cost, budget);
  std::vector<double> costs(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) costs[i] = pieces[i].cost;
  BudgetEnforcer enforcer(docs, options, cost);
  bool exceeded = false;
  const bool binding = enforcer.apply(step.buckets, budget, exceeded);
  if (options.pp > 1)
    for (BucketPlan& bucket : step.buckets) order_for_pipeline(bucket.micro_batches);
  if (options.varlen)
    for (BucketPlan& bucket : step.buckets) join_rows(bucket.micro_batches);
  std::vector<uint32_t> lengths;
  if (binding) costs.clear();  // pieces were cut: the bounds are over the pieces placed
  for (BucketPlan& bucket : step.buckets) {
    for (const MicroBatchPlan& mb : bucket.micro_batches) {
      bucket.positions += mb.positions;
      bucket.cost += mb.cost;
      for (const PackedSequence& sequence : mb.sequences) {
        ++step.stats.sequences;
        if (!binding) continue;
        for (const Piece& piece : sequence.pieces) {
          lengths.push_back(piece.length);
          costs.push_back(cost.document(piece.length, enforcer.patches_of(piece)));
        }
      }
    }
  }
  if (!binding)
    for (const PlacedPiece& p : pieces) lengths.push_back(p.piece.length);
  const uint64_t slots = uint64_t{options.dp} * options.micro_batches;
  const uint64_t limit = std::max<uint64_t>(budget, (total + slots - 1) / slots);
  std::vector<double> sorted_costs(costs);
  std::sort(sorted_costs.begin(), sorted_costs.end(), std::greater<>());  // tokens: sorted by length, not cost
  const uint64_t sequences = step.stats.sequences;
  step.stats = plan_stats(step.buckets, sorted_costs);
  step.stats.sequences = sequences;
  step.stats.positions_budget = budget;
  step.stats.budget_binding = binding;
  step.stats.budget_exceeded = exceeded;
  if (!options.lower_bound || options.varlen) {  // the piece bounds of plan_stats only
    if (step.stats.bound_cost > 0.0) step.stats.max_over_bound = step.stats.max_cost / step.stats.bound_cost;
    return step;
  }
  const BoundShape shape{options.seq_len, options.dp, options.micro_batches, limit};
  const StepBound bound = step_bound(lengths, costs, shape, cost, step.stats.max_cost);
  step.stats.min_sequences = bound.min_sequences;
  step.stats.bound_cost = std::max(step.stats.bound_cost, bound.cost);
  if (step.stats.mean_cost > 0.0) {
    step.stats.lower_bound = std::max(step.stats.lower_bound, bound.cost / step.stats.mean_cost);
    step.stats.pigeonhole_bound = std::max(step.stats.pigeonhole_bound, step.stats.bound_cost / step.stats.mean_cost);
  }
  step.stats.max_over_bound = step.stats.bound_cost > 0.0 ? step.stats.max_cost / step.stats.bound_cost : 1.0;
  return step;
}

uint64_t row_positions(uint64_t used, uint32_t seq_len, bool varlen) {
  return varlen ? varlen_row_positions(used) : seq_len;
}

void order_for_pipeline(std::vector<MicroBatchPlan>& micro_batches) {
  const auto with_work = std::stable_partition(micro_batches.begin(), micro_batches.end(),
                                               [](const MicroBatchPlan& mb) { return mb.positions > 0; });
  std::vector<MicroBatchPlan> lightest(std::make_move_iterator(micro_batches.begin()), std::make_move_iterator(with_work));
  std::stable_sort(lightest.begin(), lightest.end(),
                   [](const MicroBatchPlan& x, const MicroBatchPlan& y) { return x.cost < y.cost; });
  size_t front = 0, back = lightest.size();
  for (size_t i = 0; i < lightest.size(); ++i) micro_batches[i % 2 == 0 ? front++ : --back] = std::move(lightest[i]);
}

uint64_t micro_batch_budget(uint64_t total_positions, const PackOptions& options) {
  if (options.max_positions_per_micro_batch > 0) return options.max_positions_per_micro_batch;
  const uint64_t bins = uint64_t{options.dp} * options.micro_batches * options.seq_len;
  return std::max<uint64_t>(1, (total_positions + bins - 1) / bins) * options.seq_len;
}

std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                            const CostModel& cost) {
  return pack_step(docs, options, cost).buckets;
}

PlanStats plan_stats(const std::vector<BucketPlan>& buckets, std::span<const double> piece_costs) {
  PlanStats stats;
  const double largest_piece_cost = piece_costs.empty() ? 0.0 : piece_costs.front();
  stats.largest_piece_cost = largest_piece_cost;
  if (buckets.empty()) return stats;
  const size_t count = buckets.front().micro_batches.size();
  const double dp = static_cast<double>(buckets.size());
  double total = 0.0, max_positions = 0.0, total_positions = 0.0;
  stats.micro_batch_mean_cost.assign(count, 0.0);
  stats.micro_batch_max_cost.assign(count, 0.0);
  for (const BucketPlan& bucket : buckets) {
    MSD_CHECK_EQ(bucket.micro_batches.size(), count);
    total += bucket.cost;
    stats.max_cost = std::max(stats.max_cost, bucket.cost);
    total_positions += static_cast<double>(bucket.positions);
    max_positions = std::max(max_positions, static_cast<double>(bucket.positions));
    for (size_t m = 0; m < count; ++m) {
      stats.micro_batch_mean_cost[m] += bucket.micro_batches[m].cost;
      stats.micro_batch_max_cost[m] = std::max(stats.micro_batch_max_cost[m], bucket.micro_batches[m].cost);
    }
  }
  const auto ratio = [](double high, double mean) { return mean > 0.0 ? high / mean : 1.0; };
  stats.mean_cost = total / dp;
  stats.imbalance = ratio(stats.max_cost, stats.mean_cost);
  stats.lower_bound = ratio(std::max(largest_piece_cost, stats.mean_cost), stats.mean_cost);
  const size_t k = buckets.size();
  double pigeonhole = largest_piece_cost;
  std::vector<double> prefix(piece_costs.size() + 1, 0.0);
  for (size_t i = 0; i < piece_costs.size(); ++i) prefix[i + 1] = prefix[i] + piece_costs[i];
  for (size_t t = 1; t * k < piece_costs.size(); ++t) {
    // The t + 1 lightest of the t*k + 1 heaviest: indices [t*k - t, t*k].
    pigeonhole = std::max(pigeonhole, prefix[t * k + 1] - prefix[t * k - t]);
  }
  stats.bound_cost = std::max(pigeonhole, stats.mean_cost);
  stats.pigeonhole_bound = ratio(std::max(pigeonhole, stats.mean_cost), stats.mean_cost);
  stats.positions_imbalance = ratio(max_positions, total_positions / dp);
  stats.micro_batch_imbalance.assign(count, 1.0);
  for (const BucketPlan& bucket : buckets)
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      stats.max_micro_batch_positions = std::max(stats.max_micro_batch_positions, mb.positions);
  for (size_t m = 0; m < count; ++m) {
    stats.micro_batch_mean_cost[m] /= dp;
    stats.micro_batch_imbalance[m] = ratio(stats.micro_batch_max_cost[m], stats.micro_batch_mean_cost[m]);
    stats.worst_micro_batch_imbalance = std::max(stats.worst_micro_batch_imbalance, stats.micro_batch_imbalance[m]);
  }
  const double mb_mean = count > 0 ? total / (dp * static_cast<double>(count)) : 0.0;
  stats.micro_batch_lower_bound = ratio(std::max(largest_piece_cost, mb_mean), mb_mean);
  return stats;
}

PackOptions make_pack_options(const Config& config) {
  PackOptions options;
  options.seq_len = config.job.seq_len;
  options.dp = static_cast<uint32_t>(config.topology.dp);
  options.micro_batches = config.job.micro_batches;
  options.long_docs = config.job.long_docs;
  options.balance = config.job.balance;
  const TrainingMode mode = training_mode(config.job);
  // A mode that names its balance (msd_tokens, msd_greedy, msd_kk) overrides job.balance.
  switch (mode) {
    case TrainingMode::msd_tokens: options.balance = BalanceMethod::tokens; break;
    case TrainingMode::msd_greedy: options.balance = BalanceMethod::greedy; break;
    case TrainingMode::msd_kk: options.balance = BalanceMethod::karmarkar_karp; break;
    default: break;
  }
  options.cp = static_cast<uint32_t>(config.topology.cp);
  options.pp = static_cast<uint32_t>(config.topology.pp);
  // The colocated baselines keep Megatron's fixed rows.
  options.varlen = config.job.micro_batch_shape == RowShape::varlen && !is_baseline(mode);
  options.max_positions_per_micro_batch = config.job.max_positions_per_micro_batch;
  return options;
}

}  // namespace msd
