// The plan trace: round trip, truncation on resume, and msd-replay's verify
// on a trace planned in-process (the planner's mixing, stream cursors, bad
// samples skipped, packing) and on tampered copies of it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/replay.h"
#include "checkpoint/trace.h"
#include "common/error.h"
#include "config/part_options.h"
#include "msd/config.h"
#include "plan/step/cost.h"
#include "plan/step/mix.h"
#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"
#include "source/permutation.h"
#include "tools/h5_poke.h"
#include "unit/scratch.h"

namespace fs = std::filesystem;
using namespace msd;
using test::scratch_dir;

namespace {

Config job_config() {
  const std::vector<std::string> args = {
      "msd-run", "--mix.sources=web,images,corpus", "--mix.schedule=piecewise",
      "--source.web.format=jsonl", "--source.web.path=/data/web/*.jsonl", "--source.web.weight=0:0.6, 6:0.2",
      "--source.images.format=wds", "--source.images.path=/data/images/*.tar", "--source.images.weight=0.3",
      "--source.corpus.format=indexed", "--source.corpus.path=/data/corpus/*.idx", "--source.corpus.weight=0.2",
      "--tokenizer.vocab=/data/vocab.tiktoken", "--image.max_side=64", "--image.patch=16",
      "--job.seq_len=512", "--job.global_batch=24", "--job.micro_batches=2", "--job.seed=5",
      "--topology.dp=3", "--topology.tp=2", "--topology.loaders=2"};
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
}

const std::vector<uint64_t> kSourceSamples = {40, 25, 9};

// What a loader would report for a stream position, deterministic in the
// index like real data: some samples are bad, lengths are heavy-tailed,
// images carry 16 patches.
TraceSample load(uint32_t source, uint64_t cursor, uint64_t index) {
  TraceSample s{source, 0, cursor, index, 0, 0};
  if ((index * 7 + source) % 11 == 3) {
    s.bad = 2;  // missing_field
    return s;
  }
  const uint64_t mix = (index + 1) * 2654435761u + source * 97;
  s.patches = source == 1 ? 16 : 0;
  s.positions = s.patches + 1 + static_cast<uint32_t>(mix % (mix % 5 == 0 ? 1500 : 300));
  return s;
}

// Plans `steps` steps the way the planner does and records them.
struct PlannedRun {
  std::vector<StepRecord> records;
  std::vector<PlannerCheckpoint> checkpoints;  // state before each step
};

PlannedRun plan_run(const Config& config, uint64_t steps) {
  Mixer mixer(make_schedule(config), config.job.global_batch);
  const CostModel cost = make_cost_model(config);
  const PackOptions pack = make_pack_options(config);
  std::vector<uint64_t> cursor(kSourceSamples.size(), 0);
  OutlierHold hold(pack.hold);  // as the planner holds (job.hold_above)
  std::map<std::pair<uint32_t, uint64_t>, TraceSample> waiting;
  PlannedRun run;
  for (uint64_t step = 0; step < steps; ++step) {
    PlannerCheckpoint c;
    c.step = step;
    c.seed = config.job.seed;
    c.config_ini = to_ini(config);
    c.source_samples = kSourceSamples;
    c.consumed = cursor;
    c.mixer_realized = mixer.realized();
    c.held = hold.held();
    run.checkpoints.push_back(c);
    const auto quota = mixer.next();
    std::vector<TraceSample> samples;
    for (uint32_t s = 0; s < quota.size(); ++s) {
      for (uint32_t good = 0; good < quota[s];) {
        const auto pos = stream_position(config.job.seed, s, kSourceSamples[s], cursor[s]);
        samples.push_back(load(s, cursor[s]++, pos.index));
        samples.back().from_step = step;
        if (samples.back().bad == 0) ++good;
      }
    }
    std::vector<HeldDoc> arrivals;
    for (const TraceSample& t : samples)
      if (t.bad == 0) arrivals.push_back({t.source, t.cursor, t.positions, t.patches, step});
    const OutlierHold::Decision decision = hold.step(step, arrivals);
    for (size_t row = 0, i = 0; row < samples.size(); ++row)
      if (samples[row].bad == 0 && decision.held[i++]) waiting[{samples[row].source, samples[row].cursor}] = samples[row];
    for (const HeldDoc& doc : decision.released) {
      samples.push_back(waiting.at({doc.source, doc.cursor}));
      waiting.erase({doc.source, doc.cursor});
    }
    const std::vector<uint32_t> rows = delivered_rows(step, samples, decision.held);
    const auto buckets = distribute_and_pack(plan_docs(samples, rows, cost), pack, cost);
    run.records.push_back(make_step_record(step, std::move(samples), buckets, cost, rows));
  }
  return run;
}

void write_trace(const std::string& path, const Config& config, const std::vector<StepRecord>& records,
                 uint64_t first = 0) {
  TraceWriter writer(path, make_trace_header(config, kSourceSamples), first, 4);
  for (const auto& record : records)
    if (record.step >= first) writer.append_step(record);
  writer.close();
}

}  // namespace

