#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "plan/step/modes.h"
#include "plan/cluster/simulate.h"
#include "plan/step/pack.h"

using namespace msd;

namespace {
// Positions each document has placed, summed over its pieces.
std::map<uint32_t, uint64_t> coverage(const std::vector<BucketPlan>& buckets, uint32_t seq_len) {
  std::map<uint32_t, uint64_t> placed;
  for (const BucketPlan& bucket : buckets)
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      for (const PackedSequence& seq : mb.sequences) {
        uint32_t used = 0;
        for (const Piece& p : seq.pieces) {
          placed[p.doc] += p.length;
          used += p.length;
        }
        REQUIRE(used == seq.used);
        REQUIRE(used <= seq_len);
      }
  return placed;
}
}  // namespace

TEST_CASE("Megatron-style packing cuts text at sequence edges and never cuts image-text") {
  // seq_len 8: text 6, text 5, image-text 4 (3 patches), text 3.
  const std::vector<PlanDoc> docs = {{0, 6, 0, 0}, {1, 5, 0, 0}, {2, 4, 3, 0}, {3, 3, 0, 0}};
  const std::vector<PackedSequence> seqs = pack_concatenated(docs, 8);
  REQUIRE(seqs.size() == 3);
  REQUIRE(seqs[0].used == 8);  // doc 0 and the first 2 of doc 1
  REQUIRE(seqs[0].pieces[1].doc == 1);
  REQUIRE(seqs[0].pieces[1].length == 2);
  REQUIRE(seqs[1].pieces[0].begin == 2);  // doc 1 continues
  REQUIRE(seqs[1].pieces[1].doc == 2);    // the image fits whole (3 + 4 <= 8)
  REQUIRE(seqs[1].used == 8);
  REQUIRE(seqs[1].pieces[2].doc == 3);  // one position of doc 3, then the rest
  REQUIRE(seqs[2].pieces[0].begin == 1);
  REQUIRE(seqs[2].used == 2);
  // An image-text document that does not fit starts a new sequence.
  const std::vector<PackedSequence> padded = pack_concatenated({{0, 6, 0, 0}, {1, 4, 2, 0}}, 8);
  REQUIRE(padded.size() == 2);
  REQUIRE(padded[0].used == 6);
  REQUIRE(padded[1].pieces[0].doc == 1);
}

TEST_CASE("colocated_samples gives rank r every dp-th document in arrival order") {
  REQUIRE(sample_share(7, 3, 1) == std::vector<uint32_t>{1, 4});
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < 10; ++i) docs.push_back({i, 100 + i, 0, 0});
  PackOptions options;
  options.seq_len = 1024;
  options.dp = 3;
  options.micro_batches = 2;
  const auto buckets = place_step(TrainingMode::colocated_samples, docs, options);
  REQUIRE(buckets.size() == 3);
  REQUIRE(buckets[1].micro_batches[0].sequences[0].pieces[0].doc == 1);
  REQUIRE(buckets[1].micro_batches[1].sequences[0].pieces[0].doc == 7);
  REQUIRE(buckets[1].positions == 101 + 104 + 107);
}

TEST_CASE("colocated_tokens gives ranks equal sequence counts, within one") {
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < 50; ++i) docs.push_back({i, 700 + 37 * i, 0, 0});
  PackOptions options;
  options.seq_len = 2048;
  options.dp = 4;
  options.micro_batches = 2;
  const auto buckets = place_step(TrainingMode::colocated_tokens, docs, options);
  size_t low = SIZE_MAX, high = 0;
  for (const BucketPlan& b : buckets) {
    size_t n = 0;
    for (const MicroBatchPlan& mb : b.micro_batches) n += mb.sequences.size();
    low = std::min(low, n);
    high = std::max(high, n);
    REQUIRE(b.micro_batches.size() == 2);
  }
  REQUIRE(high - low <= 1);
}

