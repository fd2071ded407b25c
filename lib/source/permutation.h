// A seeded permutation of [0, n) in O(1) memory: a balanced Feistel network
// over the next power of four with cycle walking. Each (seed, source, epoch)
// gives a different order; the same triple always gives the same order.
//
// A source's stream visits its records in one of two orders per epoch
// (SourceOrder, source.NAME.shuffle; docs/formats.md "The locality order"):
//   uniform  the permutation itself: any record may follow any other.
//   block    the locality order: the file-order records are cut into blocks
//            of `block_records` consecutive ones; the blocks are permuted,
//            taken `window_blocks` at a time, and the records of each such
//            window are permuted together. A window's records are read close
//            together in the stream, so a compressed file's restart interval
//            or a Parquet row group is decoded about once per epoch, not once
//            per record (block_cache.h), while every record still comes
//            once per epoch and any window may follow any other.
#pragma once

#include <cstdint>

namespace msd {

class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t size() const { return n_; }
  uint64_t operator()(uint64_t position) const;  // REQUIRES: position < size()
  // The position that maps to `value`: (*this)(inverse(v)) == v. REQUIRES: value < size().
  uint64_t inverse(uint64_t value) const;

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

// Which order a source's stream takes (source.NAME.shuffle as resolved by
// shuffle_order(), source.h). The default is the uniform shuffle.
struct ShuffleOrder {
  bool blocks = false;         // false: uniform
  uint64_t block_records = 0;  // blocks: consecutive file-order records per block (>= 1)
  uint64_t window_blocks = 0;  // blocks: blocks whose records are shuffled together (>= 1)
  bool operator==(const ShuffleOrder&) const = default;
};

// One epoch's order of a source's n records under `order`, from the epoch's
// key: position -> file-order index, a bijection of [0, n), O(1) memory and
// time per call. The uniform order is Permutation(n, key) exactly.
class SourceOrder {
 public:
  SourceOrder(uint64_t n, uint64_t key, const ShuffleOrder& order);
  uint64_t size() const { return n_; }
  uint64_t operator()(uint64_t position) const;  // REQUIRES: position < size()

 private:
  uint64_t window_start(uint64_t window) const;
  uint64_t n_, key_;
  ShuffleOrder order_;
  Permutation permutation_;  // uniform: the order; blocks: of the blocks
  uint64_t blocks_ = 0, windows_ = 0;
  uint64_t short_deficit_ = 0;   // records the last block lacks (0: it is whole)
  uint64_t short_position_ = 0;  // where the last block sits in the block order (when short)
};

// The position of a source's sample stream: cursor c is sample
// order_epoch(c mod n) of epoch c / n.
struct StreamPosition {
  uint64_t epoch;
  uint64_t index;  // file-order index
};
StreamPosition stream_position(uint64_t seed, uint32_t source, uint64_t n, uint64_t cursor,
                               const ShuffleOrder& order = {});

// What an order gives up in randomness, as the summary reports it: over
// pairs of documents of one source that follow each other in one rank's
// batch, the mean distance between their file-order indexes. The uniform
// shuffle's is about (n + 1) / 3 (uniform_mean_gap); the locality order's
// is lower by the share of pairs drawn from one block.
struct OrderLocality {
  uint64_t pairs = 0;
  double gap_sum = 0.0;
  void add(uint64_t a, uint64_t b) { ++pairs, gap_sum += static_cast<double>(a > b ? a - b : b - a); }
  double mean_gap() const { return pairs > 0 ? gap_sum / static_cast<double>(pairs) : 0.0; }
};
// The mean distance between two distinct records drawn uniformly from n: (n + 1) / 3.
double uniform_mean_gap(uint64_t n);

}  // namespace msd
