#include "plan/step/bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "common/error.h"

namespace msd {
namespace {

// Fekete and Schepers' dual-feasible function u_k (2001) of a piece's share
// x = length / sequence of a sequence: x when (k + 1) x is whole, else
// floor((k + 1) x) / k. Pieces whose shares fit in a sequence (sum <= 1)
// have u_k summing to at most 1, so u_k may stand for positions in a
// class's room: a piece over half a sequence (k = 1) or two thirds (k = 2)
// fills a sequence's whole room, and the relaxation can no longer put two
// such pieces in one sequence. Integer arithmetic: exact.
double fekete_schepers(uint64_t length, uint64_t sequence, uint32_t k) {
  const uint64_t scaled = (uint64_t{k} + 1) * length;
  if (scaled % sequence == 0) return static_cast<double>(length) / static_cast<double>(sequence);
  return static_cast<double>(scaled / sequence) / k;
}

// The dual-feasible functions tried beside positions: u_1 .. u_kDffs.
constexpr uint32_t kDffs = 2;

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
//
// Room by u_k: a piece's positions may be replaced by sigma * u_k of its
// share of a sequence (its room q; C_j = j * sigma, no cap, r = e / q),
// since a bucket of j sequences holds pieces of u_k summing to at most j.
// Pieces of no room (u_k = 0) weigh their extra times the lowest slope.
// Classes then go up to every count of sequences a bucket under c may
// hold: a bucket of more sequences than its cap fills is no longer in the
// class of the fewest.
//
// Huge pieces kept whole: the pieces of the most extra (e_max, within
// rounding), when two of them cost more than c together (2 e_max plus the
// sequences their positions fill), so no bucket under c holds two. Classes
// (j, 0) then hold none of them and classes (j, 1) one, which leaves the
// others at most C_j - p_min positions and c - j - e_min extras (p_min,
// e_min: the least positions and extra of a huge piece). A huge piece weighs
// mu, and the lines of the classes (j, 1) are scaled by 1 - mu, so a bucket
// still weighs at most 1. The fractional relaxation can then no longer
// spread a huge piece's extra over several buckets: at 512 DP ranks x 32k,
// about 400 pieces of a full sequence each, and the ranks that hold one
// have room only for pieces of little extra.
class SequenceClasses {
 public:
  static constexpr size_t kBins = 2048;
  static constexpr uint32_t kMaxClasses = 48;

  // `dff` 0: a piece fills a class's room by its positions; k >= 1: by the
  // Fekete-Schepers function u_k of its share of a sequence (above).
  SequenceClasses(std::span<const uint32_t> lengths, std::span<const double> costs, const BoundShape& shape,
                  const CostModel& cost, uint32_t dff)
      : dp_(shape.dp), dff_(dff) {
    const double unit = cost.padding(shape.seq_len);
    const double seq_len = shape.seq_len;
    const uint64_t sequence = std::min<uint64_t>(shape.seq_len, shape.limit);
    sigma_ = static_cast<double>(sequence) / seq_len;
    cap_ = static_cast<double>(shape.micro_batches) * static_cast<double>(shape.limit) / seq_len;
    // With positions, a bucket of more sequences than fill its cap is in
    // the class of the fewest that do (its room, looser extras). Under u_k
    // every sequence adds room, so each count is a class, and a step whose
    // buckets may hold more than kMaxClasses sequences is left to positions.
    room_cap_ = dff == 0 ? cap_ : INFINITY;
    most_classes_ = dff == 0 ? static_cast<uint32_t>(std::min<double>(kMaxClasses, std::ceil(cap_ / sigma_))) : kMaxClasses;
    pieces_.reserve(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      const double p = lengths[i] / seq_len;
      const double q = dff == 0 ? p : sigma_ * fekete_schepers(lengths[i], sequence, dff);
      const double e = std::max(0.0, costs[i] - cost.padding(lengths[i])) / unit;
      pieces_.push_back({p, q, e});
      if (q > 0.0) max_ratio_ = std::max(max_ratio_, e / q);
      max_extra_ = std::max(max_extra_, e);
    }
    for (const Piece& piece : pieces_)
      if (piece.e >= max_extra_ * (1.0 - 1e-9)) top_room_ = std::min(top_room_, piece.q);
  }

