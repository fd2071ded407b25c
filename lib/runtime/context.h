// What every role of a running job shares: the configuration, the layout, the
// world communicator and the loader windows. Built by Job (job.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "checkpoint/loader_checkpoint.h"
#include "msd/config.h"
#include "msd/place_tree.h"
#include "runtime/assignment.h"
#include "transport/mpi.h"
#include "transport/wire.h"

namespace msd {

struct JobContext {
  Config config;
  RoleLayout layout;
  ClientPlaceTree tree;
  SourceAssignment assignment;
  Comm world;      // duplicate of the world given to Job, errors returned
  Comm loaders;    // the loader ranks (shadows included); null elsewhere
  // The planner and every rank that sends to it (loaders, and the clients
  // that talk to it), in world order; null elsewhere and when colocated.
  // Every message to the planner goes here, so the planner's wildcard
  // receives match over these ranks only and not over every client: TP
  // followers never send to it (talks_to_planner).
  Comm to_planner;
  std::vector<int> to_planner_world;  // rank in to_planner -> world rank
  int planner_in_to_planner = -1;
  Window windows;  // loader slots; zero bytes on other ranks
  int rank = 0;
  uint64_t first_step = 0;  // the first step this run delivers (> 0 after a resume)
  // What this run's loader checkpoints are taken over (the planner's, shared
  // at start-up; all zero without checkpoint.dir).
  LoaderCheckpointIdentity checkpoint_identity;
  // Set by Job::finish: the ranks alive at the end (world ranks, ascending)
  // and their communicator; the summary is gathered over them only.
  Comm live;
  std::vector<int> live_ranks;

  JobContext(const Config& c, RoleLayout l)
      : config(c),
        layout(l),
        tree(c.topology.dp, c.topology.pp, c.topology.cp, c.topology.tp, c.topology.order),
        assignment(assign_sources(c)) {}

  // Whether client `client` gets step plans from the planner and
  // acknowledges them. A TP follower whose leader shares the batch
  // (topology.broadcast_at = tp) takes the step from its leader instead, so
  // the planner's messages per step grow with the clients divided by tp.
  bool talks_to_planner(int client) const {
    return tree.dim(Axis::tp) == 1 || config.topology.broadcast_at != BroadcastAt::tp || tree.is_tp_leader(client);
  }
  // How long a loader may take to write its part of a loader checkpoint
  // before the planner takes it to have stopped inside the write.
  std::chrono::milliseconds checkpoint_write_bound() const {
    return std::chrono::milliseconds(std::max<uint64_t>(10000, 4 * config.loader.deadline_ms));
  }
  // A message for the planner, over to_planner.
  void send_to_planner(int tag, std::span<const uint8_t> bytes, std::string_view hint) const {
    send_bytes(to_planner.get(), planner_in_to_planner, tag, bytes, hint);
  }
  // On the planner: the next message from anyone, its source a world rank.
  std::optional<Message> try_receive_at_planner(std::string_view hint) const {
    auto message = try_receive(to_planner.get(), MPI_ANY_SOURCE, MPI_ANY_TAG, hint);
    if (message) message->source = to_planner_world.at(static_cast<size_t>(message->source));
    return message;
  }
  // The world ranks of those clients, ascending by client index.
  std::vector<int> planner_peers() const {
    std::vector<int> ranks;
    for (int client = 0; client < tree.size(); ++client)
      if (talks_to_planner(client)) ranks.push_back(layout.client_rank(client));
    return ranks;
  }
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
};

uint64_t peak_rss_bytes();
uint64_t current_rss_bytes();

// The most resident memory this process held outside file-backed pages, over
// the samples taken so far: RssAnon + RssShmem of /proc/self/status (heap,
// stacks, MPI's buffers, and the node-shared window pages it touched), so a
// rank's own start-up cost counts but the program and library pages that
// every process of the node maps do not (docs/summary.md). The kernel keeps
// no peak of these, so roles sample from their loops: sample_anon_shmem()
// reads /proc at most every 100 ms, or now with `now`. Thread-safe.
void sample_anon_shmem(bool now = false);
uint64_t peak_anon_shmem_bytes();

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

// What the planner knows at the end (on rank 0 only).
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
};

}  // namespace msd
