#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "common/error.h"
#include "plan/step/mix.h"
#include "unit/rounds.h"

using msd::Mixer;
using msd::Schedule;
using msd::ScheduleKind;
using msd::WeightPoint;
using Curves = std::vector<std::vector<WeightPoint>>;

namespace {

// A random curve: a handful of points with increasing steps and weights that
// are often exactly zero, sometimes tiny, sometimes large.
std::vector<WeightPoint> random_curve(std::mt19937_64& rng, uint64_t steps) {
  std::uniform_int_distribution<int> points(1, 6);
  std::uniform_int_distribution<uint64_t> at(0, steps);
  std::uniform_int_distribution<int> shape(0, 9);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::set<uint64_t> chosen;
  const int count = points(rng);
  while (static_cast<int>(chosen.size()) < count) chosen.insert(at(rng));
  std::vector<WeightPoint> curve;
  for (uint64_t step : chosen) {
    const int kind = shape(rng);
    const double weight = kind < 3 ? 0.0 : kind < 5 ? unit(rng) * 1e-3 : kind < 9 ? unit(rng) : unit(rng) * 100;
    curve.push_back({step, weight});
  }
  return curve;
}

// A random schedule that Schedule accepts (weights never all zero).
Schedule random_schedule(std::mt19937_64& rng, uint64_t steps) {
  std::uniform_int_distribution<int> sources(1, 8);
  std::uniform_int_distribution<int> kinds(0, 2);
  const ScheduleKind kind = static_cast<ScheduleKind>(kinds(rng));
  while (true) {
    Curves curves(sources(rng));
    for (auto& curve : curves) curve = random_curve(rng, steps);
    try {
      return Schedule(kind, curves);
    } catch (const msd::ConfigError&) {
      // all zero at some step: draw again
    }
  }
}

}  // namespace

TEST_CASE("mix: schedule kinds evaluate as documented", "[mix]") {
  const Curves curves = {{{10, 1.0}, {20, 3.0}}, {{0, 1.0}}};
  const Schedule constant(ScheduleKind::constant, curves);
  CHECK(constant.weights(0) == std::vector<double>{0.5, 0.5});
  CHECK(constant.weights(100) == std::vector<double>{0.5, 0.5});
  CHECK(constant.next_change(0) == Schedule::kNever);

  const Schedule piecewise(ScheduleKind::piecewise, curves);
  CHECK(piecewise.weights(0)[0] == 0.5);    // before the first point: its weight
  CHECK(piecewise.weights(19)[0] == 0.5);
  CHECK(piecewise.weights(20)[0] == 0.75);  // 3 / (3 + 1)
  CHECK(piecewise.weights(1000)[0] == 0.75);
  CHECK(piecewise.next_change(0) == 10);
  CHECK(piecewise.next_change(10) == 20);
  CHECK(piecewise.next_change(20) == Schedule::kNever);

  const Schedule linear(ScheduleKind::linear, curves);
  CHECK(linear.weights(5)[0] == 0.5);
  CHECK(linear.weights(15)[0] == Approx(2.0 / 3.0));  // raw 2 against 1
  CHECK(linear.weights(20)[0] == 0.75);
  CHECK(linear.weights(99)[0] == 0.75);
  CHECK(linear.next_change(3) == 10);
  CHECK(linear.next_change(12) == 13);
  CHECK(linear.next_change(20) == Schedule::kNever);
  for (uint64_t step : {0, 5, 10, 15, 25}) {
    const auto w = linear.weights(step);
    CHECK(std::accumulate(w.begin(), w.end(), 0.0) == Approx(1.0));
  }
}

TEST_CASE("mix: next_change never skips a change", "[mix]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < msd::test::rounds(200); ++round) {
    const Schedule schedule = random_schedule(rng, 300);
    for (uint64_t step = 0; step < 320;) {
      const uint64_t next = std::min<uint64_t>(schedule.next_change(step), 320);
      REQUIRE(next > step);
      for (uint64_t u = step; u < next; ++u) REQUIRE(schedule.weights(u) == schedule.weights(step));
      step = next;
    }
  }
}

