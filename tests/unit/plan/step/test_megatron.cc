#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "plan/cluster/simulate.h"
#include "plan/step/megatron.h"
#include "plan/step/modes.h"

using namespace msd;

namespace {

using Pieces = std::vector<std::vector<uint32_t>>;  // [doc, begin, length] each

Pieces pieces_of(const PackedSequence& seq) {
  Pieces out;
  for (const Piece& p : seq.pieces) out.push_back({p.doc, p.begin, p.length});
  return out;
}

std::vector<uint32_t> lengths_of(const CpTeam& team) {
  std::vector<uint32_t> out;
  for (const Piece& p : team.samples) out.push_back(p.length);
  return out;
}

}  // namespace

TEST_CASE("GPTDataset's samples: the concatenated stream cut every S inputs, the last partial sample dropped") {
  // Documents 0..3 of 5, 3, 7 and 2 tokens, concatenated in the order 2, 0, 3, 1
  // (the document index); S = 4. The stream is C C C C C C C A A A A A D D B B B:
  // 17 positions and the one token after them, so floor(17 / 4) = 4 samples of
  // tokens [4i, 4i + 5); sample 3's fifth token (its last label) is position 16,
  // B's last token, which is no sample's input: the partial sample is dropped.
  const std::vector<PlanDoc> docs = {{0, 5, 0, 0}, {1, 3, 0, 0}, {2, 7, 0, 0}, {3, 2, 0, 0}};
  const std::vector<PlanDoc> ordered = {docs[2], docs[0], docs[3], docs[1]};
  const std::vector<PackedSequence> samples = gpt_samples(ordered, 4);
  REQUIRE(samples.size() == 4);
  REQUIRE(pieces_of(samples[0]) == Pieces{{2, 0, 4}});
  REQUIRE(pieces_of(samples[1]) == Pieces{{2, 4, 3}, {0, 0, 1}});
  REQUIRE(pieces_of(samples[2]) == Pieces{{0, 1, 4}});
  REQUIRE(pieces_of(samples[3]) == Pieces{{3, 0, 2}, {1, 0, 2}});
  for (const PackedSequence& s : samples) REQUIRE(s.used == 4);
  // 16 positions and the token after them: exactly 4 samples, nothing dropped.
  REQUIRE(gpt_samples({{0, 16, 0, 0}}, 4).size() == 4);
  REQUIRE(gpt_samples({{0, 15, 0, 0}}, 4).size() == 3);
}

TEST_CASE("MegatronPretrainingSampler deals blocks of mbs x dp samples, rank r taking slice r") {
  // 13 samples read in the shuffle order below; mbs 2, dp 2, 3 micro-batches:
  // a global batch of 12, so one step and sample order[12] dropped.
  std::vector<PackedSequence> samples(13);
  for (uint32_t i = 0; i < 13; ++i) samples[i].pieces.push_back({i, 0, 1});
  const std::vector<uint32_t> order = {5, 0, 12, 3, 7, 1, 9, 2, 11, 4, 8, 6, 10};
  const auto steps = deal_gpt_samples(samples, order, 2, 3, 2);
  REQUIRE(steps.size() == 1);
  auto docs = [&](uint32_t rank, uint32_t mb) {
    std::vector<uint32_t> out;
    for (const PackedSequence& s : steps[0][rank].micro_batches[mb].sequences) out.push_back(s.pieces[0].doc);
    return out;
  };
  REQUIRE(docs(0, 0) == std::vector<uint32_t>{5, 0});  // block 0: [5, 0 | 12, 3]
  REQUIRE(docs(1, 0) == std::vector<uint32_t>{12, 3});
  REQUIRE(docs(0, 1) == std::vector<uint32_t>{7, 1});  // block 1: [7, 1 | 9, 2]
  REQUIRE(docs(1, 1) == std::vector<uint32_t>{9, 2});
  REQUIRE(docs(0, 2) == std::vector<uint32_t>{11, 4});
  REQUIRE(docs(1, 2) == std::vector<uint32_t>{8, 6});
  REQUIRE(deal_gpt_samples(samples, order, 2, 3, 3).empty());  // 13 < 18: no whole global batch
}