TEST_CASE("every mode places the same documents each step") {
  SimulateOptions sim;
  sim.dp = 8;
  sim.tp = 1;
  sim.seq_len = 4096;
  sim.samples_per_gpu = 12;
  const CostModel cost;
  for (uint32_t cp : {1u, 2u}) {
    for (uint64_t step = 0; step < 6; ++step) {
      std::vector<PlanDoc> docs = synthetic_step(sim, cost, step);
      const std::vector<uint32_t> order = arrival_order(sim.seed, step, static_cast<uint32_t>(docs.size()));
      std::vector<PlanDoc> arrived;
      for (uint32_t i : order) arrived.push_back(docs[i]);
      std::vector<uint64_t> key(docs.size());
      for (size_t i = 0; i < docs.size(); ++i) key[i] = i * 1000003 + step;
      PackOptions options;
      options.seq_len = sim.seq_len;
      options.dp = sim.dp;
      options.micro_batches = 1 + static_cast<uint32_t>(step % 3);
      options.cp = cp;
      std::map<uint32_t, uint64_t> expected;
      for (const PlanDoc& d : docs) expected[d.id] = d.fixed > 0 ? std::min(d.positions, sim.seq_len) : d.positions;
      uint64_t first = 0;
      for (TrainingMode mode : kTrainingModes) {
        INFO(training_mode_name(mode) << " step " << step << " cp " << cp);
        const auto buckets = place_step(mode, arrived, options, cost);
        REQUIRE(buckets.size() == sim.dp);
        for (const BucketPlan& b : buckets) REQUIRE(b.micro_batches.size() == options.micro_batches);
        REQUIRE(coverage(buckets, sim.seq_len) == expected);
        const uint64_t digest = documents_digest(buckets, key);
        if (mode == kTrainingModes[0]) first = digest;
        REQUIRE(digest == first);
      }
    }
  }
}

// Padding no worse than before: the cost methods used to balance cost into
// micro-batches and pack each on its own, which padded 59% of the positions
// computed at 512 DP ranks x 32k (8 samples a rank, 4 micro-batches), 65%
// at 64 x 32k (16 samples, 8 micro-batches) and 16% at 16 x 32k (16 samples,
// 2 micro-batches), measured on these steps. Now they pack first: padding
// is far below that, they never place more sequences than the position
// split, and the fewest sequences there are bound them from below.
TEST_CASE("the cost modes pack before they balance: little padding on long-context steps") {
  struct Case {
    uint32_t dp, samples, micro_batches;
    double old_padding;  // the fraction the earlier planner padded on these steps
  };
  for (const Case c : {Case{512, 8, 4, 0.59}, Case{64, 16, 8, 0.65}, Case{16, 16, 2, 0.16}}) {
    SimulateOptions sim;
    sim.dp = c.dp;
    sim.seq_len = 32768;
    sim.samples_per_gpu = c.samples;
    const CostModel cost = CostModel::from(sim.model);
    PackOptions options;
    options.seq_len = sim.seq_len;
    options.dp = sim.dp;
    options.micro_batches = c.micro_batches;
    uint64_t placed = 0, positions = 0, by_tokens = 0, fewest = 0;
    for (uint64_t step = 0; step < 4; ++step) {
      const std::vector<PlanDoc> docs = synthetic_step(sim, cost, step);
      options.balance = BalanceMethod::tokens;
      const PackedStep tokens = pack_step(docs, options, cost);
      by_tokens += tokens.stats.sequences;
      for (BalanceMethod method : {BalanceMethod::greedy, BalanceMethod::karmarkar_karp}) {
        options.balance = method;
        const PackedStep step_plan = pack_step(docs, options, cost);
        REQUIRE(step_plan.stats.sequences >= step_plan.stats.min_sequences);
        REQUIRE(step_plan.stats.sequences <= tokens.stats.sequences);
        if (method != BalanceMethod::greedy) continue;
        placed += step_plan.stats.sequences;
        fewest += step_plan.stats.min_sequences;
        for (const BucketPlan& b : step_plan.buckets) positions += b.positions;
      }
    }
    const double padding = 1.0 - static_cast<double>(positions) / (static_cast<double>(placed) * sim.seq_len);
    INFO("dp " << c.dp << ": padding " << padding << " (was " << c.old_padding << "), sequences " << placed
               << ", fewest " << fewest << ", position split " << by_tokens);
    CHECK(padding < c.old_padding / 2);
    CHECK(placed <= by_tokens);
  }
}

