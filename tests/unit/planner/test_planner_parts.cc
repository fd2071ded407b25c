// The planner's collaborators that hold no MPI: the loader checkpoint round,
// the loaders' profiles, the slot releases, the plan encoder and the
// acknowledgement watch.
#include <catch2/catch.hpp>

#include <tuple>

#include "common/error.h"
#include "planner/ack_watch.h"
#include "planner/checkpoint_round.h"
#include "planner/loader_profiles.h"
#include "planner/plan_encoder.h"
#include "planner/slot_releases.h"

using namespace msd;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST_CASE("a checkpoint round ends when every part is written, and one at a time is open") {
  CheckpointRound round;
  const auto t0 = Clock::now();
  REQUIRE(round.begin(20, {1, 2, 3}, t0));
  CHECK_FALSE(round.begin(30, {1}, t0));  // still open: skipped
  CHECK(round.step() == 20);
  round.written(1, 20);
  round.written(2, 10);  // an older round's part does not count
  CHECK_FALSE(round.finish());
  CHECK(round.waits_for(2));
  round.written(2, 20);
  round.written(3, 20);
  CHECK(round.finish() == std::optional<uint64_t>(20));
  CHECK_FALSE(round.open());
  CHECK(round.begin(30, {1}, t0));
}

TEST_CASE("a checkpoint round drops gone writers at once and late ones past the bound") {
  CheckpointRound round;
  const auto t0 = Clock::now();
  REQUIRE(round.begin(5, {1, 2, 3}, t0));
  const auto gone = [](int rank) { return rank == 3; };
  CHECK(round.drop_late(t0 + milliseconds(10), milliseconds(100), gone).empty());  // 3 dropped, not to take over
  CHECK_FALSE(round.waits_for(3));
  round.written(1, 5);
  CHECK_FALSE(round.finish());
  CHECK(round.drop_late(t0 + milliseconds(101), milliseconds(100), gone) == std::vector<int>{2});
  CHECK(round.finish() == std::optional<uint64_t>(5));
}

TEST_CASE("loader profiles average per source, weighted by the samples each loader measured") {
  LoaderProfiles profiles;
  SourceProfile a, b;
  a.samples_measured = 1;
  a.read_seconds_per_sample = 1.0;
  a.open_bytes = 100;
  b.samples_measured = 3;
  b.read_seconds_per_sample = 2.0;
  b.open_bytes = 300;
  profiles.record(1, {{0, a}});
  profiles.record(2, {{0, b}});
  profiles.record(2, {{0, b}, {1, b}});  // the latest report replaces the previous one
  const auto average = profiles.average(3);
  CHECK(average[0].samples_measured == 4);
  CHECK(average[0].read_seconds_per_sample == Approx(1.75));
  CHECK(average[0].open_bytes == Approx(200));  // over the loaders that opened it
  CHECK(average[1].read_seconds_per_sample == Approx(2.0));
  CHECK(average[2].samples_measured == 0);
  CHECK_THROWS_AS(profiles.average(1), ProtocolError);
}

TEST_CASE("slot releases merge a loader's adjacent slots into ranges") {
  SlotReleases releases;
  CHECK(releases.empty());
  releases.add(3, 0, 100);    // [0, 128)
  releases.add(3, 128, 64);   // adjacent: [0, 192)
  releases.add(5, 64, 1);     // another loader
  releases.add(3, 192, 10);   // adjacent again: [0, 256)
  releases.add(3, 512, 64);   // a gap: a range of its own
  releases.add(3, 448, 64);   // ends where the last begins, but added after it: its own
  CHECK(releases.holds(3));
  CHECK(releases.holds(5));
  CHECK_FALSE(releases.holds(4));
  std::vector<std::tuple<int, std::vector<SlotRange>, uint64_t>> out;
  releases.drain([&](int loader, const std::vector<SlotRange>& ranges, uint64_t bytes) {
    out.emplace_back(loader, ranges, bytes);
  });
  REQUIRE(out.size() == 2);
  CHECK(std::get<0>(out[0]) == 3);
  CHECK(std::get<1>(out[0]) == std::vector<SlotRange>{{0, 256}, {512, 64}, {448, 64}});
  CHECK(std::get<2>(out[0]) == 384);
  CHECK(std::get<0>(out[1]) == 5);
  CHECK(std::get<1>(out[1]) == std::vector<SlotRange>{{64, 64}});
  CHECK(std::get<2>(out[1]) == 64);
  CHECK(releases.empty());
  CHECK_FALSE(releases.holds(3));
}