TEST_CASE("megatron places by GPTDataset's document and sample orders, pure functions of the seed") {
  const std::vector<uint32_t> a = gpt_document_order(7, 50), b = gpt_document_order(7, 50);
  REQUIRE(a == b);
  REQUIRE(a != gpt_document_order(8, 50));
  REQUIRE(a != gpt_sample_order(7, 50));
  std::vector<uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 50; ++i) REQUIRE(sorted[i] == i);
  // place_run is the composition: documents in gpt_document_order, samples in
  // gpt_sample_order, dealt with the micro-batch size given.
  std::vector<std::vector<PlanDoc>> steps = {{{0, 9, 0, 0}, {1, 5, 0, 0}, {2, 12, 0, 0}}, {{3, 7, 0, 0}, {4, 3, 0, 0}}};
  PackOptions options;
  options.seq_len = 4;
  options.dp = 2;
  options.micro_batches = 2;
  const StreamOptions stream{11, 1, 2};
  const auto placed = place_run(TrainingMode::megatron, steps, options, CostModel{}, stream);
  const std::vector<PlanDoc> all = {steps[0][0], steps[0][1], steps[0][2], steps[1][0], steps[1][1]};
  std::vector<PlanDoc> ordered;
  for (uint32_t i : gpt_document_order(11, 5)) ordered.push_back(all[i]);
  const std::vector<PackedSequence> samples = gpt_samples(ordered, 4);  // 36 positions: 9 samples
  REQUIRE(samples.size() == 9);
  const auto expected = deal_gpt_samples(samples, gpt_sample_order(11, 9), 1, 2, 2);  // 2 steps, 1 dropped
  REQUIRE(placed.size() == 2);
  for (size_t t = 0; t < 2; ++t)
    for (uint32_t r = 0; r < 2; ++r)
      for (uint32_t m = 0; m < 2; ++m)
        REQUIRE(pieces_of(placed[t][r].micro_batches[m].sequences[0]) ==
                pieces_of(expected[t][r].micro_batches[m].sequences[0]));
  // Full causal attention over each row: a row of 4 costs a*4 + 4^2 whatever it holds.
  const CostModel cost;
  REQUIRE(placed[0][0].micro_batches[0].cost == Approx(cost.a * 4 + 16));
}

TEST_CASE("DpBalancedScheduler: next-fit in order, single pieces split off the last packs, pack i*dp+j to rank j") {
  // seq_len 10, dp 2: next-fit gives [6 3] [4 2] [5 1]; 3 packs, so the last
  // pack's last piece becomes a pack of its own: [6 3] [4 2] [5] [1].
  const std::vector<PlanDoc> docs = {{0, 6, 0, 0}, {1, 3, 0, 0}, {2, 4, 0, 0},
                                     {3, 2, 0, 0}, {4, 5, 0, 0}, {5, 1, 0, 0}};
  const std::vector<BucketPlan> buckets = dp_balanced_step(docs, 10, 2);
  REQUIRE(buckets.size() == 2);
  REQUIRE(buckets[0].micro_batches.size() == 2);
  REQUIRE(buckets[1].micro_batches.size() == 2);
  REQUIRE(pieces_of(buckets[0].micro_batches[0].sequences[0]) == Pieces{{0, 0, 6}, {1, 0, 3}});
  REQUIRE(pieces_of(buckets[1].micro_batches[0].sequences[0]) == Pieces{{2, 0, 4}, {3, 0, 2}});
  REQUIRE(pieces_of(buckets[0].micro_batches[1].sequences[0]) == Pieces{{4, 0, 5}});
  REQUIRE(pieces_of(buckets[1].micro_batches[1].sequences[0]) == Pieces{{5, 0, 1}});
  // A document longer than seq_len is cut into seq_len pieces first; dp 4: the
  // last pack gives up pieces while it has more than one, then the one before
  // it; the first pack is never split, so where Megatron stops ("not enough
  // samples to move") the last rank gets an empty micro-batch.
  const std::vector<PlanDoc> more = {{0, 27, 0, 0}, {1, 9, 0, 0}, {2, 3, 0, 0}, {3, 3, 0, 0}, {4, 3, 0, 0}};
  // pieces 10 10 7 | 9 | 3 3 3: packs [10] [10] [7] [9] [3 3 3] -> 5, 3 to move.
  const std::vector<BucketPlan> split = dp_balanced_step(more, 10, 4);
  std::vector<Pieces> packs;
  for (uint32_t i = 0; i < 2; ++i)
    for (uint32_t r = 0; r < 4; ++r) {
      REQUIRE(split[r].micro_batches.size() == 2);
      const MicroBatchPlan& mb = split[r].micro_batches[i];
      packs.push_back(mb.sequences.empty() ? Pieces{} : pieces_of(mb.sequences[0]));
    }
  REQUIRE(packs == std::vector<Pieces>{{{0, 0, 10}}, {{0, 10, 10}}, {{0, 20, 7}}, {{1, 0, 9}},
                                       {{2, 0, 3}}, {{4, 0, 3}}, {{3, 0, 3}}, {}});
}

