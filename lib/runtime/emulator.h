// The trainer emulator msd-run runs on client ranks: per step, compute time
// from the cost model (a*L + L^2 per document piece, scaled to
// emulator.tflops), then an allreduce over dp_comm as the gradient sync.
#pragma once

#include "msd/client.h"

namespace msd {

// Runs every step of the job on a client rank and returns its statistics.
TrainerStats run_trainer_emulator(Job& job);

// Emulated compute seconds of one batch under the configuration's model.
double emulated_compute_seconds(const Batch& batch, const Config& config);

}  // namespace msd
