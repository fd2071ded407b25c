// Deferred start (msd::Job::start): the ranks of a job agree on the step a
// restarted stream continues from. Only some ranks know it (the trainer's
// client ranks load it from their own checkpoint); the others take theirs.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

#include "msd/config.h"

namespace msd {

// Collective over `world`. Every rank that gives a step must give the same;
// an agreed step above 0 becomes config.checkpoint.resume_step. Throws
// ConfigError on every rank when ranks disagree or when the configuration
// cannot resume there (no checkpoint.dir, colocated mode, beyond job.steps).
void apply_resume_step(MPI_Comm world, std::optional<uint64_t> resume_step, Config& config);

}  // namespace msd