TEST_CASE("mix: schedules that cannot mix are rejected", "[mix]") {
  CHECK_THROWS_AS(Schedule(ScheduleKind::constant, {}), msd::ConfigError);
  CHECK_THROWS_AS(Schedule(ScheduleKind::constant, {{}}), msd::ConfigError);
  CHECK_THROWS_AS(Schedule(ScheduleKind::constant, {{{0, -1.0}}}), msd::ConfigError);
  CHECK_THROWS_AS(Schedule(ScheduleKind::constant, {{{0, NAN}}}), msd::ConfigError);
  CHECK_THROWS_AS(Schedule(ScheduleKind::piecewise, {{{5, 1.0}, {5, 1.0}}}), msd::ConfigError);
  CHECK_THROWS_AS(Schedule(ScheduleKind::constant, {{{0, 0.0}}, {{0, 0.0}}}), msd::ConfigError);
  const Curves gap = {{{0, 1.0}, {100, 0.0}}, {{0, 0.0}, {100, 0.0}, {200, 1.0}}};
  CHECK_NOTHROW(Schedule(ScheduleKind::constant, gap));
  CHECK_THROWS_WITH(Schedule(ScheduleKind::piecewise, gap), Catch::Contains("zero at step 100"));
  CHECK_THROWS_WITH(Schedule(ScheduleKind::linear, gap), Catch::Contains("zero at step 100"));
  CHECK_THROWS_AS(Mixer(Schedule(ScheduleKind::constant, {{{0, 1.0}}}), 0), msd::ConfigError);
}

TEST_CASE("mix: quotas sum to the batch and totals track the targets", "[mix]") {
  std::mt19937_64 rng(20250101);
  std::uniform_int_distribution<uint32_t> batches(1, 4096);
  for (int round = 0; round < msd::test::rounds(300); ++round) {
    const uint64_t steps = 2000;
    Schedule schedule = random_schedule(rng, steps);
    const uint32_t batch = round % 3 == 0 ? std::uniform_int_distribution<uint32_t>(1, 8)(rng) : batches(rng);
    const size_t n = schedule.sources();
    Mixer mixer(schedule, batch);
    std::vector<long double> reference(n, 0);  // T_s(t), summed independently
    for (uint64_t t = 0; t < steps; ++t) {
      const auto weights = schedule.weights(t);
      const auto quotas = mixer.next();
      REQUIRE(quotas.size() == n);
      REQUIRE(std::accumulate(quotas.begin(), quotas.end(), uint64_t{0}) == batch);
      for (size_t s = 0; s < n; ++s) {
        reference[s] += static_cast<long double>(batch) * weights[s];
        const double behind = static_cast<double>(reference[s] - mixer.realized()[s]);
        // Fixed point: within one 2^-32 unit per step of the real-valued sum.
        REQUIRE(std::abs(mixer.target()[s] - static_cast<double>(reference[s])) <= (t + 1) * 0x1p-32 + 1e-9);
        // Never a whole sample ahead; behind by less than one, or by less than
        // the surplus others hold (sources() - 1 at most).
        REQUIRE(behind > -1.0);
        REQUIRE(behind < std::max<double>(1.0, static_cast<double>(n) - 1));
        if (weights[s] == 0) REQUIRE(quotas[s] <= 1);  // only to catch up a fraction
      }
    }
  }
}

TEST_CASE("mix: per-step quotas follow constant weights", "[mix]") {
  std::mt19937_64 rng(99);
  for (int round = 0; round < msd::test::rounds(300); ++round) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 8)(rng);
    const uint32_t batch = std::uniform_int_distribution<uint32_t>(1, 4096)(rng);
    Curves curves(n);
    for (auto& curve : curves) curve = {{0, std::uniform_real_distribution<double>(0.001, 1.0)(rng)}};
    const Schedule schedule(ScheduleKind::constant, curves);
    const auto weights = schedule.weights(0);
    Mixer mixer(schedule, batch);
    for (int t = 0; t < 1000; ++t) {
      const auto quotas = mixer.next();
      for (size_t s = 0; s < n; ++s) {
        REQUIRE(std::abs(quotas[s] - batch * weights[s]) < 1.0);
      }
    }
  }
}

