#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"
#include "plan/step/balance.h"
#include "plan/cluster/simulate.h"
#include "unit/rounds.h"

using msd::BalanceMethod;

namespace {

std::vector<double> loads(const std::vector<double>& weights, const std::vector<uint32_t>& bin_of, uint32_t bins) {
  std::vector<double> load(bins, 0.0);
  REQUIRE(bin_of.size() == weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    REQUIRE(bin_of[i] < bins);
    load[bin_of[i]] += weights[i];
  }
  return load;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// Pareto weights (alpha 1.5), heaviest first: a few items dominate.
std::vector<double> heavy_tailed(std::mt19937_64& rng, size_t count) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> weights(count);
  for (double& w : weights) w = 1.0 / std::pow(1.0 - unit(rng), 1.0 / 1.5);
  std::sort(weights.begin(), weights.end(), std::greater<>());
  return weights;
}

}  // namespace

TEST_CASE("balance: method names", "[balance]") {
  for (BalanceMethod m : {BalanceMethod::tokens, BalanceMethod::greedy, BalanceMethod::karmarkar_karp})
    CHECK(msd::parse_balance_method(msd::option_name(m)) == m);
  CHECK(msd::parse_balance_method("karmarkar-karp") == BalanceMethod::karmarkar_karp);
  CHECK_THROWS_AS(msd::parse_balance_method("random"), msd::ConfigError);
}

