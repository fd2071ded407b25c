// A seeded permutation of [0, n) in O(1) memory: a balanced Feistel network
// over the next power of four with cycle walking. Each (seed, source, epoch)
// gives a different order; the same triple always gives the same order.
#pragma once

#include <cstdint>

namespace msd {

class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t size() const { return n_; }
  uint64_t operator()(uint64_t position) const;  // REQUIRES: position < size()

 private:
  uint64_t round(uint64_t half, int round_index) const;
  uint64_t n_;
  uint64_t key_;
  int half_bits_;
  uint64_t half_mask_;
  uint64_t round_keys_[4];  // mix64 of key_ and the round index, computed once
};

// Key of a source's permutation in one epoch.
uint64_t permutation_key(uint64_t seed, uint32_t source, uint64_t epoch);

// The position of a source's sample stream: cursor c is sample
// perm_epoch(c mod n) of epoch c / n.
struct StreamPosition {
  uint64_t epoch;
  uint64_t index;  // file-order index
};
StreamPosition stream_position(uint64_t seed, uint32_t source, uint64_t n, uint64_t cursor);

}  // namespace msd
