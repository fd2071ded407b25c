// What every role of a running job shares: the configuration, the layout, the
// world communicator and the loader windows. Built by Job (job.cc). What the
// roles report at the end is in runtime/report.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/loader_checkpoint.h"
#include "msd/config.h"
#include "topology/role_layout.h"
#include "runtime/assignment.h"
#include "runtime/report.h"
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
  // This rank's start-up, measured from `origin` (the Job's construction).
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  StartupFigures startup;

  JobContext(const Config& c, RoleLayout l, SourceAssignment a)
      : config(c),
        layout(l),
        tree(c.topology.dp, c.topology.pp, c.topology.cp, c.topology.tp, c.topology.order),
        assignment(std::move(a)) {}

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
  // Marks a point of this rank's start-up (a StartupFigures member) now.
  void mark_startup(double StartupFigures::*point) {
    startup.*point = std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  }
  // The end of this rank's start-up (StartupFigures::first_s), once: also
  // takes the memory and descriptors it holds then.
  void end_startup();
  // The world ranks of those clients, ascending by client index.
  std::vector<int> planner_peers() const {
    std::vector<int> ranks;
    for (int client = 0; client < tree.size(); ++client)
      if (talks_to_planner(client)) ranks.push_back(layout.client_rank(client));
    return ranks;
  }
};

}  // namespace msd
