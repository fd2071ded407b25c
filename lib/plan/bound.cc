#include "plan/bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "common/error.h"

namespace msd {
namespace {

// The sequence-class bound, in units of one sequence's linear term (a *
// seq_len). A bucket of class j holds j sequences: it costs j plus its
// pieces' extras, so under a maximum c its extras are at most c - j, its
// positions at most C_j = min(j * sigma, cap) (sigma: a sequence's positions
// within the limit; cap: the bucket's), and a piece of extra e may sit in it
// only if e <= c - j. The fractional assignment's dual: per class j a line
// w_j(r) = theta_j / C_j + (1 - theta_j) * r / (c - j) over a piece's extra
// per position r, so that a class-j bucket weighs at most 1; a piece weighs
// its positions times the lowest line it may use. Weights summing over dp
// prove c unreachable. Pieces are grouped by (classes they may use, r
// rounded down): rounding down only lowers the weights, so the proof holds.
class SequenceClasses {
 public:
  static constexpr size_t kBins = 2048;
  static constexpr uint32_t kMaxClasses = 48;

  SequenceClasses(std::span<const uint32_t> lengths, std::span<const double> costs, const BoundShape& shape,
                  const CostModel& cost)
      : dp_(shape.dp) {
    const double unit = cost.padding(shape.seq_len);
    const double seq_len = shape.seq_len;
    sigma_ = static_cast<double>(std::min<uint64_t>(shape.seq_len, shape.limit)) / seq_len;
    cap_ = static_cast<double>(shape.micro_batches) * static_cast<double>(shape.limit) / seq_len;
    most_classes_ = static_cast<uint32_t>(std::min<double>(kMaxClasses, std::ceil(cap_ / sigma_)));
    pieces_.reserve(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      const double p = lengths[i] / seq_len;
      const double e = std::max(0.0, costs[i] - cost.padding(lengths[i])) / unit;
      pieces_.push_back({p, e});
      max_ratio_ = std::max(max_ratio_, e / p);
    }
  }

  // True when weights prove that no plan's heaviest bucket is <= c.
  bool unreachable(double c) {
    const uint32_t classes = static_cast<uint32_t>(std::min<double>(most_classes_, std::ceil(c) - 1.0));
    if (classes < 1) return true;  // every piece needs a sequence, which costs 1
    group(c, classes);
    if (groups_.empty()) return false;
    if (theta_.size() != classes) theta_.assign(classes, 0.5);
    double best = weight(c);
    const double target = static_cast<double>(dp_) * (1.0 + 1e-9);
    for (int sweep = 0; sweep < 3 && best <= target; ++sweep) {
      const double before = best;
      for (uint32_t j = 0; j < classes && best <= target; ++j) best = std::max(best, line_search(c, j));
      if (best <= before * (1.0 + 1e-6)) break;
    }
    return best > target;
  }

  bool usable() const { return most_classes_ >= 1 && max_ratio_ > 0.0; }

 private:
  struct Group {
    uint32_t classes;  // classes 1..classes may hold it
    double ratio;      // extra per position, rounded down
    double positions;  // in sequences
  };

  // Groups the pieces for maximum c; sums[k * kBins + bin].
  void group(double c, uint32_t classes) {
    sums_.assign(static_cast<size_t>(classes + 1) * kBins, 0.0);
    for (const auto& [p, e] : pieces_) {
      const double room = std::floor(c - e + 1e-9);
      const uint32_t k = room < 1.0 ? 0 : static_cast<uint32_t>(std::min<double>(classes, room));
      const size_t bin = std::min(kBins - 1, static_cast<size_t>(e / p / max_ratio_ * kBins));
      sums_[k * kBins + bin] += p;
    }
    groups_.clear();
    for (uint32_t k = 0; k <= classes; ++k)
      for (size_t bin = 0; bin < kBins; ++bin)
        if (sums_[k * kBins + bin] > 0.0)
          groups_.push_back({k, max_ratio_ * static_cast<double>(bin) / kBins * (1.0 - 1e-12), sums_[k * kBins + bin]});
  }

  // The pieces' total weight under theta_ (a piece no class holds weighs
  // more than any bucket can: infinity).
  double weight(double c) {
    const size_t classes = theta_.size();
    slope_.resize(classes);
    level_.resize(classes);
    for (size_t j = 0; j < classes; ++j) {
      const double sequences = static_cast<double>(j + 1);
      level_[j] = theta_[j] / std::min(sequences * sigma_, cap_);
      slope_[j] = (1.0 - theta_[j]) / (c - sequences);
    }
    double total = 0.0;
    for (const Group& g : groups_) {
      if (g.classes == 0) return INFINITY;
      double lowest = INFINITY;
      for (uint32_t j = 0; j < g.classes; ++j) lowest = std::min(lowest, level_[j] + slope_[j] * g.ratio);
      total += g.positions * lowest;
    }
    return total;
  }