TEST_CASE("mode names and aliases") {
  REQUIRE(parse_training_mode("colocated") == TrainingMode::colocated_samples);
  REQUIRE(parse_training_mode("disaggregated", "karmarkar_karp") == TrainingMode::msd_kk);
  REQUIRE(parse_training_mode("disaggregated", "tokens") == TrainingMode::msd_tokens);
  for (TrainingMode mode : kTrainingModes) REQUIRE(parse_training_mode(training_mode_name(mode)) == mode);
  REQUIRE_THROWS_WITH(parse_training_mode("hybrid"), Catch::StartsWith("job.mode: 'hybrid'"));
}

TEST_CASE("Megatron's placements are baselines of the evaluations, not job modes") {
  for (const char* name : {"megatron", "megatron_docmask", "megatron_dp_balanced", "megatron_dynamic_cp"}) {
    CAPTURE(name);
    REQUIRE_THROWS_WITH(parse_training_mode(name), Catch::Contains("baseline of the evaluations"));
    const TrainingMode mode = parse_training_mode(name, "greedy", "--modes", true);
    REQUIRE(training_mode_name(mode) == std::string(name));
    REQUIRE(is_baseline(mode));
  }
  REQUIRE_THROWS_WITH(parse_training_mode("megatron_varlen", "greedy", "--modes", true),
                      Catch::StartsWith("--modes: 'megatron_varlen' is not a mode"));
  REQUIRE(is_stream_mode(TrainingMode::megatron));
  REQUIRE(is_stream_mode(TrainingMode::megatron_docmask));
  REQUIRE(!is_stream_mode(TrainingMode::megatron_dp_balanced));
  REQUIRE(varlen_rows(TrainingMode::megatron_dp_balanced, false));
  REQUIRE(!varlen_rows(TrainingMode::megatron, true));
  REQUIRE(attention_name(TrainingMode::megatron) == std::string("row"));
  REQUIRE(attention_name(TrainingMode::megatron_docmask) == std::string("document"));
  PackOptions options;
  options.dp = 4;
  REQUIRE_THROWS_WITH(check_mode(TrainingMode::megatron_dynamic_cp, options, "--cp"),
                      Catch::StartsWith("--cp: megatron_dynamic_cp") && Catch::Contains("cp > 1"));
  options.cp = 2;
  REQUIRE_NOTHROW(check_mode(TrainingMode::megatron_dynamic_cp, options, "--cp"));
  options.pp = 2;
  REQUIRE_THROWS_WITH(check_mode(TrainingMode::megatron_dynamic_cp, options, "--cp"), Catch::Contains("pp 1"));
  options.pp = 1;
  options.dp = 3;
  REQUIRE_THROWS_WITH(check_mode(TrainingMode::megatron_dynamic_cp, options, "--cp"), Catch::Contains("power of two"));
}

TEST_CASE("a row attended as one span costs its S^2, a document-masked row the sum of its pieces'") {
  const CostModel cost;
  const uint32_t lengths[] = {3, 5}, patches[] = {0, 0};
  const double a = cost.a;
  REQUIRE(row_cost(cost, lengths, patches, 8, 1, RowAttention::segments) == Approx(a * 8 + 9 + 25));
  REQUIRE(row_cost(cost, lengths, patches, 8, 1, RowAttention::thd) == Approx(a * 8 + 9 + 25));
  REQUIRE(row_cost(cost, lengths, patches, 8, 1, RowAttention::row) == Approx(a * 8 + 64));
  // Under CP 2 a THD segment is split on its own: each rank holds half of every segment's pairs.
  const uint32_t even[] = {8, 8}, none[] = {0, 0};
  REQUIRE(row_cost(cost, even, none, 16, 2, RowAttention::thd) ==
          Approx(2 * cost.zigzag_sequence(std::span(even, 1), std::span(none, 1), 8, 2)));
  REQUIRE(row_cost(cost, even, none, 16, 2, RowAttention::thd) <=
          row_cost(cost, even, none, 16, 2, RowAttention::segments));
}

