#include "plan/step/outlier_hold.h"

#include <algorithm>
#include <unordered_map>

#include "common/error.h"

namespace msd {

OutlierHold::OutlierHold(HoldOptions options) : options_(options) { MSD_CHECK_LE(1u, options_.release); }

OutlierHold::Decision OutlierHold::step(uint64_t step, std::span<const HeldDoc> arrivals) {
  MSD_CHECK(held_.empty() || held_.back().since <= step);
  Decision decision;
  decision.held.assign(arrivals.size(), false);
  if (!options_.enabled() && held_.empty()) return decision;
  // The step's outliers join in (source, cursor) order, whatever order they came in.
  std::vector<uint32_t> joining;
  if (options_.enabled())
    for (uint32_t i = 0; i < arrivals.size(); ++i)
      if (arrivals[i].positions > options_.above) joining.push_back(i);
  std::sort(joining.begin(), joining.end(), [&](uint32_t x, uint32_t y) {
    return arrivals[x].source != arrivals[y].source ? arrivals[x].source < arrivals[y].source
                                                    : arrivals[x].cursor < arrivals[y].cursor;
  });
  const size_t first_joined = held_.size();
  for (uint32_t i : joining) {
    held_.push_back(arrivals[i]);
    held_.back().since = step;
    decision.held[i] = true;
  }
  // Oldest first: the expired ones are a prefix.
  size_t release = 0;
  if (step >= options_.last_step) {
    release = held_.size();
  } else {
    while (release < held_.size() && step - held_[release].since >= options_.max_steps) ++release;
    const size_t left = held_.size() - release;
    release += left / options_.release * options_.release;
  }
  for (size_t k = 0; k < release; ++k) {
    if (held_[k].since != step) {
      decision.released.push_back(held_[k]);
      continue;
    }
    // Joined and released at once: it never waits.
    const size_t joined = k - first_joined;
    decision.held[joining[joined]] = false;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(release));
  return decision;
}

bool OutlierHold::join(uint64_t step, const HeldDoc& doc) {
  MSD_CHECK(held_.empty() || held_.back().since <= step);
  if (!options_.enabled() || doc.positions <= options_.above || step >= options_.last_step) return false;
  held_.push_back(doc);
  held_.back().since = step;
  return true;
}

HeldDoc OutlierHold::release_oldest() {
  MSD_CHECK(!held_.empty());
  const HeldDoc oldest = held_.front();
  held_.erase(held_.begin());
  return oldest;
}

void HoldStats::add(uint64_t step, const std::vector<HeldDoc>& released) {
  for (const HeldDoc& doc : released) {
    const uint64_t delay = step - doc.since;
    ++held;
    delay_sum += delay;
    max_delay = std::max(max_delay, delay);
    if (histogram.size() <= delay) histogram.resize(delay + 1, 0);
    ++histogram[delay];
  }
}

std::vector<std::vector<PlanDoc>> hold_run(const std::vector<std::vector<PlanDoc>>& steps, HoldOptions options,
                                           HoldStats* stats) {
  if (!steps.empty()) options.last_step = std::min<uint64_t>(options.last_step, steps.size() - 1);
  OutlierHold hold(options);
  std::unordered_map<uint32_t, PlanDoc> waiting;  // by id
  std::vector<std::vector<PlanDoc>> out(steps.size());
  std::vector<HeldDoc> arrivals;
  for (uint64_t t = 0; t < steps.size(); ++t) {
    arrivals.clear();
    for (const PlanDoc& doc : steps[t]) arrivals.push_back({0, doc.id, doc.positions, doc.fixed, t});
    const OutlierHold::Decision decision = hold.step(t, arrivals);
    for (size_t i = 0; i < steps[t].size(); ++i) {
      if (decision.held[i])
        waiting.emplace(steps[t][i].id, steps[t][i]);
      else
        out[t].push_back(steps[t][i]);
    }
    for (const HeldDoc& doc : decision.released) {
      auto it = waiting.find(static_cast<uint32_t>(doc.cursor));
      MSD_CHECK(it != waiting.end());
      out[t].push_back(it->second);
      waiting.erase(it);
    }
    if (stats) stats->add(t, decision.released);
  }
  MSD_CHECK(waiting.empty());
  return out;
}

}  // namespace msd
