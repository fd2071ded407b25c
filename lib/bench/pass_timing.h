// Timing whole passes of a benchmark, and the rates they give (msd-bench
// transforms: bench/transforms.cc, bench/transforms_jpeg.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "common/stats.h"

namespace msd::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}


// Times whole passes until both the time and the pass count are reached.
// `options`: min_passes and seconds.
template <typename Options, typename Pass>
std::vector<double> time_passes(const Options& options, Pass&& pass) {
  std::vector<double> seconds;
  double total = 0;
  while (seconds.size() < options.min_passes || total < options.seconds) {
    const Clock::time_point start = Clock::now();
    pass();
    seconds.push_back(seconds_since(start));
    total += seconds.back();
  }
  return seconds;
}

struct Rates {
  double median = 0, min = 0, max = 0;  // MB/s: of the median, slowest and fastest pass
};

inline Rates rates_of(const std::vector<double>& seconds, double bytes) {
  const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
  return {bytes / median(seconds) / 1e6, bytes / *slowest / 1e6, bytes / *fastest / 1e6};
}

inline double ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : std::nan("");
}

}  // namespace msd::bench
