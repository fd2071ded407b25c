#include "source/permutation.h"

#include <algorithm>

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

uint64_t Permutation::inverse(uint64_t value) const {
  MSD_CHECK_LT(value, n_);
  // The rounds undone in reverse; cycle walking backwards stops at the first
  // value inside [0, n), which is the position the forward walk started from.
  uint64_t x = value;
  do {
    uint64_t left = x >> half_bits_;
    uint64_t right = x & half_mask_;
    for (int r = 3; r >= 0; --r) {
      const uint64_t previous = right ^ round(left, r);
      right = left;
      left = previous;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);
  return x;
}

uint64_t permutation_key(uint64_t seed, uint32_t source, uint64_t epoch) {
  return mix64(mix64(seed ^ 0x5eedULL) ^ mix64(uint64_t{source} + 0x1000) ^ mix64(epoch * 0x2545f4914f6cdd1dULL + 7));
}

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// The keys of the block order's two levels, apart from the uniform order's.
uint64_t blocks_key(uint64_t key) { return mix64(key ^ 0xb10c5b10c5b10c5ULL); }
uint64_t window_key(uint64_t key, uint64_t window) { return mix64(key + mix64(window ^ 0x77696e646f77ULL)); }

}  // namespace

SourceOrder::SourceOrder(uint64_t n, uint64_t key, const ShuffleOrder& order)
    : n_(n),
      key_(key),
      order_(order),
      permutation_(order.blocks ? ceil_div(n, std::max<uint64_t>(order.block_records, 1)) : n,
                   order.blocks ? blocks_key(key) : key) {
  if (!order_.blocks) return;
  MSD_CHECK(order_.block_records > 0 && order_.window_blocks > 0);
  const uint64_t b = order_.block_records;
  blocks_ = permutation_.size();
  windows_ = ceil_div(blocks_, order_.window_blocks);
  short_deficit_ = blocks_ * b - n_;
  if (short_deficit_ > 0) short_position_ = permutation_.inverse(blocks_ - 1);
}

// The first position of a window: every window before it holds window_blocks
// whole blocks, but for the short last block wherever it fell.
uint64_t SourceOrder::window_start(uint64_t window) const {
  const uint64_t first_block = window * order_.window_blocks;
  const bool short_before = short_deficit_ > 0 && short_position_ < first_block;
  return first_block * order_.block_records - (short_before ? short_deficit_ : 0);
}

uint64_t SourceOrder::operator()(uint64_t position) const {
  MSD_CHECK_LT(position, n_);
  if (!order_.blocks) return permutation_(position);
  const uint64_t b = order_.block_records;
  // The window holding `position`: its start is at most a block short of
  // window x (window_blocks x block_records), so it is that window or the next.
  uint64_t window = position / (order_.window_blocks * b);
  if (window + 1 < windows_ && position >= window_start(window + 1)) ++window;
  const uint64_t start = window_start(window);
  const uint64_t first_block = window * order_.window_blocks;
  const uint64_t blocks = std::min(order_.window_blocks, blocks_ - first_block);
  const bool holds_short = short_deficit_ > 0 && short_position_ >= first_block && short_position_ < first_block + blocks;
  const uint64_t records = window + 1 < windows_ ? window_start(window + 1) - start : n_ - start;
  const uint64_t j = Permutation(records, window_key(key_, window))(position - start);
  // The window's records: its whole blocks in block order, then the short one.
  uint64_t block_position, offset;
  if (holds_short && j >= (blocks - 1) * b) {
    block_position = short_position_;
    offset = j - (blocks - 1) * b;
  } else {
    block_position = first_block + j / b;
    if (holds_short && block_position >= short_position_) ++block_position;
    offset = j % b;
  }
  return permutation_(block_position) * b + offset;
}

StreamPosition stream_position(uint64_t seed, uint32_t source, uint64_t n, uint64_t cursor, const ShuffleOrder& order) {
  MSD_CHECK(n > 0);
  uint64_t epoch = cursor / n;
  const SourceOrder epoch_order(n, permutation_key(seed, source, epoch), order);
  return {epoch, epoch_order(cursor % n)};
}

double uniform_mean_gap(uint64_t n) { return (static_cast<double>(n) + 1.0) / 3.0; }

}  // namespace msd
