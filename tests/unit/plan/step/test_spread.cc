// The spread placement (cut-aware pieces, variable micro-batches) and the
// Megatron piece budget it stays within.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "plan/step/cuts.h"
#include "plan/step/packing.h"
#include "plan/step/modes.h"
#include "plan/step/pack.h"
#include "unit/rounds.h"

using msd::BucketPlan;
using msd::Cuts;
using msd::PackOptions;
using msd::Piece;
using msd::PlanDoc;

namespace {

// Heavy-tailed lengths: log-normal around seq_len / 6, a few far over
// seq_len; one in `image_every` an image-text document.
std::vector<PlanDoc> random_docs(std::mt19937_64& rng, size_t count, uint32_t seq_len, int image_every = 0) {
  std::lognormal_distribution<double> length(std::log(seq_len / 6.0), 1.3);
  std::vector<PlanDoc> docs;
  for (size_t i = 0; i < count; ++i) {
    PlanDoc doc;
    doc.id = static_cast<uint32_t>(i);
    doc.positions = std::clamp<uint32_t>(static_cast<uint32_t>(length(rng)), 1, 6 * seq_len);
    if (image_every > 0 && i % image_every == 0) {
      doc.fixed = std::min<uint32_t>(seq_len / 4, 64);
      doc.positions = std::min(seq_len, doc.positions + doc.fixed);
    }
    docs.push_back(doc);
  }
  return docs;
}

PackOptions spread_options(uint32_t seq_len, uint32_t dp, Cuts cuts, bool variable) {
  PackOptions options;
  options.seq_len = seq_len;
  options.dp = dp;
  options.micro_batches = 2;
  options.varlen = true;
  options.cuts = cuts;
  options.variable_micro_batches = variable;
  return options;
}

// Every document's positions are placed exactly once: its pieces, sorted,
// tile [0, kept) with no gap and no overlap.
void check_every_position_once(const std::vector<PlanDoc>& docs, const std::vector<BucketPlan>& buckets,
                               uint32_t seq_len) {
  std::map<uint32_t, std::vector<Piece>> by_doc;
  for (const BucketPlan& bucket : buckets)
    for (const auto& mb : bucket.micro_batches)
      for (const auto& sequence : mb.sequences)
        for (const Piece& piece : sequence.pieces) {
          REQUIRE(piece.length > 0);
          REQUIRE(piece.length <= seq_len);
          by_doc[piece.doc].push_back(piece);
        }
  REQUIRE(by_doc.size() == docs.size());
  for (const PlanDoc& doc : docs) {
    auto& pieces = by_doc.at(doc.id);
    std::sort(pieces.begin(), pieces.end(), [](const Piece& x, const Piece& y) { return x.begin < y.begin; });
    uint32_t next = 0;
    for (const Piece& piece : pieces) {
      REQUIRE(piece.begin == next);
      next += piece.length;
    }
    REQUIRE(next == (doc.fixed > 0 ? std::min(doc.positions, seq_len) : doc.positions));
  }
}

uint64_t piece_count(const std::vector<BucketPlan>& buckets) {
  uint64_t count = 0;
  for (const BucketPlan& bucket : buckets)
    for (const auto& mb : bucket.micro_batches)
      for (const auto& sequence : mb.sequences) count += sequence.pieces.size();
  return count;
}

}  // namespace

TEST_CASE("megatron_piece_count is the piece count of pack_concatenated in id order") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < msd::test::rounds(40); ++round) {
    const uint32_t seq_len = std::uniform_int_distribution<uint32_t>(64, 4096)(rng);
    std::vector<PlanDoc> docs = random_docs(rng, 1 + rng() % 300, seq_len, round % 3 == 0 ? 5 : 0);
    uint64_t expected = 0;
    for (const auto& sequence : msd::pack_concatenated(docs, seq_len)) expected += sequence.pieces.size();
    std::shuffle(docs.begin(), docs.end(), rng);
    CHECK(msd::megatron_piece_count(docs, seq_len, msd::LongDocs::split) == expected);
  }
}

