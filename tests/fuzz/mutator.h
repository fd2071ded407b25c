// Seeded mutations of valid inputs, the kinds that break parsers: bit flips,
// interesting byte values, truncations, insertions, deletions, splices from
// another seed, little-endian length fields nudged or blown up, and decimal
// or octal number runs rewritten (INI values, tiktoken ranks, tar sizes).
// Deterministic: the same seed gives the same mutations.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datagen/random.h"

namespace msd::fuzz {

using Bytes = std::string;

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  // 1..4 stacked mutations of `input`; `donors` (other seeds of the same
  // format) feed splices. Never returns `input` unchanged unless it is empty.
  Bytes mutate(const Bytes& input, std::span<const Bytes> donors);

  datagen::Rng& rng() { return rng_; }

 private:
  void mutate_once(Bytes& data, std::span<const Bytes> donors);
  void flip_bits(Bytes& data);
  void set_byte(Bytes& data);
  void truncate(Bytes& data);
  void insert(Bytes& data);
  void erase(Bytes& data);
  void splice(Bytes& data, std::span<const Bytes> donors);
  void tweak_length_field(Bytes& data);
  void rewrite_number(Bytes& data);
  size_t position(const Bytes& data);  // biased toward the start, where headers live

  datagen::Rng rng_;
};

}  // namespace msd::fuzz
