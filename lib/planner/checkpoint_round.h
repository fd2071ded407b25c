// The planner's loader checkpoint round (docs/checkpoint.md, "Loader
// checkpoint"): which loaders have yet to write their part of the round asked
// for, and which are late. No MPI: the planner sends the asks and takes late
// writers over.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <vector>

namespace msd {

class CheckpointRound {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the round of `step`, whose parts `writers` write; false when the
  // previous round is still open (this one is skipped, with a warning).
  bool begin(uint64_t step, std::set<int> writers, Clock::time_point now);
  // `rank` wrote its part of the round of `step` (a part of an older round is
  // ignored).
  void written(int rank, uint64_t step);
  // Drops every writer that `gone` says is gone, and, once `bound` has passed
  // since begin, every writer still waited for; returns those of them not
  // gone (the planner takes them over). Each dropped writer is a part the
  // round lacks.
  std::vector<int> drop_late(Clock::time_point now, std::chrono::milliseconds bound,
                             const std::function<bool(int)>& gone);
  // When every part is written or dropped: ends the round and returns its
  // step (with a warning when parts are missing); nullopt otherwise.
  std::optional<uint64_t> finish();

  bool open() const { return round_.has_value(); }
  uint64_t step() const { return round_ ? round_->step : 0; }  // the open round's
  bool waits_for(int rank) const { return round_ && round_->waiting.count(rank) > 0; }

 private:
  struct Round {
    uint64_t step = 0;
    Clock::time_point asked_at;
    std::set<int> waiting;
    uint64_t missing = 0;
  };
  std::optional<Round> round_;
};

}  // namespace msd
