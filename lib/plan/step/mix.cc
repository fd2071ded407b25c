#include "plan/step/mix.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "common/error.h"

namespace msd {
namespace {

// Targets are kept in fixed point, in units of 2^-32 samples, as 128-bit
// integers. Summing batch * w_s(t) in doubles would lose about half an ulp per
// step: at 4096 samples a step, a million steps put the target near 2^32, where
// that adds up to a large fraction of a sample, enough to flip a quota. Integer
// sums are exact for any run length, each step's increments are made to sum to
// exactly batch (so realized and target totals agree to the unit), and a
// restore recomputes bit-identical targets from the schedule alone. The only
// rounding is of each step's increment, to within one unit: the targets stay
// within steps * 2^-32 samples of the real-valued sums (2.3e-4 samples after a
// million steps), however long the run.
constexpr int kFractionBits = 32;
constexpr __int128 kUnit = __int128{1} << kFractionBits;

// floor(value / kUnit) for either sign.
__int128 floor_units(__int128 value) {
  return value >= 0 ? value / kUnit : -((-value + kUnit - 1) / kUnit);
}

}  // namespace

Schedule::Schedule(ScheduleKind kind, std::vector<std::vector<WeightPoint>> curves)
    : kind_(kind), curves_(std::move(curves)) {
  if (curves_.empty()) throw ConfigError("mix: a schedule needs at least one source");
  std::set<uint64_t> steps{0};
  for (size_t s = 0; s < curves_.size(); ++s) {
    const auto& curve = curves_[s];
    if (curve.empty()) throw ConfigError(str("mix: the weight curve of source ", s, " is empty"));
    for (size_t i = 0; i < curve.size(); ++i) {
      if (!std::isfinite(curve[i].weight) || curve[i].weight < 0)
        throw ConfigError(str("mix: source ", s, " has weight ", curve[i].weight, " at step ", curve[i].step,
                              " (weights are finite and >= 0)"));
      if (i > 0 && curve[i].step <= curve[i - 1].step)
        throw ConfigError(str("mix: the weight curve of source ", s, " is not strictly increasing in step (",
                              curve[i - 1].step, " then ", curve[i].step, ")"));
      if (kind_ != ScheduleKind::constant) steps.insert(curve[i].step);
    }
  }
  // The total weight is piecewise constant or piecewise linear between the
  // points' steps, so it is positive everywhere iff positive at each of them.
  for (uint64_t step : steps) {
    double total = 0;
    for (size_t s = 0; s < curves_.size(); ++s) total += raw(s, step);
    if (!(total > 0)) throw ConfigError(str("mix: the weights of all sources are zero at step ", step));
  }
}

double Schedule::raw(size_t source, uint64_t step) const {
  const auto& curve = curves_[source];
  if (kind_ == ScheduleKind::constant || step <= curve.front().step) return curve.front().weight;
  if (step >= curve.back().step) return curve.back().weight;
  // The first point after `step`; it exists and is not the first point.
  const auto after = std::upper_bound(curve.begin(), curve.end(), step,
                                      [](uint64_t value, const WeightPoint& point) { return value < point.step; });
  const WeightPoint& a = *(after - 1);
  if (kind_ == ScheduleKind::piecewise) return a.weight;
  const WeightPoint& b = *after;
  const double t = static_cast<double>(step - a.step) / static_cast<double>(b.step - a.step);
  return a.weight + (b.weight - a.weight) * t;
}

std::vector<double> Schedule::weights(uint64_t step) const {
  std::vector<double> weights(curves_.size());
  double total = 0;
  for (size_t s = 0; s < curves_.size(); ++s) total += weights[s] = raw(s, step);
  for (double& weight : weights) weight /= total;
  return weights;
}

uint64_t Schedule::next_change(uint64_t step) const {
  if (kind_ == ScheduleKind::constant) return kNever;
  uint64_t next = kNever;
  for (const auto& curve : curves_) {
    const auto after = std::upper_bound(curve.begin(), curve.end(), step,
                                        [](uint64_t value, const WeightPoint& point) { return value < point.step; });
    if (after == curve.end()) continue;  // the last weight holds from here on
    uint64_t change = after->step;
    // Inside a sloped segment of a linear curve the weight changes every step.
    if (kind_ == ScheduleKind::linear && after != curve.begin() && (after - 1)->weight != after->weight)
      change = step + 1;
    next = std::min(next, change);
  }
  return next;
}

Mixer::Mixer(Schedule schedule, uint32_t batch)
    : schedule_(std::move(schedule)),
      batch_(batch),
      target_units_(schedule_.sources(), 0),
      target_(schedule_.sources(), 0.0),
      realized_(schedule_.sources(), 0) {
  if (batch_ == 0) throw ConfigError("mix: the batch must hold at least one sample");
}

std::vector<uint64_t> Mixer::increments(uint64_t step) const {
  const std::vector<double> weights = schedule_.weights(step);
  const size_t n = weights.size();
  const uint64_t total = static_cast<uint64_t>(batch_) << kFractionBits;
  std::vector<uint64_t> units(n);
  std::vector<double> fraction(n);
  __int128 left = total;
  for (size_t s = 0; s < n; ++s) {
    const double exact = std::min(weights[s] * static_cast<double>(total), static_cast<double>(total));
    const double whole = std::floor(exact);
    units[s] = static_cast<uint64_t>(whole);
    fraction[s] = exact - whole;
    left -= units[s];
  }
  // The fractions of a unit add up to a whole number of units (give or take
  // one for the rounding of the weights): hand them out by largest fraction,
  // so no source's increment is off by a unit or more and a zero weight stays
  // exactly zero.
  std::vector<size_t> order;
  for (size_t s = 0; s < n; ++s)
    if (weights[s] > 0) order.push_back(s);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return fraction[a] != fraction[b] ? fraction[a] > fraction[b] : a < b; });
  MSD_CHECK(!order.empty());
  for (size_t i = 0; left > 0; i = (i + 1) % order.size(), --left) units[order[i]] += 1;
  for (size_t i = order.size() - 1; left < 0; i = (i + order.size() - 1) % order.size()) {
    if (units[order[i]] == 0) continue;
    units[order[i]] -= 1;
    ++left;
  }
  return units;
}

