#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <vector>

#include "source/permutation.h"

using namespace msd;

namespace {

// Checks that `perm` maps [0, n) onto [0, n) with no repeat.
bool is_bijection(const Permutation& perm) {
  std::vector<bool> seen(perm.size(), false);
  for (uint64_t i = 0; i < perm.size(); ++i) {
    uint64_t j = perm(i);
    if (j >= perm.size() || seen[j]) return false;
    seen[j] = true;
  }
  return true;
}

uint64_t differing_positions(const Permutation& a, const Permutation& b) {
  uint64_t differ = 0;
  for (uint64_t i = 0; i < a.size(); ++i) differ += a(i) != b(i);
  return differ;
}

}  // namespace

TEST_CASE("permutation is a bijection over [0, n) for many n") {
  std::vector<uint64_t> sizes = {1, 2, 3, 4, 5, 7, 15, 16, 17, 64, 1000, 4096, 4097};
  std::mt19937_64 rng(42);
  for (int i = 0; i < 4; ++i) sizes.push_back(1 + rng() % 1000000);
  sizes.push_back(1000000);
  for (uint64_t n : sizes) {
    for (uint64_t key : {uint64_t{0}, uint64_t{1}, permutation_key(7, 3, 11)}) {
      INFO("n = " << n << ", key = " << key);
      REQUIRE(is_bijection(Permutation(n, key)));
      if (n > 5000) break;  // one key is enough for the large sizes
    }
  }
}

TEST_CASE("permutation is deterministic for a key") {
  const uint64_t n = 4097;
  Permutation a(n, permutation_key(1234, 2, 5));
  Permutation b(n, permutation_key(1234, 2, 5));
  for (uint64_t i = 0; i < n; ++i) REQUIRE(a(i) == b(i));
}

TEST_CASE("permutation differs across epochs, seeds and sources, and shuffles") {
  const uint64_t n = 1000;
  Permutation base(n, permutation_key(1234, 0, 0));
  // Two random permutations of 1000 agree in about one position; demand most differ.
  CHECK(differing_positions(base, Permutation(n, permutation_key(1234, 0, 1))) > n * 9 / 10);
  CHECK(differing_positions(base, Permutation(n, permutation_key(1235, 0, 0))) > n * 9 / 10);
  CHECK(differing_positions(base, Permutation(n, permutation_key(1234, 1, 0))) > n * 9 / 10);
  uint64_t fixed_points = 0;
  for (uint64_t i = 0; i < n; ++i) fixed_points += base(i) == i;
  CHECK(fixed_points < 20);
  // Neighbouring positions should not stay neighbours (a weak shuffle test).
  uint64_t adjacent = 0;
  for (uint64_t i = 0; i + 1 < n; ++i) adjacent += base(i + 1) == base(i) + 1;
  CHECK(adjacent < 20);
  // Keys differ for every change of one component.
  CHECK(permutation_key(1, 0, 0) != permutation_key(0, 1, 0));
  CHECK(permutation_key(1, 0, 0) != permutation_key(0, 0, 1));
  CHECK(permutation_key(0, 1, 0) != permutation_key(0, 0, 1));
}

TEST_CASE("stream position walks each epoch through every sample once") {
  const uint64_t n = 37;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      StreamPosition position = stream_position(99, 4, n, epoch * n + i);
      REQUIRE(position.epoch == epoch);
      REQUIRE(position.index < n);
      REQUIRE_FALSE(seen[position.index]);
      seen[position.index] = true;
      REQUIRE(position.index == Permutation(n, permutation_key(99, 4, epoch))(i));
    }
  }
  // Consecutive epochs use different orders.
  uint64_t differ = 0;
  for (uint64_t i = 0; i < n; ++i)
    differ += stream_position(99, 4, n, i).index != stream_position(99, 4, n, n + i).index;
  CHECK(differ > n / 2);
}

TEST_CASE("the permutation's inverse undoes it") {
  for (uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{5}, uint64_t{17}, uint64_t{1000}, uint64_t{4097}}) {
    const Permutation perm(n, permutation_key(3, 1, 4));
    for (uint64_t i = 0; i < n; ++i) REQUIRE(perm.inverse(perm(i)) == i);
  }
}