namespace {
// A run of `steps` synthetic steps, ids unique over the run (stream order).
std::vector<std::vector<PlanDoc>> synthetic_run(const SimulateOptions& sim, const CostModel& cost, uint32_t steps) {
  std::vector<std::vector<PlanDoc>> run;
  uint32_t next_id = 0;
  for (uint32_t s = 0; s < steps; ++s) {
    run.push_back(synthetic_step(sim, cost, s));
    for (PlanDoc& doc : run.back()) doc.id = next_id++;
  }
  return run;
}

// 7 steps of 4 ranks x 6 documents at 2048, placed in 2 micro-batches.
struct SmallRun {
  SimulateOptions sim;
  PackOptions options;
  CostModel cost;
  SmallRun() {
    sim.dp = 4;
    sim.tp = 1;
    sim.seq_len = 2048;
    sim.samples_per_gpu = 6;
    cost = CostModel::from(sim.model);
    options.seq_len = sim.seq_len;
    options.dp = sim.dp;
    options.micro_batches = 2;
  }
  std::vector<std::vector<PlanDoc>> steps() const { return synthetic_run(sim, cost, 7); }
};
}  // namespace

TEST_CASE("the run is cut at Megatron's last whole global batch: the last document shortened, nothing else lost") {
  const SmallRun small;
  const SimulateOptions& sim = small.sim;
  const PackOptions& options = small.options;
  const auto steps = small.steps();
  uint64_t total = 0;
  for (const auto& step : steps)
    for (const PlanDoc& doc : step) total += doc.fixed > 0 ? std::min(doc.positions, sim.seq_len) : doc.positions;
  const ComparedRun run = whole_global_batches(steps, options, 9, "--steps");
  REQUIRE(run.stream.seed == 9);
  const StreamOptions batch = megatron_batch(total, steps.size(), options, 9);
  REQUIRE(run.stream.micro_batch_size == batch.micro_batch_size);
  REQUIRE(run.stream.micro_batches == batch.micro_batches);
  const uint64_t global = uint64_t{batch.micro_batch_size} * options.dp * batch.micro_batches * sim.seq_len;
  REQUIRE(run.positions % global == 0);
  REQUIRE(run.positions + run.dropped_positions == total);
  REQUIRE(run.dropped_positions < global);
  uint64_t kept = 0;
  size_t docs = 0;
  for (const auto& step : run.steps)
    for (const PlanDoc& doc : step) {
      REQUIRE(doc.id == docs++);  // ids kept, in stream order
      kept += doc.positions;
    }
  REQUIRE(kept == run.positions);
  // Megatron's batch holds about a step: 2 samples a rank and step in 2
  // micro-batches of 1; 7 in 2 of 4 (3.5 rounded); 1 in 1 micro-batch of 1.
  auto batch_of = [&](double per_rank) {
    const StreamOptions b = megatron_batch(static_cast<uint64_t>(10 * 4 * per_rank * 2048), 10, options, 1);
    return std::pair{b.micro_batches, b.micro_batch_size};
  };
  REQUIRE(batch_of(2) == std::pair{2u, 1u});
  REQUIRE(batch_of(7) == std::pair{2u, 4u});
  REQUIRE(batch_of(1) == std::pair{1u, 1u});
  REQUIRE(batch_of(0.5) == std::pair{1u, 1u});
  REQUIRE_THROWS_WITH(whole_global_batches({{{0, 100, 0, 0}}}, options, 1, "--steps"),
                      Catch::StartsWith("--steps: the run holds 100 positions"));
  // An image-text document longer than seq_len keeps its patches and the text that fits, as every mode places it.
  const ComparedRun image = whole_global_batches({{{0, 4000, 300, 0}, {1, 20000, 0, 0}}}, options, 1, "--steps");
  REQUIRE(image.steps[0][0].positions == 2048);
  REQUIRE(image.steps[0][0].fixed == 300);
}

