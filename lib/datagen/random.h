// The generator's own random numbers and distributions. The standard library's
// distributions (std::normal_distribution, ...) are implementation-defined, so
// the same seed would give different datasets under libstdc++ and libc++; the
// draws here are written out so a seed names one dataset everywhere. (The
// transcendental functions come from libm; the results are rounded to integers
// or pixel values, so a last-bit difference there almost never shows.)
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "common/digest.h"

namespace msd::datagen {

// A seed for an independent stream, from a base seed and any number of labels
// (part, shard, sample index). Every sample draws from its own stream, so its
// contents do not depend on the order or the thread that produces it.
inline uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> labels) {
  uint64_t state = mix64(seed ^ 0x6d73642d64617461ULL);
  for (uint64_t label : labels) state = mix64(state + 0x9e3779b97f4a7c15ULL + label);
  return state;
}

// xoshiro256** (Blackman and Vigna), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      word = mix64(seed);
    }
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, bound); bound > 0. Lemire's multiply-shift with rejection.
  uint64_t below(uint64_t bound) {
    unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(product);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        product = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

  // Uniform in [low, high], inclusive.
  int64_t between(int64_t low, int64_t high) {
    return low + static_cast<int64_t>(below(static_cast<uint64_t>(high - low) + 1));
  }

  // Uniform in [0, 1), 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  bool chance(double probability) { return unit() < probability; }

  // Standard normal (Box-Muller; the second value is dropped to keep the
  // stream stateless between calls).
  double normal() {
    const double u1 = 1.0 - unit();  // (0, 1]: log stays finite
    const double u2 = unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }

  // Pareto with scale `minimum` and shape `alpha`: P(X > x) = (minimum / x)^alpha.
  double pareto(double minimum, double alpha) { return minimum / std::pow(1.0 - unit(), 1.0 / alpha); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

// A long-tailed length: a lognormal body, and with probability `tail_share` a
// Pareto tail starting at `tail_start`; clamped to [minimum, maximum].
struct LengthDistribution {
  double median = 100;
  double sigma = 0.8;
  double tail_share = 0.05;
  double tail_start = 400;
  double tail_alpha = 1.3;
  uint64_t minimum = 1;
  uint64_t maximum = 10000;

  uint64_t draw(Rng& rng) const {
    const double value = rng.chance(tail_share) ? rng.pareto(tail_start, tail_alpha) : rng.lognormal(median, sigma);
    if (!(value < static_cast<double>(maximum))) return maximum;
    const auto rounded = static_cast<uint64_t>(value + 0.5);
    return rounded < minimum ? minimum : rounded;
  }
};

}  // namespace msd::datagen