TEST_CASE("BalancedCPScheduler: CP size the next power of two of L / (seq_len / cp), groups balanced over ranks") {
  REQUIRE(cp_ranks_needed(3, 4) == 1);
  REQUIRE(cp_ranks_needed(4, 4) == 1);
  REQUIRE(cp_ranks_needed(5, 4) == 2);
  REQUIRE(cp_ranks_needed(8, 4) == 2);
  REQUIRE(cp_ranks_needed(9, 4) == 4);
  REQUIRE(cp_ranks_needed(16, 4) == 4);
  // dp 2 x cp 2, seq_len 8 (4 a rank). Longest first: 8 (CP 2, work 32), 6
  // (CP 2, 18), 3, 2, 1 (CP 1: 9, 4, 1); two CP sizes, so two buckets of about
  // 32 each: [8] [6 3 2 1]. Group 0: 8 on ranks 0-1, 6 on 2-3; 3 needs one
  // rank and none is free nor of its size: the group closes. Group 1: 3, 2, 1
  // on ranks 0, 1, 2; rank 3 is idle, so the first team of the smallest size
  // (3's) takes two ranks and the others move up.
  const std::vector<PlanDoc> docs = {{0, 8, 0, 0}, {1, 3, 0, 0}, {2, 6, 0, 0}, {3, 2, 0, 0}, {4, 1, 0, 0}};
  const std::vector<CpGroup> groups = dynamic_cp_step(docs, 8, 2, 2);
  REQUIRE(groups.size() == 2);
  REQUIRE(groups[0].size() == 2);
  REQUIRE((groups[0][0].first_rank == 0 && groups[0][0].ranks == 2 && lengths_of(groups[0][0]) == std::vector<uint32_t>{8}));
  REQUIRE((groups[0][1].first_rank == 2 && groups[0][1].ranks == 2 && lengths_of(groups[0][1]) == std::vector<uint32_t>{6}));
  REQUIRE(groups[1].size() == 3);
  REQUIRE((groups[1][0].first_rank == 0 && groups[1][0].ranks == 2 && lengths_of(groups[1][0]) == std::vector<uint32_t>{3}));
  REQUIRE((groups[1][1].first_rank == 2 && groups[1][1].ranks == 1 && lengths_of(groups[1][1]) == std::vector<uint32_t>{2}));
  REQUIRE((groups[1][2].first_rank == 3 && groups[1][2].ranks == 1 && lengths_of(groups[1][2]) == std::vector<uint32_t>{1}));
}

TEST_CASE("BalancedCPScheduler places every piece once, teams of powers of two covering the domain") {
  SimulateOptions sim;
  sim.dp = 16;
  sim.tp = 1;
  sim.cp = 4;
  sim.seq_len = 65536;
  sim.samples_per_gpu = 24;
  sim.long_share = 0.3;
  const CostModel cost;
  for (uint64_t step = 0; step < 3; ++step) {
    const std::vector<PlanDoc> docs = synthetic_step(sim, cost, step);
    std::multiset<std::vector<uint32_t>> expected, placed;
    for (const Piece& p : step_pieces(docs, sim.seq_len)) expected.insert({p.doc, p.begin, p.length});
    PackOptions options;
    options.seq_len = sim.seq_len;
    options.dp = sim.dp;
    options.cp = sim.cp;
    for (const CpGroup& group : place_dynamic_cp(docs, options)) {
      uint32_t next = 0;
      for (const CpTeam& team : group) {
        REQUIRE(team.first_rank == next);  // disjoint, in rank order, covering the domain
        REQUIRE((team.ranks & (team.ranks - 1)) == 0);
        REQUIRE(!team.samples.empty());
        next += team.ranks;
        for (const Piece& p : team.samples) placed.insert({p.doc, p.begin, p.length});
      }
      REQUIRE(next == sim.dp * sim.cp);
    }
    REQUIRE(placed == expected);
  }
}