  // True when weights prove that no plan's heaviest bucket is <= c, the
  // huge pieces kept whole when there are (above).
  bool unreachable(double c) {
    if (dff_ > 0 && std::ceil(c) - 1.0 > kMaxClasses) return false;  // buckets of more sequences than classes
    const uint32_t classes = static_cast<uint32_t>(std::min<double>(most_classes_, std::ceil(c) - 1.0));
    if (classes < 1) {  // every piece needs a sequence, which costs 1
      huge_count_ = 0;
      return true;
    }
    if (!group(c, classes)) return true;  // a piece no bucket under c holds
    // Lines (j, 0) for j = 1..classes, then (j, 1); the weights found for
    // one maximum start the search for the next.
    const size_t lines = huge_count_ > 0 ? 2 * size_t{classes} : classes;
    if (theta_.size() != lines) theta_.resize(lines, 0.5);
    if (huge_count_ == 0) mu_ = 0.0;
    double best = weight(c);
    const double target = static_cast<double>(dp_) * (1.0 + 1e-9);
    for (int sweep = 0; sweep < 3 && best <= target; ++sweep) {
      const double before = best;
      for (size_t j = 0; j < lines && best <= target; ++j)
        if (j < classes || j - classes + 1 >= first_with_) best = std::max(best, line_search(c, theta_[j]));
      if (huge_count_ > 0 && best <= target) best = std::max(best, line_search(c, mu_));
      if (best <= before * (1.0 + 1e-6)) break;
    }
    return best > target;
  }

  bool usable() const { return most_classes_ >= 1 && max_ratio_ > 0.0; }
  // Whether the last call to unreachable kept huge pieces whole.
  bool kept_whole() const { return huge_count_ > 0; }
  // Whether it fills sequences' room by u_k, not positions.
  bool by_room() const { return dff_ > 0; }

 private:
  struct Piece {
    double p;  // positions, in sequences
    double q;  // the room it fills (p, or u_k of its share of a sequence times sigma)
    double e;  // extra, in sequences' linear terms
  };
  struct Group {
    uint32_t classes;  // classes (j, 0) for j in 1..classes may hold it
    uint32_t with;     // classes (j, 1) for j in first_with_..with may hold it
    double room;       // the room its pieces fill
    double extra;      // their extras: room times the ratio rounded down, or (no room) the sum
  };

  // Groups the pieces for maximum c; false when some piece fits no class
  // (alone in a sequence it costs more than c). Pieces of room are grouped
  // by their extra per room, rounded down; those of none by classes alone.
  bool group(double c, uint32_t classes) {
    classes_ = classes;
    huge_count_ = 0;
    huge_p_ = huge_q_ = huge_e_ = INFINITY;
    // The huge pieces: those of the most extra, if two of them cost more
    // than c together (their extras and the sequences they fill).
    const double threshold = max_extra_ * (1.0 - 1e-9);
    if (2.0 * threshold + std::ceil(2.0 * top_room_ / sigma_ - 1e-9) > c)
      for (const Piece& piece : pieces_)
        if (piece.e >= threshold) {
          ++huge_count_;
          huge_p_ = std::min(huge_p_, piece.p), huge_q_ = std::min(huge_q_, piece.q), huge_e_ = std::min(huge_e_, piece.e);
        }
    if (huge_count_ > 0 && huge_e_ > c - 1.0) return false;
    // Classes (j, 1) leave room for other pieces from the first j whose
    // positions exceed a huge piece's.
    first_with_ = 1;
    while (first_with_ <= classes && std::min(first_with_ * sigma_, cap_) <= huge_p_) ++first_with_;
    const size_t withs = huge_count_ > 0 ? size_t{classes} + 1 : 1;
    constexpr size_t kKeys = kBins + 1;  // bin kBins: the pieces of no room
    sums_.assign((size_t{classes} + 1) * withs * kKeys, 0.0);
    for (const Piece& piece : pieces_) {
      if (huge_count_ > 0 && piece.e >= threshold) continue;
      const double room = std::floor(c - piece.e + 1e-9);
      const uint32_t k = room < 1.0 ? 0 : static_cast<uint32_t>(std::min<double>(classes, room));
      if (k == 0) return false;  // alone in a sequence it costs more than c
      uint32_t with = 0;
      if (huge_count_ > 0) {
        const double left = std::floor(c - huge_e_ - piece.e + 1e-9);
        with = left < first_with_ ? 0 : static_cast<uint32_t>(std::min<double>(classes, left));
      }
      const size_t key = (k * withs + with) * kKeys;
      if (piece.q > 0.0)
        sums_[key + std::min(kBins - 1, static_cast<size_t>(piece.e / piece.q / max_ratio_ * kBins))] += piece.q;
      else
        sums_[key + kBins] += piece.e;
    }
    groups_.clear();
    for (size_t key = 0; key < sums_.size(); ++key) {
      if (sums_[key] <= 0.0) continue;
      const size_t bin = key % kKeys, with = key / kKeys % withs, k = key / kKeys / withs;
      const double ratio = max_ratio_ * static_cast<double>(bin) / kBins * (1.0 - 1e-12);
      groups_.push_back({static_cast<uint32_t>(k), static_cast<uint32_t>(with), bin == kBins ? 0.0 : sums_[key],
                         bin == kBins ? sums_[key] : sums_[key] * ratio});
    }
    return true;
  }

