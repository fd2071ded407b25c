#include "planner/checkpoint_round.h"

#include "common/log.h"

namespace msd {

bool CheckpointRound::begin(uint64_t step, std::set<int> writers, Clock::time_point now) {
  if (round_) {
    log_warn("loader checkpoint of step ", step, " skipped: the one of step ", round_->step,
             " is still waiting for loaders");
    return false;
  }
  round_ = Round{step, now, std::move(writers), 0};
  return true;
}

void CheckpointRound::written(int rank, uint64_t step) {
  if (round_ && round_->step == step) round_->waiting.erase(rank);
}

std::vector<int> CheckpointRound::drop_late(Clock::time_point now, std::chrono::milliseconds bound,
                                            const std::function<bool(int)>& gone) {
  std::vector<int> late;
  if (!round_) return late;
  const bool past = now - round_->asked_at > bound;
  for (auto it = round_->waiting.begin(); it != round_->waiting.end();) {
    const bool is_gone = gone(*it);
    if (!is_gone && !past) {
      ++it;
      continue;
    }
    if (!is_gone) late.push_back(*it);
    it = round_->waiting.erase(it);
    round_->missing++;
  }
  return late;
}

std::optional<uint64_t> CheckpointRound::finish() {
  if (!round_ || !round_->waiting.empty()) return std::nullopt;
  if (round_->missing > 0)
    log_warn("the loader checkpoint of step ", round_->step, " lacks ", round_->missing,
             " part(s) of loaders taken over in it; a resume from it reads their samples again");
  const uint64_t step = round_->step;
  round_.reset();
  return step;
}

}  // namespace msd