TEST_CASE("trace round trip", "[trace]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 12);
  const std::string path = scratch_dir("trace_round_trip") + "/trace.h5";
  write_trace(path, config, run.records);
  const TraceReader trace(path);
  CHECK(trace.header() == make_trace_header(config, kSourceSamples));
  CHECK(trace.first_step() == 0);
  REQUIRE(trace.end_step() == 12);
  for (uint64_t step = 0; step < 12; ++step) CHECK(trace.step(step) == run.records[step]);
  // The run has bad samples, pieces of split documents and image pieces.
  size_t bad = 0, split = 0;
  for (const auto& record : run.records) {
    for (const auto& s : record.samples) bad += s.bad != 0;
    for (const auto& p : record.pieces) split += p.begin > 0;
  }
  CHECK(bad > 0);
  CHECK(split > 0);
}

TEST_CASE("a resumed trace drops the steps planned again and continues", "[trace]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 12);
  const std::string path = scratch_dir("trace_resume") + "/trace.h5";
  write_trace(path, config, std::vector<StepRecord>(run.records.begin(), run.records.begin() + 9));
  {
    TraceWriter writer(path, make_trace_header(config, kSourceSamples), 6);
    CHECK(writer.next_step() == 6);
    for (uint64_t step = 6; step < 12; ++step) writer.append_step(run.records[step]);
  }
  {
    const TraceReader trace(path);
    REQUIRE(trace.end_step() == 12);
    for (uint64_t step = 0; step < 12; ++step) CHECK(trace.step(step) == run.records[step]);
    CHECK(verify_trace(trace).steps_checked == 12);
  }

  // Another run's header is refused.
  TraceHeader other = make_trace_header(config, kSourceSamples);
  other.seed = 6;
  CHECK_THROWS_AS(TraceWriter(path, other, 3), ConfigError);
  // A resume on another mesh (docs/checkpoint.md) needs a trace of its own.
  TraceHeader mesh = make_trace_header(config, kSourceSamples);
  mesh.dp = 6;
  mesh.tp = 1;
  CHECK_THROWS_WITH(TraceWriter(path, mesh, 3),
                    Catch::Contains("checkpoint.trace: " + path + " records plans for dp 3 x pp 1 x cp 1 x tp 2") &&
                        Catch::Contains("this run is dp 6 x pp 1 x cp 1 x tp 1"));
}

TEST_CASE("a trace that lost steps before the resume is set aside; verify starts from the checkpoint", "[trace]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 12);
  const std::string dir = scratch_dir("trace_gap");
  const std::string path = dir + "/trace.h5";
  write_trace(path, config, std::vector<StepRecord>(run.records.begin(), run.records.begin() + 4));
  {
    TraceWriter writer(path, make_trace_header(config, kSourceSamples), 7);
    CHECK(writer.first_step() == 7);
    for (uint64_t step = 7; step < 12; ++step) writer.append_step(run.records[step]);
  }
  CHECK(fs::exists(path + ".before-7"));
  const TraceReader trace(path);
  CHECK(trace.first_step() == 7);
  CHECK(trace.end_step() == 12);
  CHECK_THROWS_AS(verify_trace(trace), ConfigError);  // needs the checkpoint of step 7
  const VerifyReport report = verify_trace(trace, run.checkpoints[7]);
  CHECK_FALSE(report.divergence.has_value());
  CHECK(report.steps_checked == 5);
  CHECK_THROWS_AS(verify_trace(trace, run.checkpoints[6]), ConfigError);
}