TEST_CASE("megatron deals GPTDataset's shuffled samples: equal counts per rank, every position of the cut run once") {
  const SmallRun small;
  const SimulateOptions& sim = small.sim;
  const PackOptions& options = small.options;
  const CostModel& cost = small.cost;
  const ComparedRun run = whole_global_batches(small.steps(), options, 3, "--steps");
  std::map<uint32_t, uint64_t> expected;
  for (const auto& step : run.steps)
    for (const PlanDoc& doc : step) expected[doc.id] = doc.positions;
  const auto placed = place_run(TrainingMode::megatron, run.steps, options, cost, run.stream);
  const auto docmask = place_run(TrainingMode::megatron_docmask, run.steps, options, cost, run.stream);
  const uint32_t mbs = run.stream.micro_batch_size;
  REQUIRE(placed.size() == run.positions / (uint64_t{mbs} * options.dp * run.stream.micro_batches * sim.seq_len));
  REQUIRE(docmask.size() == placed.size());
  std::map<uint32_t, uint64_t> covered;
  for (size_t t = 0; t < placed.size(); ++t) {
    REQUIRE(placed[t].size() == options.dp);
    for (size_t r = 0; r < placed[t].size(); ++r) {
      const BucketPlan& bucket = placed[t][r];
      REQUIRE(bucket.micro_batches.size() == run.stream.micro_batches);
      for (size_t m = 0; m < bucket.micro_batches.size(); ++m) {
        const MicroBatchPlan& mb = bucket.micro_batches[m];
        REQUIRE(mb.sequences.size() == mbs);  // a fixed micro-batch size
        for (const PackedSequence& seq : mb.sequences) REQUIRE(seq.used == sim.seq_len);  // no padding
        // The same rows, attended per document: cheaper (sum of L^2 <= S^2), never dearer.
        const MicroBatchPlan& masked = docmask[t][r].micro_batches[m];
        REQUIRE(masked.sequences.size() == mb.sequences.size());
        REQUIRE(masked.sequences[0].pieces.size() == mb.sequences[0].pieces.size());
        REQUIRE(masked.cost <= mb.cost);
      }
      for (const auto& [doc, length] : coverage({bucket}, sim.seq_len)) covered[doc] += length;
    }
  }
  REQUIRE(covered == expected);  // every position of the cut run, once
  // Not the stream order: the documents and the samples are shuffled.
  REQUIRE(placed[0][0].micro_batches[0].sequences[0].pieces[0].doc != 0);
  REQUIRE_THROWS_WITH(parse_training_mode("megatron"), Catch::Contains("baseline of the evaluations"));
}

TEST_CASE("megatron_dp_balanced places every step's document once, an equal micro-batch count per rank") {
  SimulateOptions sim;
  sim.dp = 8;
  sim.tp = 1;
  sim.seq_len = 4096;
  sim.samples_per_gpu = 12;
  const CostModel cost;
  PackOptions options;
  options.seq_len = sim.seq_len;
  options.dp = sim.dp;
  for (uint64_t step = 0; step < 6; ++step) {
    const std::vector<PlanDoc> docs = synthetic_step(sim, cost, step);
    std::map<uint32_t, uint64_t> expected;
    for (const PlanDoc& d : docs) expected[d.id] = d.fixed > 0 ? std::min(d.positions, sim.seq_len) : d.positions;
    const auto buckets = place_step(TrainingMode::megatron_dp_balanced, docs, options, cost);
    REQUIRE(buckets.size() == options.dp);
    for (const BucketPlan& b : buckets) {
      REQUIRE(b.micro_batches.size() == buckets[0].micro_batches.size());
      for (const MicroBatchPlan& mb : b.micro_batches) REQUIRE(mb.sequences.size() <= 1);  // one row each
    }
    REQUIRE(coverage(buckets, sim.seq_len) == expected);
  }
}
