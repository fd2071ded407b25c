// distribute + pack: split a step's documents across DP buckets, pack each
// bucket's documents into seq_len sequences, and group the sequences into
// micro-batches. MPI-free; the planner calls it, tests call it directly.
#pragma once

#include <cstdint>
#include <vector>

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

// Deterministic for the same input. Every document appears exactly once (in
// pieces when split; truncated documents keep their first seq_len positions).
// The split across buckets evens out positions (tokens); attention-cost
// balancing is a separate balancer.
std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options);

}  // namespace msd
