// The partitioner against brute force on small synthetic cases: no assignment
// of sources to ranks at all meets the rate with fewer ranks, no grouping
// uses less memory with as few, and a per-rank memory limit holds. A rank's
// time is modelled as the loader runs: a batch's reads spread over its
// threads, then its transforms spread over them. Also the schedule points,
// the modelled step time, the profile meter and the plan file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "common/error.h"
#include "plan/pool/partition.h"
#include "profile/meter.h"
#include "profile/plan_file.h"

using namespace msd;

namespace {

constexpr double kTol = 1e-9;

// A random demand: n sources, `points` schedule points, up to `max_load`
// seconds per second per source on one thread, of which a share is read
// (none, all, or anything between), open memory 1..100 units.
PartitionDemand random_demand(std::mt19937_64& rng, size_t n, size_t points, double max_load) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  PartitionDemand d;
  d.global_batch = 1;
  for (size_t s = 0; s < n; ++s) {
    d.names.push_back("s" + std::to_string(s));
    SourceProfile p;
    const double seconds = max_load * (unit(rng) < 0.2 ? unit(rng) * 0.05 : unit(rng));
    const double split = unit(rng);
    const double read_share = split < 0.3 ? 0.0 : split < 0.5 ? 1.0 : unit(rng);
    p.read_seconds_per_sample = seconds * read_share;
    p.transform_seconds_per_sample = seconds - p.read_seconds_per_sample;
    p.open_bytes = 1 + std::floor(unit(rng) * 100);
    // Nested shared parts, as a loader's: none, a tokenizer, a tokenizer and decoders.
    const int kind = static_cast<int>(unit(rng) * 3);
    p.shared_bytes = std::min(p.open_bytes, kind * 20.0);
    p.samples_measured = 1;
    d.profiles.push_back(p);
  }
  for (size_t p = 0; p < points; ++p) {
    d.points.push_back(p * 10);
    std::vector<double> w(n);
    double sum = 0;
    for (auto& x : w) sum += (x = unit(rng) < 0.15 ? 0.0 : unit(rng));
    if (sum == 0) w[0] = sum = 1;
    for (auto& x : w) x /= sum;
    d.weights.push_back(w);
    d.steps_per_s.push_back(1.0);
  }
  return d;
}

// Seconds of a rank's time per second source `s` asks for at point `p` on
// `threads` threads, spelled out from the profile: the loader reads a batch
// on its threads, then transforms it on them.
double rank_seconds(const PartitionDemand& d, size_t s, size_t p, unsigned threads) {
  const SourceProfile& profile = d.profiles[s];
  const double samples_per_s = d.steps_per_s[p] * d.global_batch * d.weights[p][s];
  return samples_per_s * profile.read_seconds_per_sample / threads +
         samples_per_s * profile.transform_seconds_per_sample / threads;
}

// Whether `ranks` ranks of `threads` threads, each busy at most `capacity`
// of its time, can serve the demand with any assignment: each source to any
// non-empty set of ranks, its load split evenly over them (the planner's
// round-robin).
bool any_assignment_fits(const PartitionDemand& d, uint32_t ranks, unsigned threads, double capacity) {
  const size_t n = d.profiles.size();
  const uint32_t sets = (1u << ranks) - 1;  // non-empty subsets, as masks 1..sets
  std::vector<uint32_t> chosen(n, 1);
  for (;;) {
    bool fits = true;
    for (size_t p = 0; p < d.points.size() && fits; ++p)
      for (uint32_t r = 0; r < ranks && fits; ++r) {
        double load = 0;
        for (size_t s = 0; s < n; ++s)
          if (chosen[s] >> r & 1) load += rank_seconds(d, s, p, threads) / __builtin_popcount(chosen[s]);
        fits = load <= capacity + kTol;
      }
    if (fits) return true;
    size_t s = 0;
    while (s < n && chosen[s] == sets) chosen[s++] = 1;
    if (s == n) return false;
    ++chosen[s];
  }
}

struct Best {
  uint64_t ranks = UINT64_MAX;
  double bytes = 0;
};

