// Cut-aware pieces (job.cuts = balance, docs/cost-and-balance.md "Cut-aware
// packing"): how many pieces Megatron's cut of a step's documents makes (the
// budget msd's cuts stay within), and a step's documents cut into the pieces
// every placement needs, a long document into near-equal ones. The spread
// placement (spread.h) spends the rest of the budget where it evens out the
// ranks. Internal to plan/step; MPI-free; no state.
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

namespace msd::packing {

// cut_into_pieces for cuts = balance: a text document longer than seq_len in
// k = ceil(L / seq_len) pieces of floor or ceil(L / k) positions (the longer
// ones first), which costs less attention than seq_len pieces and a short
// rest; everything else as cut_into_pieces makes it.
std::vector<PlacedPiece> cut_evenly(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                    const CostModel& cost);

}  // namespace msd::packing
