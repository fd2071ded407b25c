// WorkerPool: every item runs exactly once, on the slots asked for, and the
// first exception comes back to the caller after every thread has stopped.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "common/worker_pool.h"

TEST_CASE("WorkerPool runs every item once on slots 0..helpers", "[common][pool]") {
  msd::WorkerPool pool("test");
  pool.grow(3);
  CHECK(pool.workers() == 3);
  for (const size_t helpers : {0u, 1u, 3u}) {
    std::vector<std::atomic<int>> runs(1000);
    std::vector<std::atomic<int>> by_slot(4);
    // Counted, and checked on this thread: Catch's assertions are not
    // thread-safe (ThreadSanitizer reports them from the pool's threads).
    std::atomic<int> outside_slots{0};
    pool.run(helpers, runs.size(), [&](size_t slot, size_t i) {
      runs[i].fetch_add(1);
      if (slot > helpers) {
        outside_slots.fetch_add(1);
        return;
      }
      by_slot[slot].fetch_add(1);
    });
    CHECK(outside_slots.load() == 0);
    for (const auto& count : runs) CHECK(count.load() == 1);
    int total = 0;
    for (const auto& count : by_slot) total += count.load();
    CHECK(total == 1000);
  }
}

TEST_CASE("WorkerPool rethrows the first exception and stays usable", "[common][pool]") {
  msd::WorkerPool pool("test");
  pool.grow(2);
  // On the caller alone the items run in order, so the hand-out must stop
  // right after the failing one.
  std::atomic<int> started{0};
  const auto fail_at_10 = [&](size_t, size_t i) {
    started.fetch_add(1);
    if (i == 10) throw std::runtime_error("item 10");
  };
  CHECK_THROWS_AS(pool.run(0, 100, fail_at_10), std::runtime_error);
  CHECK(started.load() == 11);
  // With helpers the other threads may take any number of items first; the
  // exception still reaches the caller once every thread has stopped.
  CHECK_THROWS_AS(pool.run(2, 100, fail_at_10), std::runtime_error);
  std::atomic<int> runs{0};
  pool.run(2, 50, [&](size_t, size_t) { runs.fetch_add(1); });
  CHECK(runs.load() == 50);
}