// Every set partition of the sources into groups (restricted growth strings),
// each group on the fewest ranks of `threads` threads that carry its peak:
// the best (ranks, memory), groups over `max_rank_bytes` (when > 0) excluded.
Best best_grouping(const PartitionDemand& d, unsigned threads, double capacity, double max_rank_bytes) {
  const size_t n = d.profiles.size();
  std::vector<size_t> label(n, 0);
  Best best;
  std::function<void(size_t, size_t)> walk = [&](size_t s, size_t groups) {
    if (s == n) {
      uint64_t ranks = 0;
      double bytes = 0;
      for (size_t g = 0; g < groups; ++g) {
        double peak = 0, open = 0;
        for (size_t p = 0; p < d.points.size(); ++p) {
          double load = 0;
          for (size_t i = 0; i < n; ++i)
            if (label[i] == g) load += rank_seconds(d, i, p, threads);
          peak = std::max(peak, load);
        }
        double shared = 0;
        for (size_t i = 0; i < n; ++i)
          if (label[i] == g) {
            open += d.profiles[i].open_bytes - d.profiles[i].shared_bytes;
            shared = std::max(shared, d.profiles[i].shared_bytes);
          }
        open += shared;
        if (max_rank_bytes > 0 && open > max_rank_bytes) return;
        const uint64_t k = static_cast<uint64_t>(std::max(1.0, std::ceil(peak / capacity - kTol)));
        ranks += k;
        bytes += k * open;
      }
      if (ranks < best.ranks || (ranks == best.ranks && bytes < best.bytes - kTol)) best = {ranks, bytes};
      return;
    }
    for (size_t g = 0; g <= groups; ++g) {
      label[s] = g;
      walk(s + 1, std::max(groups, g + 1));
    }
  };
  walk(0, 0);
  return best;
}

}  // namespace

TEST_CASE("partition: no assignment of sources to ranks meets the rate with fewer ranks") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; ++round) {
    const size_t n = 2 + round % 3;
    const PartitionDemand d = random_demand(rng, n, 1 + round % 3, 3.0);
    PartitionOptions options;
    options.max_threads = 1 + round % 2;
    options.headroom = round % 4 == 0 ? 0.2 : 0.0;
    const double capacity = 1 - options.headroom;
    const PartitionPlan plan = partition(d, options);
    INFO("round " << round << ": " << plan.loader_ranks << " ranks");
    CHECK(plan.rate_met);
    CHECK(plan.exact);
    // The plan itself is an assignment that fits; one rank fewer, none does.
    CHECK(any_assignment_fits(d, plan.loader_ranks, options.max_threads, capacity));
    if (plan.loader_ranks > 1) CHECK_FALSE(any_assignment_fits(d, plan.loader_ranks - 1, options.max_threads, capacity));
    // Every group meets its peak with the threads it was given, and with one
    // thread fewer it would not.
    for (const LoaderGroup& g : plan.groups) {
      CHECK(g.threads <= options.max_threads);
      for (size_t p = 0; p < d.points.size(); ++p) {
        double load = 0;
        for (uint32_t s : g.sources) load += rank_seconds(d, s, p, g.threads);
        CHECK(g.ranks * capacity >= load - kTol);
      }
      CHECK(g.peak_load == Approx(g.peak_on(g.threads)));
      if (g.threads > 1) CHECK(g.peak_on(g.threads - 1) > g.ranks * capacity);
    }
  }
}