  // Golden-section search of theta_[j] (the weight is concave in it); keeps
  // the best and returns its weight.
  double line_search(double c, uint32_t j) {
    const double golden = 0.5 * (std::sqrt(5.0) - 1.0);
    double lo = 0.0, hi = 1.0;
    const double start = theta_[j];
    double best_theta = start, best = weight(c);
    const auto at = [&](double t) {
      theta_[j] = t;
      const double w = weight(c);
      if (w > best) best = w, best_theta = t;
      return w;
    };
    double x1 = hi - golden * (hi - lo), x2 = lo + golden * (hi - lo);
    double f1 = at(x1), f2 = at(x2);
    for (int it = 0; it < 18; ++it) {
      if (f1 < f2) {
        lo = x1, x1 = x2, f1 = f2, x2 = lo + golden * (hi - lo), f2 = at(x2);
      } else {
        hi = x2, x2 = x1, f2 = f1, x1 = hi - golden * (hi - lo), f1 = at(x1);
      }
    }
    at(0.0);
    at(1.0);
    theta_[j] = best_theta;
    return best;
  }

  uint32_t dp_;
  double sigma_ = 1.0, cap_ = 1.0, max_ratio_ = 0.0;
  uint32_t most_classes_ = 0;
  std::vector<std::pair<double, double>> pieces_;  // (positions, extra) in sequences
  std::vector<double> sums_, theta_, slope_, level_;
  std::vector<Group> groups_;
};

}  // namespace

StepBound step_bound(std::span<const uint32_t> lengths, std::span<const double> costs, const BoundShape& given,
                     const CostModel& cost, double high) {
  MSD_CHECK_EQ(lengths.size(), costs.size());
  const size_t n = lengths.size();
  // A piece longer than the limit (an image that fits nowhere) is placed over
  // it; the bound holds for the limit that plan keeps.
  BoundShape shape = given;
  for (const uint32_t length : lengths) shape.limit = std::max<uint64_t>(shape.limit, length);
  uint64_t total = 0;
  double sum = 0.0, own = 0.0;
  // A piece's cost beyond the linear term: what no packing shares out.
  std::vector<std::pair<double, uint32_t>> extra(n);
  for (size_t i = 0; i < n; ++i) {
    total += lengths[i];
    sum += costs[i];
    own = std::max(own, costs[i] + cost.padding(shape.seq_len - lengths[i]));
    extra[i] = {std::max(0.0, costs[i] - cost.padding(lengths[i])), lengths[i]};
  }
  StepBound bound;
  const uint64_t per_sequence = std::min<uint64_t>(shape.seq_len, std::max<uint64_t>(1, shape.limit));
  bound.min_sequences = (total + per_sequence - 1) / per_sequence;
  const double mean = (sum + cost.padding(bound.min_sequences * shape.seq_len - total)) / shape.dp;
  const uint64_t most = (bound.min_sequences + shape.dp - 1) / shape.dp;
  bound.cost = std::max({mean, cost.padding(most * uint64_t{shape.seq_len}), own});
  // Pigeonhole, padding-aware: of the t*dp + 1 pieces with the most extra
  // cost some bucket holds t + 1, so it costs at least the t + 1 smallest
  // extras among them plus the sequences the t + 1 shortest of them need.
  std::sort(extra.begin(), extra.end(), std::greater<>());
  std::vector<uint32_t> shortest;
  const size_t dp = shape.dp;
  for (size_t t = 1; t <= 8 && t * dp < n; ++t) {
    double extras = 0.0;
    for (size_t i = t * dp - t; i <= t * dp; ++i) extras += extra[i].first;
    shortest.clear();
    for (size_t i = 0; i <= t * dp; ++i) shortest.push_back(extra[i].second);
    std::nth_element(shortest.begin(), shortest.begin() + static_cast<ptrdiff_t>(t), shortest.end());
    uint64_t positions = 0;
    for (size_t i = 0; i <= t; ++i) positions += shortest[i];
    const uint64_t sequences = (positions + per_sequence - 1) / per_sequence;
    bound.cost = std::max(bound.cost, extras + cost.padding(sequences * uint64_t{shape.seq_len}));
  }
  // The sequence classes, bisected between what is proven and the plan.
  const double unit = cost.padding(shape.seq_len);
  if (n == 0 || unit <= 0.0 || high <= bound.cost) return bound;
  SequenceClasses classes(lengths, costs, shape, cost);
  if (!classes.usable()) return bound;
  double lo = bound.cost / unit * (1.0 + 1e-9), hi = high / unit;
  if (!classes.unreachable(lo)) return bound;  // adds nothing to the other terms
  for (int it = 0; it < 14 && hi - lo > 1e-4 * lo; ++it) {
    const double mid = 0.5 * (lo + hi);
    (classes.unreachable(mid) ? lo : hi) = mid;
  }
  bound.class_cost = lo * unit;
  bound.cost = std::max(bound.cost, bound.class_cost);
  return bound;
}

}  // namespace msd
