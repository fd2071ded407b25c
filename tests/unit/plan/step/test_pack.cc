#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "plan/step/pack.h"
#include "unit/rounds.h"

using msd::BucketPlan;
using msd::LongDocs;
using msd::PackOptions;
using msd::Piece;
using msd::PlanDoc;

namespace {

// Heavy-tailed lengths (log-normal, many short, a few far over seq_len); about
// a quarter are image-text documents with up to `max_patches` fixed patches.
std::vector<PlanDoc> random_docs(std::mt19937_64& rng, size_t count, uint32_t seq_len, uint32_t max_patches) {
  std::lognormal_distribution<double> length(std::log(seq_len / 8.0), 1.2);
  std::uniform_int_distribution<uint32_t> patches(1, std::max(1u, max_patches));
  std::uniform_int_distribution<int> kind(0, 3);
  std::vector<PlanDoc> docs;
  for (size_t i = 0; i < count; ++i) {
    PlanDoc doc;
    doc.id = static_cast<uint32_t>(i);
    doc.positions = std::clamp<uint32_t>(static_cast<uint32_t>(length(rng)), 1, 20 * seq_len);
    if (max_patches > 0 && kind(rng) == 0) {
      doc.fixed = patches(rng);
      doc.positions += doc.fixed;
    }
    docs.push_back(doc);
  }
  return docs;
}

// Random sizes (seq_len from `min_seq_len` to 8192), long_docs alternating and
// the three methods in turn.
PackOptions random_options(std::mt19937_64& rng, int round, uint32_t min_seq_len) {
  PackOptions options;
  options.seq_len = std::uniform_int_distribution<uint32_t>(min_seq_len, 8192)(rng);
  options.dp = std::uniform_int_distribution<uint32_t>(1, 64)(rng);
  options.micro_batches = std::uniform_int_distribution<uint32_t>(1, 8)(rng);
  options.long_docs = round % 2 == 0 ? LongDocs::split : LongDocs::truncate;
  const msd::BalanceMethod methods[] = {msd::BalanceMethod::tokens, msd::BalanceMethod::greedy,
                                        msd::BalanceMethod::karmarkar_karp};
  options.balance = methods[round % 3];
  return options;
}

std::vector<Piece> all_pieces(const std::vector<BucketPlan>& plans) {
  std::vector<Piece> pieces;
  for (const auto& plan : plans)
    for (const auto& mb : plan.micro_batches)
      for (const auto& sequence : mb.sequences) pieces.insert(pieces.end(), sequence.pieces.begin(), sequence.pieces.end());
  return pieces;
}

bool same_plan(const std::vector<BucketPlan>& a, const std::vector<BucketPlan>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].positions != b[i].positions || a[i].cost != b[i].cost) return false;
    if (a[i].micro_batches.size() != b[i].micro_batches.size()) return false;
    for (size_t m = 0; m < a[i].micro_batches.size(); ++m) {
      const auto& x = a[i].micro_batches[m].sequences;
      const auto& y = b[i].micro_batches[m].sequences;
      if (x.size() != y.size()) return false;
      for (size_t s = 0; s < x.size(); ++s) {
        if (x[s].used != y[s].used || x[s].pieces.size() != y[s].pieces.size()) return false;
        for (size_t p = 0; p < x[s].pieces.size(); ++p) {
          const Piece &u = x[s].pieces[p], &v = y[s].pieces[p];
          if (u.doc != v.doc || u.begin != v.begin || u.length != v.length) return false;
        }
      }
    }
  }
  return true;
}