TEST_CASE("partition: the least memory among groupings with the fewest ranks, within a per-rank limit") {
  std::mt19937_64 rng(12);
  for (int round = 0; round < 80; ++round) {
    const size_t n = 2 + round % 5;
    const PartitionDemand d = random_demand(rng, n, 1 + round % 4, 2.0);
    PartitionOptions options;
    options.max_threads = 1 + round % 3;
    options.headroom = 0.1;
    const bool limited = round % 2 == 1;
    double largest = 0;
    for (const auto& p : d.profiles) largest = std::max(largest, p.open_bytes);
    options.max_rank_bytes = limited ? largest * 1.5 : 0;
    const PartitionPlan plan = partition(d, options);
    const Best best = best_grouping(d, options.max_threads, 0.9, options.max_rank_bytes);
    INFO("round " << round << ": plan " << plan.loader_ranks << " ranks, " << plan.memory_bytes << " bytes; best "
                  << best.ranks << ", " << best.bytes);
    CHECK(plan.loader_ranks == best.ranks);
    CHECK(plan.memory_bytes == Approx(best.bytes));
    CHECK(plan.rate_met);
    std::vector<int> seen(n, 0);
    for (const LoaderGroup& g : plan.groups) {
      for (uint32_t s : g.sources) ++seen[s];
      if (limited) CHECK(g.rank_bytes <= options.max_rank_bytes);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
  }
}

TEST_CASE("partition: sources whose peaks come at different points share a rank") {
  // Each needs 0.8 of a thread at its peak, but never both at once: a plan by
  // peak weights would take two ranks, the schedule's points show one is enough.
  PartitionDemand d;
  d.names = {"text", "images"};
  d.profiles.resize(2);
  d.profiles[0].transform_seconds_per_sample = d.profiles[1].transform_seconds_per_sample = 0.1;
  d.profiles[0].open_bytes = d.profiles[1].open_bytes = 1;
  d.global_batch = 8;
  d.points = {0, 100};
  d.weights = {{0.9, 0.1}, {0.1, 0.9}};
  d.steps_per_s = {1.0, 1.0};  // 8 x 0.9 x 0.1 = 0.72 threads at a peak, 0.8 in all
  PartitionOptions options;
  options.headroom = 0.0;
  const PartitionPlan plan = partition(d, options);
  CHECK(plan.loader_ranks == 1);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].sources == std::vector<uint32_t>{0, 1});
  CHECK(plan.worst_margin == Approx(0.25));
  // Twice the rate: 1.44 threads at each peak (two ranks each, apart), 1.6
  // together: both on the same two ranks.
  d.steps_per_s = {2.0, 2.0};
  const PartitionPlan faster = partition(d, options);
  CHECK(faster.loader_ranks == 2);
  CHECK(faster.groups.size() == 1);
  CHECK(faster.rate_met);
  // Slower: 0.36 each, 0.4 together; one rank, which holds both.
  d.steps_per_s = {0.5, 0.5};
  CHECK(partition(d, options).loader_ranks == 1);
}

TEST_CASE("partition: a heavy source gets several ranks and threads up to loader.threads") {
  PartitionDemand d;
  d.names = {"images", "web"};
  d.profiles.resize(2);
  d.profiles[0].transform_seconds_per_sample = 0.01;
  d.profiles[1].transform_seconds_per_sample = 0.0001;
  d.profiles[0].open_bytes = 10;
  d.profiles[1].open_bytes = 1;
  d.global_batch = 1000;
  d.points = {0};
  d.weights = {{0.5, 0.5}};
  d.steps_per_s = {1.0};  // images: 5 threads busy; web: 0.05
  PartitionOptions options;
  options.max_threads = 2;
  options.headroom = 0.0;
  const PartitionPlan plan = partition(d, options);
  CHECK(plan.loader_ranks == 3);  // ceil(5.05 / 2)
  CHECK(plan.rate_met);
  // Apart, images take ceil(5 / 2) = 3 ranks and web one more; together
  // ceil(5.05 / 2) = 3: web is open on all three, and a rank is saved.
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].threads == 2);
  // A spare rank goes to the heaviest group and lowers its threads where it can.
  PartitionPlan more = plan;
  add_spare_ranks(more, options, 5);
  CHECK(more.loader_ranks == 5);
  CHECK(more.spare_ranks == 2);
  CHECK(more.groups[0].ranks == 5);
  CHECK(more.groups[0].threads == 2);  // ceil(5.05 / 5) = 2
}

TEST_CASE("partition: threads shorten reads as they do transforms: a read-bound source needs no more ranks") {
  // 400 image samples per second, each 8 ms of read (storage latency) and 2
  // ms of transform, on loaders of 4 threads with 10% headroom: 4 seconds
  // of one thread per second, 3.6 on a rank of 4 threads, so 2 ranks. When
  // a loader read one sample after the other on its own thread, a rank
  // carried 0.9 / (8 + 2/4 ms) = 106 samples/s and it took 4.
  PartitionDemand d;
  d.names = {"images"};
  d.profiles.resize(1);
  d.profiles[0].read_seconds_per_sample = 0.008;
  d.profiles[0].transform_seconds_per_sample = 0.002;
  d.profiles[0].open_bytes = 1;
  d.global_batch = 100;
  d.points = {0};
  d.weights = {{1.0}};
  d.steps_per_s = {4.0};
  PartitionOptions options;
  options.max_threads = 4;
  const PartitionPlan plan = partition(d, options);
  CHECK(plan.loader_ranks == 2);
  CHECK(plan.rate_met);
  REQUIRE(plan.groups.size() == 1);
  // 400 x 10 ms / t <= 2 x 0.9 s: t = 3 threads do, 2 do not.
  CHECK(plan.groups[0].threads == 3);
  CHECK(plan.groups[0].peak_load == Approx(4.0 / 3));
  CHECK(plan.worst_margin == Approx(2 / (4.0 / 3) - 1));
  // Two ranks of one thread each miss the rate by half: the reads too need
  // the threads.
  PartitionPlan serial = plan;
  serial.groups[0].threads = 1;
  evaluate(serial, d, options, false);
  CHECK_FALSE(serial.rate_met);
  CHECK(serial.worst_margin == Approx(2 / 4.0 - 1));
  CHECK(serial.groups[0].peak_load == Approx(4.0));
  // The same 10 ms all transform, or all read: the same plan.
  for (const double read : {0.0, 0.010}) {
    d.profiles[0].read_seconds_per_sample = read;
    d.profiles[0].transform_seconds_per_sample = 0.010 - read;
    const PartitionPlan same = partition(d, options);
    CHECK(same.loader_ranks == 2);
    CHECK(same.groups.at(0).threads == 3);
  }
  // On one thread: 4 s per second, 5 ranks.
  options.max_threads = 1;
  CHECK(partition(d, options).loader_ranks == 5);
}

