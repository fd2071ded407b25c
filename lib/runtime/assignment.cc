#include "runtime/assignment.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace msd {

SourceAssignment assign_sources(int loaders, const std::vector<std::vector<WeightPoint>>& curves) {
  const size_t sources = curves.size();
  SourceAssignment out;
  out.loaders_of_source.resize(sources);
  out.sources_of_loader.resize(static_cast<size_t>(loaders));
  if (sources == 0 || loaders <= 0) return out;
  if (static_cast<size_t>(loaders) <= sources) {
    for (size_t s = 0; s < sources; ++s) {
      int loader = static_cast<int>(s % static_cast<size_t>(loaders));
      out.loaders_of_source[s].push_back(loader);
      out.sources_of_loader[static_cast<size_t>(loader)].push_back(static_cast<uint32_t>(s));
    }
    return out;
  }
  // One loader each, then the spare loaders by peak weight.
  std::vector<double> peak(sources, 0.0);
  double total = 0.0;
  for (size_t s = 0; s < sources; ++s) {
    for (const WeightPoint& point : curves[s]) peak[s] = std::max(peak[s], point.weight);
    total += peak[s];
  }
  const size_t spare = static_cast<size_t>(loaders) - sources;
  std::vector<size_t> extra(sources, 0);
  std::vector<std::pair<double, size_t>> remainders;
  size_t given = 0;
  for (size_t s = 0; s < sources; ++s) {
    double share = total > 0 ? spare * peak[s] / total : 0.0;
    extra[s] = static_cast<size_t>(std::floor(share));
    given += extra[s];
    remainders.push_back({share - std::floor(share), s});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < spare; ++i, ++given) extra[remainders[i % sources].second]++;
  int next = 0;
  for (size_t s = 0; s < sources; ++s) {
    for (size_t k = 0; k < 1 + extra[s]; ++k) {
      out.loaders_of_source[s].push_back(next);
      out.sources_of_loader[static_cast<size_t>(next)].push_back(static_cast<uint32_t>(s));
      ++next;
    }
  }
  return out;
}

std::vector<LoaderGroup> groups_of(const SourceAssignment& assignment, uint32_t threads) {
  std::vector<LoaderGroup> groups;
  for (const auto& sources : assignment.sources_of_loader) {
    if (sources.empty()) continue;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const LoaderGroup& g) { return g.sources == sources; });
    if (same != groups.end()) {
      ++same->ranks;
      continue;
    }
    LoaderGroup group;
    group.sources = sources;
    group.threads = threads;
    groups.push_back(std::move(group));
  }
  return groups;
}

SourceAssignment assign_from_plan(const PartitionPlan& plan, size_t sources) {
  SourceAssignment out;
  out.loaders_of_source.resize(sources);
  int next = 0;
  for (const LoaderGroup& group : plan.groups) {
    for (uint32_t r = 0; r < group.ranks; ++r, ++next) {
      out.sources_of_loader.push_back(group.sources);
      out.threads_of_loader.push_back(group.threads);
      for (uint32_t s : group.sources) out.loaders_of_source.at(s).push_back(next);
    }
  }
  return out;
}

}  // namespace msd
