#include "plan/step/packing.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <numeric>
#include <utility>

#include "common/error.h"
#include "plan/step/balance.h"

namespace msd::packing {

namespace {

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

// The sequences of a first-fit: piece i went to sequence sequence_of[i],
// sequence b has free[b] positions left. Each sequence's list is allocated
// once, at its size, its pieces ordered by (doc, begin).
std::vector<PackedSequence> fill_sequences(std::span<const PlacedPiece> pieces, std::span<const uint32_t> sequence_of,
                                           std::span<const uint32_t> free, uint32_t seq_len) {
  std::vector<PackedSequence> sequences(free.size());
  for (uint32_t b : sequence_of) ++sequences[b].used;  // its pieces, for now
  for (size_t b = 0; b < free.size(); ++b) {
    sequences[b].pieces.reserve(sequences[b].used);
    sequences[b].used = seq_len - free[b];
  }
  for (size_t i = 0; i < pieces.size(); ++i) sequences[sequence_of[i]].pieces.push_back(pieces[i].piece);
  for (PackedSequence& sequence : sequences) {
    std::sort(sequence.pieces.begin(), sequence.pieces.end(), [](const Piece& a, const Piece& b) {
      return a.doc != b.doc ? a.doc < b.doc : a.begin < b.begin;
    });
  }
  return sequences;
}

// Up to this many pieces (a DP bucket's share of a step) first-fit scans the
// open sequences: cheaper than building the tree, the same sequences.
constexpr size_t kFewPieces = 32;

FirstFit first_fit_few(std::span<const PlacedPiece> pieces, uint32_t seq_len, std::vector<uint32_t>& scratch,
                        std::vector<double>& sequence_cost) {
  const size_t n = pieces.size();
  scratch.assign(2 * n, 0);  // each sequence's free positions, then each piece's sequence
  uint32_t* const free = scratch.data();
  uint32_t* const sequence_of = scratch.data() + n;
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t length = pieces[i].piece.length;
    MSD_CHECK_LE(length, seq_len);
    size_t bin = 0;
    while (bin < count && free[bin] < length) ++bin;
    if (bin == count) {
      free[count++] = seq_len;
      sequence_cost.push_back(0.0);
    }
    free[bin] -= length;
    sequence_cost[bin] += pieces[i].cost;
    sequence_of[i] = static_cast<uint32_t>(bin);
  }
  return {std::span<const uint32_t>(sequence_of, n), std::span<const uint32_t>(free, count)};
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

}  // namespace

void sort_longest_first(std::vector<PlacedPiece>& pieces, uint32_t seq_len) {
  radix_sort(pieces, [seq_len](const PlacedPiece& p) {
    return (static_cast<uint64_t>(seq_len - p.piece.length) << 32) | p.piece.doc;
  }, 8);
}

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
    // cuts = balance: ceil(kept / seq_len) pieces of floor or ceil(kept /
    // count) positions, the longer first; else seq_len pieces and a rest.
    const uint32_t count = (kept + seq_len - 1) / seq_len;
    const bool even = options.cuts == Cuts::balance;
    for (uint32_t k = 0, begin = 0; begin < kept; ++k) {
      const uint32_t length = even ? kept / count + (k < kept % count ? 1 : 0) : std::min(seq_len, kept - begin);
      const uint32_t patches = begin < doc.fixed ? std::min(doc.fixed - begin, length) : 0;
      pieces.push_back({Piece{doc.id, begin, length}, patches, cost.document(length, patches)});
      begin += length;
    }
  }
  return pieces;
}

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

