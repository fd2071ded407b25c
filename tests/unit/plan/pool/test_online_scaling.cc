#include <catch2/catch.hpp>

#include <numeric>

#include "plan/pool/online_scaling.h"

using msd::LoaderMove;
using msd::MoveReason;
using msd::ScalingInput;
using msd::ScalingLoader;
using msd::SourceProfile;

namespace {

// A measured profile whose seconds are all transform.
SourceProfile transform_profile(double seconds, double bytes, double open, uint64_t measured) {
  return SourceProfile{.transform_seconds_per_sample = seconds, .bytes_per_sample = bytes, .open_bytes = open,
                       .samples_measured = measured};
}

// Two sources: 0 cheap text, 1 expensive images (`image_cost` x text), and
// loaders serving `text` + `image` of them, one source each.
ScalingInput two_sources(int text, int image, double image_cost = 20.0) {
  ScalingInput in;
  for (int i = 0; i < text; ++i) in.loaders.push_back({{0}, true});
  for (int i = 0; i < image; ++i) in.loaders.push_back({{1}, true});
  in.profiles = {transform_profile(0.001, 4096, 1e6, 100), transform_profile(0.001 * image_cost, 65536, 1e6, 100)};
  in.weights_now = {0.9, 0.1};
  in.weights_ahead = {0.9, 0.1};
  in.backlog_steps = {0, 0};
  return in;
}

size_t serving(const ScalingInput& in, const std::vector<LoaderMove>& moves, uint32_t source) {
  std::vector<std::vector<uint32_t>> now;
  for (const auto& l : in.loaders) now.push_back(l.sources);
  for (const auto& m : moves) {
    auto& mine = now[m.loader];
    mine.erase(std::remove(mine.begin(), mine.end(), m.from), mine.end());
    mine.push_back(m.to);
  }
  size_t n = 0;
  for (const auto& mine : now) n += std::count(mine.begin(), mine.end(), source);
  return n;
}

}  // namespace

TEST_CASE("online scaling: balanced pool, steady mix: no move") {
  // 0.9 * 1 ms on 1 loader vs 0.1 * 20 ms on 2 loaders: 0.9 vs 1.0 ms.
  ScalingInput in = two_sources(1, 2);
  CHECK(msd::plan_moves(in).empty());
}

TEST_CASE("online scaling: proactive move before the image weight rises") {
  ScalingInput in = two_sources(3, 1, 5.0);  // 0.3 ms per text loader, 0.5 ms on the image loader
  CHECK(msd::plan_moves(in).empty());         // now: moving one would not gain 15%
  in.weights_ahead = {0.1, 0.9};              // the shift is within the lookahead
  const auto moves = msd::plan_moves(in);
  REQUIRE(!moves.empty());
  for (const auto& m : moves) {
    CHECK(m.from == 0);
    CHECK(m.to == 1);
    CHECK(m.why == MoveReason::proactive);
  }
  CHECK(serving(in, moves, 0) == 1);  // text keeps one loader
  CHECK(serving(in, moves, 1) == 3);
}

TEST_CASE("online scaling: a falling source keeps its loaders until it has fallen") {
  ScalingInput in = two_sources(2, 2, 1.0);  // equal costs, equal weights now
  in.weights_now = {0.5, 0.5};
  in.weights_ahead = {0.1, 0.9};  // source 1 rises, source 0 falls: max(now, ahead) = 0.5 vs 0.9
  const auto moves = msd::plan_moves(in);
  // 0.25 on each text loader, 0.45 on the image loaders; one move gives 0.5 / 1 vs 0.9 / 3: worse.
  CHECK(moves.empty());
  in.weights_now = {0.1, 0.9};  // now it has fallen
  const auto after = msd::plan_moves(in);
  REQUIRE(after.size() == 1);
  CHECK(after[0].from == 0);
  CHECK(after[0].to == 1);
}

TEST_CASE("online scaling: reactive move on a growing backlog") {
  // The profiles say the pool is balanced, yet the image loaders fall behind.
  ScalingInput in = two_sources(3, 1, 9.0);
  in.weights_now = in.weights_ahead = {0.5, 0.5};
  in.profiles[1].transform_seconds_per_sample = 0.0004;  // measured too low: 0.5*0.4 = 0.2 ms vs 0.5*1/3 per text loader
  CHECK(msd::plan_moves(in).empty());
  in.backlog_steps = {0.0, 4.0};
  const auto moves = msd::plan_moves(in);
  REQUIRE(!moves.empty());
  CHECK(moves[0].from == 0);
  CHECK(moves[0].to == 1);
  CHECK(moves[0].why == MoveReason::reactive);
  CHECK(serving(in, moves, 0) >= 1);
}

