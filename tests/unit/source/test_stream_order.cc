#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "common/error.h"
#include "source/stream_order.h"

using namespace msd;

namespace {

constexpr uint64_t kSeed = 77;
constexpr uint32_t kKey = 3;

// The newest data's indexes of the documents the stream gives over cursors
// [first, end).
std::vector<uint64_t> indexes(const StreamOrder& order, uint64_t first, uint64_t end) {
  std::vector<uint64_t> out;
  for (uint64_t c = first; c < end; ++c) out.push_back(order.index(c));
  return out;
}

// Checks the rules of a change at `cursor` from `before` to `after` (map
// `map`, new data of `samples`): the interrupted epoch delivers each
// surviving old document and each added one exactly once (the consumed
// prefix included), the dropped ones are the unconsumed documents of
// removed files, and the next epoch is a whole permutation.
void check_change(const StreamOrder& before, const StreamOrder& after, uint64_t cursor, const std::vector<IndexRun>& map,
                  const std::vector<uint64_t>& dropped) {
  const uint64_t samples = after.samples();
  // The interrupted epoch's first cursor: walk back while the epoch is the same.
  uint64_t start = cursor;
  while (start > 0 && before.epoch(start - 1) == before.epoch(cursor)) --start;
  std::multiset<uint64_t> delivered;  // new-data indexes over the whole epoch
  std::set<uint64_t> consumed_old;
  for (uint64_t c = start; c < cursor; ++c) {
    const uint64_t old_index = before.index(c);
    consumed_old.insert(old_index);
    REQUIRE(after.index(c) == (old_index == kRemovedIndex ? kRemovedIndex : map_index(map, old_index)));
    if (after.index(c) != kRemovedIndex) delivered.insert(after.index(c));
  }
  const StreamEra& era = after.eras().back();
  REQUIRE(era.begin == cursor);
  for (uint64_t c = cursor; c < cursor + era.tail; ++c) {
    REQUIRE(after.epoch(c) == before.epoch(cursor));
    const uint64_t index = after.index(c);
    REQUIRE(index < samples);
    delivered.insert(index);
  }
  // Each new-data document at most once in the epoch...
  for (uint64_t index : delivered) REQUIRE(delivered.count(index) == 1);
  // ...and every one there but those consumed before the change whose
  // file is gone (they are not in the new data at all).
  REQUIRE(delivered.size() == samples);
  // Dropped: the old documents of removed files not consumed before the change.
  std::set<uint64_t> expected_dropped;
  for (const IndexRun& run : map)
    if (run.to == kRemovedIndex)
      for (uint64_t i = run.first; i < run.first + run.count; ++i)
        if (!consumed_old.count(i)) expected_dropped.insert(i);
  REQUIRE(std::set<uint64_t>(dropped.begin(), dropped.end()) == expected_dropped);
  REQUIRE(dropped.size() == expected_dropped.size());
  // Then whole epochs of the new data.
  const uint64_t whole = cursor + era.tail;
  std::vector<uint64_t> next = indexes(after, whole, whole + samples);
  std::sort(next.begin(), next.end());
  for (uint64_t i = 0; i < samples; ++i) REQUIRE(next[i] == i);
  REQUIRE(after.epoch(whole) == before.epoch(cursor) + 1);
}

}  // namespace

TEST_CASE("stream order without changes is the epochs' permutations") {
  const uint64_t n = 37;
  const StreamOrder order(kSeed, kKey, n);
  for (uint64_t c = 0; c < 4 * n; ++c) {
    REQUIRE(order.index(c) == stream_position(kSeed, kKey, n, c).index);
    REQUIRE(order.epoch(c) == c / n);
  }
  CHECK(order.plain());
}

TEST_CASE("stream order: shards added mid-epoch join its rest") {
  const uint64_t n = 100;
  const StreamOrder before(kSeed, kKey, n);
  // A shard of 30 inserted after the first 40 documents' files, one of 5 at the end.
  const std::vector<IndexRun> map = {{0, 40, 0}, {40, 60, 70}};
  for (uint64_t cursor : {uint64_t{0}, uint64_t{1}, uint64_t{57}, uint64_t{99}, uint64_t{100}, uint64_t{263}}) {
    std::vector<uint64_t> dropped;
    const StreamOrder after = before.changed(cursor, 135, map, &dropped);
    CHECK(dropped.empty());
    check_change(before, after, cursor, map, dropped);
    // Before the change, the same documents (in the new data's numbering).
    for (uint64_t c = 0; c < cursor; ++c) REQUIRE(after.index(c) == map_index(map, before.index(c)));
  }
}

TEST_CASE("stream order: shards removed mid-epoch drop their undelivered documents") {
  const uint64_t n = 100;
  const StreamOrder before(kSeed, kKey, n);
  const std::vector<IndexRun> map = {{0, 30, 0}, {30, 20, kRemovedIndex}, {50, 50, 30}};
  for (uint64_t cursor : {uint64_t{0}, uint64_t{33}, uint64_t{99}, uint64_t{150}}) {
    std::vector<uint64_t> dropped;
    const StreamOrder after = before.changed(cursor, 80, map, &dropped);
    check_change(before, after, cursor, map, dropped);
    // The tail: the epoch's remaining documents less the dropped ones.
    CHECK(after.eras().back().tail == n - cursor % n - dropped.size());
  }
}

