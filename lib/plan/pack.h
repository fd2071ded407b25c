// distribute + pack: split a step's documents across DP buckets, pack each
// bucket's documents into seq_len sequences, and group the sequences into
// micro-batches. MPI-free; the planner calls it, tests call it directly.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/cost.h"

namespace msd {

// A document of the step as the planner sees it: metadata only.
struct PlanDoc {
  uint32_t id = 0;          // index into the step's sample table
  uint32_t positions = 0;   // sequence positions it needs (tokens + patches)
  uint32_t fixed = 0;       // leading positions that cannot be split (image patches)
  double cost = 0.0;        // cost(model) of the whole document
};

// A contiguous part of a document placed in a sequence: positions
// [begin, begin + length) of document `doc`.
struct Piece {
  uint32_t doc = 0;
  uint32_t begin = 0;
  uint32_t length = 0;
};

struct PackedSequence {
  std::vector<Piece> pieces;
  uint32_t used = 0;  // sum of piece lengths <= seq_len
};

struct MicroBatchPlan {
  std::vector<PackedSequence> sequences;
};

// The plan of one DP bucket for one step.
struct BucketPlan {
  std::vector<MicroBatchPlan> micro_batches;
  uint64_t positions = 0;  // tokens + patches placed
  double cost = 0.0;
};

enum class LongDocs { split, truncate };

struct PackOptions {
  uint32_t seq_len = 2048;
  uint32_t dp = 1;
  uint32_t micro_batches = 1;
  LongDocs long_docs = LongDocs::split;
};

// Plans one step. Deterministic: the result depends only on the documents'
// (id, positions, fixed) multiset, not on their order in `docs` (ids are
// unique within a step).
//
// 1. Pieces. A document of at most seq_len positions is one piece. A longer
//    one is cut into pieces of at most seq_len (long_docs = split) or keeps
//    its first seq_len positions (truncate). Its `fixed` leading positions
//    (image patches) are never split: an image-text document longer than
//    seq_len keeps its patches and the text that fits, in both modes.
//    REQUIRES: 0 < positions, fixed <= min(positions, seq_len) (configuration
//    validation guarantees the second).
// 2. Distribute. Pieces go to `dp` buckets longest first (ties: doc id, then
//    begin), each to the bucket with the fewest positions so far (ties: lower
//    index): bucket totals differ by at most the longest piece.
// 3. Pack. Each bucket's pieces fill seq_len sequences first-fit decreasing;
//    within a sequence pieces are ordered by (doc, begin).
// 4. Micro-batches. The bucket's sequences (in packing order) are cut into
//    `micro_batches` contiguous runs minimizing the largest run's positions;
//    a run is empty only when the bucket has fewer sequences than runs.
//
// BucketPlan::positions is the positions placed; BucketPlan::cost the sum of
// cost.document(piece length, piece patches) over its pieces.
// O(pieces * log(pieces)) time; no pass over all buckets per piece.
std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                            const CostModel& cost = CostModel{});

}  // namespace msd
