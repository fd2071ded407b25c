#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "plan/step/bound.h"
#include "plan/step/pack.h"
#include "plan/cluster/simulate.h"
#include "unit/rounds.h"

namespace {

// Whether `sizes` (sequences' positions) fit in `bins` micro-batches of
// `limit` positions each: exhaustive.
bool fits(std::vector<uint64_t> sizes, uint32_t bins, uint64_t limit) {
  std::vector<uint64_t> load(bins, 0);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::function<bool(size_t)> place = [&](size_t i) {
    if (i == sizes.size()) return true;
    for (uint32_t b = 0; b < bins; ++b) {
      if (load[b] + sizes[i] > limit) continue;
      load[b] += sizes[i];
      if (place(i + 1)) return true;
      load[b] -= sizes[i];
      if (load[b] == 0) break;  // empty bins are alike
    }
    return false;
  };
  return place(0);
}

// The fewest sequences of seq_len positions that hold the pieces of `subset`
// (bit i: piece i) so that the sequences fit the micro-batches; -1 if none.
int fewest_sequences(uint32_t subset, const std::vector<uint32_t>& lengths, uint32_t seq_len, uint32_t micro_batches,
                     uint64_t limit) {
  std::vector<uint32_t> items;
  for (uint32_t i = 0; i < lengths.size(); ++i)
    if (subset >> i & 1) items.push_back(i);
  if (items.empty()) return 0;
  int best = -1;
  std::vector<uint64_t> used;
  // Every set partition of the items into sequences.
  std::function<void(size_t)> assign = [&](size_t k) {
    if (best >= 0 && static_cast<int>(used.size()) >= best) return;
    if (k == items.size()) {
      if (fits(used, micro_batches, limit)) best = static_cast<int>(used.size());
      return;
    }
    const uint32_t length = lengths[items[k]];
    for (size_t s = 0; s < used.size(); ++s) {
      if (used[s] + length > seq_len) continue;
      used[s] += length;
      assign(k + 1);
      used[s] -= length;
    }
    used.push_back(length);
    assign(k + 1);
    used.pop_back();
  };
  assign(0);
  return best;
}

// The least heaviest-bucket cost over every plan: every assignment of the
// pieces to buckets, each bucket packed into its fewest sequences (a bucket
// costs its pieces plus the linear term over its padding).
double exhaustive_optimum(const std::vector<uint32_t>& lengths, const std::vector<double>& costs,
                          const msd::BoundShape& shape, const msd::CostModel& cost) {
  const size_t n = lengths.size();
  std::vector<double> subset_cost(size_t{1} << n, INFINITY);
  for (uint32_t subset = 0; subset < (1u << n); ++subset) {
    const int sequences = fewest_sequences(subset, lengths, shape.seq_len, shape.micro_batches, shape.limit);
    if (sequences < 0) continue;
    double c = cost.padding(static_cast<uint64_t>(sequences) * shape.seq_len);
    for (size_t i = 0; i < n; ++i)
      if (subset >> i & 1) c += costs[i] - cost.padding(lengths[i]);
    subset_cost[subset] = c;
  }
  double best = INFINITY;
  std::vector<uint32_t> bucket_of(n, 0);
  std::function<void(size_t, uint32_t)> assign = [&](size_t i, uint32_t opened) {
    if (i == n) {
      std::vector<uint32_t> subsets(shape.dp, 0);
      for (size_t k = 0; k < n; ++k) subsets[bucket_of[k]] |= 1u << k;
      double worst = 0.0;
      for (uint32_t s : subsets) worst = std::max(worst, subset_cost[s]);
      best = std::min(best, worst);
      return;
    }
    for (uint32_t b = 0; b < std::min(opened + 1, shape.dp); ++b) {  // buckets are alike
      bucket_of[i] = b;
      assign(i + 1, std::max(opened, b + 1));
    }
  };
  assign(0, 0);
  return best;
}

}  // namespace

