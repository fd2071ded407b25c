// The documents a job trains on, step by step, without MPI: what every
// training mode places (plan/step/modes.h). `msd-bench throughput` evaluates the
// modes on the device model over exactly these steps, beside the MPI runs.
#pragma once

#include <cstdint>
#include <vector>

#include "msd/config.h"
#include "plan/step/pack.h"

namespace msd::bench {

struct StepDocuments {
  std::vector<PlanDoc> docs;  // arrival order; ids index the step's (source, cursor) list
  std::vector<uint64_t> keys; // per id: source << 48 | sample index, for documents_digest
};

// Steps [0, steps) of `config`'s stream: the global mixer's quotas, each
// source's next cursors (a bad sample is skipped for the next cursor, as the
// planner does), each sample transformed for its positions and patches, and
// the step's documents in arrival_order. One core; throws what opening and
// reading the sources throws.
std::vector<StepDocuments> job_step_documents(const Config& config, uint64_t steps);

}  // namespace msd::bench
