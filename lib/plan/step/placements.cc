#include "plan/step/placements.h"

#include <algorithm>
#include <optional>

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

SequencesFirst::SequencesFirst(const std::vector<PlacedPiece>& pieces, const PackOptions& options,
                               const CostModel& cost, ZigzagCost& zigzag, uint64_t capacity)
    : pieces_(pieces), options_(options) {
  if (options.cp > 1) {  // a CP sequence's cost needs its pieces: built now
    std::vector<PackedSequence> sequences = pack(pieces, options.seq_len, scratch_, cost_);
    zigzag.apply(sequences, cost_);
    add_padding_cost(sequences, cost_, options.seq_len, cost);
    sort_sequences(sequences, cost_);
    std::vector<uint64_t> used(sequences.size());
    for (size_t i = 0; i < sequences.size(); ++i) used[i] = sequences[i].used;
    bucket_of_ = balance_within(cost_, used, capacity, options.dp, options.balance);
    built_ = distribute(std::move(sequences));
    most_ = max_bucket_cost(built_);
    return;
  }
  fit_ = first_fit(pieces, options.seq_len, scratch_, cost_);
  for (size_t s = 0; s < fit_.free.size(); ++s) cost_[s] += cost.padding(fit_.free[s]);
  sort_by_cost();
  std::vector<uint64_t> used(order_.size());
  for (size_t i = 0; i < order_.size(); ++i) used[i] = options.seq_len - fit_.free[order_[i]];
  bucket_of_ = balance_within(cost_, used, capacity, options.dp, options.balance);
  std::vector<double> total(options.dp, 0.0);
  for (size_t i = 0; i < order_.size(); ++i) total[bucket_of_[i]] += cost_[i];  // heaviest first, as built
  for (double t : total) most_ = std::max(most_, t);
}

// The sequences heaviest first, ties by their first piece (doc, begin), as
// sort_sequences orders them: order_[i] is the i-th, cost_ follows.
void SequencesFirst::sort_by_cost() {
  std::vector<uint64_t> first(fit_.free.size(), UINT64_MAX);
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& piece = pieces_[i].piece;
    uint64_t& key = first[fit_.sequence_of[i]];
    key = std::min(key, uint64_t{piece.doc} << 32 | piece.begin);
  }
  order_.resize(fit_.free.size());
  for (uint32_t s = 0; s < order_.size(); ++s) order_[s] = s;
  std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
    return cost_[x] != cost_[y] ? cost_[x] > cost_[y] : first[x] < first[y];
  });
  std::vector<double> sorted(order_.size());
  for (size_t i = 0; i < order_.size(); ++i) sorted[i] = cost_[order_[i]];
  cost_.swap(sorted);
}

std::vector<BucketSequences> SequencesFirst::build() {
  if (options_.cp > 1) return std::move(built_);
  std::vector<PackedSequence> unsorted = build_sequences(pieces_, fit_, options_.seq_len);
  std::vector<PackedSequence> sequences(unsorted.size());
  for (size_t i = 0; i < order_.size(); ++i) sequences[i] = std::move(unsorted[order_[i]]);
  return distribute(std::move(sequences));
}

// Sorted sequences to their buckets, heaviest first within each bucket too.
std::vector<BucketSequences> SequencesFirst::distribute(std::vector<PackedSequence> sequences) const {
  std::vector<BucketSequences> buckets(options_.dp);
  std::vector<uint32_t> counts(options_.dp, 0);
  for (uint32_t b : bucket_of_) ++counts[b];
  for (uint32_t b = 0; b < options_.dp; ++b) {
    buckets[b].sequences.reserve(counts[b]);
    buckets[b].cost.reserve(counts[b]);
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    buckets[bucket_of_[i]].sequences.push_back(std::move(sequences[i]));
    buckets[bucket_of_[i]].cost.push_back(cost_[i]);
  }
  return buckets;
}

PiecesFirst::PiecesFirst(const std::vector<PlacedPiece>& pieces, const PackOptions& options, const CostModel& cost,
                         ZigzagCost& zigzag, uint64_t capacity, bool by_positions)
    : options_(options), cost_(cost), zigzag_(zigzag) {
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
  grouped_ = group(pieces, balance_within(weights, sizes, room, options.dp, method), options.dp, offsets_);
  for (uint32_t b = 0; b < options.dp; ++b) {
    std::sort(grouped_.begin() + static_cast<ptrdiff_t>(offsets_[b]),
              grouped_.begin() + static_cast<ptrdiff_t>(offsets_[b + 1]), [](const PlacedPiece& x, const PlacedPiece& y) {
                if (x.piece.length != y.piece.length) return x.piece.length > y.piece.length;
                return x.piece.doc != y.piece.doc ? x.piece.doc < y.piece.doc : x.piece.begin < y.piece.begin;
              });
  }
  if (options.cp > 1) {  // a CP sequence's cost needs its pieces: built now
    built_ = make();
    most_ = max_bucket_cost(built_);
    return;
  }
  std::vector<uint32_t> scratch;
  std::vector<double> sequence_cost;
  for (uint32_t b = 0; b < options.dp; ++b)
    most_ = std::max(most_, packed_cost(bucket(b), options.seq_len, cost, scratch, sequence_cost));
}

std::span<const PlacedPiece> PiecesFirst::bucket(uint32_t b) const {
  return std::span<const PlacedPiece>(grouped_.data() + offsets_[b], offsets_[b + 1] - offsets_[b]);
}

std::vector<BucketSequences> PiecesFirst::build() {
  return options_.cp > 1 ? std::move(built_) : make();
}

std::vector<BucketSequences> PiecesFirst::make() const {
  std::vector<BucketSequences> buckets(options_.dp);
  std::vector<uint32_t> scratch;
  for (uint32_t b = 0; b < options_.dp; ++b) {
    BucketSequences& bucket = buckets[b];
    bucket.sequences = pack(this->bucket(b), options_.seq_len, scratch, bucket.cost);
    zigzag_.apply(bucket.sequences, bucket.cost);
    add_padding_cost(bucket.sequences, bucket.cost, options_.seq_len, cost_);
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
  SequencesFirst first(pieces, options, cost, zigzag, capacity);
  double lightest = first.most();
  const auto optimal = [&] { return lightest <= floor * (1.0 + 1e-12); };
  if (optimal()) return into_micro_batches(first.build(), options, budget);
  std::vector<PlacedPiece> heaviest(pieces);
  sort_heaviest_first(heaviest);
  std::optional<PiecesFirst> lighter;  // a pieces-first placement lighter than `first`
  for (bool by_positions : {false, true}) {
    if (optimal()) break;
    PiecesFirst other(by_positions ? pieces : heaviest, options, cost, zigzag, capacity, by_positions);
    if (other.most() < lightest) {
      lightest = other.most();
      lighter.emplace(std::move(other));
    }
  }
  std::vector<BucketSequences> kept = lighter ? lighter->build() : first.build();
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