TEST_CASE("the plan encoder writes the bytes of encode(StepPlan) for the same plan") {
  std::vector<SampleMeta> samples(5);
  for (uint32_t i = 0; i < samples.size(); ++i) {
    samples[i].source = i % 2;
    samples[i].cursor = 100 + i;
    samples[i].index = 7 * i;
    samples[i].loader_rank = 1 + static_cast<int>(i % 2);
    samples[i].slot_offset = 64 * i;
    samples[i].slot_bytes = 40 + i;
    samples[i].text_tokens = 10 + i;
  }
  // Two groups: sample 3 split over two sequences of the first; the second
  // uses samples the first used, in another order (indices are per plan).
  std::vector<BucketPlan> buckets(2);
  buckets[0].micro_batches.resize(2);
  buckets[0].micro_batches[0].sequences = {{{{3, 0, 8}, {1, 0, 11}}, 19}, {{{3, 8, 5}}, 5}};
  buckets[0].micro_batches[1].sequences = {{{{0, 0, 10}}, 10}};
  buckets[1].micro_batches.resize(1);
  buckets[1].micro_batches[0].sequences = {{{{4, 0, 14}, {0, 0, 10}}, 24}, {{{2, 0, 12}}, 12}};
  samples[2].patches = 4;  // an image-text sample: its patches have no labels
  samples[2].text_tokens = 8;
  // Labels: every piece's positions but its last, from its first text
  // position: 7+10 (sample 3 split), 10, 9, 13, 9, and 12 - 4 - 1 for sample 2.
  const uint64_t labelled = 7 + 4 + 10 + 9 + 13 + 9 + 7;
  CHECK(loss_tokens(buckets, samples) == labelled);
  PlanEncoder encoder;
  encoder.start(9, 32, samples, labelled);
  for (const BucketPlan& bucket : buckets) {
    StepPlan expected;  // as the planner built it before: samples in the order the pieces first use them
    expected.step = 9;
    expected.seq_len = 32;
    expected.loss_tokens = labelled;
    std::vector<int> local(samples.size(), -1);
    uint64_t expected_tokens = 0;
    for (const MicroBatchPlan& mb : bucket.micro_batches) {
      MicroBatchWire& wire = expected.micro_batches.emplace_back();
      for (const PackedSequence& sequence : mb.sequences) {
        SequencePlan& out = wire.sequences.emplace_back();
        for (const Piece& piece : sequence.pieces) {
          if (local[piece.doc] < 0) {
            local[piece.doc] = static_cast<int>(expected.samples.size());
            expected.samples.push_back(samples[piece.doc]);
          }
          out.pieces.push_back({static_cast<uint32_t>(local[piece.doc]), piece.begin, piece.length});
          expected_tokens += piece.length;
        }
      }
    }
    uint64_t tokens = 0;
    CHECK(encoder.encode(bucket, tokens) == encode(expected));
    CHECK(tokens == expected_tokens);
  }
}

TEST_CASE("the acknowledgement watch names the clients that did not acknowledge in time") {
  AckWatch watch({5, 2, 9}, 1);
  const auto t0 = Clock::now();
  watch.sent(0, t0);
  watch.acked(2, 0);
  watch.acked(7, 0);  // not a watched rank: ignored
  CHECK_NOTHROW(watch.check(t0 + milliseconds(500)));
  try {
    watch.check(t0 + milliseconds(1500));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("ranks 5, 9 did not acknowledge step 0") != std::string::npos);
  }
  watch.acked(5, 0);
  watch.acked(9, 0);
  watch.completed(0);
  CHECK_NOTHROW(watch.check(t0 + milliseconds(1500)));
}
