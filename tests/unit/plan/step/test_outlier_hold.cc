// The outlier hold: its bound, exactly-once delivery across step edges and
// the last step, order independence, and a restored state continuing as the
// uninterrupted hold would.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "plan/step/modes.h"
#include "plan/step/outlier_hold.h"
#include "unit/rounds.h"

using msd::HeldDoc;
using msd::HoldOptions;
using msd::OutlierHold;
using msd::PlanDoc;

namespace {

// steps x per_step documents with unique ids; about one in `long_every` over
// the threshold of 1000 positions.
std::vector<std::vector<PlanDoc>> random_run(std::mt19937_64& rng, size_t steps, size_t per_step, int long_every) {
  std::vector<std::vector<PlanDoc>> run(steps);
  uint32_t id = 0;
  for (auto& step : run)
    for (size_t i = 0; i < per_step; ++i) {
      const bool is_long = static_cast<int>(rng() % long_every) == 0;
      const uint32_t positions = is_long ? 1001 + rng() % 5000 : 1 + rng() % 1000;
      step.push_back({id++, positions, 0, 0.0});
    }
  return run;
}

std::vector<HeldDoc> arrivals_of(const std::vector<PlanDoc>& docs, uint64_t step) {
  std::vector<HeldDoc> out;
  for (const PlanDoc& d : docs) out.push_back({0, d.id, d.positions, d.fixed, step});
  return out;
}

}  // namespace

TEST_CASE("the hold delivers every document once, within K steps, the last step emptying it") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < msd::test::rounds(30); ++round) {
    const size_t steps = 1 + rng() % 40;
    const auto run = random_run(rng, steps, 1 + rng() % 20, 1 + static_cast<int>(rng() % 8));
    HoldOptions options;
    options.above = 1000;
    options.max_steps = static_cast<uint32_t>(rng() % 10);
    options.release = 1 + static_cast<uint32_t>(rng() % 16);
    msd::HoldStats stats;
    const auto delivered = msd::hold_run(run, options, &stats);
    REQUIRE(delivered.size() == steps);
    std::map<uint32_t, uint64_t> step_of;
    for (uint64_t t = 0; t < steps; ++t)
      for (const PlanDoc& doc : delivered[t]) {
        REQUIRE(step_of.emplace(doc.id, t).second);  // once
        if (doc.positions <= options.above) CHECK(t == doc.id / run[0].size());  // short ones never wait
      }
    uint64_t held = 0;
    for (uint64_t t = 0; t < steps; ++t)
      for (const PlanDoc& doc : run[t]) {
        REQUIRE(step_of.count(doc.id) == 1);
        CHECK(step_of[doc.id] >= t);
        CHECK(step_of[doc.id] - t <= options.max_steps);
        held += step_of[doc.id] > t;
      }
    CHECK(stats.held == held);
    CHECK(stats.max_delay <= options.max_steps);
  }
}

TEST_CASE("held documents are released together, release at a time, oldest first") {
  HoldOptions options;
  options.above = 10;
  options.max_steps = 5;
  options.release = 3;
  OutlierHold hold(options);
  auto decide = [&](uint64_t step, std::vector<uint32_t> lengths) {
    std::vector<HeldDoc> arrivals;
    for (uint32_t i = 0; i < lengths.size(); ++i) arrivals.push_back({1, step * 100 + i, lengths[i], 0, 0});
    return hold.step(step, arrivals);
  };
  auto d0 = decide(0, {50, 5, 60});
  CHECK(d0.held == std::vector<bool>{true, false, true});
  CHECK(d0.released.empty());
  auto d1 = decide(1, {70, 80});  // 4 wait: the oldest 3 go, the newest of them at once
  CHECK(d1.held == std::vector<bool>{false, true});
  REQUIRE(d1.released.size() == 2);
  CHECK(d1.released[0].cursor == 0);
  CHECK(d1.released[1].cursor == 2);
  REQUIRE(hold.held().size() == 1);
  CHECK(hold.held()[0].cursor == 101);
  auto d6 = decide(6, {1});  // waited 5 steps: released alone
  REQUIRE(d6.released.size() == 1);
  CHECK(d6.released[0].cursor == 101);
  CHECK(hold.held().empty());
}

