#include "plan/step/placements.h"

#include <algorithm>

#include "plan/step/balance.h"
#include "plan/step/bound.h"
#include "plan/step/bucket_refiner.h"
#include "plan/step/sequence_placer.h"

namespace msd::packing {

namespace {

// The sequence placement under a target (best fit), the target bisected
// between the step's cheap lower bound (bound.h without the classes) and
// `lightest`, a plan's heaviest bucket: the lightest placement that fits,
// or empty when none beats `lightest`. At most kTargetTries placements, the
// first kFirstStep below `lightest` (plans land within a few percent of the
// bound), then halving.
std::vector<BucketSequences> fit_under_target(const std::vector<PlacedPiece>& heaviest, const PackOptions& options,
                                              const CostModel& cost, uint64_t capacity, uint32_t sequences,
                                              ZigzagCost& zigzag, double lightest) {
  constexpr int kTargetTries = 4;
  constexpr double kTolerance = 5e-4;
  constexpr double kFirstStep = 0.015;
  std::vector<uint32_t> lengths;
  std::vector<double> costs;
  lengths.reserve(heaviest.size());
  costs.reserve(heaviest.size());
  for (const PlacedPiece& p : heaviest) lengths.push_back(p.piece.length), costs.push_back(p.cost);
  const BoundShape shape{options.seq_len, options.dp, options.micro_batches, capacity / options.micro_batches};
  double lo = step_bound(lengths, costs, shape, cost, 0.0).cost, hi = lightest;
  std::vector<BucketSequences> best;
  for (int it = 0; it < kTargetTries && hi > lo * (1.0 + kTolerance); ++it) {
    const double target = it == 0 ? std::max(0.5 * (lo + hi), hi * (1.0 - kFirstStep)) : 0.5 * (lo + hi);
    std::vector<BucketSequences> placed =
        SequencePlacer(options, cost, capacity, sequences, target).place(heaviest, options, zigzag);
    if (placed.empty()) {
      lo = target;
      continue;
    }
    hi = max_bucket_cost(placed);
    best = std::move(placed);
  }
  return best;
}

}  // namespace

std::vector<BucketPlan> plan_by_tokens(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                       const CostModel& cost) {
  ZigzagCost zigzag(pieces, options, cost);
  std::vector<double> positions(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) positions[i] = pieces[i].piece.length;
  std::vector<size_t> offsets;
  const std::vector<PlacedPiece> grouped =
      group(pieces, balance(positions, options.dp, BalanceMethod::greedy), options.dp, offsets);
  std::vector<BucketPlan> plans(options.dp);
  std::vector<uint32_t> scratch;
  std::vector<double> sequence_cost;
  for (uint32_t b = 0; b < options.dp; ++b) {
    const std::span<const PlacedPiece> bucket(grouped.data() + offsets[b], offsets[b + 1] - offsets[b]);
    std::vector<PackedSequence> sequences = pack(bucket, options.seq_len, scratch, sequence_cost);
    zigzag.apply(sequences, sequence_cost);
    add_padding_cost(sequences, sequence_cost, options.seq_len, cost);
    plans[b].micro_batches = deal(std::move(sequences), sequence_cost, options.micro_batches);
  }
  return plans;
}

std::vector<BucketSequences> sequences_first(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                             const CostModel& cost, ZigzagCost& zigzag, uint64_t capacity) {
  std::vector<uint32_t> scratch;
  std::vector<double> sequence_cost;
  std::vector<PackedSequence> sequences = pack(pieces, options.seq_len, scratch, sequence_cost);
  zigzag.apply(sequences, sequence_cost);
  add_padding_cost(sequences, sequence_cost, options.seq_len, cost);
  sort_sequences(sequences, sequence_cost);
  std::vector<uint64_t> used(sequences.size());
  for (size_t i = 0; i < sequences.size(); ++i) used[i] = sequences[i].used;
  const std::vector<uint32_t> bucket_of = balance_within(sequence_cost, used, capacity, options.dp, options.balance);
  std::vector<BucketSequences> buckets(options.dp);
  std::vector<uint32_t> counts(options.dp, 0);
  for (uint32_t b : bucket_of) ++counts[b];
  for (uint32_t b = 0; b < options.dp; ++b) {
    buckets[b].sequences.reserve(counts[b]);
    buckets[b].cost.reserve(counts[b]);
  }
  for (size_t i = 0; i < sequences.size(); ++i) {  // heaviest first within each bucket too
    buckets[bucket_of[i]].sequences.push_back(std::move(sequences[i]));
    buckets[bucket_of[i]].cost.push_back(sequence_cost[i]);
  }
  return buckets;
}

std::vector<BucketSequences> pieces_first(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                          const CostModel& cost, ZigzagCost& zigzag, uint64_t capacity,
                                          bool by_positions) {
  uint64_t total = 0;
  for (const PlacedPiece& p : pieces) total += p.piece.length;
  const uint64_t sequences = std::max<uint64_t>(1, (total + options.seq_len - 1) / options.seq_len);
  const uint64_t slots = (sequences + options.dp - 1) / options.dp;
  std::vector<double> weights(pieces.size());
  std::vector<uint64_t> sizes(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    weights[i] = by_positions ? pieces[i].piece.length : pieces[i].cost;
    sizes[i] = pieces[i].piece.length;
  }
  const uint64_t room = by_positions ? capacity : std::min(capacity, slots * options.seq_len);
  const BalanceMethod method = by_positions ? BalanceMethod::tokens : options.balance;
  std::vector<size_t> offsets;
  std::vector<PlacedPiece> grouped =
      group(pieces, balance_within(weights, sizes, room, options.dp, method), options.dp, offsets);
  std::vector<BucketSequences> buckets(options.dp);
  std::vector<uint32_t> scratch;
  for (uint32_t b = 0; b < options.dp; ++b) {
    const auto first = grouped.begin() + static_cast<ptrdiff_t>(offsets[b]);
    const auto last = grouped.begin() + static_cast<ptrdiff_t>(offsets[b + 1]);
    std::sort(first, last, [](const PlacedPiece& x, const PlacedPiece& y) {
      if (x.piece.length != y.piece.length) return x.piece.length > y.piece.length;
      return x.piece.doc != y.piece.doc ? x.piece.doc < y.piece.doc : x.piece.begin < y.piece.begin;
    });
    BucketSequences& bucket = buckets[b];
    bucket.sequences = pack(std::span<const PlacedPiece>(grouped.data() + offsets[b], offsets[b + 1] - offsets[b]),
                            options.seq_len, scratch, bucket.cost);
    zigzag.apply(bucket.sequences, bucket.cost);
    add_padding_cost(bucket.sequences, bucket.cost, options.seq_len, cost);
    sort_sequences(bucket.sequences, bucket.cost);
  }
  return buckets;
}

std::vector<BucketPlan> plan_by_cost(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                                     const CostModel& cost, uint64_t budget) {
  const uint32_t count = options.micro_batches;
  const uint64_t capacity = budget > UINT64_MAX / count ? UINT64_MAX : budget * count;
  // No plan is lighter than the heaviest piece in a sequence of its own: a
  // placement that reaches it is kept as it is.
  double floor = 0.0;
  for (const PlacedPiece& p : pieces) floor = std::max(floor, p.cost + cost.padding(options.seq_len - p.piece.length));
  ZigzagCost zigzag(pieces, options, cost);
  std::vector<BucketSequences> kept = sequences_first(pieces, options, cost, zigzag, capacity);
  double lightest = max_bucket_cost(kept);
  const auto optimal = [&] { return lightest <= floor * (1.0 + 1e-12); };
  if (optimal()) return into_micro_batches(std::move(kept), options, budget);
  std::vector<PlacedPiece> heaviest(pieces);
  sort_heaviest_first(heaviest);
  for (bool by_positions : {false, true}) {
    if (optimal()) break;
    std::vector<BucketSequences> other =
        pieces_first(by_positions ? pieces : heaviest, options, cost, zigzag, capacity, by_positions);
    const double most = max_bucket_cost(other);
    if (most < lightest) {
      lightest = most;
      kept = std::move(other);
    }
  }
  // Whole sequences per micro-batch within the budget: no bucket over
  // micro_batches x floor(budget / seq_len) sequences.
  const uint32_t sequences =
      static_cast<uint32_t>(std::min<uint64_t>(uint64_t{count} * (budget / options.seq_len), UINT32_MAX));
  if (optimal() || sequences == 0) return into_micro_batches(std::move(kept), options, budget);
  if (options.cp <= 1) {
    // The refiner on the lightest of the three, then the sequence placement
    // and best fit under a target, each refined and kept when lighter (ties:
    // the former). A refined plan
    // that is flat is kept as it is: a plan lighter by more than kFlat needs
    // fewer sequences (flat()), and the sequence placement, which like LPT
    // opens sequences in the lightest buckets, ends with about as many: on
    // such steps (512 groups of 8 documents of 32..543 tokens, seq_len 1024)
    // it gained 0.01-0.04% for a third of the placement's time.
    BucketRefiner refiner(pieces, options, cost, capacity, sequences);
    refiner.run(kept);
    lightest = max_bucket_cost(kept);
    if (optimal() || flat(kept)) return into_micro_batches(std::move(kept), options, budget);
    const auto keep_if_lighter = [&](std::vector<BucketSequences> placed) {
      if (placed.empty()) return;
      refiner.run(placed);
      const double most = max_bucket_cost(placed);
      if (most < lightest) kept = std::move(placed), lightest = most;
    };
    keep_if_lighter(SequencePlacer(options, cost, capacity, sequences).place(heaviest, options, zigzag));
    keep_if_lighter(fit_under_target(heaviest, options, cost, capacity, sequences, zigzag, lightest));
    return into_micro_batches(std::move(kept), options, budget);
  }
  std::vector<BucketSequences> placed = SequencePlacer(options, cost, capacity, sequences).place(heaviest, options, zigzag);
  if (!placed.empty() && max_bucket_cost(placed) < lightest) kept = std::move(placed);
  return into_micro_batches(std::move(kept), options, budget);
}

}  // namespace msd::packing