TEST_CASE("mix: within one sample of every target when no source can run ahead", "[mix]") {
  // With batch * w_s >= 1 for every source at every step, no source is ever
  // ahead by more than its increment, nothing is clamped, and both errors stay
  // below one sample.
  std::mt19937_64 rng(5);
  for (int round = 0; round < msd::test::rounds(100); ++round) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 8)(rng);
    const auto kind = static_cast<ScheduleKind>(round % 3);
    Curves curves(n);
    for (auto& curve : curves) {
      uint64_t step = std::uniform_int_distribution<uint64_t>(0, 50)(rng);
      for (int i = 0; i < 5; ++i, step += std::uniform_int_distribution<uint64_t>(1, 400)(rng))
        curve.push_back({step, std::uniform_real_distribution<double>(0.2, 1.0)(rng)});
    }
    const Schedule schedule(kind, curves);
    const uint32_t batch = std::uniform_int_distribution<uint32_t>(40, 4096)(rng);  // 40 * 0.2 / 8 >= 1
    Mixer mixer(schedule, batch);
    for (int t = 0; t < 2500; ++t) {
      mixer.next();
      for (size_t s = 0; s < n; ++s) REQUIRE(std::abs(mixer.target()[s] - mixer.realized()[s]) < 1.0);
    }
  }
}

TEST_CASE("mix: sources that drop out while ahead leave the others behind by their surplus", "[mix]") {
  // Ten equal sources, then five of them drop to zero. Those that were ahead
  // cannot return samples, so the others fall behind by what they held: the
  // bound is then below sources() - 1, not below 1.
  double worst_behind = 0;
  for (uint32_t batch = 1; batch <= 9; ++batch) {
    for (uint64_t drop = 1; drop <= 10; ++drop) {
      Curves curves;
      for (int s = 0; s < 10; ++s)
        curves.push_back(s % 2 == 0 ? std::vector<WeightPoint>{{0, 1.0}, {drop, 0.0}} : std::vector<WeightPoint>{{0, 1.0}});
      Mixer mixer(Schedule(ScheduleKind::piecewise, curves), batch);
      for (int t = 0; t < 40; ++t) {
        mixer.next();
        for (size_t s = 0; s < 10; ++s) {
          const double behind = mixer.target()[s] - mixer.realized()[s];
          REQUIRE(behind > -1.0);
          REQUIRE(behind < 9.0);
          worst_behind = std::max(worst_behind, behind);
        }
      }
    }
  }
  CHECK(worst_behind > 1.0);  // the corner case is real, not hypothetical
}

TEST_CASE("mix: targets do not drift over a million steps", "[mix]") {
  const Schedule schedule(ScheduleKind::constant, {{{0, 1.0}}, {{0, 2.0}}, {{0, 4.0}}});
  const uint32_t batch = 4093;
  Mixer mixer(schedule, batch);
  const uint64_t steps = 1000000;
  for (uint64_t t = 0; t < steps; ++t) mixer.next();
  for (size_t s = 0; s < 3; ++s) {
    const long double exact = static_cast<long double>(steps) * batch * (1 << s) / 7.0L;
    CHECK(std::abs(static_cast<long double>(mixer.target()[s]) - exact) < 1e-3L);
    CHECK(std::abs(exact - static_cast<long double>(mixer.realized()[s])) < 1.0L);
  }
}