TEST_CASE("online scaling: no thrash") {
  ScalingInput in = two_sources(3, 1, 5.0);
  in.weights_ahead = {0.1, 0.9};
  SECTION("no move within the minimum interval") {
    in.steps_since_last_move = 2;
    CHECK(msd::plan_moves(in, {.min_interval_steps = 4}).empty());
    in.steps_since_last_move = 4;
    CHECK(!msd::plan_moves(in, {.min_interval_steps = 4}).empty());
  }
  SECTION("after the moves, the same input asks for none, nor for any back") {
    const auto moves = msd::plan_moves(in);
    REQUIRE(!moves.empty());
    for (const auto& m : moves) {
      auto& mine = in.loaders[m.loader].sources;
      mine = {m.to};
    }
    CHECK(msd::plan_moves(in).empty());
  }
  SECTION("two sources of near-equal demand never trade a loader") {
    ScalingInput even = two_sources(2, 1, 1.0);
    even.weights_now = even.weights_ahead = {0.6, 0.4};  // 0.3 per text loader vs 0.4: a move makes it 0.6
    CHECK(msd::plan_moves(even).empty());
    even.weights_now = even.weights_ahead = {0.4, 0.6};  // 0.2 vs 0.6: a move gives 0.4 vs 0.3
    const auto moves = msd::plan_moves(even);
    REQUIRE(moves.size() == 1);
    even.loaders[moves[0].loader].sources = {moves[0].to};
    even.weights_now = even.weights_ahead = {0.45, 0.55};  // a little back: 0.45 vs 0.275, within the gain
    CHECK(msd::plan_moves(even).empty());
  }
}

TEST_CASE("online scaling: immovable loaders stay, every source keeps one") {
  ScalingInput in = two_sources(2, 1, 50.0);
  in.loaders[0].movable = false;
  const auto moves = msd::plan_moves(in);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].loader == 1);
  // Many sources, one loader each: nothing can move.
  ScalingInput single;
  for (uint32_t s = 0; s < 4; ++s) {
    single.loaders.push_back({{s}, true});
    single.profiles.push_back(transform_profile(0.001 * (s + 1), 1, 1, 10));
  }
  single.weights_now = single.weights_ahead = {0.1, 0.2, 0.3, 0.4};
  single.backlog_steps = {0, 0, 0, 5};
  CHECK(msd::plan_moves(single).empty());
}

TEST_CASE("online scaling: unmeasured sources cost the mean of the measured") {
  ScalingInput in = two_sources(3, 1, 1.0);
  in.profiles[1].samples_measured = 0;
  in.profiles[1].transform_seconds_per_sample = 100.0;  // ignored until measured
  in.weights_now = in.weights_ahead = {0.75, 0.25};  // 0.25 per loader everywhere
  CHECK(msd::plan_moves(in).empty());
}

TEST_CASE("online scaling: a loader's threads shorten its reads and its transforms alike") {
  // Half the mix each: text costs 4 ms of transform and is served by two
  // loaders of one thread, images 4 ms of read by two of 4 threads. Text
  // loaders: 0.5 x 4 / 2 = 1 ms per step sample; image loaders: 0.5 x 4 /
  // 4 / 2 = 0.25 ms (a loader reads on its threads). An image loader moved
  // to text makes it 0.67 (text) vs 0.5 (images): a third less.
  ScalingInput in = two_sources(2, 2, 1.0);
  in.loaders[2].threads = in.loaders[3].threads = 4;
  in.weights_now = in.weights_ahead = {0.5, 0.5};
  in.profiles[0].transform_seconds_per_sample = 0.004;
  in.profiles[1].transform_seconds_per_sample = 0.0;
  in.profiles[1].read_seconds_per_sample = 0.004;
  const auto moves = msd::plan_moves(in);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].loader >= 2);
  CHECK(moves[0].from == 1);
  CHECK(moves[0].to == 0);
  // Were the images' 4 ms transform instead, the same: read or transform,
  // a thread's second is a thread's second.
  in.profiles[1].read_seconds_per_sample = 0.0;
  in.profiles[1].transform_seconds_per_sample = 0.004;
  CHECK(msd::plan_moves(in) == moves);
  // On one thread each the pool is balanced and nothing moves.
  in.loaders[2].threads = in.loaders[3].threads = 1;
  CHECK(msd::plan_moves(in).empty());
}

TEST_CASE("online scaling: rescale_counts keeps proportions and one loader per source") {
  CHECK(msd::rescale_counts({1, 3}, 4) == std::vector<size_t>{1, 3});
  CHECK(msd::rescale_counts({1, 3}, 8) == std::vector<size_t>{2, 6});
  CHECK(msd::rescale_counts({1, 3}, 2) == std::vector<size_t>{1, 1});
  CHECK(msd::rescale_counts({5, 1, 1}, 3) == std::vector<size_t>{1, 1, 1});
  const auto r = msd::rescale_counts({2, 1, 1}, 5);
  CHECK(std::accumulate(r.begin(), r.end(), size_t{0}) == 5);
  CHECK(r[0] >= r[1]);
  for (size_t c : r) CHECK(c >= 1);
}
