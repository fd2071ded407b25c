#include "plan/step/balance.h"

#include <algorithm>
#include <bit>
#include <memory_resource>
#include <queue>
#include <set>
#include <utility>

#include "common/error.h"

namespace msd {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// The lightest of k bins by (load, index), a total order, so it is the same
// bin whatever structure finds it: a winner tree, each node a copy of the
// lighter of its two children. A changed load walks one path to the root,
// comparing with the siblings on it; the winner so far stays in registers,
// so the walk is not a chain of dependent loads, and its comparisons branch
// less than a heap's sift-down.
class LightestBins {
 public:
  explicit LightestBins(uint32_t bins) : leaves_(std::bit_ceil(std::max<uint32_t>(bins, 1))) {
    tree_.assign(2 * leaves_, kAside);
    for (uint32_t b = 0; b < bins; ++b) tree_[leaves_ + b] = key(0.0, b);
    for (size_t node = leaves_ - 1; node >= 1; --node) tree_[node] = std::min(tree_[2 * node], tree_[2 * node + 1]);
  }
  // kNone once every bin is set aside.
  uint32_t lightest() const { return static_cast<uint32_t>(tree_[1]); }
  double load(uint32_t bin) const { return std::bit_cast<double>(static_cast<uint64_t>(tree_[leaves_ + bin] >> 32)); }
  void add(uint32_t bin, double weight) { update(bin, key(load(bin) + weight, bin)); }
  // Takes `bin` out of lightest() until restore(bin, its load).
  void set_aside(uint32_t bin) { update(bin, kAside); }
  void restore(uint32_t bin, double load) { update(bin, key(load, bin)); }

 private:
  // (load, bin) as one unsigned number: a non-negative double's bits order
  // like its value, so one comparison orders by load, ties by bin, and the
  // walk selects without a branch.
  using Key = unsigned __int128;
  static Key key(double load, uint32_t bin) { return (Key{std::bit_cast<uint64_t>(load)} << 32) | bin; }
  static constexpr Key kAside = ~Key{0} >> 32 << 32 | kNone;  // above every load; bin kNone

  void update(uint32_t bin, Key node) {
    size_t at = leaves_ + bin;
    tree_[at] = node;
    for (; at > 1; at /= 2) {
      node = std::min(node, tree_[at ^ 1]);
      tree_[at / 2] = node;
    }
  }

  size_t leaves_;
  std::vector<Key> tree_;
};

// LPT: each item, heaviest first, to the lightest bin (ties: lower index).
std::vector<uint32_t> greedy(std::span<const double> weights, uint32_t bins) {
  std::vector<uint32_t> bin_of(weights.size());
  LightestBins bins_by_load(bins);
  for (size_t i = 0; i < weights.size(); ++i) {
    bin_of[i] = bins_by_load.lightest();
    bins_by_load.add(bin_of[i], weights[i]);
  }
  return bin_of;
}

// LPT under a capacity: each item to the lightest bin with room for its size
// (ties: lower index); one that fits nowhere goes to the bin with the most
// room (ties: lower index). Bins without room for one item are set aside
// only while it is placed, so the lightest bin with room is found in
// O(log k) per bin passed over.
std::vector<uint32_t> greedy_within(std::span<const double> weights, std::span<const uint64_t> sizes,
                                    uint64_t capacity, uint32_t bins) {
  std::vector<uint32_t> bin_of(weights.size());
  std::vector<uint64_t> held(bins, 0);
  LightestBins bins_by_load(bins);
  std::vector<std::pair<uint32_t, double>> full;  // set aside: bin, load
  for (size_t i = 0; i < weights.size(); ++i) {
    full.clear();
    uint32_t chosen = bins_by_load.lightest();
    while (chosen != kNone && held[chosen] + sizes[i] > capacity) {
      full.emplace_back(chosen, bins_by_load.load(chosen));
      bins_by_load.set_aside(chosen);
      chosen = bins_by_load.lightest();
    }
    for (const auto& [bin, load] : full) bins_by_load.restore(bin, load);
    if (chosen == kNone)
      chosen = std::min_element(full.begin(), full.end(), [&](const auto& x, const auto& y) {
                 return held[x.first] != held[y.first] ? held[x.first] < held[y.first] : x.first < y.first;
               })->first;
    bin_of[i] = chosen;
    held[chosen] += sizes[i];
    bins_by_load.add(chosen, weights[i]);
  }
  return bin_of;
}

// k-way largest differencing.
//
// A partial partition ("tuple") is k bins, of which only the non-empty ones are
// stored, in a min-heap by (sum, subset). Combining tuples A and B pairs A's
// bins sorted descending with B's sorted ascending. B's empty bins are its
// smallest, so they meet A's largest bins and change nothing: only B's s
// non-empty bins matter, and they (largest first) join A's s smallest bins
// (empty ones first). Doing that from the side with fewer non-empty bins
// costs O(s log k). Sums stay absolute: the textbook subtracts each tuple's
// minimum, which changes neither the order within a tuple nor its spread.
//
// A bin's items are a linked list (next_) so joining two bins is O(1); a bin
// is named by its first item.
class Differencing {
 public:
  Differencing(std::span<const double> weights, uint32_t bins)
      : weights_(weights), bins_(bins), next_(weights.size(), kNone), tail_(weights.size()) {
    for (uint32_t i = 0; i < weights.size(); ++i) tail_[i] = i;
  }