std::vector<uint32_t> Mixer::next() {
  const size_t n = schedule_.sources();
  const std::vector<uint64_t> increment = increments(step_);
  std::vector<__int128> deficit(n);  // T_s(t) - R_s(t-1), in units; sums to batch
  for (size_t s = 0; s < n; ++s) {
    target_units_[s] += increment[s];
    deficit[s] = target_units_[s] - static_cast<__int128>(realized_[s]) * kUnit;
  }
  std::vector<__int128> quota = near_increment_quotas(increment, deficit);
  if (quota.empty()) quota = largest_remainder_quotas(deficit);
  std::vector<uint32_t> quotas(n);
  uint64_t sum = 0;
  for (size_t s = 0; s < n; ++s) {
    quotas[s] = checked_cast<uint32_t>(static_cast<int64_t>(quota[s]));
    realized_[s] += quotas[s];
    sum += quotas[s];
  }
  MSD_CHECK_EQ(sum, uint64_t{batch_});
  ++step_;
  update_target_samples();
  return quotas;
}

// Each quota floor(increment) or one more: the increments' fractions add up to
// a whole number r of samples, which go to the r sources furthest behind. This
// keeps every step's quota within one sample of batch * w_s, so it is the first
// choice; it is taken only when it also leaves every source less than one
// sample from its target (always, in tests, while weights are constant).
// Returns an empty vector otherwise.
std::vector<__int128> Mixer::near_increment_quotas(const std::vector<uint64_t>& increment,
                                                   const std::vector<__int128>& deficit) const {
  const size_t n = deficit.size();
  std::vector<__int128> quota(n);
  std::vector<__int128> lead(n);  // deficit left after the whole part of the increment
  __int128 given = 0;
  for (size_t s = 0; s < n; ++s) {
    quota[s] = increment[s] / kUnit;
    lead[s] = deficit[s] - quota[s] * kUnit;
    given += quota[s];
  }
  const __int128 extra = batch_ - given;
  MSD_CHECK(extra >= 0 && extra <= static_cast<__int128>(n));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lead[a] != lead[b] ? lead[a] > lead[b] : a < b; });
  for (size_t i = 0; i < n; ++i) {
    const size_t s = order[i];
    const bool more = static_cast<__int128>(i) < extra;
    const __int128 error = lead[s] - (more ? kUnit : 0);
    if (error <= -kUnit || error >= kUnit) return {};
    quota[s] += more ? 1 : 0;
  }
  return quota;
}