TEST_CASE("mix: a restored mixer continues identically", "[mix]") {
  std::mt19937_64 rng(31);
  for (int round = 0; round < msd::test::rounds(40); ++round) {
    const Schedule schedule = random_schedule(rng, 1500);
    const uint32_t batch = std::uniform_int_distribution<uint32_t>(1, 512)(rng);
    Mixer original(schedule, batch);
    std::vector<std::vector<uint32_t>> quotas;
    std::vector<std::vector<uint64_t>> realized{original.realized()};
    std::vector<std::vector<double>> targets{original.target()};
    for (int t = 0; t < 2000; ++t) {
      quotas.push_back(original.next());
      realized.push_back(original.realized());
      targets.push_back(original.target());
    }
    for (uint64_t at : {uint64_t{0}, uint64_t{1}, uint64_t{777}, uint64_t{1499}, uint64_t{1500}, uint64_t{1990}}) {
      Mixer restored(schedule, batch);
      restored.restore(at, realized[at]);
      REQUIRE(restored.step() == at);
      REQUIRE(restored.target() == targets[at]);
      for (uint64_t t = at; t < 2000; ++t) REQUIRE(restored.next() == quotas[t]);
    }
  }
}

TEST_CASE("mix: restore is cheap over constant stretches and rejects foreign states", "[mix]") {
  const Schedule schedule(ScheduleKind::piecewise, {{{0, 1.0}, {1000, 3.0}}, {{0, 1.0}}});
  Mixer mixer(schedule, 8);
  const uint64_t step = 1000000000000;  // a trillion steps: two constant stretches
  const uint64_t first = (1000 * 8 / 2) + (step - 1000) * 8 * 3 / 4;
  mixer.restore(step, {first, step * 8 - first});
  CHECK(mixer.target()[0] == Approx(static_cast<double>(first)));
  const auto quotas = mixer.next();
  CHECK(quotas == std::vector<uint32_t>{6, 2});

  CHECK_THROWS_AS(mixer.restore(10, {80}), msd::Error);              // wrong number of sources
  CHECK_THROWS_AS(mixer.restore(10, {40, 41}), msd::Error);          // wrong sum
  CHECK_THROWS_AS(mixer.restore(10, {42, 38}), msd::Error);          // source 0 two samples ahead
  CHECK_NOTHROW(mixer.restore(10, {40, 40}));
}

TEST_CASE("mix: a mixer restarted from its realized totals under new weights starves and floods none", "[mix]") {
  // 300 steps at 0.7 / 0.3, then the weights change to 0.2 / 0.8 at step 300
  // with a source added at weight 0.5 (a resume with a changed mixture).
  const uint32_t batch = 16;
  Mixer before(Schedule(ScheduleKind::constant, {{{0, 0.7}}, {{0, 0.3}}}), batch);
  for (int t = 0; t < 300; ++t) before.next();
  const std::vector<uint64_t> origin = {before.realized()[0], before.realized()[1], 0};
  const Schedule after_schedule(ScheduleKind::constant, {{{0, 0.2}}, {{0, 0.8}}, {{0, 0.5}}});
  Mixer after(after_schedule, batch);
  after.restore(300, origin, 300, origin);
  std::vector<uint64_t> gained(3, 0);
  for (int t = 0; t < 150; ++t) {
    const std::vector<uint32_t> quota = after.next();
    // From the first step on, each quota is the new weight's share, not a catch-up.
    REQUIRE(quota[0] <= 3);
    REQUIRE(quota[1] >= 7);
    REQUIRE(quota[2] >= 4);
    for (size_t s = 0; s < 3; ++s) gained[s] += quota[s];
  }
  // Over the new stretch the realized mix is the new weights', within a sample.
  const std::vector<double> weights = {0.2 / 1.5, 0.8 / 1.5, 0.5 / 1.5};
  for (size_t s = 0; s < 3; ++s) CHECK(std::abs(static_cast<double>(gained[s]) - 150.0 * batch * weights[s]) < 1.0);
  // A later resume restores the same state: the origin is part of it.
  Mixer again(after_schedule, batch);
  again.restore(450, after.realized(), 300, origin);
  CHECK(again.target() == after.target());
  Mixer copy = after;
  for (int t = 0; t < 50; ++t) REQUIRE(again.next() == copy.next());
  CHECK_THROWS_AS(again.restore(450, after.realized(), 0, {}), msd::Error);        // not a state from step 0
  CHECK_THROWS_AS(again.restore(450, after.realized(), 460, origin), msd::Error);  // an origin after the step
}
