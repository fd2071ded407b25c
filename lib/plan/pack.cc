#include "plan/pack.h"

#include <algorithm>
#include <array>
#include <utility>
#include <span>

#include "common/error.h"

namespace msd {
namespace {

struct PlacedPiece {
  Piece piece;
  uint32_t patches = 0;  // leading image patches inside this piece
};

// Sorts pieces longest first, ties by doc id, then begin: a total order, so the
// plan does not depend on the order documents arrive in. An LSD radix sort on
// the key (seq_len - length, doc), byte by byte, skipping bytes all keys share:
// several times faster than a comparison sort at 100k pieces a step. It is
// stable, and cut_into_pieces emits a document's pieces in begin order, so one
// document's equal-length pieces stay in begin order.
void sort_longest_first(std::vector<PlacedPiece>& pieces, uint32_t seq_len) {
  const auto key = [seq_len](const PlacedPiece& p) {
    return (static_cast<uint64_t>(seq_len - p.piece.length) << 32) | p.piece.doc;
  };
  constexpr int kBytes = 8;
  std::vector<std::array<size_t, 256>> counts(kBytes);
  for (auto& count : counts) count.fill(0);
  for (const PlacedPiece& piece : pieces) {
    const uint64_t k = key(piece);
    for (int byte = 0; byte < kBytes; ++byte) ++counts[byte][(k >> (8 * byte)) & 0xff];
  }
  std::vector<PlacedPiece> buffer(pieces.size());
  for (int byte = 0; byte < kBytes; ++byte) {
    auto& count = counts[byte];
    if (std::any_of(count.begin(), count.end(), [&](size_t c) { return c == pieces.size(); })) continue;
    size_t offset = 0;
    for (size_t& c : count) offset += std::exchange(c, offset);
    for (const PlacedPiece& piece : pieces) buffer[count[(key(piece) >> (8 * byte)) & 0xff]++] = piece;
    pieces.swap(buffer);
  }
}

std::vector<PlacedPiece> cut_into_pieces(const std::vector<PlanDoc>& docs, const PackOptions& options) {
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
      pieces.push_back({Piece{doc.id, begin, length}, patches});
    }
  }
  return pieces;
}

// LPT: each piece, longest first, to the bucket with the fewest positions.
// Returns the pieces grouped by bucket (each group still longest first) and
// the groups' offsets: bucket b holds [offsets[b], offsets[b + 1]).
std::vector<PlacedPiece> distribute(const std::vector<PlacedPiece>& pieces, uint32_t dp,
                                    std::vector<size_t>& offsets) {
  std::vector<uint32_t> bucket_of(pieces.size());
  offsets.assign(dp + 1, 0);
  // A binary min-heap of (positions, bucket); ties go to the lower index. The
  // least loaded bucket only ever grows, so each piece is one sift-down of the
  // root rather than a pop and a push.
  using Load = std::pair<uint64_t, uint32_t>;
  std::vector<Load> heap(dp);
  for (uint32_t b = 0; b < dp; ++b) heap[b] = {0, b};  // sorted, so already a heap
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint32_t bucket = heap[0].second;
    bucket_of[i] = bucket;
    ++offsets[bucket + 1];
    const Load grown{heap[0].first + pieces[i].piece.length, bucket};
    size_t at = 0;
    while (true) {
      size_t child = 2 * at + 1;
      if (child >= dp) break;
      if (child + 1 < dp && heap[child + 1] < heap[child]) ++child;
      if (!(heap[child] < grown)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = grown;
  }
  for (uint32_t b = 0; b < dp; ++b) offsets[b + 1] += offsets[b];
  std::vector<PlacedPiece> grouped(pieces.size());
  std::vector<size_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t i = 0; i < pieces.size(); ++i) grouped[next[bucket_of[i]]++] = pieces[i];
  return grouped;
}

// First-fit decreasing over `pieces` (already longest first). A max-tree over
// the free space of every bin that could be opened (one per piece at most)
// finds the first bin with room in O(log n); unopened bins have seq_len free,
// so "first with room" opens a new bin exactly when no open one fits.
std::vector<PackedSequence> pack(std::span<const PlacedPiece> pieces, uint32_t seq_len,
                                 std::vector<uint32_t>& free_space) {
  const size_t n = pieces.size();
  if (n == 0) return {};
  size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  free_space.assign(2 * leaves, 0);
  for (size_t i = 0; i < n; ++i) free_space[leaves + i] = seq_len;
  for (size_t i = leaves - 1; i >= 1; --i) free_space[i] = std::max(free_space[2 * i], free_space[2 * i + 1]);

  std::vector<PackedSequence> sequences;
  for (const PlacedPiece& placed : pieces) {
    const uint32_t length = placed.piece.length;
    MSD_CHECK_LE(length, free_space[1]);
    size_t node = 1;
    while (node < leaves) node = free_space[2 * node] >= length ? 2 * node : 2 * node + 1;
    const size_t bin = node - leaves;
    if (bin >= sequences.size()) {
      MSD_CHECK_EQ(bin, sequences.size());
      sequences.emplace_back();
    }
    sequences[bin].pieces.push_back(placed.piece);
    sequences[bin].used += length;
    free_space[node] -= length;
    for (node /= 2; node >= 1; node /= 2) free_space[node] = std::max(free_space[2 * node], free_space[2 * node + 1]);
  }
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
std::vector<MicroBatchPlan> deal(std::vector<PackedSequence> sequences, uint32_t count) {
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
    micro_batches[run].sequences.push_back(std::move(sequences[i]));
  }
  return micro_batches;
}

}  // namespace

std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                            const CostModel& cost) {
  MSD_CHECK_LE(1u, options.seq_len);
  MSD_CHECK_LE(1u, options.dp);
  MSD_CHECK_LE(1u, options.micro_batches);
  std::vector<PlacedPiece> pieces = cut_into_pieces(docs, options);
  sort_longest_first(pieces, options.seq_len);
  std::vector<size_t> offsets;
  const std::vector<PlacedPiece> grouped = distribute(pieces, options.dp, offsets);

  std::vector<BucketPlan> plans(options.dp);
  std::vector<uint32_t> scratch;
  for (uint32_t b = 0; b < options.dp; ++b) {
    const std::span<const PlacedPiece> bucket(grouped.data() + offsets[b], offsets[b + 1] - offsets[b]);
    BucketPlan& plan = plans[b];
    for (const PlacedPiece& placed : bucket) {
      plan.positions += placed.piece.length;
      plan.cost += cost.document(placed.piece.length, placed.patches);
    }
    plan.micro_batches = deal(pack(bucket, options.seq_len, scratch), options.micro_batches);
  }
  return plans;
}

}  // namespace msd
