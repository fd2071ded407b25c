// The planner's side of online scaling (topology.scaling = online,
// docs/scaling.md): it estimates what a sample of each source costs a
// loader from when answers arrive, runs the policy of plan/pool/online_scaling.h
// once per planned step, and carries out its moves: no new requests for the
// old source, a drain of those pending, a reassign message, then requests
// for the new source. Which loader reads a sample never changes its bytes,
// so the batch stream is the same as without moves. Inactive (every call a
// no-op) under another topology.scaling.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "plan/pool/online_scaling.h"
#include "plan/pool/profile.h"
#include "plan/step/mix.h"
#include "runtime/context.h"
#include "planner/loader_fleet.h"
#include "planner/loader_profiles.h"
#include "transport/mpi.h"
#include "transport/wire.h"

namespace msd {

class OnlineScaler {
 public:
  // `sources`: what the loaders' hellos reported (samples and open bytes).
  OnlineScaler(const JobContext& job, LoaderFleet& fleet, AsyncSender& out, const std::vector<SourceInfo>& sources);
  bool active() const { return active_; }

  // A loader's answer of `metas` took `seconds` since it was last heard from.
  void learn(int rank, const std::vector<SampleMeta>& metas, double seconds);
  // With --resume: the loaders are switched to the checkpoint's assignment
  // (or its proportions, with another number of loaders) when serving starts.
  void restore(const PlannerCheckpoint& resume);
  void send_restores();
  // Once per pass: the policy for `next_step` (once a step, while no move is
  // under way) with what the loaders `reported` (averaged only when the
  // policy runs), then the moves due.
  void run(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported);
  // A loader's answer to a reassign: what it opened.
  void reassigned(int rank, const HelloMessage& answer);
  const std::vector<SourceMove>& moves() const { return moves_; }

 private:
  // Runs the policy once per planned step, while no move is under way.
  void scale(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported);
  ScalingInput input(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported,
                     std::vector<int>& ranks) const;
  void start_move(int rank, uint32_t from, uint32_t to, MoveReason why, uint64_t next_step);
  void advance_moves();

  const JobContext& job_;
  LoaderFleet& fleet_;
  AsyncSender& out_;
  bool active_ = false;
  std::vector<uint64_t> samples_;        // per source
  std::vector<SourceProfile> profiles_;  // the planner's own estimate, per source
  std::optional<uint64_t> last_move_step_;
  uint64_t scaled_for_step_ = UINT64_MAX;
  std::vector<std::pair<int, ReassignMessage>> restore_;
  std::vector<SourceMove> moves_;
};

}  // namespace msd