TEST_CASE("balance: small cases by hand", "[balance]") {
  const std::vector<double> weights = {8, 7, 6, 5, 4};
  // LPT alone ends at 17 (8|7, 6->7, 5->8, 4->8) and differencing at 16
  // ((8,7)->1, (6,5)->1, 4 against both); the swaps out of the heaviest bin
  // reach the optimum 15 | 15 from either.
  const auto greedy = msd::balance(weights, 2, BalanceMethod::greedy);
  CHECK(greedy == std::vector<uint32_t>{1, 1, 0, 0, 0});
  CHECK(max_of(loads(weights, greedy, 2)) == 15);
  CHECK(max_of(loads(weights, msd::balance(weights, 2, BalanceMethod::karmarkar_karp), 2)) == 15);
  // Three bins, the textbook LPT worst case (11 against the optimum 9;
  // differencing alone reaches 10): both end at 9.
  const std::vector<double> hard = {5, 5, 4, 4, 3, 3, 3};
  CHECK(max_of(loads(hard, msd::balance(hard, 3, BalanceMethod::greedy), 3)) == 9);
  CHECK(max_of(loads(hard, msd::balance(hard, 3, BalanceMethod::karmarkar_karp), 3)) == 9);
  // The position split is plain LPT, without the swaps.
  CHECK(max_of(loads(weights, msd::balance(weights, 2, BalanceMethod::tokens), 2)) == 17);
  // Fewer items than bins: one item per bin, the rest empty.
  const std::vector<double> few = {3, 2};
  for (BalanceMethod m : {BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
    const auto bins = msd::balance(few, 4, m);
    CHECK(bins[0] != bins[1]);
    CHECK(msd::balance({}, 4, m).empty());
  }
}

TEST_CASE("balance: random heavy-tailed weights", "[balance]") {
  std::mt19937_64 rng(21);
  for (int round = 0; round < msd::test::rounds(200); ++round) {
    const uint32_t bins = std::uniform_int_distribution<uint32_t>(1, 300)(rng);
    const size_t count = std::uniform_int_distribution<size_t>(0, 3000)(rng);
    const std::vector<double> weights = heavy_tailed(rng, count);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    const double mean = total / bins;
    const double largest = weights.empty() ? 0.0 : weights.front();
    for (BalanceMethod m : {BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
      const auto bin_of = msd::balance(weights, bins, m);
      const auto load = loads(weights, bin_of, bins);
      REQUIRE(std::accumulate(load.begin(), load.end(), 0.0) == Approx(total));
      REQUIRE(bin_of == msd::balance(weights, bins, m));  // deterministic
      // Both are within one item of the mean: LPT by construction; the
      // differencing method meets it on these inputs (asserted, not assumed).
      REQUIRE(max_of(load) <= mean + largest + 1e-9 * total);
      REQUIRE(max_of(load) >= std::max(mean, largest) - 1e-9 * total);
    }
  }
}

TEST_CASE("balance: differencing is never far behind LPT and usually ahead", "[balance]") {
  std::mt19937_64 rng(5);
  int kk_better = 0, greedy_better = 0;
  double worst_ratio = 0.0;
  for (int round = 0; round < msd::test::rounds(200); ++round) {
    const uint32_t bins = std::uniform_int_distribution<uint32_t>(2, 64)(rng);
    const size_t count = bins * std::uniform_int_distribution<size_t>(2, 8)(rng);
    std::vector<double> weights(count);
    std::uniform_real_distribution<double> unit(1.0, 100.0);
    for (double& w : weights) w = std::floor(unit(rng));
    std::sort(weights.begin(), weights.end(), std::greater<>());
    const double g = max_of(loads(weights, msd::balance(weights, bins, BalanceMethod::greedy), bins));
    const double k = max_of(loads(weights, msd::balance(weights, bins, BalanceMethod::karmarkar_karp), bins));
    kk_better += k < g;
    greedy_better += g < k;
    worst_ratio = std::max(worst_ratio, k / g);
  }
  CHECK(kk_better > greedy_better);
  CHECK(worst_ratio <= 1.05);
}

TEST_CASE("balance: 100k items into 4096 bins", "[balance]") {
  std::mt19937_64 rng(9);
  const std::vector<double> weights = heavy_tailed(rng, 100000);
  for (BalanceMethod m : {BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
    const auto load = loads(weights, msd::balance(weights, 4096, m), 4096);
    const double mean = std::accumulate(load.begin(), load.end(), 0.0) / 4096;
    INFO(msd::option_name(m) << " max/mean " << max_of(load) / mean);
    CHECK(max_of(load) <= std::max(1.02 * mean, weights.front()));
  }
}

// The target workload: long-context steps mixing short web text, long
// documents split into seq_len pieces and image-text samples, in the
// planner's padding-aware cost (a sequence's padding costs the linear term).
// The cost methods are never heavier than the position split (the planner
// keeps the lightest of its placements, one of which splits by positions),
// reach the padding-aware bound when pieces are many per bucket, and stay
// within a bounded factor of it when they are coarse (the bound is not tight
// there: docs/cost-and-balance.md).
TEST_CASE("balance: long-context mix stays near the padding-aware bound", "[balance]") {
  struct Shape {
    uint32_t dp, samples_per_rank, seq_len;
    double mean_over_bound;  // the most max/bound may average over the steps
  };
  // Means measured with the sequence-class bound and the refiner: 1.000,
  // 1.010, 1.020, 1.014-1.019, 1.013, 1.009 (before them 1.05-1.12).
  for (const Shape shape : {Shape{8, 64, 32768, 1.01}, Shape{8, 8, 16384, 1.03}, Shape{16, 16, 32768, 1.04},
                            Shape{32, 16, 16384, 1.04}, Shape{32, 8, 32768, 1.03}, Shape{16, 4, 16384, 1.03}}) {
    msd::SimulateOptions options;
    options.dp = shape.dp;
    options.samples_per_gpu = shape.samples_per_rank;
    options.seq_len = shape.seq_len;
    const msd::CostModel cost = msd::CostModel::from(options.model);
    msd::PackOptions pack;
    pack.seq_len = shape.seq_len;
    pack.dp = shape.dp;
    pack.micro_batches = 4;
    for (BalanceMethod m : {BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
      double sum = 0.0;
      for (uint64_t step = 0; step < 10; ++step) {
        const auto docs = msd::synthetic_step(options, cost, step);
        pack.balance = BalanceMethod::tokens;
        const msd::PlanStats by_positions = msd::pack_step(docs, pack, cost).stats;
        pack.balance = m;
        const msd::PlanStats stats = msd::pack_step(docs, pack, cost).stats;
        INFO(msd::option_name(m) << " dp " << shape.dp << " x " << shape.samples_per_rank << " seq_len "
                                         << shape.seq_len << " step " << step << ": max/bound " << stats.max_over_bound
                                         << ", positions split " << by_positions.max_over_bound);
        // Up to the budget's repair, which may move a small piece out of the
        // position split's contiguous runs of sequences but not out of ours.
        CHECK(stats.max_cost <= by_positions.max_cost * (1 + 1e-4));
        CHECK(stats.max_over_bound >= 1.0 - 1e-9);
        CHECK(stats.max_over_bound <= 1.15);
        sum += stats.max_over_bound;
      }
      INFO(msd::option_name(m) << " dp " << shape.dp << " x " << shape.samples_per_rank << " seq_len "
                                       << shape.seq_len << ": mean max/bound " << sum / 10);
      CHECK(sum / 10 <= shape.mean_over_bound);
    }
  }
}

// balance_within: the capacity holds whenever the items allow it (here by
// construction: room for the even share plus the largest item means the bin
// holding the least always has room), the result is the plain method's when
// the capacity never binds, and it is a function of the inputs alone.
TEST_CASE("balance_within: no bin over the capacity, plain balance when it never binds", "[balance]") {
  std::mt19937_64 rng(23);
  for (int round = 0; round < msd::test::rounds(60); ++round) {
    const size_t count = std::uniform_int_distribution<size_t>(0, 400)(rng);
    const uint32_t bins = std::uniform_int_distribution<uint32_t>(1, 40)(rng);
    const std::vector<double> weights = heavy_tailed(rng, count);
    std::vector<uint64_t> sizes(count);
    // Sizes unrelated to weights: a light item may be long (short documents of image patches).
    for (uint64_t& size : sizes) size = std::uniform_int_distribution<uint64_t>(1, 1000)(rng);
    const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
    const uint64_t largest = count == 0 ? 0 : *std::max_element(sizes.begin(), sizes.end());
    const uint64_t capacity = (total + bins - 1) / bins + largest;
    for (BalanceMethod m : {BalanceMethod::tokens, BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
      INFO(msd::option_name(m) << " round " << round << ": " << count << " items into " << bins);
      const auto bin_of = msd::balance_within(weights, sizes, capacity, bins, m);
      std::vector<uint64_t> held(bins, 0);
      for (size_t i = 0; i < count; ++i) held[bin_of.at(i)] += sizes[i];
      for (uint64_t h : held) REQUIRE(h <= capacity);
      REQUIRE(msd::balance_within(weights, sizes, capacity, bins, m) == bin_of);
      // Never binding: LPT and its swaps exactly (karmarkar_karp when its own partition fits).
      const auto free = msd::balance_within(weights, sizes, UINT64_MAX, bins, m);
      REQUIRE(free == msd::balance(weights, bins, m));
    }
  }
}

TEST_CASE("balance_within: an item that fits nowhere goes to the bin with the most room", "[balance]") {
  // Capacity 10: 6 and 6 take a bin each; 5 fits in neither (11), so it goes
  // to the bin with the most room (a tie: the lower index).
  const std::vector<double> weights = {3, 2, 1};
  const std::vector<uint64_t> sizes = {6, 6, 5};
  const auto bin_of = msd::balance_within(weights, sizes, 10, 2, BalanceMethod::greedy);
  CHECK(bin_of == std::vector<uint32_t>{0, 1, 0});
  // With room for it, the lightest bin with room takes it: bin 1 (weight 2).
  const auto roomy = msd::balance_within(weights, sizes, 11, 2, BalanceMethod::greedy);
  CHECK(roomy[2] == 1);
}
