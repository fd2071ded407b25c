#include "planner/loader_fleet.h"

#include <algorithm>

#include "common/log.h"
#include "transport/wire.h"

namespace msd {

LoaderFleet::LoaderFleet(const JobContext& job, AsyncSender& out, size_t sources)
    : job_(job), out_(out), serving_(sources) {
  for (size_t s = 0; s < sources; ++s)
    for (int loader : job.assignment.loaders_of_source[s]) serving_[s].push_back(job.layout.loader_rank(loader));
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < job.layout.loader_ranks(); ++i) {
    Track& track = tracks_[job.layout.loader_rank(i)];
    track.last_heard = now;
    track.shadow = job.layout.is_shadow(i);
    track.in_use = !track.shadow;
  }
}

void LoaderFleet::send_loads(int rank, const std::vector<LoadItem>& items) {
  if (items.empty()) return;
  Track& track = tracks_.at(rank);
  // Silence is measured from when a loader had something to answer.
  if (track.outstanding.empty()) track.last_heard = std::chrono::steady_clock::now();
  for (const auto& item : items) track.outstanding.add(item);
  out_.send(rank, kTagLoad, encode_load(items), "sending load requests");
}

void LoaderFleet::take_over(int rank, const std::string& why, uint64_t step) {
  Track& failed = tracks_.at(rank);
  if (failed.failed) return;
  int shadow_rank = -1;
  for (auto& [other, track] : tracks_)
    if (track.shadow && !track.in_use && !track.failed) {
      shadow_rank = other;
      break;
    }
  const int index = job_.layout.loader_index(rank);
  if (shadow_rank < 0)  // waiting could be forever: fail fast, a requeued job resumes
    throw Error(str("loader ", index, " (world rank ", rank, ") ", why, ", and no shadow loader is left (",
                    job_.layout.shadows, " configured, topology.shadow_loaders)"));
  const auto now = std::chrono::steady_clock::now();
  failed.failed = true;
  tracks_.at(shadow_rank).in_use = true;
  for (auto& ranks : serving_) std::replace(ranks.begin(), ranks.end(), rank, shadow_rank);
  std::vector<LoadItem> items = failed.outstanding.items();
  failed.outstanding.clear();
  Takeover takeover;
  takeover.loader = index;
  takeover.shadow = job_.layout.loader_index(shadow_rank);
  takeover.step = step;
  takeover.requests = items.size();
  takeover.latency_s = std::chrono::duration<double>(now - failed.last_heard).count();
  takeover.why = why;
  log_warn("loader ", takeover.loader, " ", why, ": shadow loader ", takeover.shadow, " takes over its sources and ",
           items.size(), " pending requests (", static_cast<int>(takeover.latency_s * 1e3), " ms after it went quiet)");
  takeovers_.push_back(takeover);
  send_loads(shadow_rank, items);
}

void LoaderFleet::check_deadlines(uint64_t step, const CheckpointRound& round) {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = std::chrono::milliseconds(job_.config.loader.deadline_ms);
  for (auto& [rank, track] : tracks_) {
    if (track.failed || track.outstanding.empty() || now - track.last_heard < deadline) continue;
    // Writing its part of a loader checkpoint: bounded on its own.
    if (round.waits_for(rank)) continue;
    take_over(rank, str("missed its deadline (", job_.config.loader.deadline_ms, " ms, loader.deadline_ms)"), step);
  }
}

unsigned LoaderFleet::threads_of(int rank) const {
  // As LoaderRole chose them: the plan's, else loader.threads (shadows too).
  const int index = job_.layout.loader_index(rank);
  const auto& planned = job_.assignment.threads_of_loader;
  const bool own_plan = !job_.layout.is_shadow(index) && static_cast<size_t>(index) < planned.size();
  return own_plan ? planned[static_cast<size_t>(index)] : job_.config.loader.threads;
}

std::vector<uint32_t> LoaderFleet::sources_of(int rank) const {
  std::vector<uint32_t> mine;
  for (uint32_t s = 0; s < serving_.size(); ++s)
    if (std::find(serving_[s].begin(), serving_[s].end(), rank) != serving_[s].end()) mine.push_back(s);
  return mine;
}

std::vector<std::vector<uint32_t>> LoaderFleet::assignment() const {
  std::vector<std::vector<uint32_t>> out;
  for (int i = 0; i < job_.layout.loader_ranks(); ++i) {
    const int rank = job_.layout.loader_rank(i);
    std::vector<uint32_t> mine = sources_of(rank);
    const Track& track = tracks_.at(rank);
    if (track.move && std::find(mine.begin(), mine.end(), track.move->to) == mine.end()) mine.push_back(track.move->to);
    std::sort(mine.begin(), mine.end());
    out.push_back(std::move(mine));
  }
  return out;
}

size_t LoaderFleet::pending(uint32_t source) const {
  size_t n = 0;
  for (const auto& [rank, track] : tracks_) n += track.outstanding.of_source(source);
  return n;
}

}  // namespace msd
