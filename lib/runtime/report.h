// What the roles report at the end of a job: every rank's RoleStats (one
// MPI_Gather into the summary) and the planner's PlannerReport.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/pool/profile.h"
#include "plan/step/outlier_hold.h"
#include "source/permutation.h"

namespace msd {

// Where a rank's start-up went (summary "startup", docs/summary.md): seconds
// from the Job's construction (after MPI_Init) to each point this rank
// passes; 0 for a point of another role.
struct StartupFigures {
  double origin_unix_s = 0.0;  // the Job's construction, on the system clock
  double open_s = 0.0;    // loader: its sources open (indexes built or read); colocated client: the same
  double hello_s = 0.0;   // loader: hello sent; planner: every loader's hello received
  double ready_s = 0.0;   // planner: its planning state built (sources agreed, data fingerprinted, checkpoint read)
  double agreed_s = 0.0;  // every rank: the start-up agreement reached
  // The end of this rank's start-up: planner, the first delivered step's
  // plans sent; loader, its first samples answered; client, its first batch built.
  double first_s = 0.0;
  double cpu_s = 0.0;           // the process's CPU time (user + system, all threads) at first_s
  uint64_t peak_rss_bytes = 0;  // VmHWM at first_s: the most resident memory of the start-up
  uint64_t open_files = 0;      // file descriptors held at first_s (MPI's included)
  // Loader (colocated: client): data files whose index it built by reading
  // them, and those it read from an index cache, over the sources it opened.
  uint64_t files_indexed = 0, files_cached = 0;
};

// Per-role numbers gathered into the summary (fixed size: one MPI_Gather).
struct RoleStats {
  int32_t role = 0;  // Role
  int32_t reserved = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t startup_rss_bytes = 0;  // right after MPI and library start-up
  double wall_seconds = 0.0;
  double wait_seconds = 0.0;
  double compute_seconds = 0.0;
  uint64_t tokens = 0;
  uint64_t steps = 0;
  uint64_t samples_loaded = 0;
  uint64_t window_peak_bytes = 0;
  double transform_seconds = 0.0;
  uint64_t state_bytes = 0;  // loader: open source state (at the end: after any move)
  uint64_t open_sources = 0;  // loader: sources open at the end
  uint64_t peak_anon_shmem_bytes = 0;  // see peak_anon_shmem_bytes()
  uint64_t steps_read_ahead = 0;  // client: ClientLog::steps_read_ahead
  StartupFigures startup;
};

// A shadow loader taking over a loader that missed its deadline.
struct Takeover {
  int loader = 0;           // loader index that failed
  int shadow = 0;           // loader index of the shadow
  uint64_t step = 0;        // next step to be planned at the time
  uint64_t requests = 0;    // outstanding requests handed over
  double latency_s = 0.0;   // from the loader's last sign of life to the takeover
  std::string why;
};

// An online-scaling move of a loader rank from one source to another
// (docs/scaling.md).
struct SourceMove {
  uint64_t step = 0;    // the next step to be planned when it started
  int loader = 0;       // loader index
  uint32_t from = 0, to = 0;  // source ids
  std::string why;      // proactive | reactive
};

// What msd's placement options did over the delivered steps (summary's
// "placement"): the outlier hold's delays (job.hold_above), the pieces
// placed against Megatron's cut of the same documents (job.cuts = balance),
// the most micro-batches a data group got in a step (micro_batch_count).
struct PlacementReport {
  HoldStats hold;
  uint64_t pieces = 0, megatron_pieces = 0, max_micro_batches = 0;
};

// What the planner knows at the end (on rank 0 only).
// A source's stream order and its locality over the delivered steps (the
// summary's "shuffle"; source/permutation.h OrderLocality).
struct ShuffleReport {
  ShuffleOrder order;
  uint64_t samples = 0;    // the source's records
  OrderLocality locality;  // neighbours of one source in one rank's batch
};

struct PlannerReport {
  std::vector<Takeover> takeovers;
  std::vector<SourceMove> moves;  // online scaling
  uint64_t first_step = 0;
  uint64_t checkpoints = 0;             // planner checkpoints written
  double checkpoint_seconds = 0.0;      // their cost on the planner's thread
  double checkpoint_max_seconds = 0.0;
  // Steps whose plan the memory budget changed, and steps it could not hold
  // (PlanStats::budget_binding, budget_exceeded).
  uint64_t budget_binding_steps = 0, budget_exceeded_steps = 0;
  uint64_t steps = 0;
  uint64_t tokens = 0;  // non-padding positions over all data groups
  // Per delivered step: the digest of its documents, whatever the mesh
  // (summary's step_document_digests).
  std::vector<uint64_t> document_digests;
  // The planner's own work until the last step (WorkTimer), and the messages
  // it received and sent meanwhile; busy_passes: the passes of its loop
  // that handled something (those WorkTimer counts).
  double work_seconds = 0.0, work_cpu_seconds = 0.0;
  double placement_cpu_seconds = 0.0;  // of work_cpu_seconds, in packing and balancing steps (pack_step)
  uint64_t messages_received = 0, messages_sent = 0, busy_passes = 0;
  double wall_seconds = 0.0;
  std::vector<uint64_t> bad_samples;  // per BadKind
  std::vector<int> gone;  // world ranks of loaders that did not confirm the stop (stopped or hung)
  std::vector<SourceProfile> profiles;  // per source, as the loaders last reported (PlannerRole::profiles)
  std::vector<ShuffleReport> shuffles;  // per source
  PlacementReport placement;
};

}  // namespace msd