TEST_CASE("partition: a source over the per-rank memory limit is an error naming the option") {
  std::mt19937_64 rng(3);
  PartitionDemand d = random_demand(rng, 3, 2, 0.5);
  d.profiles[1].open_bytes = 500;
  PartitionOptions options;
  options.max_rank_bytes = 200;
  options.memory_option = "--max-loader-mb";
  CHECK_THROWS_WITH(partition(d, options), Catch::StartsWith("--max-loader-mb: source 's1' alone holds 500 bytes"));
}

TEST_CASE("partition: 16 sources searched exhaustively, 128 by greedy merging that still meets the rate") {
  std::mt19937_64 rng(5);
  for (const size_t n : {size_t{16}, size_t{128}}) {
    const PartitionDemand d = random_demand(rng, n, 6, 0.4);
    PartitionOptions options;
    options.max_threads = 2;
    const PartitionPlan plan = partition(d, options);
    INFO(n << " sources: " << plan.loader_ranks << " ranks");
    CHECK(plan.exact == (n <= 16));
    CHECK(plan.rate_met);
    double total_peak = 0;
    for (size_t p = 0; p < d.points.size(); ++p) {
      double load = 0;
      for (size_t s = 0; s < n; ++s) load += rank_seconds(d, s, p, 2);
      total_peak = std::max(total_peak, load);
    }
    const double bound = std::max(1.0, std::ceil(total_peak / 0.9 - kTol));
    CHECK(plan.loader_ranks >= bound);
    if (plan.exact) CHECK(plan.loader_ranks == bound);  // one group reaches the bound
  }
}

TEST_CASE("schedule_points: every weight point inside the run, and its ends") {
  DemandOptions job;
  job.steps = 80;
  job.weights = {{{0, 0.5}, {30, 0.5}, {50, 0.3}, {200, 0.1}}, {{10, 0.2}}};
  job.schedule = ScheduleKind::linear;
  CHECK(schedule_points(job) == std::vector<uint64_t>{0, 10, 30, 50, 79});
  job.schedule = ScheduleKind::constant;
  CHECK(schedule_points(job) == std::vector<uint64_t>{0, 79});
}

namespace {
// The cost and device models of `model` on an H100.
void set_model(DemandOptions& job, const CostOptions& model) {
  job.cost = make_cost_model(model);
  job.device = make_device_model(model, "h100");
}

// Ten steps of 16 samples of 1024 positions from sources "a" and "b", placed
// by msd_greedy on one rank.
DemandOptions two_source_job() {
  DemandOptions job;
  job.names = {"a", "b"};
  job.weights = {{{0, 1.0}}, {{0, 1.0}}};
  job.steps = 10;
  job.global_batch = 16;
  job.pack.seq_len = 1024;
  set_model(job, CostOptions{});
  return job;
}
}  // namespace

