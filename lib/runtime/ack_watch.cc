#include "runtime/ack_watch.h"

#include <sstream>

#include "common/error.h"

namespace msd {

AckWatch::AckWatch(std::vector<int> clients, uint64_t timeout_s) : timeout_(timeout_s) {
  for (int rank : clients) next_ack_[rank] = 0;
}

void AckWatch::sent(uint64_t step, Clock::time_point now) { sent_.emplace(step, now); }

void AckWatch::acked(int client, uint64_t step) {
  auto it = next_ack_.find(client);
  if (it != next_ack_.end()) it->second = step + 1;
}

void AckWatch::completed(uint64_t step) { sent_.erase(step); }

void AckWatch::check(Clock::time_point now) const {
  if (timeout_.count() == 0 || sent_.empty()) return;
  const auto& [step, when] = *sent_.begin();
  if (now - when < timeout_) return;
  std::ostringstream late;
  int count = 0;
  for (const auto& [rank, next] : next_ack_) {
    if (next > step) continue;
    if (count++ < 8) late << (count > 1 ? ", " : "") << rank;
  }
  if (count > 8) late << " and " << count - 8 << " more";
  throw Error(str("client world rank", count > 1 ? "s " : " ", late.str(), " did not acknowledge step ", step, " within ",
                  timeout_.count(), " s of its plan (job.stall_timeout_s): stuck or stopped"));
}

}  // namespace msd