// Structural checks every plan must pass.
void check_plan(const std::vector<PlanDoc>& docs, const PackOptions& options, const std::vector<BucketPlan>& plans) {
  REQUIRE(plans.size() == options.dp);
  std::map<uint32_t, std::vector<Piece>> by_doc;
  for (const auto& plan : plans) {
    REQUIRE(plan.micro_batches.size() == options.micro_batches);
    uint64_t positions = 0;
    size_t sequences = 0;
    for (const auto& mb : plan.micro_batches) sequences += mb.sequences.size();
    for (const auto& mb : plan.micro_batches) {
      // Empty only when there are fewer sequences than micro-batches.
      if (mb.sequences.empty()) REQUIRE(sequences < options.micro_batches);
      for (const auto& sequence : mb.sequences) {
        REQUIRE(!sequence.pieces.empty());
        uint32_t used = 0;
        for (const Piece& piece : sequence.pieces) {
          used += piece.length;
          by_doc[piece.doc].push_back(piece);
        }
        REQUIRE(sequence.used == used);
        // A variable-length row holds a micro-batch's pieces, each within seq_len.
        if (options.varlen) {
          REQUIRE(mb.sequences.size() == 1);
          for (const Piece& piece : sequence.pieces) REQUIRE(piece.length <= options.seq_len);
        } else {
          REQUIRE(used <= options.seq_len);
        }
        positions += used;
      }
    }
    REQUIRE(plan.positions == positions);
  }
  for (const PlanDoc& doc : docs) {
    auto pieces = by_doc[doc.id];
    REQUIRE(!pieces.empty());
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
    uint32_t covered = 0;
    for (const Piece& piece : pieces) {
      REQUIRE(piece.begin == covered);  // no gap, no overlap
      REQUIRE(piece.length > 0);
      covered += piece.length;
    }
    // Patches stay together in the first piece.
    REQUIRE(pieces.front().length >= doc.fixed);
    const bool split = options.long_docs == LongDocs::split && doc.fixed == 0;
    REQUIRE(covered == (split ? doc.positions : std::min(doc.positions, options.seq_len)));
    by_doc.erase(doc.id);
  }
  REQUIRE(by_doc.empty());  // nothing placed that was not asked for
}

// The statistics of a plan recomputed from its pieces and the documents
// alone, against what pack_step reported.
void check_stats(const std::vector<PlanDoc>& docs, const PackOptions& options, const msd::CostModel& cost,
                 const msd::PackedStep& step) {
  std::map<uint32_t, uint32_t> patches;
  for (const PlanDoc& doc : docs) patches[doc.id] = doc.fixed;
  const auto piece_cost = [&](const Piece& p) { return cost.document(p.length, p.begin == 0 ? patches[p.doc] : 0); };
  const size_t dp = options.dp, count = options.micro_batches;
  std::vector<double> bucket(dp, 0.0), piece_costs;
  std::vector<std::vector<double>> micro(count, std::vector<double>(dp, 0.0));
  for (size_t b = 0; b < dp; ++b) {
    for (size_t m = 0; m < count; ++m) {
      double mb = 0.0;
      for (const auto& sequence : step.buckets[b].micro_batches[m].sequences) {
        mb += cost.padding(options.seq_len - sequence.used);  // a fixed-shape sequence's GEMMs run over its padding
        for (const Piece& piece : sequence.pieces) {
          mb += piece_cost(piece);
          piece_costs.push_back(piece_cost(piece));
        }
      }
      REQUIRE(step.buckets[b].micro_batches[m].cost == Approx(mb));
      micro[m][b] = mb;
      bucket[b] += mb;
    }
    REQUIRE(step.buckets[b].cost == Approx(bucket[b]));
  }
  double total = 0.0;
  for (double c : bucket) total += c;
  const double mean = total / dp;
  const double largest = piece_costs.empty() ? 0.0 : *std::max_element(piece_costs.begin(), piece_costs.end());
  const msd::PlanStats& stats = step.stats;
  REQUIRE(stats.mean_cost == Approx(mean));
  REQUIRE(stats.max_cost == Approx(*std::max_element(bucket.begin(), bucket.end())));
  REQUIRE(stats.largest_piece_cost == Approx(largest));
  if (total > 0) {
    REQUIRE(stats.imbalance == Approx(stats.max_cost / mean));
    REQUIRE(stats.lower_bound >= std::max(largest, mean) / mean * (1 - 1e-9));
    REQUIRE(stats.imbalance >= stats.pigeonhole_bound * (1 - 1e-9));  // a bound no plan beats
    REQUIRE(stats.pigeonhole_bound >= stats.lower_bound * (1 - 1e-9));
    REQUIRE(stats.max_cost >= stats.bound_cost * (1 - 1e-9));
    REQUIRE(stats.max_over_bound == Approx(stats.max_cost / stats.bound_cost));
  }
  REQUIRE(stats.micro_batch_imbalance.size() == count);
  double worst = 1.0;
  for (size_t m = 0; m < count; ++m) {
    double sum = 0.0, high = 0.0;
    for (double c : micro[m]) {
      sum += c;
      high = std::max(high, c);
    }
    const double expected = sum > 0 ? high / (sum / dp) : 1.0;
    REQUIRE(stats.micro_batch_imbalance[m] == Approx(expected));
    worst = std::max(worst, expected);
  }
  REQUIRE(stats.worst_micro_batch_imbalance == Approx(worst));
}

}  // namespace

