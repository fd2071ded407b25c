// msd-plan place: one token stream placed under several placements, for a
// trainer to time them on the same tokens (tools/bench-trainer.sh). MPI-free.
#pragma once

#include <string>
#include <vector>

#include "plan/cluster/simulate.h"

namespace msd {

// The stream of sim.steps synthetic steps (synthetic_step, in each step's
// arrival order; document ids are stream indices), cut at Megatron's last
// whole global batch (whole_global_batches, plan/step/modes.h), placed under
// each of `placements` (a training mode of the evaluations but
// megatron_dynamic_cp, or an msd mode with suffixes turning on its options:
// _varlen, variable-length rows; _cut, cuts = balance; _vmb, variable
// micro-batches; _hold, the outlier hold of sim.hold_above and
// sim.hold_steps; `option` names them in errors), as the JSON object msd-plan
// place prints: documents (lengths, the cut one shortened), positions (every
// placement's), dropped_positions, step_positions (every step of every
// placement holds exactly these: Megatron's global batch; place_run's
// compared steps), megatron_batch (micro_batch_size, micro_batches), and per
// placement its rows ("fixed" or "varlen"),
// attention ("row": one causal span over each row, positions and labels
// running on across its documents; "document": each piece on its own),
// positions, pieces, micro-batch count, the hold's delays, for megatron and
// megatron_docmask document_order (the documents in GPTDataset's order: a
// position's next token in the stream) and steps[step][rank][micro-batch] =
// [[doc, begin, length], ...] (with variable micro-batches a rank's list has
// its own length). docs/evaluation.md describes it.
std::string place_stream_json(const SimulateOptions& sim, const std::vector<std::string>& placements,
                              const std::string& option);

}  // namespace msd
