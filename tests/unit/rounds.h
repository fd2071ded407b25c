// Rounds of the randomized test cases. Under AddressSanitizer or
// ThreadSanitizer (build/asan, build/tsan) a case runs a quarter of its rounds:
// the same code paths on fewer random inputs, so that the sanitizer trees'
// tests stay within CI's time; build/test runs every round.
#pragma once

#include <algorithm>

namespace msd::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr int kRoundDivisor = 4;
#else
inline constexpr int kRoundDivisor = 1;
#endif

// The rounds to run of a case written for `rounds`.
constexpr int rounds(int rounds) { return std::max(1, rounds / kRoundDivisor); }

}  // namespace msd::test
