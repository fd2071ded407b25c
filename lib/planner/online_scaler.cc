#include "planner/online_scaler.h"

#include <algorithm>
#include <cmath>

#include "common/log.h"

namespace msd {

namespace {
// Fewest samples of some source measured before the policy runs: the first
// answers include start-up and say little about the steady cost.
constexpr uint64_t kMinMeasured = 32;
// Backlog, in steps of a source's quota, above which it counts as falling
// behind. The planner keeps up to prefetch_steps + 1 steps requested, so a
// loader that keeps up has at most about one step pending.
constexpr double kBacklogThresholdSteps = 1.5;
}  // namespace

OnlineScaler::OnlineScaler(const JobContext& job, LoaderFleet& fleet, AsyncSender& out,
                           const std::vector<SourceInfo>& sources)
    : job_(job), fleet_(fleet), out_(out), active_(job.config.topology.scaling == Scaling::online),
      samples_(job.config.sources.size(), 0), profiles_(job.config.sources.size()) {
  for (const auto& info : sources) {
    samples_.at(info.source) = info.samples;
    profiles_[info.source].open_bytes = static_cast<double>(info.state_bytes);
  }
}

void OnlineScaler::send_restores() {
  for (auto& [rank, message] : restore_) out_.send(rank, kTagReassign, encode(message), "restoring the assignment");
  restore_.clear();
}

// Moving averages of seconds per sample and transformed bytes per sample:
// a loader's answer took `seconds` of its time since it was last heard from
// (or went busy), shared evenly by the samples in it. That is the loader's
// time with its reads and transforms spread over its `threads` threads, so
// one sample costs one thread `threads` times it, as a profile counts
// (the policy divides by the threads again); all of it counts as read.
void OnlineScaler::learn(int rank, const std::vector<SampleMeta>& metas, double seconds) {
  if (!active_ || metas.empty()) return;
  const unsigned threads = fleet_.threads_of(rank);
  const double per_sample = seconds * std::max(threads, 1u) / static_cast<double>(metas.size());
  for (const auto& meta : metas) {
    SourceProfile& p = profiles_.at(meta.source);
    constexpr double alpha = 0.05;  // about the last 20 samples
    if (p.samples_measured == 0) {
      p.read_seconds_per_sample = per_sample;
      p.bytes_per_sample = meta.slot_bytes;
    } else {
      p.read_seconds_per_sample += alpha * (per_sample - p.read_seconds_per_sample);
      if (meta.bad == 0) p.bytes_per_sample += alpha * (meta.slot_bytes - p.bytes_per_sample);
    }
    p.samples_measured++;
  }
}

// What the policy sees: the loaders serving sources (`ranks` gets their
// world ranks, in the order of ScalingInput::loaders), the profiles, the
// weights now and ahead, and each source's backlog.
ScalingInput OnlineScaler::input(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported,
                                 std::vector<int>& ranks) const {
  const TopologyConfig& topo = job_.config.topology;
  const uint64_t steps = job_.config.job.steps;
  ScalingInput in;
  for (const auto& [rank, track] : fleet_.tracks()) {
    if (track.failed || !track.in_use) continue;
    ranks.push_back(rank);
    // A shadow in use keeps every source open.
    in.loaders.push_back({fleet_.sources_of(rank), !track.shadow, fleet_.threads_of(rank)});
  }
  // What the loaders measured (kTagProfile) where they have reported a
  // source, else the planner's own estimate from how fast answers come.
  in.profiles = profiles_;
  const std::vector<SourceProfile> measured = reported.average(samples_.size());
  for (size_t s = 0; s < measured.size() && s < in.profiles.size(); ++s)
    if (measured[s].samples_measured > 0) in.profiles[s] = measured[s];
  in.weights_now = schedule.weights(next_step);
  in.weights_ahead = schedule.weights(std::min(next_step + topo.scaling_lookahead_steps, steps - 1));
  std::vector<double> pending(samples_.size(), 0.0);
  for (uint32_t s = 0; s < samples_.size(); ++s) pending[s] = static_cast<double>(fleet_.pending(s));
  for (size_t s = 0; s < samples_.size(); ++s) {
    const double quota = std::max(1.0, job_.config.job.global_batch * in.weights_now[s]);
    in.backlog_steps.push_back(pending[s] / quota);
  }
  in.steps_since_last_move = last_move_step_ ? next_step - *last_move_step_ : UINT64_MAX;
  return in;
}

void OnlineScaler::run(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported) {
  if (!active_) return;
  scale(next_step, schedule, reported);
  advance_moves();
}

// Runs the policy once per planned step, while no move is under way.
void OnlineScaler::scale(uint64_t next_step, const Schedule& schedule, const LoaderProfiles& reported) {
  if (next_step == scaled_for_step_ || next_step >= job_.config.job.steps) return;
  for (const auto& [rank, track] : fleet_.tracks())
    if (track.move) return;  // one round of moves at a time
  scaled_for_step_ = next_step;
  bool measured = false;
  for (const auto& p : profiles_) measured = measured || p.samples_measured >= kMinMeasured;
  if (!measured) return;
  std::vector<int> ranks;
  const ScalingInput in = input(next_step, schedule, reported, ranks);
  ScalingOptions options;
  options.min_interval_steps = job_.config.topology.scaling_interval_steps;
  options.backlog_threshold_steps = kBacklogThresholdSteps;
  for (const LoaderMove& move : plan_moves(in, options))
    start_move(ranks.at(move.loader), move.from, move.to, move.why, next_step);
}

// The loader gets no new requests for `from` from now on; advance_moves
// switches it once it has answered those pending.
void OnlineScaler::start_move(int loader_rank, uint32_t from, uint32_t to, MoveReason why, uint64_t next_step) {
  auto& ranks = fleet_.serving(from);
  auto it = std::find(ranks.begin(), ranks.end(), loader_rank);
  MSD_CHECK(it != ranks.end());
  MSD_CHECK(ranks.size() >= 2);
  ranks.erase(it);
  fleet_.track(loader_rank).move = LoaderFleet::Track::Move{from, to};
  last_move_step_ = next_step;
  SourceMove record{next_step, job_.layout.loader_index(loader_rank), from, to, move_reason_name(why)};
  log_info("move at step ", record.step, ": loader ", record.loader, " from source '", job_.config.sources[from].name,
           "' to '", job_.config.sources[to].name, "' (", record.why, ")");
  moves_.push_back(std::move(record));
}

// A moving loader that has answered every request of its old source is told
// to close it and open the new one; requests for the new one follow (the
// loader reads its messages in order).
void OnlineScaler::advance_moves() {
  for (auto& [rank, track] : fleet_.tracks()) {
    if (!track.move) continue;
    if (track.failed) {  // taken over meanwhile: the shadow serves what it had
      track.move.reset();
      continue;
    }
    const uint32_t from = track.move->from, to = track.move->to;
    if (track.outstanding.of_source(from) > 0) continue;  // still draining
    ReassignMessage message;
    message.close.push_back(from);
    auto& ranks = fleet_.serving(to);
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) {
      ranks.push_back(rank);
      message.open.push_back(to);
    }
    out_.send(rank, kTagReassign, encode(message), "moving a loader between sources");
    track.move.reset();
  }
}

