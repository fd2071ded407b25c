#include "planner/ack_watch.h"

#include <sstream>

#include "common/error.h"

namespace msd {

AckWatch::AckWatch(std::vector<int> clients, uint64_t timeout_s) : timeout_(timeout_s) {
  for (int rank : clients) {
    MSD_CHECK_LE(0, rank);
    if (static_cast<size_t>(rank) >= next_ack_.size()) next_ack_.resize(static_cast<size_t>(rank) + 1, kNotWatched);
    next_ack_[static_cast<size_t>(rank)] = 0;
  }
}

void AckWatch::sent(uint64_t step, Clock::time_point now) { sent_.emplace(step, now); }

void AckWatch::acked(int client, uint64_t step) {
  if (client >= 0 && static_cast<size_t>(client) < next_ack_.size() &&
      next_ack_[static_cast<size_t>(client)] != kNotWatched)
    next_ack_[static_cast<size_t>(client)] = step + 1;
}

void AckWatch::completed(uint64_t step) { sent_.erase(step); }

void AckWatch::stopped(int client) {
  if (client >= 0 && static_cast<size_t>(client) < next_ack_.size()) next_ack_[static_cast<size_t>(client)] = kNotWatched;
}

std::optional<std::pair<int, uint64_t>> AckWatch::acknowledged_from(uint64_t step) const {
  for (size_t rank = 0; rank < next_ack_.size(); ++rank)
    if (next_ack_[rank] != kNotWatched && next_ack_[rank] > step)
      return std::make_pair(static_cast<int>(rank), next_ack_[rank] - 1);
  return std::nullopt;
}

void AckWatch::check(Clock::time_point now) const {
  if (timeout_.count() == 0 || sent_.empty()) return;
  const auto& [step, when] = *sent_.begin();
  if (now - when < timeout_) return;
  std::ostringstream late;
  int count = 0;
  for (size_t rank = 0; rank < next_ack_.size(); ++rank) {
    if (next_ack_[rank] == kNotWatched || next_ack_[rank] > step) continue;
    if (count++ < 8) late << (count > 1 ? ", " : "") << rank;
  }
  if (count > 8) late << " and " << count - 8 << " more";
  throw Error(str("client world rank", count > 1 ? "s " : " ", late.str(), " did not acknowledge step ", step, " within ",
                  timeout_.count(), " s of its plan (job.stall_timeout_s): stuck or stopped"));
}

}  // namespace msd
