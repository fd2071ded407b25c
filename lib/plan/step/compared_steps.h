// The steps of a comparison (docs/evaluation.md "The same tokens"): every
// placement of a compared run trains the same positions in every step. Megatron
// takes fixed global batches of samples; so that nothing charged per step (the
// gradient all-reduce, the optimizer step) favours whichever placement has fewer
// steps, the step placements take the run's stream in steps of exactly
// Megatron's global batch of positions. MPI-free; pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step/outlier_hold.h"

namespace msd {

// Where a part of a compared step comes from: positions [begin, begin +
// length) of document `doc` (the part's PlanDoc has its length).
struct PartOrigin {
  uint32_t doc = 0;
  uint32_t begin = 0;
};

struct ComparedSteps {
  // steps[t]: the parts step t places, in the order it took them, each a
  // PlanDoc of its own (ids: indices into `origins`, increasing in that order;
  // `fixed` the image patches it holds).
  std::vector<std::vector<PlanDoc>> steps;
  std::vector<PartOrigin> origins;  // by part id
  HoldStats hold;                   // the delays, when `hold` held documents
};

// The run's stream (steps[0], steps[1], ..., each in arrival order; ids unique
// over the run) cut into steps of exactly `step_positions` positions each.
// A step takes, in order: what the previous steps left for it (the rest of a
// document cut at its first edge, images deferred, released documents that
// did not fit), the documents the hold releases in it, then the stream's
// documents. A document across the step's edge is cut there and continues at
// the start of the next step; an image-text document whose patches the edge
// would cut waits for the next step instead, the step filled from the
// documents after it (its patches are cut only where nothing else is left to
// fill the step). With `hold` enabled, each step first releases
// (OutlierHold::step with no arrivals), then each stream document it reaches
// joins the hold (OutlierHold::join): one over the threshold waits and does not
// count against the step; the last step (hold.last_step is set to it)
// releases what waits, and where the stream runs out first the oldest
// waiting documents are released to fill the step (release_oldest). Every
// position of the run is placed once.
// REQUIRES the run's positions a multiple of step_positions > 0.
ComparedSteps compared_steps(const std::vector<std::vector<PlanDoc>>& steps, uint64_t step_positions,
                             HoldOptions hold = {});

// A step's plan in the run's documents: each piece (part, begin, length)
// becomes (origin.doc, origin.begin + begin, length).
void restore_pieces(std::vector<BucketPlan>& buckets, const std::vector<PartOrigin>& origins);
void restore_pieces(std::vector<Piece>& pieces, const std::vector<PartOrigin>& origins);

}  // namespace msd