void OnlineScaler::reassigned(int loader_rank, const HelloMessage& answer) {
  const int index = job_.layout.loader_index(loader_rank);
  if (!answer.error.empty())
    throw Error(str("loader ", index, " (world rank ", loader_rank, ") could not open its new source: ", answer.error));
  for (const SourceInfo& info : answer.sources) {
    if (info.source >= samples_.size() || info.samples != samples_[info.source])
      throw ProtocolError(str("loader ", index, " opened source ", info.source, " with ", info.samples,
                              " samples, other loaders saw a different count"));
    profiles_[info.source].open_bytes = static_cast<double>(info.state_bytes);
  }
}

// With --resume under online scaling: the loaders opened the start-up
// assignment; they are switched to the checkpoint's, or, with another
// number of loaders, to the same proportions of loaders per source.
void OnlineScaler::restore(const PlannerCheckpoint& resume) {
  if (!active_) return;
  const size_t loaders = static_cast<size_t>(job_.config.topology.loaders), sources = samples_.size();
  std::vector<std::vector<uint32_t>> want;
  std::vector<size_t> counts(sources, 0);
  for (const auto& mine : resume.loader_sources) {
    if (mine.empty()) continue;  // an idle shadow, or a loader taken over
    want.push_back(mine);
    for (uint32_t s : mine) counts[s]++;
  }
  if (want.empty() || std::count(counts.begin(), counts.end(), size_t{0}) > 0) return;  // not recorded
  if (want.size() != loaders) {
    if (loaders < sources) return;  // sources share loaders round-robin, as at start-up
    want.assign(loaders, {});
    size_t next = 0;
    const std::vector<size_t> scaled = rescale_counts(counts, loaders);
    for (uint32_t s = 0; s < sources; ++s)
      for (size_t k = 0; k < scaled[s]; ++k) want[next++] = {s};
  }
  for (uint32_t s = 0; s < sources; ++s) fleet_.serving(s).clear();
  for (size_t i = 0; i < loaders; ++i) {
    const int rank = job_.layout.loader_rank(static_cast<int>(i));
    for (uint32_t s : want[i]) fleet_.serving(s).push_back(rank);
    const auto& opened = job_.assignment.sources_of_loader[i];
    ReassignMessage message;
    for (uint32_t s : opened)
      if (std::find(want[i].begin(), want[i].end(), s) == want[i].end()) message.close.push_back(s);
    for (uint32_t s : want[i])
      if (std::find(opened.begin(), opened.end(), s) == opened.end()) message.open.push_back(s);
    if (!message.close.empty() || !message.open.empty()) restore_.push_back({rank, std::move(message)});
  }
  log_info("resume: loaders restored to the checkpoint's assignment (", restore_.size(), " switched)");
}

}  // namespace msd
