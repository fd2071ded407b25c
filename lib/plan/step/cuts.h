// Cut-aware packing (job.cuts = balance, docs/cost-and-balance.md "Cut-aware
// packing"): how many pieces Megatron's cut of a step's documents makes, the
// budget msd's cuts stay within. cut_into_pieces (packing.h) cuts a long
// document into near-equal pieces; the spread placement (spread.h) spends
// the rest of the budget where it evens out the ranks. MPI-free; no state.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step/packing.h"

namespace msd {

// The pieces Megatron's cut of `docs` makes: the documents concatenated in id
// order (the stream's order) and cut at every seq_len, as pack_concatenated
// (modes.h) cuts them: a text document is cut where a row ends; an image-text
// document is never cut (it starts a new row when it does not fit, and
// longer than seq_len keeps its patches and the text that fits); under
// long_docs = truncate a text document counts as its first seq_len
// positions. Independent of the order of `docs`.
uint64_t megatron_piece_count(const std::vector<PlanDoc>& docs, uint32_t seq_len, LongDocs long_docs);

}  // namespace msd
