#include "source/permutation.h"

#include "common/digest.h"
#include "common/error.h"

namespace msd {

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n), key_(key) {
  MSD_CHECK(n > 0);
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < 4; ++r) round_keys_[r] = mix64(key_ + static_cast<uint64_t>(r) * 0x9e3779b97f4a7c15ULL);
}

uint64_t Permutation::round(uint64_t half, int round_index) const {
  return mix64(half ^ round_keys_[round_index]) & half_mask_;
}

uint64_t Permutation::operator()(uint64_t position) const {
  MSD_CHECK_LT(position, n_);
  // Cycle walking: the network permutes [0, 4^k); re-apply until inside [0, n).
  // Expected walks are < 4 since 4^k < 4n.
  uint64_t x = position;
  do {
    uint64_t left = x >> half_bits_;
    uint64_t right = x & half_mask_;
    for (int r = 0; r < 4; ++r) {
      uint64_t next = left ^ round(right, r);
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);
  return x;
}

uint64_t permutation_key(uint64_t seed, uint32_t source, uint64_t epoch) {
  return mix64(mix64(seed ^ 0x5eedULL) ^ mix64(uint64_t{source} + 0x1000) ^ mix64(epoch * 0x2545f4914f6cdd1dULL + 7));
}

StreamPosition stream_position(uint64_t seed, uint32_t source, uint64_t n, uint64_t cursor) {
  MSD_CHECK(n > 0);
  uint64_t epoch = cursor / n;
  Permutation perm(n, permutation_key(seed, source, epoch));
  return {epoch, perm(cursor % n)};
}

}  // namespace msd