FirstFit first_fit(std::span<const PlacedPiece> pieces, uint32_t seq_len, std::vector<uint32_t>& scratch,
                   std::vector<double>& sequence_cost) {
  sequence_cost.clear();
  const size_t n = pieces.size();
  if (n == 0) return {};
  if (n <= kFewPieces) return first_fit_few(pieces, seq_len, scratch, sequence_cost);
  size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  scratch.assign(2 * leaves + n, 0);  // the tree, then each piece's sequence
  uint32_t* const free_space = scratch.data();
  for (size_t i = 0; i < n; ++i) free_space[leaves + i] = seq_len;
  for (size_t i = leaves - 1; i >= 1; --i) free_space[i] = std::max(free_space[2 * i], free_space[2 * i + 1]);
  uint32_t* const sequence_of = free_space + 2 * leaves;

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
  return {std::span<const uint32_t>(sequence_of, n), std::span<const uint32_t>(free_space + leaves, count)};
}

std::vector<PackedSequence> build_sequences(std::span<const PlacedPiece> pieces, const FirstFit& fit, uint32_t seq_len) {
  return fill_sequences(pieces, fit.sequence_of, fit.free, seq_len);
}

std::vector<PackedSequence> pack(std::span<const PlacedPiece> pieces, uint32_t seq_len,
                                 std::vector<uint32_t>& scratch, std::vector<double>& sequence_cost) {
  return build_sequences(pieces, first_fit(pieces, seq_len, scratch, sequence_cost), seq_len);
}

double packed_cost(std::span<const PlacedPiece> pieces, uint32_t seq_len, const CostModel& cost,
                   std::vector<uint32_t>& scratch, std::vector<double>& sequence_cost) {
  const FirstFit fit = first_fit(pieces, seq_len, scratch, sequence_cost);
  for (size_t s = 0; s < fit.free.size(); ++s) sequence_cost[s] += cost.padding(fit.free[s]);
  std::sort(sequence_cost.begin(), sequence_cost.end(), std::greater<>());
  return std::accumulate(sequence_cost.begin(), sequence_cost.end(), 0.0);
}

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

void add_padding_cost(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost,
                      uint32_t seq_len, const CostModel& cost) {
  for (size_t i = 0; i < sequences.size(); ++i) sequence_cost[i] += cost.padding(seq_len - sequences[i].used);
}

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

namespace {

// One micro-batch holding every sequence, in order.
MicroBatchPlan all_in_one(std::vector<PackedSequence> sequences, const std::vector<double>& sequence_cost) {
  MicroBatchPlan mb;
  for (size_t i = 0; i < sequences.size(); ++i) {
    mb.positions += sequences[i].used;
    mb.cost += sequence_cost[i];
  }
  mb.sequences = std::move(sequences);
  return mb;
}

}  // namespace

std::vector<MicroBatchPlan> sequences_into_micro_batches(std::vector<PackedSequence> sequences,
                                                         const std::vector<double>& sequence_cost, uint32_t count,
                                                         uint64_t budget, BalanceMethod method) {
  if (count == 1) return {all_in_one(std::move(sequences), sequence_cost)};
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

std::vector<BucketPlan> into_micro_batches(std::vector<BucketSequences> buckets, const PackOptions& options,
                                           uint64_t budget) {
  std::vector<BucketPlan> plans(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b)
    plans[b].micro_batches = sequences_into_micro_batches(std::move(buckets[b].sequences), buckets[b].cost,
                                                          options.micro_batches, budget, options.balance);
  return plans;
}

double max_bucket_cost(const std::vector<BucketSequences>& buckets) {
  double most = 0.0;
  for (const BucketSequences& bucket : buckets)
    most = std::max(most, std::accumulate(bucket.cost.begin(), bucket.cost.end(), 0.0));
  return most;
}

bool flat(const std::vector<BucketSequences>& buckets) {
  double most = 0.0, total = 0.0;
  for (const BucketSequences& bucket : buckets) {
    const double c = std::accumulate(bucket.cost.begin(), bucket.cost.end(), 0.0);
    most = std::max(most, c);
    total += c;
  }
  return most <= total / static_cast<double>(buckets.size()) * (1.0 + kFlat);
}

}  // namespace msd::packing
