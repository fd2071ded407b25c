#include "plan/pool/online_scaling.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/error.h"

namespace msd {

const char* move_reason_name(MoveReason why) { return why == MoveReason::reactive ? "reactive" : "proactive"; }

namespace {

using Sources = std::vector<std::vector<uint32_t>>;  // per loader

// What each source asks of its loaders per step sample: seconds of reads
// and transforms on one thread (spread over a loader's threads), weight x
// seconds per sample.
struct Demand {
  std::vector<double> seconds;
  bool any(uint32_t s) const { return seconds[s] > 0.0; }
};

bool measured(const SourceProfile& p) { return p.samples_measured > 0 && p.seconds_per_sample() > 0; }

// Each source's profile for the policy; unmeasured ones cost the mean of
// the measured ones (read and transform each), or 1 s of read when none is
// measured (then only weights and a loader's threads decide).
std::vector<SourceProfile> sample_costs(const std::vector<SourceProfile>& profiles) {
  SourceProfile fallback;
  size_t count = 0;
  for (const auto& p : profiles)
    if (measured(p)) {
      fallback.read_seconds_per_sample += p.read_seconds_per_sample;
      fallback.transform_seconds_per_sample += p.transform_seconds_per_sample;
      ++count;
    }
  if (count > 0) {
    fallback.read_seconds_per_sample /= static_cast<double>(count);
    fallback.transform_seconds_per_sample /= static_cast<double>(count);
  } else {
    fallback.read_seconds_per_sample = 1.0;
  }
  std::vector<SourceProfile> costs;
  for (const auto& p : profiles) costs.push_back(measured(p) ? p : fallback);
  return costs;
}

// The busiest loader's load: seconds of its time per step sample, its reads
// and transforms over its threads.
double busiest(const Sources& sources_of_loader, const std::vector<unsigned>& threads, const Demand& demand) {
  std::vector<size_t> count(demand.seconds.size(), 0);
  for (const auto& mine : sources_of_loader)
    for (uint32_t s : mine) count[s]++;
  double worst = 0.0;
  for (size_t l = 0; l < sources_of_loader.size(); ++l) {
    const double t = static_cast<double>(std::max(threads[l], 1u));
    double load = 0.0;
    for (uint32_t s : sources_of_loader[l])
      load += demand.seconds[s] / t / static_cast<double>(count[s]);
    worst = std::max(worst, load);
  }
  return worst;
}

size_t loaders_of(const Sources& sources_of_loader, uint32_t source) {
  size_t n = 0;
  for (const auto& mine : sources_of_loader) n += std::count(mine.begin(), mine.end(), source);
  return n;
}

Sources apply(Sources sources_of_loader, size_t loader, uint32_t from, uint32_t to) {
  auto& mine = sources_of_loader[loader];
  mine.erase(std::remove(mine.begin(), mine.end(), from), mine.end());
  if (std::find(mine.begin(), mine.end(), to) == mine.end()) mine.push_back(to);
  return sources_of_loader;
}

// The single move that lowers the busiest load most, if any lowers it by
// the fraction `min_gain`. Candidates in a fixed order (ties: the first).
std::optional<LoaderMove> best_move(const Sources& current, const std::vector<bool>& movable,
                                    const std::vector<unsigned>& threads, const Demand& demand, double min_gain) {
  const double now = busiest(current, threads, demand);
  if (now <= 0.0) return std::nullopt;
  std::optional<LoaderMove> best;
  double best_load = now * (1.0 - min_gain);
  for (size_t l = 0; l < current.size(); ++l) {
    if (!movable[l]) continue;
    for (uint32_t from : current[l]) {
      if (loaders_of(current, from) < 2) continue;  // every source keeps a loader
      for (uint32_t to = 0; to < demand.seconds.size(); ++to) {
        if (to == from || !demand.any(to)) continue;
        const double load = busiest(apply(current, l, from, to), threads, demand);
        if (load < best_load - 1e-12) {
          best_load = load;
          best = LoaderMove{l, from, to, MoveReason::proactive};
        }
      }
    }
  }
  return best;
}

// Greedy moves under `demand`, each loader at most once.
std::vector<LoaderMove> greedy(const ScalingInput& input, const Demand& demand, double min_gain, MoveReason why) {
  Sources current;
  std::vector<bool> movable;
  std::vector<unsigned> threads;
  for (const auto& loader : input.loaders) {
    current.push_back(loader.sources);
    movable.push_back(loader.movable);
    threads.push_back(loader.threads);
  }
  std::vector<LoaderMove> moves;
  while (auto move = best_move(current, movable, threads, demand, min_gain)) {
    move->why = why;
    current = apply(std::move(current), move->loader, move->from, move->to);
    movable[move->loader] = false;
    moves.push_back(*move);
  }
  return moves;
}

}  // namespace

std::vector<LoaderMove> plan_moves(const ScalingInput& input, const ScalingOptions& options) {
  const size_t sources = input.profiles.size();
  MSD_CHECK_EQ(input.weights_now.size(), sources);
  MSD_CHECK_EQ(input.weights_ahead.size(), sources);
  MSD_CHECK_EQ(input.backlog_steps.size(), sources);
  for (const auto& loader : input.loaders)
    for (uint32_t s : loader.sources) MSD_CHECK(s < sources);
  if (input.steps_since_last_move < options.min_interval_steps) return {};
  const std::vector<SourceProfile> costs = sample_costs(input.profiles);
  Demand demand{std::vector<double>(sources)};
  for (size_t s = 0; s < sources; ++s)
    demand.seconds[s] = std::max(input.weights_now[s], input.weights_ahead[s]) * costs[s].seconds_per_sample();
  std::vector<LoaderMove> moves = greedy(input, demand, options.min_gain, MoveReason::proactive);
  if (!moves.empty()) return moves;
  bool behind = false;
  for (size_t s = 0; s < sources; ++s) {
    const double backlog = input.backlog_steps[s];
    if (backlog > options.backlog_threshold_steps && options.backlog_threshold_steps > 0) {
      demand.seconds[s] *= backlog / options.backlog_threshold_steps;
      behind = true;
    }
  }
  if (!behind) return {};
  return greedy(input, demand, options.min_gain, MoveReason::reactive);
}

std::vector<size_t> rescale_counts(const std::vector<size_t>& counts, size_t loaders) {
  const size_t sources = counts.size();
  MSD_CHECK(loaders >= sources);
  double total = 0.0;
  for (size_t c : counts) total += static_cast<double>(std::max<size_t>(c, 1));
  std::vector<double> target(sources);
  std::vector<size_t> out(sources);
  size_t given = 0;
  for (size_t s = 0; s < sources; ++s) {
    target[s] = static_cast<double>(loaders) * static_cast<double>(std::max<size_t>(counts[s], 1)) / total;
    out[s] = std::max<size_t>(1, static_cast<size_t>(std::floor(target[s])));
    given += out[s];
  }
  // Too many (the floor of 1): take from the furthest above target; too few:
  // give to the furthest below (ties: the lower index).
  while (given > loaders) {
    size_t pick = sources;
    for (size_t s = 0; s < sources; ++s)
      if (out[s] > 1 && (pick == sources || out[s] - target[s] > out[pick] - target[pick])) pick = s;
    out[pick]--;
    given--;
  }
  while (given < loaders) {
    size_t pick = 0;
    for (size_t s = 1; s < sources; ++s)
      if (target[s] - out[s] > target[pick] - out[pick]) pick = s;
    out[pick]++;
    given++;
  }
  return out;
}

}  // namespace msd
