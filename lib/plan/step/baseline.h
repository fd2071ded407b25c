// The colocated baseline's packing (docs/design.md, "The colocated baseline"): what common
// practice does with a rank's samples — micro-batches by sample count, each
// packed greedily in arrival order. No cost model, no look-ahead.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step/pack.h"

namespace msd {

// Splits `docs` (in arrival order) into `micro_batches` runs of equal sample
// count (the first runs take one more when it does not divide), and packs each
// run next-fit: a document goes into the current sequence if it fits, else a
// new sequence starts. A document longer than seq_len is split into seq_len
// pieces or truncated (`long_docs`); image patches are never split (an
// image-text document keeps its patches and the text that fits).
MicroBatchPlan pack_next_fit(const std::vector<PlanDoc>& docs, uint32_t seq_len, LongDocs long_docs);
std::vector<MicroBatchPlan> baseline_micro_batches(const std::vector<PlanDoc>& docs, uint32_t micro_batches,
                                                   uint32_t seq_len, LongDocs long_docs);

}  // namespace msd