  // The pieces' total weight under theta_ and mu_.
  double weight(double c) {
    const size_t lines = theta_.size();
    slope_.resize(lines);
    level_.resize(lines);
    for (size_t i = 0; i < lines; ++i) {
      const bool with = i >= classes_;
      const double j = static_cast<double>((with ? i - classes_ : i) + 1);
      const double scale = with ? 1.0 - mu_ : 1.0;
      const double room = std::min(j * sigma_, room_cap_) - (with ? huge_q_ : 0.0);
      const double extras = c - j - (with ? huge_e_ : 0.0);
      level_[i] = room > 0.0 ? scale * theta_[i] / room : INFINITY;
      slope_[i] = extras > 0.0 ? scale * (1.0 - theta_[i]) / extras : 1e300;  // finite: 0 * slope is 0
    }
    double total = mu_ * static_cast<double>(huge_count_);
    const auto at = [&](const Group& g, size_t i) { return (g.room > 0.0 ? g.room * level_[i] : 0.0) + g.extra * slope_[i]; };
    for (const Group& g : groups_) {
      double lowest = INFINITY;
      for (uint32_t j = 0; j < g.classes; ++j) lowest = std::min(lowest, at(g, j));
      for (uint32_t j = first_with_; j <= g.with; ++j) lowest = std::min(lowest, at(g, classes_ + j - 1));
      total += lowest;
    }
    return total;
  }

  // Golden-section search of one weight in [0, 1] (the total is concave in
  // it); keeps the best and returns its weight.
  double line_search(double c, double& x) {
    const double golden = 0.5 * (std::sqrt(5.0) - 1.0);
    double lo = 0.0, hi = 1.0;
    double best_x = x, best = weight(c);
    const auto at = [&](double t) {
      x = t;
      const double w = weight(c);
      if (w > best) best = w, best_x = t;
      return w;
    };
    double x1 = hi - golden * (hi - lo), x2 = lo + golden * (hi - lo);
    double f1 = at(x1), f2 = at(x2);
    for (int it = 0; it < 8; ++it) {
      if (f1 < f2) {
        lo = x1, x1 = x2, f1 = f2, x2 = lo + golden * (hi - lo), f2 = at(x2);
      } else {
        hi = x2, x2 = x1, f2 = f1, x1 = hi - golden * (hi - lo), f1 = at(x1);
      }
    }
    at(0.0);
    at(1.0);
    x = best_x;
    return best;
  }

  uint32_t dp_, dff_;
  double sigma_ = 1.0, cap_ = 1.0, room_cap_ = 1.0, max_ratio_ = 0.0, max_extra_ = 0.0, top_room_ = INFINITY;
  uint32_t most_classes_ = 0, classes_ = 0, first_with_ = 1;
  size_t huge_count_ = 0;
  double huge_p_ = INFINITY, huge_q_ = INFINITY, huge_e_ = INFINITY, mu_ = 0.0;
  std::vector<Piece> pieces_;
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
  // The sequence classes (the huge pieces kept whole where they qualify),
  // bisected between what is proven and the plan.
  const double unit = cost.padding(shape.seq_len);
  if (n == 0 || unit <= 0.0 || high <= bound.cost) return bound;
  // One search per way of filling a sequence's room: positions, then u_1 ..
  // u_kDffs, each from what the ones before proved (one probe for a search
  // that proves no more), bisected up to the plan. The bound often lands
  // within a few percent of the plan: the first probe is 2% below it, then
  // plain bisection to kTolerance.
  constexpr double kTolerance = 2e-4;
  double lo = bound.cost / unit * (1.0 + 1e-9);
  const double plan = high / unit;
  bool proven = false, whole = false, room = false;  // how the best proof went
  for (uint32_t dff = 0; dff <= kDffs; ++dff) {
    SequenceClasses classes(lengths, costs, shape, cost, dff);
    const double more = proven ? lo * (1.0 + kTolerance) : lo;
    if (more >= plan || !classes.usable() || !classes.unreachable(more)) continue;
    lo = more, proven = true;
    whole = classes.kept_whole(), room = classes.by_room();
    double hi = plan;
    for (int it = 0; it < 16 && hi - lo > kTolerance * lo; ++it) {
      const double mid = it == 0 ? std::max(0.5 * (lo + hi), hi * 0.98) : 0.5 * (lo + hi);
      if (classes.unreachable(mid))
        lo = mid, whole = classes.kept_whole(), room = classes.by_room();
      else
        hi = mid;
    }
  }
  if (!proven) return bound;  // adds nothing to the other terms
  bound.class_cost = lo * unit;
  if (whole) bound.whole_cost = bound.class_cost;
  if (room) bound.room_cost = bound.class_cost;
  bound.cost = std::max(bound.cost, bound.class_cost);
  return bound;
}

}  // namespace msd
