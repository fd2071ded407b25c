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
// the agreed step (if any rank gave one) is written into `config`'s
// checkpoint options. Throws ConfigError on every rank when ranks disagree or
// when the configuration cannot resume (no checkpoint.dir, colocated mode).
void apply_resume_step(MPI_Comm world, std::optional<uint64_t> resume_step, Config& config);

}  // namespace msd