// The bound is a lower bound: on small random steps it never exceeds the
// exhaustive optimum over every placement into buckets, sequences and
// micro-batches within the limit. The bisection is given a far higher
// ceiling, so what it proves is tested, not capped.
TEST_CASE("bound: never above the exhaustive optimum on small random steps", "[bound]") {
  std::mt19937_64 rng(7);
  int tighter = 0, whole = 0, room = 0, room_at_optimum = 0, rounds = 0;
  for (int round = 0; round < msd::test::rounds(1500); ++round) {
    const uint32_t seq_len = std::uniform_int_distribution<uint32_t>(8, 64)(rng);
    msd::BoundShape shape;
    shape.seq_len = seq_len;
    shape.dp = std::uniform_int_distribution<uint32_t>(1, 3)(rng);
    shape.micro_batches = std::uniform_int_distribution<uint32_t>(1, 3)(rng);
    const size_t n = std::uniform_int_distribution<size_t>(2, 8)(rng);
    msd::CostModel cost;
    cost.a = std::uniform_real_distribution<double>(0.5, 3.0)(rng) * seq_len;  // linear against attention
    cost.vision_a = cost.a;
    cost.vision_scale = 0.5;
    std::vector<uint32_t> lengths(n);
    std::vector<double> costs(n);
    std::uniform_int_distribution<uint32_t> length(1, seq_len);
    uint64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      lengths[i] = round % 3 == 0 ? std::max(1u, length(rng) / 4) : length(rng);
      const uint32_t patches = i % 4 == 3 ? lengths[i] / 2 : 0;
      costs[i] = cost.document(lengths[i], patches);
      longest = std::max<uint64_t>(longest, lengths[i]);
    }
    // A limit from half a sequence to two; the bound holds for at least the
    // longest piece (a longer one is placed over the limit).
    shape.limit = std::max<uint64_t>(longest, std::uniform_int_distribution<uint64_t>(seq_len / 2, 2 * seq_len)(rng));
    const double optimum = exhaustive_optimum(lengths, costs, shape, cost);
    if (!std::isfinite(optimum)) continue;  // no plan within the limit: nothing to bound
    const msd::StepBound bound = msd::step_bound(lengths, costs, shape, cost, 10.0 * optimum);
    INFO("round " << round << ": dp " << shape.dp << " mb " << shape.micro_batches << " seq_len " << seq_len
                  << " limit " << shape.limit << " n " << n << ": bound " << bound.cost << " (classes "
                  << bound.class_cost << ", huge pieces whole " << bound.whole_cost << ", by room " << bound.room_cost
                  << "), optimum " << optimum);
    REQUIRE(bound.cost <= optimum * (1 + 1e-9));
    REQUIRE(bound.class_cost <= optimum * (1 + 1e-9));
    REQUIRE(bound.whole_cost <= optimum * (1 + 1e-9));
    REQUIRE(bound.room_cost <= optimum * (1 + 1e-9));
    ++rounds;
    if (bound.room_cost > 0.0) ++room, room_at_optimum += bound.room_cost >= optimum * (1 - 1e-3);
    if (bound.class_cost > 0.0) ++tighter;
    if (bound.whole_cost > 0.0) ++whole;
  }
  INFO("the sequence classes raised the bound on " << tighter << " of " << rounds << " steps, the huge pieces kept whole on "
                                                   << whole << ", filled by room on " << room << " (at the optimum on "
                                                   << room_at_optimum << ")");
  CHECK(rounds >= msd::test::rounds(1000));
  CHECK(tighter > 0);  // the class terms are exercised, not dead code
  CHECK(whole > 0);
  CHECK(room_at_optimum > 0);  // the room functions reach the optimum: 1% more would fail above
}

