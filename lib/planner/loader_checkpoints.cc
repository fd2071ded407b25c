#include "planner/loader_checkpoints.h"

#include <set>

#include "checkpoint/loader_checkpoint.h"
#include "transport/wire.h"

namespace msd {

void LoaderCheckpoints::ask(uint64_t step) {
  std::set<int> writers;
  for (const auto& [rank, track] : fleet_.tracks())
    if (!track.failed) writers.insert(rank);
  const std::vector<uint8_t> bytes = encode_fields(step, static_cast<uint32_t>(writers.size()));
  if (!round_.begin(step, writers, std::chrono::steady_clock::now())) return;
  for (int rank : writers) out_.send(rank, kTagCheckpoint, bytes, "asking loaders for a checkpoint");
}

void LoaderCheckpoints::written(int rank, std::span<const uint8_t> message) {
  uint64_t step = 0;
  decode_fields(message, "loader checkpoint written", step);
  fleet_.track(rank).last_heard = std::chrono::steady_clock::now();
  round_.written(rank, step);
}

void LoaderCheckpoints::advance(uint64_t next_step) {
  const auto bound = job_.checkpoint_write_bound();
  const auto gone = [&](int rank) { return fleet_.track(rank).failed; };
  const uint64_t step = round_.step();
  for (int rank : round_.drop_late(std::chrono::steady_clock::now(), bound, gone))
    fleet_.take_over(rank,
                     str("did not write its part of the loader checkpoint of step ", step, " within ", bound.count(),
                         " ms"),
                     next_step);
  if (round_.finish()) prune_loader_checkpoints(job_.config.checkpoint.dir, job_.config.checkpoint.keep);
}

}  // namespace msd
