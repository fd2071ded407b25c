// The planner's detector for a stuck client (job.stall_timeout_s): when the
// oldest unacknowledged step's plan went out longer ago than the bound, the
// clients that have not acknowledged it are named in an error, so the job
// fails fast instead of waiting on a SIGSTOPped or deadlocked trainer.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace msd {

class AckWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `clients`: the world ranks that acknowledge every delivered step, in
  // step order; `timeout_s` 0 never fires.
  AckWatch(std::vector<int> clients, uint64_t timeout_s);

  void sent(uint64_t step, Clock::time_point now);  // the step's plans went out
  void acked(int client, uint64_t step);
  void completed(uint64_t step);  // every client acknowledged it
  // The client's trainer finished early (kTagStopping): it acknowledges no
  // more steps and is never named.
  void stopped(int client);
  // A watched client that acknowledged `step` or a later one, and the last
  // step it acknowledged; nullopt when none did.
  std::optional<std::pair<int, uint64_t>> acknowledged_from(uint64_t step) const;
  // Throws Error naming the clients that have not acknowledged the oldest
  // outstanding step, once its plans are older than the bound.
  void check(Clock::time_point now) const;

 private:
  // By client world rank: the next step it will acknowledge, kNotWatched for
  // the other ranks. Indexed, not a map: the planner asks once per
  // acknowledgement, thousands per step at scale.
  static constexpr uint64_t kNotWatched = UINT64_MAX;
  std::vector<uint64_t> next_ack_;
  std::map<uint64_t, Clock::time_point> sent_;  // outstanding steps -> when their plans went out
  std::chrono::seconds timeout_;
};

}  // namespace msd
