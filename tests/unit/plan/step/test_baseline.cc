#include <catch2/catch.hpp>

#include "plan/step/baseline.h"

using namespace msd;

TEST_CASE("next-fit packing keeps arrival order and never reorders to fill gaps") {
  std::vector<PlanDoc> docs = {{0, 6, 0, 0}, {1, 5, 0, 0}, {2, 2, 0, 0}, {3, 10, 0, 0}};
  MicroBatchPlan mb = pack_next_fit(docs, 8, LongDocs::split);
  // 6 | 5+2 | 8 | 2   (doc 3 split into 8 + 2; doc 2 does not go back to fill seq 0)
  REQUIRE(mb.sequences.size() == 4);
  REQUIRE(mb.sequences[0].used == 6);
  REQUIRE(mb.sequences[1].used == 7);
  REQUIRE(mb.sequences[2].pieces[0].doc == 3);
  REQUIRE(mb.sequences[2].used == 8);
  REQUIRE(mb.sequences[3].pieces[0].begin == 8);
  REQUIRE(mb.sequences[3].used == 2);
}

TEST_CASE("truncation and image documents") {
  std::vector<PlanDoc> docs = {{0, 20, 0, 0}, {1, 12, 6, 0}};
  MicroBatchPlan t = pack_next_fit(docs, 8, LongDocs::truncate);
  REQUIRE(t.sequences.size() == 2);
  REQUIRE(t.sequences[0].used == 8);
  MicroBatchPlan s = pack_next_fit(docs, 8, LongDocs::split);
  // doc 0: 8 + 8 + 4; doc 1 (image): its 6 patches and 2 text positions only.
  REQUIRE(s.sequences.size() == 4);
  REQUIRE(s.sequences[3].pieces[0].doc == 1);
  REQUIRE(s.sequences[3].used == 8);
}

TEST_CASE("micro-batches split by sample count") {
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < 7; ++i) docs.push_back({i, 1 + i * 100, 0, 0});
  auto mbs = baseline_micro_batches(docs, 3, 4096, LongDocs::split);
  REQUIRE(mbs.size() == 3);
  size_t total = 0;
  std::vector<size_t> counts;
  for (const auto& mb : mbs) {
    size_t c = 0;
    for (const auto& seq : mb.sequences) c += seq.pieces.size();
    counts.push_back(c);
    total += c;
  }
  REQUIRE(total == 7);
  REQUIRE(counts == std::vector<size_t>{3, 2, 2});
}