TEST_CASE("pack: a small step by hand, split by positions", "[pack]") {
  PackOptions options;
  options.seq_len = 100;
  options.dp = 2;
  options.micro_batches = 2;
  options.balance = msd::BalanceMethod::tokens;
  const std::vector<PlanDoc> docs = {{0, 250, 0, 0}, {1, 50, 0, 0}, {2, 40, 0, 0}, {3, 130, 30, 0}};
  const msd::CostModel cost;
  const auto plans = msd::distribute_and_pack(docs, options, cost);
  check_plan(docs, options, plans);
  // Pieces, longest first: 0:[0,100) 0:[100,200) 3:[0,100) (patches kept,
  // text cut) 0:[200,250) 1:[0,50) 2:[0,40).
  // LPT: 100->b0, 100->b1, 100->b0, 50->b1, 50->b1, 40->b0 (tie: lower index).
  CHECK(plans[0].positions == 240);
  CHECK(plans[1].positions == 200);
  // Its third sequence holds 40 positions: 60 of padding, costed like positions.
  CHECK(plans[0].cost ==
        Approx(cost.document(100, 0) + cost.document(100, 30) + cost.document(40, 0) + cost.padding(60)));
  // b1 packs [100,200) of doc 0 alone, then the two 50s together; one
  // sequence per micro-batch.
  REQUIRE(plans[1].micro_batches[0].sequences.size() == 1);
  REQUIRE(plans[1].micro_batches[1].sequences.size() == 1);
  const auto& shared = plans[1].micro_batches[1].sequences[0];
  REQUIRE(shared.pieces.size() == 2);
  CHECK(shared.pieces[0].doc == 0);  // ordered by (doc, begin)
  CHECK(shared.pieces[0].begin == 200);
  CHECK(shared.pieces[1].doc == 1);
}