TEST_CASE("a torn trace is set aside on resume", "[trace]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 6);
  const std::string path = scratch_dir("trace_torn") + "/trace.h5";
  write_trace(path, config, run.records);
  fs::resize_file(path, fs::file_size(path) / 3);
  CHECK_THROWS_AS(TraceReader(path), IoError);
  {
    TraceWriter writer(path, make_trace_header(config, kSourceSamples), 4);
    writer.append_step(run.records[4]);
  }
  CHECK(TraceReader(path).first_step() == 4);
}

TEST_CASE("verify passes on the planned trace and finds the first tampered step", "[trace][replay]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 10);
  const std::string dir = scratch_dir("trace_verify");
  write_trace(dir + "/trace.h5", config, run.records);
  {
    const VerifyReport report = verify_trace(TraceReader(dir + "/trace.h5"));
    CHECK_FALSE(report.divergence.has_value());
    CHECK(report.steps_checked == 10);
  }

  SECTION("a piece's length") {
    std::vector<StepRecord> tampered = run.records;
    TracePiece& piece = tampered[6].pieces[5];
    piece.length -= 1;
    const uint32_t group = piece.group;
    write_trace(dir + "/tampered.h5", config, tampered);
    const VerifyReport report = verify_trace(TraceReader(dir + "/tampered.h5"));
    REQUIRE(report.divergence.has_value());
    CHECK(report.steps_checked == 6);
    CHECK(report.divergence->step == 6);
    CHECK(report.divergence->group == static_cast<int>(group));
    CHECK(report.divergence->clients.size() == 2);  // the group's two TP ranks
    CHECK(report.divergence->world_ranks[0] == 1 + 2 + report.divergence->clients[0]);
    CHECK_THAT(report.divergence->what, Catch::Contains("piece 5"));
    std::ostringstream out;
    print_verify_report(report, out);
    CHECK_THAT(out.str(), Catch::Contains("first divergence at step 6"));
  }
  SECTION("a sample's index") {
    std::vector<StepRecord> tampered = run.records;
    tampered[3].samples[2].index ^= 1;
    write_trace(dir + "/tampered.h5", config, tampered);
    const VerifyReport report = verify_trace(TraceReader(dir + "/tampered.h5"));
    REQUIRE(report.divergence.has_value());
    CHECK(report.divergence->step == 3);
    CHECK(report.divergence->group == -1);
    CHECK(report.divergence->clients.size() == 6);
    CHECK_THAT(report.divergence->what, Catch::Contains("sample 2"));
  }
  SECTION("a sample recorded bad that the plan used") {
    std::vector<StepRecord> tampered = run.records;
    tampered[8].samples[0].bad = 1;
    write_trace(dir + "/tampered.h5", config, tampered);
    const VerifyReport report = verify_trace(TraceReader(dir + "/tampered.h5"));
    REQUIRE(report.divergence.has_value());
    CHECK(report.divergence->step == 8);
  }
  SECTION("a cost") {
    std::vector<StepRecord> tampered = run.records;
    tampered[9].pieces.back().cost *= 1.5;
    write_trace(dir + "/tampered.h5", config, tampered);
    const VerifyReport report = verify_trace(TraceReader(dir + "/tampered.h5"));
    REQUIRE(report.divergence.has_value());
    CHECK(report.divergence->step == 9);
    CHECK_THAT(report.divergence->what, Catch::Contains("cost"));
  }
}

TEST_CASE("verify re-derives the outlier hold: late documents, from a checkpoint, and a tampered one", "[trace][replay]") {
  Config config = job_config();
  config.job.micro_batch_shape = RowShape::varlen;
  config.job.cuts = Cuts::balance;
  config.job.micro_batch_count = MicroBatchCount::variable;
  config.job.hold_above = 0.5;
  config.job.hold_steps = 3;
  config.job.steps = 12;
  const PlannedRun run = plan_run(config, 12);
  uint64_t late = 0;
  for (const StepRecord& r : run.records)
    for (const TraceSample& t : r.samples) late += t.from_step < r.step;
  REQUIRE(late > 0);  // the run held documents
  const std::string dir = scratch_dir("trace_hold");
  write_trace(dir + "/trace.h5", config, run.records);
  const VerifyReport whole = verify_trace(TraceReader(dir + "/trace.h5"));
  CHECK_FALSE(whole.divergence.has_value());
  CHECK(whole.steps_checked == 12);
  // From a checkpoint whose hold is not empty.
  uint64_t from = 1;
  while (from < 11 && run.checkpoints[from].held.empty()) ++from;
  REQUIRE_FALSE(run.checkpoints[from].held.empty());
  write_trace(dir + "/resumed.h5", config, run.records, from);
  const VerifyReport resumed = verify_trace(TraceReader(dir + "/resumed.h5"), run.checkpoints[from]);
  CHECK_FALSE(resumed.divergence.has_value());
  CHECK(resumed.steps_checked == 12 - from);
  // Another document recorded where the hold delivers a late one.
  std::vector<StepRecord> tampered = run.records;
  size_t step = 0;
  while (tampered[step].samples.back().from_step == step) ++step;
  tampered[step].samples.back().cursor += 1;
  write_trace(dir + "/tampered.h5", config, tampered);
  const VerifyReport report = verify_trace(TraceReader(dir + "/tampered.h5"));
  REQUIRE(report.divergence.has_value());
  CHECK(report.divergence->step == step);
  CHECK_THAT(report.divergence->what, Catch::Contains("held document"));
}