TEST_CASE("the uniform source order is the permutation itself") {
  const uint64_t key = permutation_key(1234, 2, 0);
  const SourceOrder order(4097, key, ShuffleOrder{});
  const Permutation perm(4097, key);
  for (uint64_t i = 0; i < 4097; ++i) REQUIRE(order(i) == perm(i));
  for (uint64_t c = 0; c < 9000; c += 7)
    REQUIRE(stream_position(1234, 2, 4097, c).index == Permutation(4097, permutation_key(1234, 2, c / 4097))(c % 4097));
}

TEST_CASE("the block order is a bijection for any size, block and window, short last block included") {
  for (uint64_t n : {uint64_t{1}, uint64_t{7}, uint64_t{64}, uint64_t{100}, uint64_t{1000}, uint64_t{4099}}) {
    for (uint64_t block : {uint64_t{1}, uint64_t{3}, uint64_t{16}, uint64_t{5000}}) {
      for (uint64_t window : {uint64_t{1}, uint64_t{2}, uint64_t{7}, uint64_t{64}}) {
        INFO("n " << n << " block " << block << " window " << window);
        const SourceOrder order(n, permutation_key(9, 0, n), ShuffleOrder{true, block, window});
        std::vector<bool> seen(n, false);
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t index = order(i);
          REQUIRE(index < n);
          REQUIRE_FALSE(seen[index]);
          seen[index] = true;
        }
      }
    }
  }
}

TEST_CASE("the block order reads a window's blocks together and is a pure function of its key") {
  const uint64_t n = 102400, block = 256, window = 8;  // whole blocks: windows start at multiples of block x window
  const ShuffleOrder shuffle{true, block, window};
  const SourceOrder order(n, permutation_key(1234, 0, 0), shuffle);
  const SourceOrder again(n, permutation_key(1234, 0, 0), shuffle);
  const SourceOrder next_epoch(n, permutation_key(1234, 0, 1), shuffle);
  uint64_t differ = 0;
  for (uint64_t start = 0; start < n; start += block * window) {
    std::set<uint64_t> blocks;
    for (uint64_t i = start; i < std::min(n, start + block * window); ++i) {
      REQUIRE(order(i) == again(i));
      differ += order(i) != next_epoch(i);
      blocks.insert(order(i) / block);
    }
    REQUIRE(blocks.size() == window);
  }
  CHECK(differ > n * 9 / 10);
  // The windows themselves come from all over the file order.
  std::set<uint64_t> first_blocks;
  for (uint64_t i = 0; i < block * window; ++i) first_blocks.insert(order(i) / block);
  CHECK(*first_blocks.rbegin() - *first_blocks.begin() > n / block / 4);
}

TEST_CASE("stream positions under the block order walk each epoch through every record once") {
  const uint64_t n = 1000;
  const ShuffleOrder shuffle{true, 64, 4};
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      const StreamPosition position = stream_position(99, 4, n, epoch * n + i, shuffle);
      REQUIRE(position.epoch == epoch);
      REQUIRE_FALSE(seen[position.index]);
      seen[position.index] = true;
    }
  }
}

TEST_CASE("order locality: the mean gap of neighbours, against the uniform shuffle's (n + 1) / 3") {
  const uint64_t n = 200000;
  OrderLocality uniform, blocks;
  const SourceOrder u(n, permutation_key(5, 0, 0), ShuffleOrder{});
  const SourceOrder b(n, permutation_key(5, 0, 0), ShuffleOrder{true, 1024, 4});
  for (uint64_t i = 0; i + 1 < 50000; ++i) {
    uniform.add(u(i), u(i + 1));
    blocks.add(b(i), b(i + 1));
  }
  CHECK(uniform.mean_gap() / uniform_mean_gap(n) == Approx(1.0).epsilon(0.03));
  // A quarter of the neighbours share a block (4 a window): about 3/4 of the uniform gap.
  CHECK(blocks.mean_gap() / uniform_mean_gap(n) == Approx(0.75).epsilon(0.08));
}
