// The job's final summary (docs/summary.md): per-role numbers gathered to
// world rank 0 and written as JSON and as text.
#pragma once

#include <vector>

#include "msd/client.h"
#include "runtime/context.h"

namespace msd {

// Collective over the world. `step_digests` are a client's Batch::digest per
// step (empty on other ranks); `report` matters on the planner only. The
// returned Summary is complete on world rank 0 and empty elsewhere.
Summary gather_summary(JobContext& job, const RoleStats& stats, const std::vector<uint64_t>& step_digests,
                       const PlannerReport& report);

}  // namespace msd