TEST_CASE("pack: a small step by hand, balanced by cost", "[pack]") {
  PackOptions options;
  options.seq_len = 100;
  options.dp = 2;
  options.micro_batches = 2;
  msd::CostModel cost;
  cost.a = 0;  // cost = L^2: easy to follow
  // Pieces by cost: 0:[0,100) 0:[100,200) 1:[0,100) (10000 each), 2:[0,60)
  // (3600), 3:[0,50) 4:[0,50) (2500 each), 0:[200,230) (900).
  const std::vector<PlanDoc> docs = {{0, 230, 0, 0}, {1, 100, 0, 0}, {2, 60, 0, 0}, {3, 50, 0, 0}, {4, 50, 0, 0}};
  for (auto method : {msd::BalanceMethod::greedy, msd::BalanceMethod::karmarkar_karp}) {
    options.balance = method;
    const msd::PackedStep step = msd::pack_step(docs, options, cost);
    check_plan(docs, options, step.buckets);
    // Three 10000s over two buckets: one holds two (20000, the pigeonhole
    // bound), the other one and the rest (10000 + 3600 + 2500 + 2500 + 900).
    CHECK(step.buckets[0].cost + step.buckets[1].cost == 39500);
    CHECK(step.stats.max_cost == 20000);
    CHECK(step.stats.mean_cost == 19750);
    CHECK(step.stats.pigeonhole_bound == Approx(20000 / 19750.0));
    // The padding-aware pigeonhole (a = 0: padding is free) reaches it too.
    CHECK(step.stats.lower_bound == Approx(20000 / 19750.0));
    CHECK(step.stats.bound_cost == 20000);
    CHECK(step.stats.max_over_bound == 1.0);
    CHECK(step.stats.imbalance == step.stats.pigeonhole_bound);
    // Five sequences (100, 100, 100, 60 + 30, 50 + 50), the fewest there are.
    CHECK(step.stats.sequences == 5);
    CHECK(step.stats.min_sequences == 5);
    // Micro-batches heaviest first. The light bucket's 10000 is alone in
    // micro-batch 0; its two other sequences share micro-batch 1.
    for (const auto& bucket : step.buckets) {
      CHECK(bucket.micro_batches[0].cost == 10000);
      CHECK(bucket.micro_batches[0].cost >= bucket.micro_batches[1].cost);
    }
    CHECK(step.stats.micro_batch_max_cost == std::vector<double>{10000, 10000});
    CHECK(step.stats.micro_batch_mean_cost == std::vector<double>{10000, 9750});
  }
}

TEST_CASE("pack: random heavy-tailed steps keep every invariant, balanced by cost", "[pack]") {
  std::mt19937_64 rng(17);
  msd::CostModel cost;
  cost.vision_scale = 0.5;
  for (int round = 0; round < msd::test::rounds(90); ++round) {
    PackOptions options = random_options(rng, round, 16);
    const size_t count = std::uniform_int_distribution<size_t>(0, 2000)(rng);
    const auto docs = random_docs(rng, count, options.seq_len, options.seq_len - 1);
    const msd::PackedStep step = msd::pack_step(docs, options, cost);
    check_plan(docs, options, step.buckets);
    check_stats(docs, options, cost, step);
    if (options.balance == msd::BalanceMethod::tokens) continue;
    // Cost methods: within one whole sequence of the mean (sequences first
    // is LPT over sequences, and the plan kept is never heavier than it),
    // micro-batches heaviest first (check_plan: empty only when the bucket
    // has fewer sequences than micro-batches), and never more sequences than
    // one per bucket over first-fit decreasing's guarantee (11/9 OPT + 1).
    const double sequence = cost.padding(options.seq_len) + step.stats.largest_piece_cost;
    REQUIRE(step.stats.max_cost <= (step.stats.mean_cost + sequence) * (1 + 1e-12));
    REQUIRE(step.stats.sequences <= 11 * step.stats.min_sequences / 9 + 1 + options.dp);
    for (const BucketPlan& plan : step.buckets)
      for (size_t m = 1; m < plan.micro_batches.size(); ++m)
        REQUIRE(plan.micro_batches[m - 1].cost >= plan.micro_batches[m].cost);
  }
}