TEST_CASE("modelled_step_seconds: the step as the planner places it, padding and vision tower included") {
  DemandOptions c = two_source_job();
  std::vector<SourceProfile> profiles(2);
  profiles[0].positions_per_sample = 600;
  profiles[1].positions_per_sample = 512;
  // Largest remainder: 16 x (0.3, 0.7) = 4.8, 11.2 -> 5, 11.
  const std::vector<double> mix{0.3, 0.7};
  const std::vector<PlanDoc> docs = representative_step(c, mix, profiles);
  REQUIRE(docs.size() == 16);
  CHECK(std::count_if(docs.begin(), docs.end(), [](const PlanDoc& d) { return d.positions == 600; }) == 5);
  for (uint32_t i = 0; i < docs.size(); ++i) CHECK(docs[i].id == i);
  // Sixteen documents of 512 positions fill 8 sequences; of 600, two no
  // longer fit one sequence, so 16 sequences run, 41% of them padding: a
  // perfect packing (9600 positions in 9.4 sequences) would model 1.2x the
  // 512 step, the placement about 2x.
  const std::vector<double> only_a{1.0, 0.0}, only_b{0.0, 1.0};
  const double padded = modelled_step_seconds(c, only_a, profiles);
  const double full = modelled_step_seconds(c, only_b, profiles);
  CHECK(padded > 1.6 * full);
  // The same positions with image patches run the vision tower too.
  profiles[1].patches_per_sample = 256;
  CHECK(modelled_step_seconds(c, only_b, profiles) > 1.05 * full);
  CostOptions text_only;
  text_only.vision_layers = 0;
  set_model(c, text_only);
  CHECK(modelled_step_seconds(c, only_b, profiles) == Approx(full));
}

TEST_CASE("make_demand: the device model's rate, or the one given") {
  DemandOptions c = two_source_job();
  c.weights = {{{0, 1.0}, {9, 0.0}}, {{0, 0.0}, {9, 1.0}}};
  c.schedule = ScheduleKind::linear;
  std::vector<SourceProfile> profiles(2);
  profiles[0].positions_per_sample = 100;    // short documents: a short step
  profiles[1].positions_per_sample = 1000;
  const PartitionDemand given = make_demand(c, profiles, 5.0);
  CHECK(given.steps_per_s == std::vector<double>{5.0, 5.0});
  const PartitionDemand modelled = make_demand(c, profiles, 0.0);
  REQUIRE(modelled.steps_per_s.size() == 2);
  CHECK(modelled.steps_per_s[0] > modelled.steps_per_s[1]);  // ten times the positions at step 9
  c.time_scale = 0.5;
  const PartitionDemand faster = make_demand(c, profiles, 0.0);
  CHECK(faster.steps_per_s[0] == Approx(2 * modelled.steps_per_s[0]));
  c.time_scale = 0;
  CHECK_THROWS_WITH(make_demand(c, profiles, 0.0), Catch::StartsWith("emulator.time_scale: 0"));
}

TEST_CASE("ProfileMeter: the plain mean up to the horizon, then an exponential moving average") {
  ProfileMeter meter(2, 4);
  meter.add(1, 1, 0.25, 0.75, 100, 10);
  meter.add(1, 1, 0.75, 2.25, 300, 30);
  CHECK(meter.profiles()[1].read_seconds_per_sample == Approx(0.5));
  CHECK(meter.profiles()[1].transform_seconds_per_sample == Approx(1.5));
  CHECK(meter.profiles()[1].seconds_per_sample() == Approx(2.0));
  CHECK(meter.profiles()[1].seconds_on(3) == Approx((0.5 + 1.5) / 3));
  CHECK(meter.profiles()[1].bytes_per_sample == Approx(200));
  meter.add(1, 2, 2.0, 6.0, 0, 0);  // mean 4 s over 4 samples: (1 + 3 + 4 + 4) / 4
  CHECK(meter.profiles()[1].seconds_per_sample() == Approx(3.0));
  meter.add(1, 2, 0.0, 2.0, 0, 0);  // past the horizon: moves 2/4 of the way to 1
  CHECK(meter.profiles()[1].seconds_per_sample() == Approx(2.0));
  CHECK(meter.profiles()[1].read_seconds_per_sample == Approx(0.375));  // (0.75 + 0) / 2
  CHECK(meter.profiles()[1].samples_measured == 6);
  CHECK(meter.profiles()[0].samples_measured == 0);
  meter.set_open_bytes(0, 42);
  CHECK(meter.profiles()[0].open_bytes == 42);
  // A transform's wall time charged to every thread it could use.
  CHECK(transform_thread_seconds(1.0, 4, 16) == Approx(4.0));
  CHECK(transform_thread_seconds(1.0, 4, 2) == Approx(2.0));
}