  std::vector<uint32_t> run() {
    const size_t n = weights_.size();
    std::vector<uint32_t> bin_of(n, 0);
    if (n == 0) return bin_of;
    tuples_.resize(n);
    // Largest spread first; ties: the tuple made earlier (singletons in item
    // order), so the run is a function of the sorted weights alone.
    using Rank = std::pair<double, int64_t>;  // (spread, -order)
    std::priority_queue<Rank> queue;
    std::vector<uint32_t> slot_of_order(n);
    for (uint32_t i = 0; i < n; ++i) {
      tuples_[i].heap.push_back({weights_[i], i});
      tuples_[i].max = weights_[i];
      slot_of_order[i] = i;
      queue.push({spread(tuples_[i]), -static_cast<int64_t>(i)});
    }
    while (queue.size() > 1) {
      const uint32_t first = slot_of_order[static_cast<size_t>(-queue.top().second)];
      queue.pop();
      const uint32_t second = slot_of_order[static_cast<size_t>(-queue.top().second)];
      queue.pop();
      const bool first_larger = tuples_[first].heap.size() >= tuples_[second].heap.size();
      const uint32_t into = first_larger ? first : second;
      combine(tuples_[into], tuples_[first_larger ? second : first]);
      slot_of_order.push_back(into);
      queue.push({spread(tuples_[into]), -static_cast<int64_t>(slot_of_order.size() - 1)});
    }
    const uint32_t last = slot_of_order[static_cast<size_t>(-queue.top().second)];
    std::vector<Bin> final_bins = std::move(tuples_[last].heap);
    std::sort(final_bins.begin(), final_bins.end(), [](const Bin& a, const Bin& b) {
      return a.sum != b.sum ? a.sum > b.sum : a.subset < b.subset;
    });
    MSD_CHECK_LE(final_bins.size(), static_cast<size_t>(bins_));
    for (uint32_t b = 0; b < final_bins.size(); ++b)
      for (uint32_t item = final_bins[b].subset; item != kNone; item = next_[item]) bin_of[item] = b;
    return bin_of;
  }

 private:
  struct Bin {
    double sum;
    uint32_t subset;  // first item; kNone for an empty bin
    // Min-heap order (std heap functions build max-heaps, hence the reversal).
    bool operator<(const Bin& other) const {
      return sum != other.sum ? sum > other.sum : subset > other.subset;
    }
  };
  struct Tuple {
    std::vector<Bin> heap;  // non-empty bins, lightest on top
    double max = 0.0;
  };

  double spread(const Tuple& t) const {
    const double min = t.heap.size() < bins_ ? 0.0 : t.heap.front().sum;
    return t.max - min;
  }

  uint32_t join(uint32_t a, uint32_t b) {
    if (a == kNone) return b;
    next_[tail_[a]] = b;
    tail_[a] = tail_[b];
    return a;
  }

  // a := a combined with b, where b has no more non-empty bins than a.
  void combine(Tuple& a, Tuple& b) {
    std::vector<Bin>& small = b.heap;
    std::sort(small.begin(), small.end(), [](const Bin& x, const Bin& y) {
      return x.sum != y.sum ? x.sum > y.sum : x.subset < y.subset;
    });
    const size_t s = small.size();
    lightest_.clear();
    size_t empty = bins_ - a.heap.size();
    while (lightest_.size() < s) {
      if (empty > 0) {
        lightest_.push_back({0.0, kNone});
        --empty;
      } else {
        std::pop_heap(a.heap.begin(), a.heap.end());
        lightest_.push_back(a.heap.back());
        a.heap.pop_back();
      }
    }
    for (size_t i = 0; i < s; ++i) {
      const Bin joined{lightest_[i].sum + small[i].sum, join(lightest_[i].subset, small[i].subset)};
      a.max = std::max(a.max, joined.sum);
      a.heap.push_back(joined);
      std::push_heap(a.heap.begin(), a.heap.end());
    }
    std::vector<Bin>().swap(small);
  }