TEST_CASE("pack: random heavy-tailed steps keep every invariant", "[pack]") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < msd::test::rounds(60); ++round) {
    PackOptions options;
    options.balance = msd::BalanceMethod::tokens;
    options.seq_len = std::uniform_int_distribution<uint32_t>(16, 4096)(rng);
    options.dp = std::uniform_int_distribution<uint32_t>(1, 64)(rng);
    options.micro_batches = std::uniform_int_distribution<uint32_t>(1, 8)(rng);
    options.long_docs = round % 2 == 0 ? LongDocs::split : LongDocs::truncate;
    const size_t count = std::uniform_int_distribution<size_t>(0, 3000)(rng);
    const auto docs = random_docs(rng, count, options.seq_len, options.seq_len - 1);
    const auto plans = msd::distribute_and_pack(docs, options);
    check_plan(docs, options, plans);

    // LPT: bucket totals differ by at most the longest piece (<= seq_len).
    uint64_t low = UINT64_MAX, high = 0;
    for (const auto& plan : plans) {
      low = std::min(low, plan.positions);
      high = std::max(high, plan.positions);
    }
    REQUIRE(high - low <= options.seq_len);

    // Micro-batches: no run is above the best contiguous split by more than a
    // sequence (a loose bound the optimal split always meets).
    for (const auto& plan : plans) {
      uint64_t largest = 0;
      for (const auto& mb : plan.micro_batches) {
        uint64_t load = 0;
        for (const auto& sequence : mb.sequences) load += sequence.used;
        largest = std::max(largest, load);
      }
      REQUIRE(largest <= (plan.positions + options.micro_batches - 1) / options.micro_batches + options.seq_len);
    }
  }
}

TEST_CASE("pack: deterministic and independent of the documents' order", "[pack]") {
  std::mt19937_64 rng(3);
  PackOptions options;
  options.seq_len = 512;
  options.dp = 16;
  options.micro_batches = 4;
  const auto original = random_docs(rng, 5000, options.seq_len, 200);
  for (auto method : {msd::BalanceMethod::tokens, msd::BalanceMethod::greedy, msd::BalanceMethod::karmarkar_karp}) {
    options.balance = method;
    options.long_docs = LongDocs::split;
    auto docs = original;
    const auto first = msd::distribute_and_pack(docs, options);
    CHECK(same_plan(first, msd::distribute_and_pack(docs, options)));
    std::shuffle(docs.begin(), docs.end(), rng);
    CHECK(same_plan(first, msd::distribute_and_pack(docs, options)));
    options.long_docs = LongDocs::truncate;
    CHECK_FALSE(same_plan(first, msd::distribute_and_pack(docs, options)));
  }
}

TEST_CASE("pack: long documents in split and truncate modes", "[pack]") {
  PackOptions options;
  options.seq_len = 64;
  const std::vector<PlanDoc> docs = {{7, 200, 0, 0}, {8, 100, 64, 0}};
  for (LongDocs mode : {LongDocs::split, LongDocs::truncate}) {
    options.long_docs = mode;
    const auto pieces = all_pieces(msd::distribute_and_pack(docs, options));
    uint32_t doc7 = 0, doc8 = 0;
    for (const Piece& piece : pieces) {
      (piece.doc == 7 ? doc7 : doc8) += piece.length;
      if (piece.doc == 8) CHECK(piece.begin == 0);  // all patches, no text fits
    }
    CHECK(doc7 == (mode == LongDocs::split ? 200u : 64u));
    CHECK(doc8 == 64u);
  }
}

TEST_CASE("pack: micro-batches", "[pack]") {
  PackOptions options;
  options.balance = msd::BalanceMethod::tokens;
  options.seq_len = 100;
  options.micro_batches = 4;
  SECTION("fewer sequences than micro-batches leaves the last ones empty") {
    const auto plans = msd::distribute_and_pack({{0, 100, 0, 0}, {1, 90, 0, 0}}, options);
    const auto& mbs = plans[0].micro_batches;
    REQUIRE(mbs.size() == 4);
    CHECK(mbs[0].sequences.size() == 1);
    CHECK(mbs[1].sequences.size() == 1);
    CHECK(mbs[2].sequences.empty());
    CHECK(mbs[3].sequences.empty());
  }
  SECTION("every micro-batch gets a sequence when there are enough") {
    // One long sequence and four short ones: the long one alone, the short
    // ones spread so that none of the four runs is empty.
    const auto plans = msd::distribute_and_pack(
        {{0, 100, 0, 0}, {1, 100, 0, 0}, {2, 100, 0, 0}, {3, 100, 0, 0}, {4, 10, 0, 0}}, options);
    size_t total = 0;
    for (const auto& mb : plans[0].micro_batches) {
      CHECK_FALSE(mb.sequences.empty());
      total += mb.sequences.size();
    }
    CHECK(total == 5);
  }
  SECTION("an empty step") {
    options.dp = 3;
    const auto plans = msd::distribute_and_pack({}, options);
    REQUIRE(plans.size() == 3);
    for (const auto& plan : plans) {
      CHECK(plan.positions == 0);
      CHECK(plan.micro_batches.size() == 4);
    }
  }
}