TEST_CASE("the hold's decision does not depend on the arrivals' order") {
  std::mt19937_64 rng(9);
  HoldOptions options;
  options.above = 1000;
  options.release = 4;
  OutlierHold a(options), b(options);
  for (uint64_t t = 0; t < 30; ++t) {
    const auto docs = random_run(rng, 1, 12, 3)[0];
    std::vector<HeldDoc> arrivals = arrivals_of(docs, t);
    for (auto& x : arrivals) x.cursor += t * 1000;
    std::vector<HeldDoc> shuffled = arrivals;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const auto da = a.step(t, arrivals);
    const auto db = b.step(t, shuffled);
    CHECK(da.released == db.released);
    for (size_t i = 0; i < arrivals.size(); ++i) {
      const size_t j = static_cast<size_t>(std::find(shuffled.begin(), shuffled.end(), arrivals[i]) - shuffled.begin());
      CHECK(da.held[i] == db.held[j]);
    }
    CHECK(a.held() == b.held());
  }
}

TEST_CASE("a hold restored from its state continues as the uninterrupted one") {
  std::mt19937_64 rng(13);
  HoldOptions options;
  options.above = 1000;
  options.max_steps = 4;
  options.release = 5;
  options.last_step = 24;
  const auto run = random_run(rng, 25, 10, 3);
  OutlierHold whole(options);
  std::vector<OutlierHold::Decision> expected;
  for (uint64_t t = 0; t < run.size(); ++t) expected.push_back(whole.step(t, arrivals_of(run[t], t)));
  CHECK(whole.held().empty());
  for (uint64_t cut : {1u, 7u, 13u, 24u}) {
    OutlierHold first(options);
    for (uint64_t t = 0; t < cut; ++t) first.step(t, arrivals_of(run[t], t));
    OutlierHold resumed(options);
    resumed.restore(first.held());
    for (uint64_t t = cut; t < run.size(); ++t) {
      const auto d = resumed.step(t, arrivals_of(run[t], t));
      CHECK(d.held == expected[t].held);
      CHECK(d.released == expected[t].released);
    }
  }
}

TEST_CASE("place_run with a hold places every document of the run once") {
  std::mt19937_64 rng(21);
  msd::PackOptions pack;
  pack.seq_len = 2048;
  pack.dp = 4;
  pack.micro_batches = 2;
  pack.varlen = true;
  pack.variable_micro_batches = true;
  pack.cuts = msd::Cuts::balance;
  pack.hold.above = 1000;
  pack.hold.release = 4;
  const HoldOptions& hold = pack.hold;
  // Cut at Megatron's last whole global batch, as every comparison's run is
  // (megatron, which the hold leaves alone, drops what does not fill one).
  const msd::ComparedRun compared = msd::whole_global_batches(random_run(rng, 12, 16, 4), pack, 1, "run");
  const auto& run = compared.steps;
  uint64_t positions = 0;
  for (const auto& step : run)
    for (const auto& doc : step) positions += doc.positions;
  for (msd::TrainingMode mode : {msd::TrainingMode::msd_greedy, msd::TrainingMode::megatron}) {
    const auto placed = msd::place_run(mode, run, pack, msd::CostModel{}, compared.stream);
    uint64_t placed_positions = 0;
    for (const auto& step : placed)
      for (const auto& bucket : step) placed_positions += bucket.positions;
    CHECK(placed_positions == positions);
  }
  // The hold moved documents between steps: the step sizes differ from the stream's.
  const auto held = msd::hold_run(run, hold);
  bool moved = false;
  for (size_t t = 0; t < run.size(); ++t) moved |= held[t].size() != run[t].size();
  CHECK(moved);
}
