// A 64-bit streaming digest for batch contents. Not cryptographic: it only has
// to tell two batch streams apart, fast, and identically on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

namespace msd {

class Digest {
 public:
  explicit Digest(uint64_t seed = 0x6d73642d64696765ULL) : state_(seed) {}

  void update(const void* data, size_t bytes);
  template <typename T>
  void update(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    update(values.data(), values.size_bytes());
  }
  void update_u64(uint64_t value);
  uint64_t value() const;
  std::string hex() const;  // 16 lower-case hex digits

 private:
  uint64_t state_;
  uint64_t length_ = 0;
};

// Mixes 64 bits well (splitmix64's finalizer); used by Digest and the Feistel
// permutation rounds.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// splitmix64 as a generator: advances `state` and returns its next value.
inline uint64_t splitmix64(uint64_t& state) { return mix64(state += 0x9e3779b97f4a7c15ULL); }

std::string hex64(uint64_t value);

}  // namespace msd