// Its speed is a benchmark's business (msd-plan simulate reports ms per
// planned step); here the plan at that scale must only be valid.
TEST_CASE("pack: 4096 DP buckets and 100k documents give a valid plan", "[pack]") {
  std::mt19937_64 rng(1);
  PackOptions options;
  options.seq_len = 4096;
  options.dp = 4096;
  options.micro_batches = 4;
  const auto docs = random_docs(rng, 100000, options.seq_len, 1024);
  for (auto method : {msd::BalanceMethod::tokens, msd::BalanceMethod::greedy, msd::BalanceMethod::karmarkar_karp}) {
    options.balance = method;
    INFO(msd::option_name(method));
    check_plan(docs, options, msd::distribute_and_pack(docs, options));
  }
}

TEST_CASE("under CP a sequence costs cp times its busiest zigzag rank") {
  msd::CostModel cost;
  cost.a = 10.0;
  cost.vision_scale = 0.5;
  cost.vision_a = 4.0;
  const std::vector<uint32_t> lengths = {5, 7, 20}, patches = {0, 3, 0};
  const double sum = cost.document(5, 0) + cost.document(7, 3) + cost.document(20, 0);
  // cp = 1 is the sum of the documents.
  REQUIRE(cost.zigzag_sequence(lengths, patches, 32, 1) == Approx(sum));
  // Never below the sum: the ranks' shares add up to it.
  for (uint32_t cp : {2u, 4u, 8u}) REQUIRE(cost.zigzag_sequence(lengths, patches, 32, cp) >= sum * (1 - 1e-12));
  // One document filling the sequence is what zigzag balances perfectly.
  const std::vector<uint32_t> one = {32}, none = {0};
  for (uint32_t cp : {2u, 4u, 8u}) REQUIRE(cost.zigzag_sequence(one, none, 32, cp) == Approx(cost.document(32, 0)));
  // A long document at the end puts its costly last positions in chunks
  // that fall to few ranks: short documents cannot fill the others.
  const std::vector<uint32_t> tail = {4, 4, 4, 4, 16}, zeros = {0, 0, 0, 0, 0};
  double tail_sum = 0;
  for (uint32_t l : tail) tail_sum += cost.document(l, 0);
  REQUIRE(cost.zigzag_sequence(tail, zeros, 32, 4) > 1.05 * tail_sum);
}

TEST_CASE("pack_step under CP costs micro-batches by their packed sequences") {
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < 40; ++i) docs.push_back({i, 20 + (i * 37) % 300, 0, 0.0});
  PackOptions options;
  options.seq_len = 256;
  options.dp = 2;
  options.micro_batches = 2;
  msd::CostModel cost;
  cost.a = 50.0;
  const msd::PackedStep flat = pack_step(docs, options, cost);
  options.cp = 4;
  const msd::PackedStep sliced = pack_step(docs, options, cost);
  for (size_t b = 0; b < sliced.buckets.size(); ++b) {
    const BucketPlan& bucket = sliced.buckets[b];
    double bucket_cost = 0;
    for (size_t m = 0; m < bucket.micro_batches.size(); ++m) {
      const msd::MicroBatchPlan& mb = bucket.micro_batches[m];
      double want = 0;
      for (const msd::PackedSequence& seq : mb.sequences) {
        std::vector<uint32_t> lengths, patches;
        for (const Piece& p : seq.pieces) {
          lengths.push_back(p.length);
          patches.push_back(0);
        }
        want += cost.zigzag_sequence(lengths, patches, 256, 4) + cost.padding(256 - seq.used);
      }
      REQUIRE(mb.cost == Approx(want));
      if (m > 0) REQUIRE(bucket.micro_batches[m - 1].cost >= mb.cost);
      bucket_cost += mb.cost;
    }
    REQUIRE(bucket.cost == Approx(bucket_cost));
  }
  // The CP cost of a plan is never below its plain cost.
  double flat_total = 0, sliced_total = 0;
  for (const auto& b : flat.buckets) flat_total += b.cost;
  for (const auto& b : sliced.buckets) sliced_total += b.cost;
  REQUIRE(sliced_total >= flat_total * (1 - 1e-12));
}