// Largest remainder against the running targets: floor(deficit) clamped at 0,
// the rest one by one to the largest remainders. Never leaves a source a whole
// sample ahead; leaves none a whole sample behind unless clamping hands out
// more than the batch (see mix.h).
std::vector<__int128> Mixer::largest_remainder_quotas(const std::vector<__int128>& deficit) const {
  const size_t n = deficit.size();
  std::vector<__int128> quota(n);
  __int128 assigned = 0;
  for (size_t s = 0; s < n; ++s) {
    quota[s] = std::max<__int128>(floor_units(deficit[s]), 0);
    assigned += quota[s];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (assigned <= batch_) {
    // A source ahead (deficit < 0) was clamped to 0 and gets nothing more. The
    // deficits sum to exactly batch, so the remainders of the others cover
    // what is left to give with at most one each.
    const auto remainder = [&](size_t s) { return deficit[s] - floor_units(deficit[s]) * kUnit; };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const bool a_open = deficit[a] >= 0, b_open = deficit[b] >= 0;
      if (a_open != b_open) return a_open;
      const __int128 ra = remainder(a), rb = remainder(b);
      return ra != rb ? ra > rb : a < b;
    });
    const __int128 left = batch_ - assigned;
    MSD_CHECK(left <= static_cast<__int128>(n));
    for (__int128 i = 0; i < left; ++i) {
      const size_t s = order[static_cast<size_t>(i)];
      MSD_CHECK(deficit[s] >= 0 && remainder(s) > 0);
      quota[s] += 1;
    }
    return quota;
  }
  // Clamping gave away more than the batch: sources ahead of target hold a
  // surplus they cannot return. Take the excess back, one sample per source
  // per round, from the sources that would end furthest ahead (ties: higher
  // index, mirroring the lower-index preference when giving).
  __int128 excess = assigned - batch_;
  while (excess > 0) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const __int128 ea = deficit[a] - quota[a] * kUnit, eb = deficit[b] - quota[b] * kUnit;
      return ea != eb ? ea < eb : a > b;
    });
    for (size_t s : order) {
      if (excess == 0) break;
      if (quota[s] == 0) continue;
      quota[s] -= 1;
      excess -= 1;
    }
  }
  return quota;
}

void Mixer::restore(uint64_t step, const std::vector<uint64_t>& realized) { restore(step, realized, 0, {}); }

void Mixer::restore(uint64_t step, const std::vector<uint64_t>& realized, uint64_t origin_step,
                    const std::vector<uint64_t>& origin) {
  const size_t n = schedule_.sources();
  if (realized.size() != n || (!origin.empty() && origin.size() != n))
    throw Error(str("mix: restoring ", realized.size(), " realized totals (origin: ", origin.size(),
                    ") into a schedule of ", n, " sources"));
  if (origin_step > step) throw Error(str("mix: an origin at step ", origin_step, " after step ", step));
  __int128 sum = 0, origin_sum = 0;
  for (uint64_t r : realized) sum += r;
  for (uint64_t o : origin) origin_sum += o;
  if (sum != origin_sum + static_cast<__int128>(step - origin_step) * batch_)
    throw Error(str("mix: realized totals at step ", step, " do not sum to ", static_cast<uint64_t>(origin_sum), " + (", step, " - ",
                    origin_step, ") * ", batch_));
  std::vector<__int128> target(n, 0);
  for (size_t s = 0; s < origin.size(); ++s) target[s] = static_cast<__int128>(origin[s]) * kUnit;
  for (uint64_t u = origin_step; u < step;) {
    const uint64_t until = std::min(schedule_.next_change(u), step);
    const std::vector<uint64_t> increment = increments(u);
    for (size_t s = 0; s < n; ++s) target[s] += static_cast<__int128>(increment[s]) * (until - u);
    u = until;
  }
  for (size_t s = 0; s < n; ++s) {
    if (static_cast<__int128>(realized[s]) * kUnit - target[s] >= kUnit)
      throw Error(str("mix: realized total ", realized[s], " of source ", s, " at step ", step,
                      " is a whole sample ahead of its target: not a state of this schedule"));
  }
  target_units_ = std::move(target);
  realized_ = realized;
  step_ = step;
  update_target_samples();
}

void Mixer::update_target_samples() {
  for (size_t s = 0; s < target_units_.size(); ++s)
    target_[s] = static_cast<double>(target_units_[s]) / static_cast<double>(kUnit);
}

}  // namespace msd
