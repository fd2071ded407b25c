// The planner's loader checkpoint rounds (docs/checkpoint.md, "Loader
// checkpoint"): every live loader is asked to write its own part (u64 step,
// u32 writers) and answers "written". None waits on another, so a loader
// stopped inside its write is taken over like anywhere else once it is
// silent past JobContext::checkpoint_write_bound(); the round then lacks its
// part, which a resume reads again. Sends through the planner's AsyncSender.
#pragma once

#include <cstdint>
#include <span>

#include "planner/checkpoint_round.h"
#include "runtime/context.h"
#include "planner/loader_fleet.h"
#include "transport/mpi.h"

namespace msd {

class LoaderCheckpoints {
 public:
  LoaderCheckpoints(const JobContext& job, LoaderFleet& fleet, AsyncSender& out)
      : job_(job), fleet_(fleet), out_(out) {}
  // Asks every live loader for its part of the round of `step`.
  void ask(uint64_t step);
  // A loader's "written" message (kTagCheckpoint).
  void written(int rank, std::span<const uint8_t> message);
  // Takes over late writers and ends the round once every part is written
  // or its writer taken over (then prunes old rounds, checkpoint.keep);
  // `next_step` is recorded with a takeover.
  void advance(uint64_t next_step);
  const CheckpointRound& round() const { return round_; }

 private:
  const JobContext& job_;
  LoaderFleet& fleet_;
  AsyncSender& out_;
  CheckpointRound round_;
};

}  // namespace msd