  std::span<const double> weights_;
  uint32_t bins_;
  std::vector<uint32_t> next_, tail_;
  std::vector<Tuple> tuples_;
  std::vector<Bin> lightest_;
};

// The items of each bin as a list in the order they came (doubly linked
// through the items): a move is O(1) and allocates nothing.
class Members {
 public:
  Members(uint32_t bins, uint32_t items) : first_(bins, kNone), last_(bins, kNone), next_(items), prev_(items) {}
  uint32_t first(uint32_t bin) const { return first_[bin]; }
  uint32_t next(uint32_t item) const { return next_[item]; }
  void append(uint32_t bin, uint32_t item) {
    prev_[item] = last_[bin];
    next_[item] = kNone;
    (last_[bin] == kNone ? first_[bin] : next_[last_[bin]]) = item;
    last_[bin] = item;
  }
  void remove(uint32_t bin, uint32_t item) {
    (prev_[item] == kNone ? first_[bin] : next_[prev_[item]]) = next_[item];
    (next_[item] == kNone ? last_[bin] : prev_[next_[item]]) = prev_[item];
  }

 private:
  std::vector<uint32_t> first_, last_, next_, prev_;
};

// Improves a partition by moves and swaps out of the heaviest bin: each round
// takes the heaviest bin (ties: lower index) and, against the lightest few
// bins, applies the single move or swap that brings the pair's heavier side
// lowest, if it lowers the heaviest bin at all. Each round lowers the
// heaviest bin or the number of bins at that load, so it ends; the round cap
// bounds the time when the partition is already close to flat. With `sizes`
// (not empty) no move or swap takes a bin over `capacity` of them.
void refine(std::span<const double> weights, std::vector<uint32_t>& bin_of, uint32_t bins,
            std::span<const uint64_t> sizes = {}, uint64_t capacity = UINT64_MAX) {
  if (bins < 2 || weights.size() < 2) return;
  constexpr size_t kPartners = 8;
  const size_t max_rounds = std::min<size_t>(4 * static_cast<size_t>(bins), 2048);
  std::vector<double> load(bins, 0.0);
  std::vector<uint64_t> held(bins, 0);
  Members members(bins, static_cast<uint32_t>(weights.size()));
  const auto size = [&](uint32_t item) { return sizes.empty() ? uint64_t{0} : sizes[item]; };
  for (uint32_t i = 0; i < weights.size(); ++i) {
    load[bin_of[i]] += weights[i];
    held[bin_of[i]] += size(i);
    members.append(bin_of[i], i);
  }
  // Many bins (DP buckets) and more than a few rounds: the bins ordered by
  // (load, index) find the heaviest (the first of the highest load) and the
  // lightest in O(log bins) a round instead of two passes over every bin;
  // the same bins either way.
  constexpr size_t kPassRounds = 8;
  bool ordered = false;
  std::pmr::monotonic_buffer_resource nodes;  // once ordered, a move re-keys nodes: no allocation
  std::pmr::set<std::pair<double, uint32_t>> by_load(&nodes);
  const auto shift = [&](uint32_t bin, double delta) {  // load[bin] += delta, by_load kept in order
    if (!ordered) {
      load[bin] += delta;
      return;
    }
    auto node = by_load.extract({load[bin], bin});
    load[bin] += delta;
    node.value().first = load[bin];
    by_load.insert(std::move(node));
  };
  std::vector<uint32_t> partners;
  partners.reserve(kPartners + 1);
  for (size_t round = 0; round < max_rounds; ++round) {
    if (!ordered && bins > 64 && round == kPassRounds) {
      ordered = true;
      for (uint32_t b = 0; b < bins; ++b) by_load.insert({load[b], b});
    }
    // The `count` lightest bins in order.
    const size_t count = std::min<size_t>(kPartners, bins);
    const auto lighter = [&](uint32_t x, uint32_t y) { return load[x] != load[y] ? load[x] < load[y] : x < y; };
    partners.clear();
    uint32_t heavy = 0;
    if (ordered) {
      heavy = by_load.lower_bound({std::prev(by_load.end())->first, 0})->second;
      for (auto it = by_load.begin(); partners.size() < count; ++it) partners.push_back(it->second);
    } else {
      heavy = static_cast<uint32_t>(std::max_element(load.begin(), load.end()) - load.begin());
      for (uint32_t b = 0; b < bins; ++b) {
        if (partners.size() == count && !lighter(b, partners.back())) continue;
        if (partners.size() == count) partners.pop_back();
        partners.insert(std::upper_bound(partners.begin(), partners.end(), b, lighter), b);
      }
    }
    // Best change: the pair's new heavier side; must be below load[heavy].
    double best = load[heavy];
    uint32_t best_partner = heavy, best_out = UINT32_MAX, best_in = UINT32_MAX;
    for (size_t p = 0; p < count; ++p) {
      const uint32_t light = partners[p];
      if (light == heavy) continue;
      const double gap = load[heavy] - load[light];
      for (uint32_t out = members.first(heavy); out != kNone; out = members.next(out)) {
        const double moved = std::max(load[heavy] - weights[out], load[light] + weights[out]);
        if (moved < best && held[light] + size(out) <= capacity) {
          best = moved;
          best_partner = light;
          best_out = out;
          best_in = UINT32_MAX;
        }
        if (weights[out] >= gap + weights[out]) continue;
        for (uint32_t in = members.first(light); in != kNone; in = members.next(in)) {
          const double delta = weights[out] - weights[in];
          if (delta <= 0.0 || delta >= gap) continue;
          const double swapped = std::max(load[heavy] - delta, load[light] + delta);
          if (swapped < best && held[light] + size(out) - size(in) <= capacity &&
              held[heavy] + size(in) - size(out) <= capacity) {
            best = swapped;
            best_partner = light;
            best_out = out;
            best_in = in;
          }
        }
      }
    }
    if (best_out == UINT32_MAX) return;
    const auto take = [&](uint32_t bin, uint32_t item) {
      members.remove(bin, item);
      shift(bin, -weights[item]);
      held[bin] -= size(item);
    };
    const auto put = [&](uint32_t bin, uint32_t item) {
      members.append(bin, item);
      shift(bin, weights[item]);
      held[bin] += size(item);
      bin_of[item] = bin;
    };
    take(heavy, best_out);
    put(best_partner, best_out);
    if (best_in != UINT32_MAX) {
      take(best_partner, best_in);
      put(heavy, best_in);
    }
  }
}

}  // namespace

