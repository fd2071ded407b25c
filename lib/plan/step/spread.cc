#include "plan/step/spread.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "common/error.h"
#include "plan/step/balance.h"
#include "plan/step/cuts.h"

namespace msd {
namespace {

using packing::PlacedPiece;

// What a piece weighs when ranks are balanced: its cost (or its positions,
// for tokens) plus its share of the micro-batches it fills.
struct Weigher {
  const CostModel& cost;
  bool by_positions = false;
  double overhead_per_position = 0.0;  // cost.micro_batch / budget
  double operator()(uint32_t length, uint32_t patches) const {
    if (by_positions) return static_cast<double>(length);
    return cost.document(length, patches) + overhead_per_position * length;
  }
};

// The ranks' pieces while they are placed; a piece's `cost` is its weight.
struct Ranks {
  std::vector<PlacedPiece> pieces;
  std::vector<std::vector<uint32_t>> members;  // per rank: indices into pieces
  std::vector<double> weight;
  std::vector<uint64_t> positions;
};

// Whether piece x goes before piece y: heavier, then (doc, begin).
bool heavier(const PlacedPiece& x, const PlacedPiece& y) {
  if (x.cost != y.cost) return x.cost > y.cost;
  return x.piece.doc != y.piece.doc ? x.piece.doc < y.piece.doc : x.piece.begin < y.piece.begin;
}

// Step 2: the pieces (heaviest first) over the ranks.
Ranks assign(std::vector<PlacedPiece> pieces, uint32_t dp, uint64_t capacity, BalanceMethod method) {
  std::vector<double> weights(pieces.size());
  std::vector<uint64_t> sizes(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    weights[i] = pieces[i].cost;
    sizes[i] = pieces[i].piece.length;
  }
  const std::vector<uint32_t> rank_of =
      balance_within(weights, sizes, capacity, dp, method == BalanceMethod::tokens ? BalanceMethod::greedy : method);
  Ranks ranks{std::move(pieces), std::vector<std::vector<uint32_t>>(dp), std::vector<double>(dp, 0.0),
              std::vector<uint64_t>(dp, 0)};
  for (uint32_t i = 0; i < rank_of.size(); ++i) {
    ranks.members[rank_of[i]].push_back(i);
    ranks.weight[rank_of[i]] += ranks.pieces[i].cost;
    ranks.positions[rank_of[i]] += ranks.pieces[i].piece.length;
  }
  return ranks;
}

// One change step 3 may make to the heaviest rank h for the lightest l:
// piece `piece` of h moved whole (cut 0) or its last `cut` positions moved.
struct Change {
  uint32_t piece = 0;
  uint32_t cut = 0;
  double most = std::numeric_limits<double>::infinity();  // the heavier of h and l after it
};

// The best change for the heaviest rank's heaviest text piece.
Change best_change(const Ranks& r, uint32_t h, uint32_t l, uint64_t room, bool may_cut, const Weigher& weigh,
                   double a_prime) {
  int64_t best = -1;
  for (uint32_t i : r.members[h]) {
    const PlacedPiece& p = r.pieces[i];
    if (p.patches == 0 && (best < 0 || heavier(p, r.pieces[static_cast<size_t>(best)]))) best = i;
  }
  Change change;
  if (best < 0) return change;
  change.piece = static_cast<uint32_t>(best);
  const PlacedPiece& p = r.pieces[change.piece];
  const uint32_t length = p.piece.length;
  const double wh = r.weight[h], wl = r.weight[l];
  if (length <= room) change.most = std::max(wh - p.cost, wl + p.cost);
  if (!may_cut || length < 2) return change;
  // w(y) = a' y + y^2: h - w(L) + w(L - x) = l + w(x) at x = gap / (2 (a' + L)).
  const double x = (wh - wl) / (2.0 * (a_prime + length));
  const uint64_t cut = std::min<uint64_t>({static_cast<uint64_t>(std::max(1.0, std::round(x))), length - 1u, room});
  if (cut == 0) return change;
  const double most = std::max(wh - p.cost + weigh(length - static_cast<uint32_t>(cut), 0),
                               wl + weigh(static_cast<uint32_t>(cut), 0));
  if (most < change.most) {
    change.cut = static_cast<uint32_t>(cut);
    change.most = most;
  }
  return change;
}

// Step 3: cuts (at most `spare`) and moves from the heaviest rank to the
// lightest while they lower the heavier of the two.
void spend_cuts(Ranks& r, uint64_t spare, uint64_t capacity, const Weigher& weigh, double a_prime) {
  const uint32_t dp = static_cast<uint32_t>(r.weight.size());
  if (dp < 2 || spare == 0) return;
  std::set<std::pair<double, uint32_t>> order;
  double total = 0.0;
  for (uint32_t i = 0; i < dp; ++i) {
    order.emplace(r.weight[i], i);
    total += r.weight[i];
  }
  const uint64_t rounds = 2 * spare + 16;
  for (uint64_t round = 0; round < rounds; ++round) {
    const uint32_t h = order.rbegin()->second, l = order.begin()->second;
    if (r.weight[h] <= total / dp * (1.0 + kCutTolerance)) return;
    const uint64_t room = capacity - std::min(capacity, r.positions[l]);
    const Change change = best_change(r, h, l, room, spare > 0, weigh, a_prime);
    if (!(change.most < r.weight[h])) return;
    order.erase({r.weight[h], h});
    order.erase({r.weight[l], l});
    total -= r.weight[h] + r.weight[l];
    PlacedPiece moved = r.pieces[change.piece];
    if (change.cut == 0) {
      auto& from = r.members[h];
      from.erase(std::find(from.begin(), from.end(), change.piece));
      r.members[l].push_back(change.piece);
    } else {
      PlacedPiece& head = r.pieces[change.piece];
      head.piece.length -= change.cut;
      head.cost = weigh(head.piece.length, 0);
      moved.piece.begin += head.piece.length;
      moved.piece.length = change.cut;
      moved.cost = weigh(change.cut, 0);
      r.members[l].push_back(static_cast<uint32_t>(r.pieces.size()));
      r.pieces.push_back(moved);
      --spare;
    }
    r.weight[h] = 0.0;
    for (uint32_t i : r.members[h]) r.weight[h] += r.pieces[i].cost;
    r.weight[l] += moved.cost;
    r.positions[h] -= moved.piece.length;
    r.positions[l] += moved.piece.length;
    total += r.weight[h] + r.weight[l];
    order.emplace(r.weight[h], h);
    order.emplace(r.weight[l], l);
  }
}

// Step 4: one rank's pieces into its micro-batches.
std::vector<MicroBatchPlan> micro_batches_of(std::vector<PlacedPiece> pieces, const PackOptions& options,
                                             uint64_t budget, const CostModel& cost, bool& exceeded) {
  std::sort(pieces.begin(), pieces.end(), heavier);
  uint64_t positions = 0;
  for (const PlacedPiece& p : pieces) positions += p.piece.length;
  size_t count = options.micro_batches;
  if (options.variable_micro_batches) count = std::max<uint64_t>(count, (positions + budget - 1) / budget);
  struct Bin {
    uint64_t positions = 0;
    double cost = 0.0;
    std::vector<Piece> pieces;
  };
  std::vector<Bin> bins(count);
  for (const PlacedPiece& p : pieces) {
    const uint32_t length = p.piece.length;
    size_t best = bins.size();
    for (size_t b = 0; b < bins.size(); ++b)
      if (bins[b].positions + length <= budget && (best == bins.size() || bins[b].cost < bins[best].cost)) best = b;
    if (best == bins.size()) {
      if (options.variable_micro_batches) {
        bins.emplace_back();
      } else {
        best = 0;
        for (size_t b = 1; b < bins.size(); ++b)
          if (bins[b].positions < bins[best].positions) best = b;
        exceeded = true;
      }
    }
    Bin& bin = bins[std::min(best, bins.size() - 1)];
    bin.positions += length;
    bin.cost += p.cost;
    bin.pieces.push_back(p.piece);
  }
  std::vector<MicroBatchPlan> out(bins.size());
  for (size_t b = 0; b < bins.size(); ++b) {
    if (bins[b].pieces.empty()) continue;
    std::sort(bins[b].pieces.begin(), bins[b].pieces.end(),
              [](const Piece& x, const Piece& y) { return x.doc != y.doc ? x.doc < y.doc : x.begin < y.begin; });
    PackedSequence row;
    row.pieces = std::move(bins[b].pieces);
    row.used = static_cast<uint32_t>(bins[b].positions);
    out[b].sequences.push_back(std::move(row));
    out[b].positions = bins[b].positions;
    out[b].cost = bins[b].cost + cost.micro_batch;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MicroBatchPlan& x, const MicroBatchPlan& y) { return x.cost > y.cost; });
  return out;
}

}  // namespace