TEST_CASE("cuts = balance cuts a long document into near-equal pieces") {
  PackOptions options = spread_options(1000, 1, Cuts::balance, false);
  const std::vector<PlanDoc> docs{{0, 2001, 0, 0.0}, {1, 999, 0, 0.0}, {2, 3000, 0, 0.0}};
  const auto pieces = msd::packing::cut_into_pieces(docs, options, msd::CostModel{});
  std::vector<uint32_t> lengths;
  for (const auto& p : pieces) lengths.push_back(p.piece.length);
  CHECK(lengths == std::vector<uint32_t>{667, 667, 667, 999, 1000, 1000, 1000});
}

TEST_CASE("cut-aware spread: no more pieces than Megatron's cut, every position once, deterministic") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < msd::test::rounds(60); ++round) {
    const uint32_t seq_len = std::uniform_int_distribution<uint32_t>(256, 8192)(rng);
    const uint32_t dp = std::uniform_int_distribution<uint32_t>(1, 32)(rng);
    std::vector<PlanDoc> docs = random_docs(rng, dp * (2 + rng() % 12), seq_len, round % 4 == 0 ? 7 : 0);
    PackOptions options = spread_options(seq_len, dp, round % 2 ? Cuts::balance : Cuts::whole, round % 3 != 0);
    options.balance = round % 5 == 0 ? msd::BalanceMethod::karmarkar_karp : msd::BalanceMethod::greedy;
    msd::CostModel cost;
    cost.a = seq_len / 5.0;
    cost.micro_batch = round % 2 == 0 ? 0.0 : 0.05 * seq_len * seq_len;
    const msd::PackedStep step = msd::pack_step(docs, options, cost);
    check_every_position_once(docs, step.buckets, seq_len);
    REQUIRE(step.buckets.size() == dp);
    if (options.cuts == Cuts::balance) {
      const uint64_t budget = msd::megatron_piece_count(docs, seq_len, options.long_docs);
      CHECK(step.stats.megatron_pieces == budget);
      CHECK(piece_count(step.buckets) <= budget);
      CHECK(step.stats.pieces == piece_count(step.buckets));
    }
    for (const BucketPlan& bucket : step.buckets) {
      if (options.variable_micro_batches)
        CHECK(bucket.micro_batches.size() >= options.micro_batches);
      else
        CHECK(bucket.micro_batches.size() == options.micro_batches);
      for (const auto& mb : bucket.micro_batches) {
        CHECK(mb.sequences.size() <= 1);  // one variable-length row
        if (options.variable_micro_batches || !step.stats.budget_exceeded)
          CHECK(mb.positions <= step.stats.positions_budget);
        if (!mb.sequences.empty()) CHECK(mb.sequences[0].used == mb.positions);
      }
    }
    std::vector<PlanDoc> shuffled = docs;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const msd::PackedStep again = msd::pack_step(shuffled, options, cost);
    REQUIRE(again.buckets.size() == step.buckets.size());
    for (size_t b = 0; b < dp; ++b) {
      REQUIRE(again.buckets[b].cost == step.buckets[b].cost);
      REQUIRE(again.buckets[b].micro_batches.size() == step.buckets[b].micro_batches.size());
      for (size_t m = 0; m < step.buckets[b].micro_batches.size(); ++m) {
        const auto& x = again.buckets[b].micro_batches[m].sequences;
        const auto& y = step.buckets[b].micro_batches[m].sequences;
        REQUIRE(x.size() == y.size());
        for (size_t s = 0; s < x.size(); ++s) {
          REQUIRE(x[s].pieces.size() == y[s].pieces.size());
          for (size_t p = 0; p < x[s].pieces.size(); ++p) {
            CHECK(x[s].pieces[p].doc == y[s].pieces[p].doc);
            CHECK(x[s].pieces[p].begin == y[s].pieces[p].begin);
            CHECK(x[s].pieces[p].length == y[s].pieces[p].length);
          }
        }
      }
    }
  }
}

