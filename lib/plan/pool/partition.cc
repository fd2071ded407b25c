#include "plan/pool/partition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <set>

#include "common/error.h"
#include "plan/cluster/compare.h"
#include "plan/cluster/device_model.h"
#include "plan/step/mix.h"
#include "plan/step/modes.h"

namespace msd {
namespace {

constexpr double kEps = 1e-9;

// A plan's objective: ranks first, then memory (lexicographic; both add over groups).
struct Cost {
  uint64_t ranks = 0;
  double bytes = 0.0;
  bool feasible = true;

  Cost operator+(const Cost& o) const { return {ranks + o.ranks, bytes + o.bytes, feasible && o.feasible}; }
  bool operator<(const Cost& o) const {
    if (feasible != o.feasible) return feasible;
    if (ranks != o.ranks) return ranks < o.ranks;
    return bytes < o.bytes - kEps * std::max(1.0, std::abs(o.bytes));
  }
};

// What one rank carries: seconds of its time per second, less the headroom.
double rank_capacity(const PartitionOptions& options) { return 1.0 - std::clamp(options.headroom, 0.0, 0.99); }

unsigned max_threads(const PartitionOptions& options) { return std::max(options.max_threads, 1u); }

// The fewest threads (at most max_threads) on which `ranks` ranks carry the
// group at every point: threads shorten its reads and its transforms.
uint32_t threads_for(const LoaderGroup& group, uint32_t ranks, const PartitionOptions& options) {
  const double capacity = ranks * rank_capacity(options);
  uint32_t threads = 1;
  while (threads < max_threads(options) && group.peak_on(threads) > capacity * (1 + kEps)) ++threads;
  return threads;
}

uint32_t ranks_for(double peak_load, double capacity) {
  return static_cast<uint32_t>(std::max(1.0, std::ceil(peak_load / capacity - kEps)));
}

// The cost of one group whose loads per point are `load` and whose sources
// hold `bytes` when open.
Cost group_cost(std::span<const double> load, double bytes, const PartitionOptions& options) {
  const double peak = load.empty() ? 0.0 : *std::max_element(load.begin(), load.end());
  const uint32_t ranks = ranks_for(peak, rank_capacity(options));
  const bool fits = options.max_rank_bytes <= 0 || bytes <= options.max_rank_bytes * (1 + kEps);
  return {ranks, ranks * bytes, fits};
}

// A source's open bytes that are its own, not shared with the loader's others.
double own_bytes(const SourceProfile& p) { return std::max(0.0, p.open_bytes - p.shared_bytes); }

// What one rank serving `sources` holds open: each source's own bytes, and
// the largest shared part once (the shared parts are nested, meter.h).
double rank_bytes_of(const std::vector<uint32_t>& sources, const PartitionDemand& demand) {
  double own = 0.0, shared = 0.0;
  for (uint32_t s : sources) {
    own += own_bytes(demand.profiles.at(s));
    shared = std::max(shared, std::min(demand.profiles[s].shared_bytes, demand.profiles[s].open_bytes));
  }
  return own + shared;
}

// Exhaustive: the best set partition by dynamic programming over subsets
// (f(S) = min over groups G in S holding S's lowest source of cost(G) +
// f(S \ G)), O(3^n + 2^n * points).
std::vector<std::vector<uint32_t>> exact_groups(const PartitionDemand& demand, const PartitionOptions& options) {
  const size_t n = demand.profiles.size();
  const size_t points = demand.points.size();
  const size_t subsets = size_t{1} << n;
  std::vector<double> load(subsets * points, 0.0);
  std::vector<double> own(subsets, 0.0), shared(subsets, 0.0);
  std::vector<Cost> cost(subsets);
  for (size_t mask = 1; mask < subsets; ++mask) {
    const size_t low = static_cast<size_t>(__builtin_ctzll(mask));
    const size_t rest = mask & (mask - 1);
    for (size_t p = 0; p < points; ++p)
      load[mask * points + p] = load[rest * points + p] + demand.load(low, p, max_threads(options));
    const SourceProfile& p = demand.profiles[low];
    own[mask] = own[rest] + own_bytes(p);
    shared[mask] = std::max(shared[rest], std::min(p.shared_bytes, p.open_bytes));
    cost[mask] = group_cost(std::span<const double>(load).subspan(mask * points, points), own[mask] + shared[mask], options);
  }
  std::vector<Cost> best(subsets);
  std::vector<size_t> choice(subsets, 0);
  for (size_t mask = 1; mask < subsets; ++mask) {
    const size_t low = mask & (~mask + 1);
    const size_t others = mask ^ low;
    bool found = false;
    // Every subset G of `mask` that holds its lowest source: low | (a subset of the others).
    for (size_t sub = others;; sub = (sub - 1) & others) {
      const size_t group = low | sub;
      const Cost c = cost[group] + best[mask ^ group];
      if (!found || c < best[mask]) {
        best[mask] = c;
        choice[mask] = group;
        found = true;
      }
      if (sub == 0) break;
    }
  }
  std::vector<std::vector<uint32_t>> groups;
  for (size_t mask = subsets - 1; mask != 0; mask ^= choice[mask]) {
    std::vector<uint32_t> group;
    for (size_t s = 0; s < n; ++s)
      if (choice[mask] >> s & 1) group.push_back(static_cast<uint32_t>(s));
    groups.push_back(std::move(group));
  }
  return groups;
}

Cost cost_of(const std::vector<uint32_t>& group, const PartitionDemand& demand, const PartitionOptions& options) {
  std::vector<double> load(demand.points.size(), 0.0);
  for (uint32_t s : group)
    for (size_t p = 0; p < load.size(); ++p) load[p] += demand.load(s, p, max_threads(options));
  return group_cost(load, rank_bytes_of(group, demand), options);
}

// Many sources: from one group per source, merge the pair of groups that
// improves the cost most (ranks saved first, then bytes), while one does.
// Each group keeps its load per point, so a candidate merge costs O(points).
std::vector<std::vector<uint32_t>> greedy_groups(const PartitionDemand& demand, const PartitionOptions& options) {
  struct Group {
    std::vector<uint32_t> sources;
    std::vector<double> load;
    double own = 0.0, shared = 0.0;  // rank_bytes_of, in parts
    Cost cost;
  };
  const size_t points = demand.points.size();
  std::vector<Group> groups;
  for (uint32_t s = 0; s < demand.profiles.size(); ++s) {
    const SourceProfile& profile = demand.profiles[s];
    Group g{{s}, std::vector<double>(points), own_bytes(profile), std::min(profile.shared_bytes, profile.open_bytes), {}};
    for (size_t p = 0; p < points; ++p) g.load[p] = demand.load(s, p, max_threads(options));
    g.cost = group_cost(g.load, g.own + g.shared, options);
    groups.push_back(std::move(g));
  }
  std::vector<double> merged(points);
  for (;;) {
    uint64_t best_ranks = 0;
    double best_bytes = 0.0;
    size_t best_a = 0, best_b = 0;
    bool found = false;
    for (size_t a = 0; a < groups.size(); ++a) {
      for (size_t b = a + 1; b < groups.size(); ++b) {
        for (size_t p = 0; p < points; ++p) merged[p] = groups[a].load[p] + groups[b].load[p];
        const Cost together = group_cost(merged, groups[a].own + groups[b].own + std::max(groups[a].shared, groups[b].shared), options);
        const Cost apart = groups[a].cost + groups[b].cost;
        if (!together.feasible || !(together < apart)) continue;
        const uint64_t ranks = apart.ranks - together.ranks;
        const double bytes = apart.bytes - together.bytes;
        if (!found || ranks > best_ranks || (ranks == best_ranks && bytes > best_bytes)) {
          best_ranks = ranks;
          best_bytes = bytes;
          best_a = a;
          best_b = b;
          found = true;
        }
      }
    }
    if (!found) break;
    Group& into = groups[best_a];
    into.sources.insert(into.sources.end(), groups[best_b].sources.begin(), groups[best_b].sources.end());
    std::sort(into.sources.begin(), into.sources.end());
    for (size_t p = 0; p < points; ++p) into.load[p] += groups[best_b].load[p];
    into.own += groups[best_b].own;
    into.shared = std::max(into.shared, groups[best_b].shared);
    into.cost = group_cost(into.load, into.own + into.shared, options);
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(best_b));
  }
  std::vector<std::vector<uint32_t>> out;
  for (Group& g : groups) out.push_back(std::move(g.sources));
  return out;
}

}  // namespace