SpreadPlan place_spread(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& model) {
  MSD_CHECK(options.varlen);
  MSD_CHECK_LE(options.cp, 1u);
  const CostModel cost = model.unpadded();
  const bool balance_cuts = options.cuts == Cuts::balance;
  std::vector<PlacedPiece> pieces = packing::cut_into_pieces(docs, options, cost);
  SpreadPlan plan;
  uint64_t total = 0;
  for (const PlacedPiece& p : pieces) total += p.piece.length;
  plan.budget = micro_batch_budget(total, options);
  const bool by_positions = options.balance == BalanceMethod::tokens;
  const Weigher weigh{cost, by_positions, by_positions ? 0.0 : cost.micro_batch / static_cast<double>(plan.budget)};
  for (PlacedPiece& p : pieces) p.cost = weigh(p.piece.length, p.patches);
  std::sort(pieces.begin(), pieces.end(), heavier);
  const uint64_t capacity =
      options.variable_micro_batches ? std::numeric_limits<uint64_t>::max() : plan.budget * options.micro_batches;
  Ranks ranks = assign(std::move(pieces), options.dp, capacity, options.balance);
  if (balance_cuts) {
    plan.megatron_pieces = megatron_piece_count(docs, options.seq_len, options.long_docs);
    MSD_CHECK_LE(ranks.pieces.size(), plan.megatron_pieces);
    if (!by_positions)
      spend_cuts(ranks, plan.megatron_pieces - ranks.pieces.size(), capacity, weigh,
                 cost.a + weigh.overhead_per_position);
  }
  plan.pieces = ranks.pieces.size();
  for (PlacedPiece& p : ranks.pieces) p.cost = cost.document(p.piece.length, p.patches);
  plan.buckets.resize(options.dp);
  std::vector<PlacedPiece> mine;
  for (uint32_t rank = 0; rank < options.dp; ++rank) {
    mine.clear();
    for (uint32_t i : ranks.members[rank]) mine.push_back(ranks.pieces[i]);
    BucketPlan& bucket = plan.buckets[rank];
    bucket.micro_batches = micro_batches_of(mine, options, plan.budget, cost, plan.budget_exceeded);
    for (const MicroBatchPlan& mb : bucket.micro_batches) {
      bucket.positions += mb.positions;
      bucket.cost += mb.cost;
    }
  }
  plan.piece_costs.reserve(ranks.pieces.size());
  for (const PlacedPiece& p : ranks.pieces) plan.piece_costs.push_back(p.cost);
  std::sort(plan.piece_costs.begin(), plan.piece_costs.end(), std::greater<>());
  return plan;
}

}  // namespace msd
