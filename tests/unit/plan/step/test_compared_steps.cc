// The steps of a comparison: every step holds exactly Megatron's global batch
// of positions, every position of the run once (documents across an edge cut
// there and continued, images deferred rather than cut, held documents
// delivered once), and every placement of a compared run has the same steps
// with the same positions each.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "plan/step/compared_steps.h"
#include "plan/step/modes.h"
#include "unit/rounds.h"

using msd::ComparedSteps;
using msd::PlanDoc;

namespace {

// steps x per_step documents, ids unique over the run: about one in
// `long_every` of 1001-9000 positions, one in `image_every` an image-text
// document (up to 600 patches), the rest 1-1000.
std::vector<std::vector<PlanDoc>> random_run(std::mt19937_64& rng, size_t steps, size_t per_step, int long_every,
                                             int image_every = 0) {
  std::vector<std::vector<PlanDoc>> run(steps);
  uint32_t id = 0;
  for (auto& step : run)
    for (size_t i = 0; i < per_step; ++i) {
      PlanDoc doc{id++, static_cast<uint32_t>(1 + rng() % 1000), 0, 0.0};
      if (static_cast<int>(rng() % long_every) == 0) doc.positions = 1001 + rng() % 8000;
      if (image_every > 0 && static_cast<int>(rng() % image_every) == 0) {
        doc.fixed = 64 + rng() % 537;
        doc.positions = doc.fixed + rng() % 300;
      }
      step.push_back(doc);
    }
  return run;
}

// The run trimmed to a whole number of steps of `step_positions` (the last
// documents dropped, one shortened to text).
std::vector<std::vector<PlanDoc>> trimmed(std::vector<std::vector<PlanDoc>> run, uint64_t step_positions) {
  uint64_t total = 0;
  for (const auto& step : run)
    for (const PlanDoc& doc : step) total += doc.positions;
  uint64_t keep = total / step_positions * step_positions;
  for (auto& step : run) {
    std::vector<PlanDoc> left;
    for (PlanDoc doc : step) {
      if (keep == 0) break;
      if (doc.positions > keep) {
        doc.positions = static_cast<uint32_t>(keep);
        doc.fixed = 0;
      }
      keep -= doc.positions;
      left.push_back(doc);
    }
    step = left;
  }
  REQUIRE(keep == 0);
  return run;
}

// Every position of every document exactly once, pieces in the documents' own
// offsets; each step exactly step_positions.
void check_exact(const std::vector<std::vector<PlanDoc>>& run, const ComparedSteps& steps, uint64_t step_positions) {
  std::map<uint32_t, const PlanDoc*> doc_of;
  for (const auto& step : run)
    for (const PlanDoc& doc : step) doc_of[doc.id] = &doc;
  std::map<uint32_t, uint32_t> next;  // per document: the next position expected
  uint32_t part_id = 0;
  for (const auto& step : steps.steps) {
    uint64_t positions = 0;
    std::map<uint32_t, int> parts_of_doc;
    for (const PlanDoc& part : step) {
      REQUIRE(part.id == part_id++);  // ids in the order the steps take them
      REQUIRE(part.positions > 0);
      const msd::PartOrigin& origin = steps.origins.at(part.id);
      const PlanDoc& doc = *doc_of.at(origin.doc);
      REQUIRE(origin.begin + part.positions <= doc.positions);
      REQUIRE(part.fixed == (doc.fixed > origin.begin ? std::min(doc.fixed - origin.begin, part.positions) : 0u));
      if (origin.begin > 0) REQUIRE(next[origin.doc] == origin.begin);  // a continuation takes up where it was cut
      CHECK(doc.fixed <= origin.begin + part.positions);  // patches are never cut here
      next[origin.doc] = origin.begin + part.positions;
      REQUIRE(++parts_of_doc[origin.doc] == 1);  // a document is one part of a step
      positions += part.positions;
    }
    REQUIRE(positions == step_positions);
  }
  REQUIRE(next.size() == doc_of.size());
  for (const auto& [id, end] : next) REQUIRE(end == doc_of.at(id)->positions);
}

}  // namespace

