// Honest skips for unit tests. A test case that cannot run here (a missing
// reference vocabulary, a missing tool) calls MSD_SKIP instead of passing
// quietly; the test main then exits with msd::test::kSkipExitCode, which ctest
// reports as "skipped" (SKIP_RETURN_CODE, cmake/MsdTesting.cmake). Test cases
// that may skip carry a tag the registration splits into a ctest test of its
// own (msd_add_unit_test's SKIPPABLE), so a skip never hides the cases that
// did run.
#pragma once

#include <catch2/catch.hpp>

namespace msd::test {

inline constexpr int kSkipExitCode = 77;

// Counts the skips of this process (read by tests/unit/catch_main.cc).
int& skip_count();

}  // namespace msd::test

// Warns with `message` and leaves the current test case as skipped.
#define MSD_SKIP(message)           \
  do {                              \
    WARN(message << ": skipped");   \
    ++::msd::test::skip_count();    \
    return;                         \
  } while (0)