double PartitionDemand::load(size_t s, size_t p, unsigned threads) const {
  return steps_per_s[p] * global_batch * weights[p][s] * profiles[s].seconds_on(threads);
}

double PartitionDemand::read_load(size_t s, size_t p) const {
  return steps_per_s[p] * global_batch * weights[p][s] * profiles[s].read_seconds_per_sample;
}

double PartitionDemand::transform_load(size_t s, size_t p) const {
  return steps_per_s[p] * global_batch * weights[p][s] * profiles[s].transform_seconds_per_sample;
}

double LoaderGroup::load_on(size_t p, unsigned threads) const {
  return (read_load.at(p) + transform_load.at(p)) / static_cast<double>(std::max(threads, 1u));
}

double LoaderGroup::peak_on(unsigned threads) const {
  double peak = 0.0;
  for (size_t p = 0; p < read_load.size() && p < transform_load.size(); ++p) peak = std::max(peak, load_on(p, threads));
  return peak;
}

std::vector<uint32_t> PartitionPlan::group_of_source(size_t sources) const {
  std::vector<uint32_t> out(sources, 0);
  for (uint32_t g = 0; g < groups.size(); ++g)
    for (uint32_t s : groups[g].sources) out.at(s) = g;
  return out;
}

std::vector<uint64_t> schedule_points(const DemandOptions& job) {
  const uint64_t last = job.steps > 0 ? job.steps - 1 : 0;
  std::set<uint64_t> points{0, last};
  if (job.schedule != ScheduleKind::constant)
    for (const std::vector<WeightPoint>& curve : job.weights)
      for (const WeightPoint& point : curve)
        if (point.step <= last) points.insert(point.step);
  return {points.begin(), points.end()};
}

