// The planner's collaborators that hold no MPI: the loader checkpoint round,
// the loaders' profiles and the slot releases.
#include <catch2/catch.hpp>

#include <tuple>

#include "common/error.h"
#include "runtime/checkpoint_round.h"
#include "runtime/loader_profiles.h"
#include "runtime/slot_releases.h"

using namespace msd;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST_CASE("a checkpoint round ends when every part is written, and one at a time is open") {
  CheckpointRound round;
  const auto t0 = Clock::now();
  REQUIRE(round.begin(20, {1, 2, 3}, t0));
  CHECK_FALSE(round.begin(30, {1}, t0));  // still open: skipped
  CHECK(round.step() == 20);
  round.written(1, 20);
  round.written(2, 10);  // an older round's part does not count
  CHECK_FALSE(round.finish());
  CHECK(round.waits_for(2));
  round.written(2, 20);
  round.written(3, 20);
  CHECK(round.finish() == std::optional<uint64_t>(20));
  CHECK_FALSE(round.open());
  CHECK(round.begin(30, {1}, t0));
}

TEST_CASE("a checkpoint round drops gone writers at once and late ones past the bound") {
  CheckpointRound round;
  const auto t0 = Clock::now();
  REQUIRE(round.begin(5, {1, 2, 3}, t0));
  const auto gone = [](int rank) { return rank == 3; };
  CHECK(round.drop_late(t0 + milliseconds(10), milliseconds(100), gone).empty());  // 3 dropped, not to take over
  CHECK_FALSE(round.waits_for(3));
  round.written(1, 5);
  CHECK_FALSE(round.finish());
  CHECK(round.drop_late(t0 + milliseconds(101), milliseconds(100), gone) == std::vector<int>{2});
  CHECK(round.finish() == std::optional<uint64_t>(5));
}

TEST_CASE("loader profiles average per source, weighted by the samples each loader measured") {
  LoaderProfiles profiles;
  SourceProfile a, b;
  a.samples_measured = 1;
  a.read_seconds_per_sample = 1.0;
  a.open_bytes = 100;
  b.samples_measured = 3;
  b.read_seconds_per_sample = 2.0;
  b.open_bytes = 300;
  profiles.record(1, {{0, a}});
  profiles.record(2, {{0, b}});
  profiles.record(2, {{0, b}, {1, b}});  // the latest report replaces the previous one
  const auto average = profiles.average(3);
  CHECK(average[0].samples_measured == 4);
  CHECK(average[0].read_seconds_per_sample == Approx(1.75));
  CHECK(average[0].open_bytes == Approx(200));  // over the loaders that opened it
  CHECK(average[1].read_seconds_per_sample == Approx(2.0));
  CHECK(average[2].samples_measured == 0);
  CHECK_THROWS_AS(profiles.average(1), ProtocolError);
}

TEST_CASE("slot releases merge a loader's adjacent slots into ranges") {
  SlotReleases releases;
  CHECK(releases.empty());
  releases.add(3, 0, 100);    // [0, 128)
  releases.add(3, 128, 64);   // adjacent: [0, 192)
  releases.add(5, 64, 1);     // another loader
  releases.add(3, 192, 10);   // adjacent again: [0, 256)
  releases.add(3, 512, 64);   // a gap: a range of its own
  releases.add(3, 448, 64);   // ends where the last begins, but added after it: its own
  CHECK(releases.holds(3));
  CHECK(releases.holds(5));
  CHECK_FALSE(releases.holds(4));
  std::vector<std::tuple<int, std::vector<SlotRange>, uint64_t>> out;
  releases.drain([&](int loader, const std::vector<SlotRange>& ranges, uint64_t bytes) {
    out.emplace_back(loader, ranges, bytes);
  });
  REQUIRE(out.size() == 2);
  CHECK(std::get<0>(out[0]) == 3);
  CHECK(std::get<1>(out[0]) == std::vector<SlotRange>{{0, 256}, {512, 64}, {448, 64}});
  CHECK(std::get<2>(out[0]) == 384);
  CHECK(std::get<0>(out[1]) == 5);
  CHECK(std::get<1>(out[1]) == std::vector<SlotRange>{{64, 64}});
  CHECK(std::get<2>(out[1]) == 64);
  CHECK(releases.empty());
  CHECK_FALSE(releases.holds(3));
}