TEST_CASE("plan file: what msd-plan partition writes, msd-run reads") {
  std::vector<SourceConfig> sources(3);
  for (int s = 0; s < 3; ++s) sources[s].name = "s" + std::to_string(s);
  PartitionDemand d;
  d.names = {"s0", "s1", "s2"};
  d.profiles.resize(3);
  for (auto& p : d.profiles) p.transform_seconds_per_sample = 0.01, p.open_bytes = 5;
  d.profiles[2].read_seconds_per_sample = 0.3;
  d.profiles[2].transform_seconds_per_sample = 0.2;
  d.global_batch = 4;
  d.points = {0};
  d.weights = {{0.3, 0.3, 0.4}};
  d.steps_per_s = {1.0};
  PartitionOptions options;
  const PartitionPlan plan = partition(d, options);
  const std::string text = plan_json(plan, d, options);
  PartitionPlan read = parse_plan_json(text, sources, "topology.partition_plan", "the plan");
  REQUIRE(read.groups.size() == plan.groups.size());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    CHECK(read.groups[g].sources == plan.groups[g].sources);
    CHECK(read.groups[g].ranks == plan.groups[g].ranks);
    CHECK(read.groups[g].threads == plan.groups[g].threads);
    CHECK(read.groups[g].read_load == plan.groups[g].read_load);
    CHECK(read.groups[g].transform_load == plan.groups[g].transform_load);
  }
  CHECK(read.loader_ranks == plan.loader_ranks);
  // A plan written before the loads were split into read and transform:
  // its peak_load (threads busy) counts as transform.
  const std::string older =
      R"({"groups": [{"sources": ["s0", "s1", "s2"], "ranks": 1, "threads": 1, "peak_load": 0.75}]})";
  const PartitionPlan old = parse_plan_json(older, sources, "topology.partition_plan", "the plan");
  CHECK(old.groups[0].read_load == std::vector<double>{0.0});
  CHECK(old.groups[0].transform_load == std::vector<double>{0.75});
  CHECK_THROWS_WITH(parse_plan_json(R"({"groups": [{"sources": ["s0", "s1", "s2"], "ranks": 1, "threads": 1,
                                       "read_load": [0.1]}]})", sources, "topology.partition_plan", "the plan"),
                    Catch::StartsWith("topology.partition_plan: the plan, group 0: 'transform_load' is missing"));
  LoaderFit fit{.loaders = 3, .threads = 1};
  fit_to_loaders(read, fit);
  CHECK(read.loader_ranks == 3);
  fit.loaders = 0;
  CHECK_THROWS_WITH(fit_to_loaders(read, fit), Catch::StartsWith("topology.loaders: the partition plan needs"));
  sources[1].name = "other";
  CHECK_THROWS_WITH(parse_plan_json(text, sources, "topology.partition_plan", "the plan"),
                    Catch::StartsWith("topology.partition_plan: the plan, group 0: source 's1' is not in mix.sources"));
  CHECK_THROWS_WITH(parse_plan_json("{", sources, "topology.partition_plan", "the plan"),
                    Catch::StartsWith("topology.partition_plan: the plan is not JSON"));
}

TEST_CASE("partition: a rank holds the shared tokenizer and decoders once") {
  PartitionDemand d;
  d.names = {"web", "books", "images", "corpus"};
  d.profiles.resize(4);
  const double own[] = {10, 20, 30, 5}, shared[] = {100, 100, 300, 0};  // images: tokenizer 100 + decoders 200
  for (size_t s = 0; s < 4; ++s) {
    d.profiles[s].transform_seconds_per_sample = 0.001;
    d.profiles[s].open_bytes = own[s] + shared[s];
    d.profiles[s].shared_bytes = shared[s];
  }
  d.global_batch = 10;
  d.points = {0};
  d.weights = {{0.25, 0.25, 0.25, 0.25}};
  d.steps_per_s = {1.0};
  PartitionOptions options;
  const PartitionPlan plan = partition(d, options);
  REQUIRE(plan.loader_ranks == 1);
  CHECK(plan.memory_bytes == Approx(10 + 20 + 30 + 5 + 300));
  // Under a limit that one rank of everything exceeds, the text sources keep
  // sharing one tokenizer and images go alone with the corpus.
  options.max_rank_bytes = 340;
  const PartitionPlan limited = partition(d, options);
  CHECK(limited.loader_ranks == 2);
  CHECK(limited.memory_bytes == Approx((10 + 20 + 5 + 100) + (30 + 300)));
  for (const LoaderGroup& g : limited.groups) CHECK(g.rank_bytes <= 340);
}
