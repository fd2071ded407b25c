// The job's final summary (docs/summary.md): per-role numbers gathered to
// world rank 0 and written as JSON and as text. The same code serves both
// modes: batch contents, costs and the realized mix come from the clients'
// logs; bad-sample counts from whoever loaded (the planner's tally, or each
// colocated data group's first rank).
#pragma once

#include <vector>

#include "msd/client.h"
#include "runtime/context.h"
#include "runtime/report.h"

namespace msd {

struct SummaryInput {
  RoleStats stats;
  const ClientLog* log = nullptr;     // client ranks
  std::vector<uint64_t> bad_samples;  // per BadKind, from the ranks that count them (else empty)
  std::vector<Takeover> takeovers;    // the planner's
  std::vector<SourceMove> moves;      // the planner's online-scaling moves
  uint64_t checkpoints = 0;           // the planner's checkpoint writes and their cost
  double checkpoint_seconds = 0.0, checkpoint_max_seconds = 0.0;
  uint64_t budget_binding_steps = 0, budget_exceeded_steps = 0;  // the planner's memory budget
  // The planner's own work over its steps (PlannerReport).
  double planner_work_seconds = 0.0, planner_work_cpu_seconds = 0.0, planner_placement_cpu_seconds = 0.0;
  uint64_t planner_messages_received = 0, planner_messages_sent = 0, planner_busy_passes = 0;
  std::vector<SourceProfile> profiles;  // the planner's: per source (empty elsewhere, and colocated)
  std::vector<ShuffleReport> shuffles;  // the planner's: per source (empty elsewhere, and colocated)
  std::vector<uint64_t> document_digests;  // the planner's, per delivered step (empty colocated)
  PlacementReport placement;               // the planner's (empty colocated)
};

// Collective over the world. The returned Summary is complete on world rank 0
// and empty elsewhere.
Summary gather_summary(JobContext& job, const SummaryInput& input);

}  // namespace msd