TEST_CASE("any single value changed in a trace is reported as tampering, with where", "[trace][integrity]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 10);
  const std::string dir = scratch_dir("trace_integrity");
  const std::string path = dir + "/trace.h5";
  write_trace(path, config, std::vector<StepRecord>(run.records.begin(), run.records.begin() + 8));
  {  // a resume reopens the trace and continues its chain
    TraceWriter writer(path, make_trace_header(config, kSourceSamples), 5);
    for (uint64_t step = 5; step < 10; ++step) writer.append_step(run.records[step]);
  }
  REQUIRE_FALSE(check_trace_integrity(path).has_value());
  std::ostringstream intact;
  CHECK(verify_command(path, "", intact) == kVerifyIdentical);
  CHECK_THAT(intact.str(), Catch::Contains("match their checksums"));
  CHECK_THAT(intact.str(), Catch::Contains("data: not checked"));  // /data/... is not on this machine

  const std::string copy = dir + "/tampered.h5";
  auto tampered = [&](auto&& poke) {
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    poke();
    const auto where = check_trace_integrity(copy);
    REQUIRE(where.has_value());
    std::ostringstream out;
    CHECK(verify_command(copy, "", out) == kVerifyTampered);
    CHECK_THAT(out.str(), Catch::Contains("TAMPERED"));
    return *where;
  };
  // Header: one source's sample count + 1, the seed, the configuration text.
  CHECK_THAT(tampered([&] { test::poke_dataset(copy, "source_samples", 1, ""); }),
             Catch::Contains("dataset /source_samples"));
  CHECK_THAT(tampered([&] { test::poke_attribute(copy, "seed"); }), Catch::Contains("attribute @seed"));
  CHECK_THAT(tampered([&] { test::poke_attribute(copy, "config_ini"); }), Catch::Contains("@config_ini"));
  CHECK_THAT(tampered([&] { test::poke_attribute(copy, "first_step"); }), Catch::Contains("@first_step"));
  CHECK_THAT(tampered([&] { test::poke_attribute(copy, "integrity_digest"); }),
             Catch::Contains("integrity record itself"));
  // Rows: every field of /samples and /pieces, and the /steps row itself.
  const size_t step3_first_sample = run.records[0].samples.size() + run.records[1].samples.size() +
                                    run.records[2].samples.size();
  for (const char* field : {"source", "bad", "positions", "patches", "cursor", "index"})
    CHECK_THAT(tampered([&] { test::poke_dataset(copy, "samples", step3_first_sample, field); }),
               Catch::Contains("/samples rows " + std::to_string(step3_first_sample)) && Catch::Contains("(step 3)"));
  for (const char* field : {"group", "micro_batch", "sequence", "sample", "begin", "length", "cost"})
    CHECK_THAT(tampered([&] { test::poke_dataset(copy, "pieces", 0, field); }),
               Catch::Contains("/pieces rows 0..") && Catch::Contains("(step 0)"));
  for (const char* field : {"step", "samples_end", "pieces_end", "samples_digest", "pieces_digest", "chain"})
    CHECK_THAT(tampered([&] { test::poke_dataset(copy, "steps", 7, field); }), Catch::Contains("/steps row 7"));
  // A step written again after the resume (step 8) is covered too.
  CHECK_THAT(tampered([&] { test::poke_dataset(copy, "steps", 8, "pieces_end", -1); }),
             Catch::Contains("/steps row 8"));
}