std::vector<PlanDoc> representative_step(const DemandOptions& job, std::span<const double> weights,
                                         std::span<const SourceProfile> profiles) {
  const uint32_t seq_len = job.pack.seq_len;
  // Each source's share of the batch: floor(batch x weight), the rest by
  // largest remainder (ties: the first source), as a step's quotas are.
  std::vector<uint64_t> count(profiles.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;
  uint64_t placed = 0;
  for (size_t s = 0; s < profiles.size(); ++s) {
    const double share = job.global_batch * std::max(0.0, weights[s]);
    count[s] = static_cast<uint64_t>(std::floor(share + kEps));
    placed += count[s];
    remainders.emplace_back(-(share - static_cast<double>(count[s])), s);
  }
  std::stable_sort(remainders.begin(), remainders.end());
  for (size_t i = 0; placed < job.global_batch && i < remainders.size(); ++i, ++placed) ++count[remainders[i].second];
  std::vector<PlanDoc> docs;
  for (size_t s = 0; s < profiles.size(); ++s) {
    const uint32_t positions = static_cast<uint32_t>(std::max(1.0, std::round(profiles[s].positions_per_sample)));
    const double patches = std::round(std::max(0.0, profiles[s].patches_per_sample));
    const uint32_t fixed = static_cast<uint32_t>(std::min<double>(patches, std::min(positions, seq_len)));
    for (uint64_t i = 0; i < count[s]; ++i) docs.push_back({static_cast<uint32_t>(docs.size()), positions, fixed, 0.0});
  }
  return docs;
}

double modelled_step_seconds(const DemandOptions& job, std::span<const double> weights,
                             std::span<const SourceProfile> profiles) {
  const std::vector<PlanDoc> docs = representative_step(job, weights, profiles);
  if (docs.empty()) return 0.0;
  const ModeEvaluation placed = evaluate_mode(job.mode, {docs}, job.pack, job.cost, job.device, job.parallel);
  return placed.seconds * job.time_scale;
}

PartitionDemand make_demand(const DemandOptions& job, const std::vector<SourceProfile>& profiles, double steps_per_s) {
  if (profiles.size() != job.names.size())
    throw ConfigError(str("profiles: ", profiles.size(), " profiles for ", job.names.size(), " sources"));
  PartitionDemand demand;
  demand.names = job.names;
  demand.profiles = profiles;
  demand.global_batch = job.global_batch;
  demand.points = schedule_points(job);
  const Schedule schedule(job.schedule, job.weights);
  for (uint64_t step : demand.points) {
    demand.weights.push_back(schedule.weights(step));
    double rate = steps_per_s;
    if (rate <= 0) {
      const double seconds = modelled_step_seconds(job, demand.weights.back(), profiles);
      if (!(seconds > 0))
        throw ConfigError("emulator.time_scale: 0 gives the device model no step time, so no target rate; "
                          "give one with --steps-per-s");
      rate = 1.0 / seconds;
    }
    demand.steps_per_s.push_back(rate);
  }
  return demand;
}

PartitionPlan partition(const PartitionDemand& demand, const PartitionOptions& options) {
  MSD_CHECK(!demand.profiles.empty());
  for (size_t s = 0; s < demand.profiles.size(); ++s)
    if (options.max_rank_bytes > 0 && demand.profiles[s].open_bytes > options.max_rank_bytes * (1 + kEps))
      throw ConfigError(str(options.memory_option, ": source '", demand.names.at(s), "' alone holds ",
                            demand.profiles[s].open_bytes, " bytes open, more than one loader rank may hold (",
                            options.max_rank_bytes, ")"));
  PartitionPlan plan;
  plan.headroom = options.headroom;
  plan.exact = demand.profiles.size() <= options.exact_up_to;
  const auto groups = plan.exact ? exact_groups(demand, options) : greedy_groups(demand, options);
  for (const auto& sources : groups) {
    LoaderGroup group;
    group.sources = sources;
    std::sort(group.sources.begin(), group.sources.end());
    group.ranks = cost_of(group.sources, demand, options).ranks;
    plan.groups.push_back(std::move(group));
  }
  // Groups in the order of their first source: plans read the same every time.
  std::sort(plan.groups.begin(), plan.groups.end(),
            [](const LoaderGroup& a, const LoaderGroup& b) { return a.sources.front() < b.sources.front(); });
  evaluate(plan, demand, options);
  return plan;
}

void evaluate(PartitionPlan& plan, const PartitionDemand& demand, const PartitionOptions& options,
              bool choose_threads) {
  plan.loader_ranks = 0;
  plan.memory_bytes = 0.0;
  plan.worst_margin = std::numeric_limits<double>::infinity();
  plan.worst_step = 0;
  for (LoaderGroup& group : plan.groups) {
    group.rank_bytes = rank_bytes_of(group.sources, demand);
    group.read_load.assign(demand.points.size(), 0.0);
    group.transform_load.assign(demand.points.size(), 0.0);
    for (size_t p = 0; p < demand.points.size(); ++p)
      for (uint32_t s : group.sources) {
        group.read_load[p] += demand.read_load(s, p);
        group.transform_load[p] += demand.transform_load(s, p);
      }
    if (choose_threads) group.threads = threads_for(group, group.ranks, options);
    group.peak_load = group.peak_on(group.threads);
    // Each rank has one second per second: the margin is how much more the
    // group's ranks could carry at the point, on its threads.
    for (size_t p = 0; p < demand.points.size(); ++p) {
      const double load = group.load_on(p, group.threads);
      if (load <= 0) continue;
      const double margin = static_cast<double>(group.ranks) / load - 1.0;
      if (margin < plan.worst_margin) {
        plan.worst_margin = margin;
        plan.worst_step = demand.points[p];
      }
    }
    plan.loader_ranks += group.ranks;
    plan.memory_bytes += group.ranks * group.rank_bytes;
  }
  plan.rate_met = plan.worst_margin >= -kEps;
}

void add_spare_ranks(PartitionPlan& plan, const PartitionOptions& options, uint32_t total_ranks) {
  if (plan.groups.empty()) return;
  while (plan.loader_ranks < total_ranks) {
    size_t heaviest = 0;
    const auto per_rank = [&](const LoaderGroup& g) { return g.peak_on(max_threads(options)) / g.ranks; };
    for (size_t g = 1; g < plan.groups.size(); ++g)
      if (per_rank(plan.groups[g]) > per_rank(plan.groups[heaviest])) heaviest = g;
    LoaderGroup& group = plan.groups[heaviest];
    ++group.ranks;
    group.threads = threads_for(group, group.ranks, options);
    group.peak_load = group.peak_on(group.threads);
    ++plan.spare_ranks;
    ++plan.loader_ranks;
    plan.memory_bytes += group.rank_bytes;
  }
}

void print_plan(const PartitionPlan& plan, const PartitionDemand& demand, std::ostream& out) {
  char line[512];
  const auto [low, high] = std::minmax_element(demand.steps_per_s.begin(), demand.steps_per_s.end());
  std::snprintf(line, sizeof line,
                "partition: %u loader ranks (%s), open-source memory %.2f MiB, target %.3g..%.3g steps/s x %u samples\n",
                plan.loader_ranks, plan.exact ? "fewest, then least memory: exhaustive search" : "greedy merging",
                plan.memory_bytes / (1024.0 * 1024), *low, *high, demand.global_batch);
  out << line;
  if (plan.spare_ranks > 0) out << "  " << plan.spare_ranks << " spare rank(s) added to the heaviest groups\n";
  std::snprintf(line, sizeof line, "  rate %s at every one of %zu schedule points; worst margin %+.1f%% at step %llu\n",
                plan.rate_met ? "met" : "NOT met", demand.points.size(), plan.worst_margin * 100,
                static_cast<unsigned long long>(plan.worst_step));
  out << line;
  std::snprintf(line, sizeof line, "  %-12s %6s %8s %12s %10s  %s\n", "source", "ranks", "threads", "memory",
                "peak load", "shares its ranks with");
  out << line;
  for (size_t s = 0; s < demand.names.size(); ++s) {
    const LoaderGroup& group = plan.groups.at(plan.group_of_source(demand.names.size())[s]);
    std::string others;
    for (uint32_t o : group.sources)
      if (o != s) others += (others.empty() ? "" : ", ") + demand.names[o];
    double peak = 0.0;
    for (size_t p = 0; p < demand.points.size(); ++p) peak = std::max(peak, demand.load(s, p, group.threads));
    std::snprintf(line, sizeof line, "  %-12s %6u %8u %8.2f MiB %10.3f  %s\n", demand.names[s].c_str(), group.ranks,
                  group.threads, group.ranks * demand.profiles[s].open_bytes / (1024.0 * 1024), peak,
                  others.empty() ? "-" : others.c_str());
    out << line;
  }
  out << "  (a source's memory: ranks x its open bytes; a rank holds the shared tokenizer and decoders once, as in the total;\n"
         "   peak load: loader ranks it keeps busy, its reads and transforms over the threads)\n";
}

void print_other(const PartitionPlan& other, const std::string& label, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%s: %u loader ranks, open-source memory %.2f MiB, rate %s (worst margin %+.1f%% at step %llu)\n",
                label.c_str(), other.loader_ranks, other.memory_bytes / (1024.0 * 1024), other.rate_met ? "met" : "NOT met",
                other.worst_margin * 100, static_cast<unsigned long long>(other.worst_step));
  out << line;
}

}  // namespace msd
