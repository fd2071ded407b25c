#include <catch2/catch.hpp>

#include <random>
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
