// The trainer emulator msd-run runs on client ranks: per step, it sleeps
// the device model's time for the batch this rank got (lib/plan/cluster/device_model.h:
// the 1F1B pipeline of its micro-batches as this rank's TP/CP/PP share
// computes them), times emulator.time_scale; then an allreduce over dp_comm,
// which waits for the slowest data-parallel rank, and a sleep for the modeled
// gradient all-reduce. The planner's own cost model plays no part in it.
#pragma once

#include "msd/client.h"
#include "plan/cluster/device_model.h"

namespace msd {

// Runs every step of the job on a client rank and returns its statistics.
TrainerStats run_trainer_emulator(Job& job);

// Device seconds of one batch on this rank, before emulator.time_scale: the
// makespan of its micro-batches through the pipeline (RankTime::seconds).
double emulated_compute_seconds(const Batch& batch, const Config& config);
double emulated_compute_seconds(const Batch& batch, const DeviceModel& model, const Parallel& parallel);

}  // namespace msd
