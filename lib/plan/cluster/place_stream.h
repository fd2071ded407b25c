// msd-plan place: one token stream placed under several placements, for a
// trainer to time them on the same tokens (tools/bench-trainer.sh). MPI-free.
#pragma once

#include <string>
#include <vector>

#include "plan/cluster/simulate.h"

namespace msd {

// The stream of sim.steps synthetic steps (synthetic_step, in each step's
// arrival order) placed under each of `placements` (a training mode, or an
// msd mode with suffixes turning on its options: _varlen, variable-length
// rows; _cut, cuts = balance; _vmb, variable micro-batches; _hold, the
// outlier hold of sim.hold_above and sim.hold_steps; `option` names them in
// errors), as the JSON object msd-plan place prints: documents, positions,
// and per placement its rows, positions, pieces, micro-batch count, the
// hold's delays and steps[step][rank][micro-batch] = [[doc, begin, length],
// ...] (with variable micro-batches a rank's list has its own length).
std::string place_stream_json(const SimulateOptions& sim, const std::vector<std::string>& placements,
                              const std::string& option);

}  // namespace msd
