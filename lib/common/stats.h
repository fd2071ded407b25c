// Small order statistics shared by the summaries, the benchmarks and the
// placement simulator.
#pragma once

#include <algorithm>
#include <vector>

namespace msd {

// The median of `values` (the mean of the middle two for an even count), or
// `if_empty` when there are none.
inline double median(std::vector<double> values, double if_empty = 0.0) {
  if (values.empty()) return if_empty;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// The largest of `values`, or 0 when there are none.
inline double max_of(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

}  // namespace msd