TEST_CASE("a cut trace: verify reports one its run did not close; rows cut after the close are tampering",
          "[trace][integrity]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 6);
  const std::string dir = scratch_dir("trace_cut");
  const std::string path = dir + "/trace.h5", cut = dir + "/cut.h5", copy = dir + "/tampered.h5";
  {
    TraceWriter writer(path, make_trace_header(config, kSourceSamples));
    for (uint64_t step = 0; step < 4; ++step) writer.append_step(run.records[step]);
    writer.sync();
    fs::copy_file(path, cut, fs::copy_options::overwrite_existing);  // what a kill after the sync leaves
    for (uint64_t step = 4; step < 6; ++step) writer.append_step(run.records[step]);
  }
  CHECK(TraceReader(path).closed());
  std::ostringstream whole;
  CHECK(verify_command(path, "", whole) == kVerifyIdentical);
  CHECK_THAT(whole.str(), !Catch::Contains("CUT"));

  CHECK_FALSE(TraceReader(cut).closed());
  CHECK_FALSE(check_trace_integrity(cut).has_value());  // intact, only shorter
  std::ostringstream out;
  CHECK(verify_command(cut, "", out) == kVerifyCut);
  CHECK_THAT(out.str(), Catch::Contains("CUT: the run did not close the trace: it holds steps 0 up to 4"));

  // The close record kept, but it and the rows disagree: tampering.
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  test::poke_attribute(copy, "end_step");
  CHECK_THAT(check_trace_integrity(copy).value_or(""), Catch::Contains("(rows were cut)"));
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  test::poke_attribute(copy, "end_chain");
  CHECK_THAT(check_trace_integrity(copy).value_or(""), Catch::Contains("last row's chain"));

  // A resume reopens a closed trace: not closed until its run closes it again.
  {
    TraceWriter writer(path, make_trace_header(config, kSourceSamples), 4);
    writer.append_step(run.records[4]);
    writer.sync();
    fs::copy_file(path, cut, fs::copy_options::overwrite_existing);
    writer.append_step(run.records[5]);
  }
  CHECK_FALSE(TraceReader(cut).closed());
  CHECK(TraceReader(path).closed());
  CHECK_FALSE(check_trace_integrity(path).has_value());
}

TEST_CASE("query, mix, balance and export read the trace", "[trace][replay]") {
  const Config config = job_config();
  const PlannedRun run = plan_run(config, 8);
  const std::string path = scratch_dir("trace_query") + "/trace.h5";
  write_trace(path, config, run.records);
  const TraceReader trace(path);

  std::ostringstream client;
  print_client_step(trace, 3, 5, client);  // client 3: dp 1, tp 1
  size_t group_pieces = 0;
  for (const auto& p : run.records[5].pieces) group_pieces += p.group == 1;
  const std::string text = client.str();
  CHECK_THAT(text, Catch::Contains("data group 1"));
  CHECK(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) == 2 + group_pieces);
  CHECK_THROWS_AS(print_client_step(trace, 6, 5, client), ConfigError);
  CHECK_THROWS_AS(print_client_step(trace, 0, 8, client), ConfigError);

  std::ostringstream mix;
  print_mix(trace, mix);
  // Step 0: 24 samples at weights 0.6 : 0.3 : 0.2, so web's target is 13.09.
  CHECK_THAT(mix.str(), Catch::Contains("\n0,web,13,13.0909,"));
  std::ostringstream balance;
  print_balance(trace, balance);
  const std::string balance_text = balance.str();
  CHECK(static_cast<size_t>(std::count(balance_text.begin(), balance_text.end(), '\n')) == 1 + 8 + 1);

  size_t pieces = 0;
  for (const auto& record : run.records) pieces += record.pieces.size();
  std::ostringstream csv, json;
  export_trace(trace, "csv", csv);
  export_trace(trace, "json", json);
  const std::string csv_text = csv.str(), json_text = json.str();
  CHECK(static_cast<size_t>(std::count(csv_text.begin(), csv_text.end(), '\n')) == pieces + 1);
  CHECK(static_cast<size_t>(std::count(json_text.begin(), json_text.end(), '{')) == pieces);
  CHECK_THROWS_AS(export_trace(trace, "xml", csv), ConfigError);
}