TEST_CASE("variable micro-batches: counts differ between ranks and each stays within the budget") {
  // One rank gets a long document alone; the short ones fill the others, and
  // a rank with many short documents needs more micro-batches than one with
  // a single long piece.
  PackOptions options = spread_options(1024, 4, Cuts::whole, true);
  options.micro_batches = 1;
  options.max_positions_per_micro_batch = 1024;
  std::vector<PlanDoc> docs;
  docs.push_back({0, 1024, 0, 0.0});
  for (uint32_t i = 1; i <= 60; ++i) docs.push_back({i, 100, 0, 0.0});
  msd::CostModel cost;
  cost.a = 200;
  const msd::PackedStep step = msd::pack_step(docs, options, cost);
  size_t fewest = SIZE_MAX, most = 0;
  for (const BucketPlan& bucket : step.buckets) {
    fewest = std::min(fewest, bucket.micro_batches.size());
    most = std::max(most, bucket.micro_batches.size());
    for (const auto& mb : bucket.micro_batches) CHECK(mb.positions <= 1024);
  }
  CHECK(fewest == 1);
  CHECK(most >= 2);
  CHECK(step.stats.max_micro_batches == most);
  check_every_position_once(docs, step.buckets, 1024);
}

TEST_CASE("the per-micro-batch cost is charged once per micro-batch with work") {
  PackOptions options = spread_options(1000, 1, Cuts::whole, true);
  options.micro_batches = 1;
  options.max_positions_per_micro_batch = 1000;
  const std::vector<PlanDoc> docs{{0, 900, 0, 0.0}, {1, 900, 0, 0.0}, {2, 50, 0, 0.0}};
  msd::CostModel cost;
  cost.a = 10;
  cost.micro_batch = 1e6;
  const msd::PackedStep step = msd::pack_step(docs, options, cost);
  REQUIRE(step.buckets[0].micro_batches.size() == 2);
  const double pieces = cost.document(900, 0) * 2 + cost.document(50, 0);
  CHECK(step.buckets[0].cost == Approx(pieces + 2e6));
}

TEST_CASE("cut-aware cuts even out a step Megatron's cut would balance") {
  // Two documents of seq_len and many short ones over 4 ranks: whole pieces
  // leave two ranks with a full-length piece; cutting them (Megatron's cut
  // of the same tokens makes more pieces) lowers the heaviest rank.
  // In stream order the short ones come first, so the row edges fall inside
  // the long ones (in the other order each long one would fill a row).
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < 40; ++i) docs.push_back({i, 200, 0, 0.0});
  docs.push_back({40, 4096, 0, 0.0});
  docs.push_back({41, 4096, 0, 0.0});
  msd::CostModel cost;
  cost.a = 4096 / 5.0;
  const PackOptions whole = spread_options(4096, 4, Cuts::whole, true);
  const PackOptions cut = spread_options(4096, 4, Cuts::balance, true);
  const msd::PackedStep a = msd::pack_step(docs, whole, cost);
  const msd::PackedStep b = msd::pack_step(docs, cut, cost);
  CHECK(b.stats.max_cost < 0.8 * a.stats.max_cost);
  CHECK(b.stats.pieces > a.stats.pieces);
  CHECK(b.stats.pieces <= b.stats.megatron_pieces);
}

TEST_CASE("pack_step with the new options off is today's placement") {
  std::mt19937_64 rng(3);
  const std::vector<PlanDoc> docs = random_docs(rng, 200, 2048, 9);
  PackOptions options;
  options.seq_len = 2048;
  options.dp = 8;
  options.micro_batches = 2;
  const msd::PackedStep step = msd::pack_step(docs, options);
  CHECK_FALSE(msd::spreads(options));
  CHECK(step.stats.megatron_pieces == 0);
  for (const BucketPlan& bucket : step.buckets) CHECK(bucket.micro_batches.size() == 2);
}
