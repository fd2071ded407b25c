// The blocks every placement of pack_step is built from (pack.h): a step's
// documents cut into pieces, pieces packed first-fit decreasing into seq_len
// sequences, sequences dealt over micro-batches, and their costs (padding
// included). Internal to plan/step; MPI-free; no state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/step/pack.h"

namespace msd::packing {

struct PlacedPiece {
  Piece piece;
  uint32_t patches = 0;  // leading image patches inside this piece
  double cost = 0.0;     // cost.document(length, patches)
};

// One bucket's packed sequences and their costs (pieces or CP zigzag, plus
// padding), heaviest first.
struct BucketSequences {
  std::vector<PackedSequence> sequences;
  std::vector<double> cost;
};

// Longest first, ties by doc id, then begin: a total order, so the plan does
// not depend on the order documents arrive in. Stable, and cut_into_pieces
// emits a document's pieces in begin order, so one document's equal-length
// pieces stay in begin order.
void sort_longest_first(std::vector<PlacedPiece>& pieces, uint32_t seq_len);

// Heaviest first, ties by doc id, then begin. Costs are non-negative doubles,
// whose bit patterns order like their values; complemented, descending.
void sort_heaviest_first(std::vector<PlacedPiece>& pieces);

// A step's documents as pieces of at most seq_len (long_docs); a text
// document longer than seq_len in seq_len pieces and a rest, or with cuts =
// balance in ceil(L / seq_len) near-equal pieces (the longer ones first),
// which costs less attention.
std::vector<PlacedPiece> cut_into_pieces(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                         const CostModel& cost);

// Groups `pieces` by bin, keeping their order within a bin: bin b holds
// [offsets[b], offsets[b + 1]) of the result.
std::vector<PlacedPiece> group(std::span<const PlacedPiece> pieces, const std::vector<uint32_t>& bin_of, uint32_t bins,
                               std::vector<size_t>& offsets);

// A first-fit of pieces into sequences, before the sequences are built:
// piece i went to sequence sequence_of[i], sequence s has free[s] positions
// left. Views into the caller's scratch.
struct FirstFit {
  std::span<const uint32_t> sequence_of;
  std::span<const uint32_t> free;
};

// pack() without building the sequences: sequence_cost[s] is the cost of
// sequence s's pieces.
FirstFit first_fit(std::span<const PlacedPiece> pieces, uint32_t seq_len, std::vector<uint32_t>& scratch,
                   std::vector<double>& sequence_cost);

// The sequences of a first-fit of `pieces`, each sequence's pieces ordered
// by (doc, begin).
std::vector<PackedSequence> build_sequences(std::span<const PlacedPiece> pieces, const FirstFit& fit, uint32_t seq_len);

// First-fit decreasing over `pieces` (already longest first). A max-tree over
// the free space of every bin that could be opened (one per piece at most)
// finds the first bin with room in O(log n); unopened bins have seq_len free,
// so "first with room" opens a new bin exactly when no open one fits.
// sequence_cost[i] is the cost of sequence i. The pieces are assigned
// first and each sequence's list allocated once, at its size.
std::vector<PackedSequence> pack(std::span<const PlacedPiece> pieces, uint32_t seq_len,
                                 std::vector<uint32_t>& free_space, std::vector<double>& sequence_cost);

// What a bucket of `pieces` (longest first) costs once packed (pack, then
// add_padding_cost, summed heaviest first as max_bucket_cost sums a sorted
// bucket), without building its sequences. cp = 1 only: a CP sequence's
// zigzag cost needs its pieces in order.
double packed_cost(std::span<const PlacedPiece> pieces, uint32_t seq_len, const CostModel& cost,
                   std::vector<uint32_t>& scratch, std::vector<double>& sequence_cost);

// Contiguous runs of `sequences` into `count` micro-batches minimizing the
// largest run (binary search on that maximum), then cut greedily under it,
// cutting early only to leave one sequence for each micro-batch still empty.
std::vector<MicroBatchPlan> deal(std::vector<PackedSequence> sequences, const std::vector<double>& sequence_cost,
                                 uint32_t count);

// A sequence's GEMMs run over all seq_len positions, so its padding costs
// the linear term (CostModel::padding); attention masks it.
void add_padding_cost(const std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost,
                      uint32_t seq_len, const CostModel& cost);

// The sequences and their costs in heaviest-first order (ties: the first
// piece's doc and begin, unique to a sequence), a total order.
void sort_sequences(std::vector<PackedSequence>& sequences, std::vector<double>& sequence_cost);

// One bucket's sequences (heaviest first) over `count` micro-batches by cost,
// none over `budget` positions where the sequences allow, ordered heaviest
// first (ties: lower bin), so micro-batch i is the i-th heaviest on every
// rank; the empty ones come last.
std::vector<MicroBatchPlan> sequences_into_micro_batches(std::vector<PackedSequence> sequences,
                                                         const std::vector<double>& sequence_cost, uint32_t count,
                                                         uint64_t budget, BalanceMethod method);

// Each bucket's sequences into its micro-batches (none over the budget).
std::vector<BucketPlan> into_micro_batches(std::vector<BucketSequences> buckets, const PackOptions& options,
                                           uint64_t budget);

// The cost of the heaviest bucket of a placement.
double max_bucket_cost(const std::vector<BucketSequences>& buckets);

// How far a placement's heaviest bucket may sit above its mean and still be
// called flat (plan_by_cost): 0.1%.
inline constexpr double kFlat = 1e-3;

// Whether the heaviest bucket of a placement (cp = 1) is within kFlat of its
// mean. A bucket costs its sequences' linear term (padding included) plus
// its pieces' extras (cost less the linear term over their positions), so
// the mean over buckets is fixed by the number of sequences: no placement of
// as many sequences or more has a heaviest bucket more than kFlat lighter.
bool flat(const std::vector<BucketSequences>& buckets);

}  // namespace msd::packing