TEST_CASE("stream order: added and removed at once, then changed again inside the tail") {
  const StreamOrder before(kSeed, kKey, 64);
  const std::vector<IndexRun> first = {{0, 16, 0}, {16, 16, kRemovedIndex}, {32, 32, 40}};
  std::vector<uint64_t> dropped;
  const StreamOrder once = before.changed(20, 72, first, &dropped);
  check_change(before, once, 20, first, dropped);
  // Again before the tail ends: the rest of the same epoch, over a third version.
  const std::vector<IndexRun> second = {{0, 10, kRemovedIndex}, {10, 62, 0}};
  REQUIRE(once.eras().back().tail > 15);
  const StreamOrder twice = once.changed(30, 62, second, &dropped);
  check_change(once, twice, 30, second, dropped);
  // And a third change at the same cursor: a tail over a tail not begun.
  const std::vector<IndexRun> third = {{0, 62, 5}};
  const StreamOrder thrice = twice.changed(30, 67, third, &dropped);
  check_change(twice, thrice, 30, third, dropped);
  CHECK(dropped.empty());
}

TEST_CASE("stream order reopens from its eras alone") {
  const StreamOrder before(kSeed, kKey, 50);
  const StreamOrder once = before.changed(70, 58, {{0, 25, 0}, {25, 25, 33}});
  const StreamOrder twice = once.changed(81, 40, {{0, 10, 0}, {10, 18, kRemovedIndex}, {28, 30, 10}});
  const StreamOrder reopened(kSeed, kKey, twice.eras());
  for (uint64_t c = 0; c < 300; ++c) REQUIRE(reopened.index(c) == twice.index(c));
  // Another seed is another order: its interrupted epoch consumed other
  // documents, so the recorded tails do not fit it.
  CHECK_THROWS_AS(StreamOrder(kSeed + 1, kKey, twice.eras()), Error);
  const StreamOrder other = StreamOrder(kSeed + 1, kKey, 50).changed(70, 58, {{0, 25, 0}, {25, 25, 33}});
  CHECK(indexes(other, 70, 200) != indexes(once, 70, 200));
}

TEST_CASE("stream order refuses inconsistent eras") {
  const StreamOrder order = StreamOrder(kSeed, kKey, 20).changed(5, 25, {{0, 20, 5}});
  std::vector<StreamEra> eras = order.eras();
  eras.back().tail += 1;
  CHECK_THROWS_AS(StreamOrder(kSeed, kKey, eras), Error);
  eras = order.eras();
  eras.back().map = {{0, 10, 0}};  // does not cover the previous data
  CHECK_THROWS_AS(StreamOrder(kSeed, kKey, eras), Error);
  eras = order.eras();
  eras.back().map = {{0, 20, 10}};  // leaves the new data's range
  CHECK_THROWS_AS(StreamOrder(kSeed, kKey, eras), Error);
  CHECK_THROWS_AS(order.changed(4, 25, {{0, 25, 0}}), Error);  // before the last change
}

TEST_CASE("stream order in the block order: the epochs' locality order, kept across changes") {
  const ShuffleOrder blocks{true, 8, 3};
  const uint64_t n = 100;
  const StreamOrder order(kSeed, kKey, n, blocks);
  CHECK(order.shuffle() == blocks);
  for (uint64_t c = 0; c < 3 * n; ++c) REQUIRE(order.index(c) == stream_position(kSeed, kKey, n, c, blocks).index);
  // The uniform order is the plain permutation (the default).
  CHECK(StreamOrder(kSeed, kKey, n, ShuffleOrder{}).index(5) == StreamOrder(kSeed, kKey, n).index(5));
  // Added and removed files mid-epoch, then again inside the tail: the same rules.
  const std::vector<IndexRun> first = {{0, 40, 0}, {40, 20, kRemovedIndex}, {60, 40, 52}};
  std::vector<uint64_t> dropped;
  const StreamOrder once = order.changed(130, 92, first, &dropped);
  CHECK(once.shuffle() == blocks);
  check_change(order, once, 130, first, dropped);
  const std::vector<IndexRun> second = {{0, 92, 3}};
  const StreamOrder twice = once.changed(150, 95, second, &dropped);
  check_change(once, twice, 150, second, dropped);
  // The whole epochs after a change are the block order over the new data.
  const uint64_t whole = twice.eras().back().begin + twice.eras().back().tail;
  const SourceOrder next(95, permutation_key(kSeed, kKey, twice.epoch(whole)), blocks);
  for (uint64_t p = 0; p < 95; ++p) REQUIRE(twice.index(whole + p) == next(p));
  // Reopened from its eras in the same order; the uniform order's stream
  // over the same change is another.
  const StreamOrder reopened(kSeed, kKey, twice.eras(), blocks);
  for (uint64_t c = 0; c < 500; ++c) REQUIRE(reopened.index(c) == twice.index(c));
  CHECK(indexes(StreamOrder(kSeed, kKey, n).changed(130, 92, first), 100, 300) != indexes(once, 100, 300));
}