BalanceMethod parse_balance_method(const std::string& name, const std::string& what) {
  if (name == "karmarkar-karp" || name == "kk") return BalanceMethod::karmarkar_karp;
  if (auto method = find_option_value<BalanceMethod>(name)) return *method;
  throw ConfigError(str(what, ": unknown balance method '", name, "' (tokens, greedy or karmarkar_karp)"));
}

std::vector<uint32_t> balance(std::span<const double> weights, uint32_t bins, BalanceMethod method) {
  MSD_CHECK_LE(1u, bins);
  for (size_t i = 0; i < weights.size(); ++i) {
    MSD_CHECK_LE(0.0, weights[i]);
    if (i > 0) MSD_CHECK_LE(weights[i], weights[i - 1]);
  }
  std::vector<uint32_t> bin_of;
  switch (method) {
    case BalanceMethod::tokens: return greedy(weights, bins);
    case BalanceMethod::greedy: bin_of = greedy(weights, bins); break;
    case BalanceMethod::karmarkar_karp: bin_of = Differencing(weights, bins).run(); break;
  }
  refine(weights, bin_of, bins);
  return bin_of;
}

std::vector<uint32_t> balance_within(std::span<const double> weights, std::span<const uint64_t> sizes,
                                     uint64_t capacity, uint32_t bins, BalanceMethod method) {
  MSD_CHECK_EQ(weights.size(), sizes.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    MSD_CHECK_LE(0.0, weights[i]);
    if (i > 0) MSD_CHECK_LE(weights[i], weights[i - 1]);
  }
  std::vector<uint32_t> bin_of;
  if (method == BalanceMethod::karmarkar_karp) {
    bin_of = Differencing(weights, bins).run();
    std::vector<uint64_t> held(bins, 0);
    for (size_t i = 0; i < sizes.size(); ++i) held[bin_of[i]] += sizes[i];
    if (std::none_of(held.begin(), held.end(), [&](uint64_t h) { return h > capacity; })) {
      refine(weights, bin_of, bins, sizes, capacity);
      return bin_of;
    }
  }
  // LPT within the capacity is plain LPT when the capacity never binds.
  bin_of = greedy_within(weights, sizes, capacity, bins);
  if (method != BalanceMethod::tokens) refine(weights, bin_of, bins, sizes, capacity);
  return bin_of;
}

}  // namespace msd