TEST_CASE("pack: the memory budget is never exceeded on random heavy-tailed steps", "[pack][budget]") {
  std::mt19937_64 rng(29);
  msd::CostModel cost;
  cost.vision_scale = 0.5;
  int binding = 0;
  for (int round = 0; round < msd::test::rounds(90); ++round) {
    PackOptions options = random_options(rng, round, 64);
    // Half the rounds with the default budget, half with a given one of 1 to 4 sequences.
    if (round % 4 >= 2)
      options.max_positions_per_micro_batch =
          options.seq_len * std::uniform_int_distribution<uint64_t>(1, 4)(rng);
    const size_t count = std::uniform_int_distribution<size_t>(1, 2000)(rng);
    // Patches at most a quarter of a sequence: an image always fits beside others.
    const auto docs = random_docs(rng, count, options.seq_len, options.seq_len / 4);
    const msd::PackedStep step = msd::pack_step(docs, options, cost);
    check_plan(docs, options, step.buckets);
    uint64_t total = 0;
    for (const BucketPlan& plan : step.buckets) total += plan.positions;
    const uint64_t budget = msd::micro_batch_budget(total, options);
    REQUIRE(step.stats.positions_budget == budget);
    const uint64_t bins = uint64_t{options.dp} * options.micro_batches;
    const bool holds = total <= budget * bins;
    REQUIRE(step.stats.budget_exceeded == !holds);
    if (options.max_positions_per_micro_batch == 0) REQUIRE(holds);  // the default always holds the step
    // A step the given budget cannot hold gets the even share, met up to one
    // piece (an image cannot be cut to fit the last room).
    const uint64_t limit = holds ? budget : (total + bins - 1) / bins + options.seq_len;
    for (const BucketPlan& plan : step.buckets)
      for (const auto& mb : plan.micro_batches) REQUIRE(mb.positions <= limit);
    REQUIRE(step.stats.max_micro_batch_positions <= limit);
    binding += step.stats.budget_binding;
  }
  CHECK(binding > msd::test::rounds(10));  // the test exercises the repair, not only plans already within budget
}

TEST_CASE("pack: the budget shapes the plan; the repair moves pieces only when it must", "[pack][budget]") {
  std::mt19937_64 rng(5);
  const auto docs = random_docs(rng, 3000, 4096, 256);
  PackOptions options;
  options.seq_len = 4096;
  options.dp = 16;
  options.micro_batches = 4;
  options.max_positions_per_micro_batch = UINT64_MAX;
  for (auto method : {msd::BalanceMethod::greedy, msd::BalanceMethod::karmarkar_karp}) {
    options.balance = method;
    options.max_positions_per_micro_batch = UINT64_MAX;
    const msd::PackedStep free = msd::pack_step(docs, options);
    REQUIRE_FALSE(free.stats.budget_binding);
    // Budgets the step fits in are held, down to half a sequence over the even
    // share: the balancing places whole sequences within them, and the repair
    // moves what is left over.
    uint64_t total = 0;
    for (const BucketPlan& plan : free.buckets) total += plan.positions;
    const uint64_t even = (total + 63) / 64;
    for (uint64_t budget : {free.stats.max_micro_batch_positions, even + options.seq_len, even + options.seq_len / 2}) {
      options.max_positions_per_micro_batch = budget;
      const msd::PackedStep held = msd::pack_step(docs, options);
      check_plan(docs, options, held.buckets);
      INFO("budget " << budget << ": binding " << held.stats.budget_binding);
      CHECK_FALSE(held.stats.budget_exceeded);
      CHECK(held.stats.max_micro_batch_positions <= budget);
    }
    // Too small to hold the step: the repair spreads it to the even share.
    options.max_positions_per_micro_batch = options.seq_len / 2;
    const msd::PackedStep halved = msd::pack_step(docs, options);
    check_plan(docs, options, halved.buckets);
    CHECK(halved.stats.budget_exceeded);
    CHECK(halved.stats.budget_binding);
  }
}