// At 512 DP ranks x 32k the sequence classes are what the bound rests on:
// most ranks must hold whole sequences that the mean over the fewest
// sequences spreads thinly. The planner's heaviest bucket never goes below
// the bound, and the plan sits within 2.5% of it (the old bound: 16%;
// before the full-sequence pieces were kept whole: 7%; before best fit
// under a target: 4%).
TEST_CASE("bound: the sequence classes tighten the 4096-GPU bound", "[bound]") {
  msd::SimulateOptions options;  // 4096 GPUs, tp 8: dp 512, 8 samples a rank, 32k
  const msd::CostModel cost = msd::CostModel::from(options.model);
  msd::PackOptions pack;
  pack.seq_len = options.seq_len;
  pack.dp = 512;
  pack.micro_batches = options.micro_batches;
  const double unit = cost.padding(pack.seq_len);
  for (uint64_t step = 0; step < 3; ++step) {
    const msd::PackedStep plan = msd::pack_step(msd::synthetic_step(options, cost, step), pack, cost);
    INFO("step " << step << ": max " << plan.stats.max_cost << ", bound " << plan.stats.bound_cost);
    CHECK(plan.stats.max_cost >= plan.stats.bound_cost * (1 - 1e-9));
    CHECK(plan.stats.max_over_bound <= 1.025);
    // The full-sequence pieces are kept whole: the bound is above what the
    // classes prove with every piece split (3.43-3.45 sequence-units).
    CHECK(plan.stats.bound_cost / unit >= 3.49);
    if (step == 0) CHECK(plan.stats.max_cost / unit <= 3.55);  // best fit: 3.546; the sequence placement 3.560; before 3.624
  }
}

// With the cost calibrated to the device model (a = 62,820), the steps on
// which every rank with a full 32k piece also held a 13-19k piece (1.7-1.85%
// above the bound before best fit under a target) are within 1% of it.
TEST_CASE("bound: best fit under a target brings the hard 4096-GPU steps within 1%", "[bound]") {
  msd::SimulateOptions options;
  const msd::CostModel cost = msd::CostModel::from(options.model, 62820.0);
  msd::PackOptions pack;
  pack.seq_len = options.seq_len;
  pack.dp = 512;
  pack.micro_batches = options.micro_batches;
  for (uint64_t step : {1, 2, 12}) {
    const msd::PackedStep plan = msd::pack_step(msd::synthetic_step(options, cost, step), pack, cost);
    INFO("step " << step << ": max " << plan.stats.max_cost << ", bound " << plan.stats.bound_cost);
    CHECK(plan.stats.max_cost >= plan.stats.bound_cost * (1 - 1e-9));
    CHECK(plan.stats.max_over_bound <= 1.01);
  }
}

// The planner places without the bound (PackOptions::lower_bound = false):
// the same buckets, the budget flags and the piece bounds kept, the padding-
// aware terms left out.
TEST_CASE("bound: leaving it out changes no plan", "[bound]") {
  msd::SimulateOptions options;
  const msd::CostModel cost = msd::CostModel::from(options.model);
  msd::PackOptions pack;
  pack.seq_len = options.seq_len;
  pack.dp = 64;
  pack.micro_batches = options.micro_batches;
  msd::PackOptions without = pack;
  without.lower_bound = false;
  for (uint64_t step = 0; step < 3; ++step) {
    const std::vector<msd::PlanDoc> docs = msd::synthetic_step(options, cost, step);
    const msd::PackedStep full = msd::pack_step(docs, pack, cost);
    const msd::PackedStep bare = msd::pack_step(docs, without, cost);
    REQUIRE(full.buckets.size() == bare.buckets.size());
    for (size_t b = 0; b < full.buckets.size(); ++b) {
      CHECK(full.buckets[b].cost == bare.buckets[b].cost);
      CHECK(full.buckets[b].positions == bare.buckets[b].positions);
    }
    CHECK(full.stats.max_cost == bare.stats.max_cost);
    CHECK(full.stats.sequences == bare.stats.sequences);
    CHECK(full.stats.budget_binding == bare.stats.budget_binding);
    CHECK(full.stats.positions_budget == bare.stats.positions_budget);
    CHECK(bare.stats.min_sequences == 0);
    CHECK(bare.stats.bound_cost <= full.stats.bound_cost);
    CHECK(full.stats.min_sequences > 0);
  }
}