TEST_CASE("compared steps hold exactly a global batch each, every position of the run once, in stream order") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < msd::test::rounds(40); ++round) {
    const uint64_t step_positions = 2048 * (1 + rng() % 6);
    const auto run = trimmed(random_run(rng, 2 + rng() % 12, 1 + rng() % 24, 1 + static_cast<int>(rng() % 6),
                                        round % 2 == 0 ? 3 : 0),
                             step_positions);
    const ComparedSteps steps = msd::compared_steps(run, step_positions);
    check_exact(run, steps, step_positions);
    CHECK(steps.hold.held == 0);
    // Without images the steps are the stream cut at every step_positions.
    if (round % 2 != 0) {
      uint64_t at = 0;
      for (const auto& step : steps.steps)
        for (const PlanDoc& part : step) {
          uint64_t start = 0;  // the part's stream position
          for (const auto& s : run)
            for (const PlanDoc& doc : s)
              if (doc.id < steps.origins[part.id].doc) start += doc.positions;
          REQUIRE(start + steps.origins[part.id].begin == at);
          at += part.positions;
        }
    }
  }
  // An image whose patches the edge would cut waits for the next step, the
  // step filled from the documents after it.
  const std::vector<std::vector<PlanDoc>> images = {{{0, 900, 0, 0.0}, {1, 400, 300, 0.0}, {2, 2000, 0, 0.0},
                                                      {3, 796, 0, 0.0}}};
  const ComparedSteps deferred = msd::compared_steps(images, 1024);
  check_exact(images, deferred, 1024);
  REQUIRE(deferred.steps[0].size() == 2);  // 900 of document 0, then 124 of document 2
  CHECK(deferred.origins[deferred.steps[0][1].id].doc == 2);
  CHECK(deferred.origins[deferred.steps[1][0].id].doc == 1);  // the image first in the next step
}

TEST_CASE("compared steps with the hold: exact steps, held documents wait and are delivered once") {
  std::mt19937_64 rng(11);
  uint64_t held_total = 0;
  for (int round = 0; round < msd::test::rounds(40); ++round) {
    const uint64_t step_positions = 4096 * (1 + rng() % 4);
    const auto run = trimmed(random_run(rng, 3 + rng() % 12, 4 + rng() % 24, 2 + static_cast<int>(rng() % 5)),
                             step_positions);
    msd::HoldOptions hold;
    hold.above = 1000;
    hold.max_steps = static_cast<uint32_t>(1 + rng() % 8);
    hold.release = 1 + static_cast<uint32_t>(rng() % 6);
    const ComparedSteps steps = msd::compared_steps(run, step_positions, hold);
    check_exact(run, steps, step_positions);
    held_total += steps.hold.held;
    CHECK(steps.hold.max_delay <= hold.max_steps);
    uint64_t histogram = 0;
    for (uint64_t n : steps.hold.histogram) histogram += n;
    CHECK(histogram == steps.hold.held);
    // A pure function of the run.
    const ComparedSteps again = msd::compared_steps(run, step_positions, hold);
    REQUIRE(again.origins.size() == steps.origins.size());
    for (size_t i = 0; i < again.origins.size(); ++i) {
      REQUIRE(again.origins[i].doc == steps.origins[i].doc);
      REQUIRE(again.origins[i].begin == steps.origins[i].begin);
    }
  }
  CHECK(held_total > 0);
}

TEST_CASE("every placement of a compared run has the same steps, each exactly Megatron's global batch") {
  std::mt19937_64 rng(3);
  msd::PackOptions pack;
  pack.seq_len = 2048;
  pack.dp = 4;
  pack.micro_batches = 2;
  const msd::ComparedRun run = msd::whole_global_batches(random_run(rng, 10, 12, 4, 5), pack, 1, "run");
  const uint64_t global = msd::global_batch_positions(run.stream, pack);
  REQUIRE(global > 0);
  const size_t steps = run.positions / global;
  struct Case {
    msd::TrainingMode mode;
    bool varlen, spread, hold;
  };
  using M = msd::TrainingMode;
  for (const Case& c : {Case{M::megatron, false, false, false}, Case{M::megatron_docmask, false, false, false},
                        Case{M::megatron_dp_balanced, false, false, false}, Case{M::colocated_tokens, false, false, false},
                        Case{M::colocated_samples, false, false, false}, Case{M::msd_greedy, false, false, false},
                        Case{M::msd_tokens, true, false, false}, Case{M::msd_greedy, true, true, false},
                        Case{M::msd_greedy, true, true, true}, Case{M::msd_greedy, true, false, true}}) {
    msd::PackOptions options = pack;
    options.varlen = c.varlen;
    options.cuts = c.spread ? msd::Cuts::balance : msd::Cuts::whole;
    options.variable_micro_batches = c.spread;
    options.hold.above = c.hold ? 1024 : 0;
    options.hold.release = pack.dp;
    msd::HoldStats held;
    const auto placed = msd::place_run(c.mode, run.steps, options, msd::CostModel{}, run.stream, &held);
    INFO(msd::training_mode_name(c.mode) << " varlen " << c.varlen << " spread " << c.spread << " hold " << c.hold);
    REQUIRE(placed.size() == steps);
    std::map<uint32_t, uint64_t> covered;
    for (const auto& step : placed) {
      uint64_t positions = 0;
      for (const msd::BucketPlan& bucket : step) {
        positions += bucket.positions;
        for (const msd::MicroBatchPlan& mb : bucket.micro_batches)
          for (const msd::PackedSequence& sequence : mb.sequences)
            for (const msd::Piece& p : sequence.pieces) covered[p.doc] += p.length;
      }
      REQUIRE(positions == global);
    }
    for (const auto& step : run.steps)
      for (const PlanDoc& doc : step) REQUIRE(covered[doc.id] == doc.positions);
    if (c.hold) CHECK(held.held > 0);
  }
}