TEST_CASE("pack: variable-length rows hold each micro-batch in one row, charge no padding, keep the budget",
          "[pack][varlen]") {
  std::mt19937_64 rng(41);
  msd::CostModel cost;
  cost.vision_scale = 0.5;
  for (int round = 0; round < msd::test::rounds(60); ++round) {
    PackOptions options = random_options(rng, round, 64);
    options.varlen = true;
    if (round % 3 == 0) options.pp = 4;
    const size_t count = std::uniform_int_distribution<size_t>(1, 2000)(rng);
    const auto docs = random_docs(rng, count, options.seq_len, options.seq_len / 4);
    const msd::PackedStep step = msd::pack_step(docs, options, cost);
    check_plan(docs, options, step.buckets);
    std::map<uint32_t, uint32_t> fixed_of;
    for (const PlanDoc& doc : docs) fixed_of[doc.id] = doc.fixed;
    uint64_t total = 0;
    for (const BucketPlan& plan : step.buckets) total += plan.positions;
    const uint64_t bins = uint64_t{options.dp} * options.micro_batches;
    const uint64_t budget = msd::micro_batch_budget(total, options);
    const uint64_t limit = total <= budget * bins ? budget : (total + bins - 1) / bins + options.seq_len;
    for (const BucketPlan& plan : step.buckets) {
      double pieces = 0.0;
      for (const auto& mb : plan.micro_batches) {
        REQUIRE(mb.positions <= limit);
        for (const auto& row : mb.sequences)
          for (const Piece& p : row.pieces) {
            const uint32_t fixed = fixed_of.at(p.doc);
            pieces += cost.document(p.length, p.begin < fixed ? std::min(fixed - p.begin, p.length) : 0);
          }
      }
      REQUIRE(plan.cost == Approx(pieces).epsilon(1e-9));  // no padding in the plan's cost
    }
    REQUIRE(step.stats.sequences <= bins);  // at most one row a micro-batch
    REQUIRE(msd::row_positions(1, options.seq_len, true) == msd::kVarlenAlign);
    REQUIRE(msd::row_positions(msd::kVarlenAlign + 1, options.seq_len, true) == 2 * msd::kVarlenAlign);
    REQUIRE(msd::row_positions(5, options.seq_len, false) == options.seq_len);
  }
}

TEST_CASE("pack_step: a step without documents gives every DP bucket, each with empty micro-batches") {
  for (const uint32_t cp : {1u, 2u}) {
    for (const auto method : {msd::BalanceMethod::greedy, msd::BalanceMethod::karmarkar_karp}) {
      PackOptions options;
      options.seq_len = 1024;
      options.dp = 4;
      options.micro_batches = 2;
      options.cp = cp;
      options.balance = method;
      const msd::PackedStep step = msd::pack_step({}, options);
      REQUIRE(step.buckets.size() == options.dp);
      for (const BucketPlan& bucket : step.buckets) {
        REQUIRE(bucket.micro_batches.size() == options.micro_batches);
        for (const auto& mb : bucket.micro_batches) REQUIRE(mb.sequences.empty());
      }
    }
  }
}
