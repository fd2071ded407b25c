// The decoded-block cache: bounded in bytes, least recently used out first, a
// block too big for it returned but not kept, a failed make not cached, and
// threads asking for one key at once make it once.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "source/block_cache.h"

using namespace msd;

namespace {

struct Block {
  uint64_t bytes = 0;
  uint64_t key = 0;
  uint64_t memory_bytes() const { return bytes; }
};

BlockCache<Block>::Handle block(uint64_t key, uint64_t bytes) { return std::make_shared<const Block>(Block{bytes, key}); }

}  // namespace

TEST_CASE("the block cache keeps at most its capacity, dropping the least recently used") {
  BlockCache<Block> cache(1000);
  int made = 0;
  auto get = [&](uint64_t key, uint64_t bytes) {
    return cache.get(key, [&] {
      ++made;
      return block(key, bytes);
    });
  };
  CHECK(get(1, 400)->key == 1);
  CHECK(get(2, 400)->key == 2);
  CHECK(get(1, 400)->key == 1);  // a hit: 1 is now the most recent
  CHECK(made == 2);
  CHECK(cache.bytes() == 800);
  get(3, 400);  // 2 goes
  CHECK(cache.bytes() == 800);
  get(1, 400);
  CHECK(made == 3);
  get(2, 400);
  CHECK(made == 4);
  CHECK(cache.hits() == 2);
  CHECK(cache.misses() == 4);
  // Too big to keep: returned, not cached, nothing else evicted for it.
  CHECK(get(9, 5000)->key == 9);
  CHECK(cache.bytes() == 800);
  get(9, 5000);
  CHECK(made == 6);
}

TEST_CASE("a block that cannot be made is not cached; a capacity of 0 keeps nothing") {
  BlockCache<Block> cache(1000);
  int calls = 0;
  CHECK(cache.get(5, [&] { ++calls; return BlockCache<Block>::Handle(); }) == nullptr);
  CHECK(cache.get(5, [&] { ++calls; return block(5, 10); })->key == 5);
  CHECK(calls == 2);
  BlockCache<Block> none(0);
  none.get(1, [&] { ++calls; return block(1, 1); });
  none.get(1, [&] { ++calls; return block(1, 1); });
  CHECK(calls == 4);
  CHECK(none.bytes() == 0);
}

TEST_CASE("threads asking for one block at once make it once") {
  BlockCache<Block> cache(1 << 20);
  std::atomic<int> made{0};
  std::vector<std::thread> threads;
  std::vector<uint64_t> keys(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      keys[static_cast<size_t>(t)] = cache.get(42, [&] {
        ++made;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return block(42, 100);
      })->key;
    });
  for (auto& thread : threads) thread.join();
  CHECK(made == 1);
  CHECK(keys == std::vector<uint64_t>(8, 42));
}
