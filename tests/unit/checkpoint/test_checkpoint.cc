// Planner checkpoints: round trip, torn files skipped, retention, the writer
// thread, resume compatibility; and the configuration's INI text (to_ini),
// which checkpoints and traces store, read back to the same configuration.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/step_files.h"
#include "common/error.h"
#include "msd/config.h"
#include "source/fingerprint.h"
#include "tools/h5_poke.h"
#include "unit/checkpoint/parse_config.h"
#include "unit/scratch.h"

namespace fs = std::filesystem;
using namespace msd;
using test::scratch_dir;

namespace {

std::vector<std::string> job_args() {
  return {"--mix.sources=web,corpus", "--source.web.format=jsonl", "--source.web.path=/data/web/*.jsonl",
          "--source.web.weight=0:0.75, 30:0.25", "--source.corpus.format=indexed",
          "--source.corpus.path=/data/corpus/a.idx,/data/corpus/b.idx", "--source.corpus.weight=0.3",
          "--mix.schedule=linear", "--tokenizer.vocab=/data/vocab.tiktoken", "--job.seed=77", "--topology.dp=2",
          "--job.global_batch=24", "--emulator.time_scale=0.123456789", "--model.cost_a=0.1"};
}

PlannerCheckpoint sample_checkpoint(uint64_t step) {
  PlannerCheckpoint c;
  c.step = step;
  c.seed = 77;
  c.config_ini = to_ini(test::parse_config(job_args()));
  c.source_samples = {1000, 37};
  c.consumed = {step * 18 + 3, step * 6 + 1};
  c.mixer_realized = {step * 18, step * 6};
  c.bad_samples = {0, 2, 0, 1, 0, 0, 0, 0, 0, 0};
  c.in_flight = {{0, SampleState::loaded, 1, step * 18 + 3, 512},
                 {1, SampleState::requested, 2, step * 6 + 1, 11},
                 {1, SampleState::failed, 2, step * 6 + 2, 30}};
  c.loader_sources = {{1}, {0}, {}, {0, 1}};  // online scaling's assignment; an idle shadow
  if (step > 1) c.held = {{0, step * 18 - 5, 4000, 0, step - 2}, {1, step * 6 - 1, 3000, 64, step - 1}};  // the hold's
  // A run resumed under a changed mixture at step / 2: its corpus source added
  // (key 2), its web files grown from 900 to 1000 samples.
  c.stream_keys = {0, 2};
  c.stream_eras = {StreamOrder(77, 0, 900).changed(step * 9, 1000, {{0, 900, 100}}).eras(), {}};
  c.mixer_origin_step = step / 2;
  c.mixer_origin = {step * 9, 0};
  return c;
}

void truncate_file(const std::string& path, uintmax_t size) { fs::resize_file(path, size); }

}  // namespace

TEST_CASE("to_ini reads back to the same configuration", "[config][checkpoint]") {
  const Config config = test::parse_config(job_args());
  const std::string ini = to_ini(config);
  const std::string dir = scratch_dir("to_ini");
  const std::string path = dir + "/job.ini";
  std::ofstream(path) << ini;
  const Config again = test::parse_config({"--config=" + path});
  CHECK(to_ini(again) == ini);
  CHECK(again.job.seed == 77);
  CHECK(again.emulator.time_scale == config.emulator.time_scale);  // exactly, not to 6 digits
  CHECK(again.model.cost_a == config.model.cost_a);
  REQUIRE(again.sources.size() == 2);
  CHECK(again.sources[0].weight.size() == 2);
  CHECK(again.sources[0].weight[1].step == 30);
  CHECK(again.sources[0].weight[1].weight == 0.25);
  CHECK(again.sources[1].path == "/data/corpus/a.idx,/data/corpus/b.idx");
  CHECK(again.schedule == ScheduleKind::linear);
}

TEST_CASE("to_ini's text is the one checkpoints and traces already hold", "[config][checkpoint]") {
  // Saved checkpoints compare their INI with the run's, and traces keep it:
  // the text of a configuration must not change.
  std::ifstream in(MSD_TEST_DATA "/config/to_ini_job.ini", std::ios::binary);
  REQUIRE(in);
  const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(to_ini(test::parse_config(job_args())) == expected);
}

TEST_CASE("to_ini writes every option --help lists", "[config][checkpoint]") {
  const std::vector<const char*> argv = {"msd-run", "--help"};
  const std::string usage = parse_command_line(2, argv.data()).usage;
  const std::string ini = to_ini(test::parse_config(job_args()));
  const std::regex option("--([a-z_]+)\\.([a-z_]+) ");
  size_t checked = 0;
  for (auto it = std::sregex_iterator(usage.begin(), usage.end(), option); it != std::sregex_iterator(); ++it) {
    const std::string section = (*it)[1], key = (*it)[2];
    if (section == "source" || section == "mix") continue;  // per-source sections, written per name
    const size_t at = ini.find("[" + section + "]\n");
    INFO(section << "." << key);
    REQUIRE(at != std::string::npos);
    const size_t end = ini.find("\n[", at + 1);
    CHECK(ini.substr(at, end - at).find("\n" + key + " = ") != std::string::npos);
    ++checked;
  }
  CHECK(checked > 20);
}

TEST_CASE("to_ini refuses a value INI cannot hold", "[config][checkpoint]") {
  auto args = job_args();
  args.push_back("--tokenizer.pattern=[a-z]+|#");
  CHECK_THROWS_AS(to_ini(test::parse_config(args)), ConfigError);
}

TEST_CASE("planner checkpoint round trip", "[checkpoint]") {
  const std::string dir = scratch_dir("planner_round_trip");
  const PlannerCheckpoint c = sample_checkpoint(120);
  write_planner_checkpoint(dir, c);
  const std::string path = planner_checkpoint_path(dir, 120);
  CHECK(fs::path(path).filename() == "planner-000000000120.h5");
  CHECK(read_planner_checkpoint(path) == c);
  CHECK_FALSE(fs::exists(temporary_path(path)));

  PlannerCheckpoint empty;  // no in-flight samples, empty strings
  empty.step = 0;
  empty.source_samples = {5};
  empty.consumed = {0};
  empty.mixer_realized = {0};
  write_planner_checkpoint(dir, empty);
  CHECK(read_planner_checkpoint(planner_checkpoint_path(dir, 0)) == empty);
}

TEST_CASE("a torn or foreign planner checkpoint is skipped, never used", "[checkpoint]") {
  const std::string dir = scratch_dir("planner_torn");
  CHECK_FALSE(latest_planner_checkpoint(dir).has_value());
  write_planner_checkpoint(dir, sample_checkpoint(10));
  write_planner_checkpoint(dir, sample_checkpoint(20));
  write_planner_checkpoint(dir, sample_checkpoint(30));
  std::string path;
  REQUIRE(latest_planner_checkpoint(dir, &path).has_value());
  CHECK(latest_planner_checkpoint(dir)->step == 30);

  // Torn: the newest cut in half. The one before it is used.
  const std::string newest = planner_checkpoint_path(dir, 30);
  truncate_file(newest, fs::file_size(newest) / 2);
  CHECK_THROWS_AS(read_planner_checkpoint(newest), IoError);
  auto latest = latest_planner_checkpoint(dir, &path);
  REQUIRE(latest.has_value());
  CHECK(latest->step == 20);
  CHECK(*latest == sample_checkpoint(20));
  CHECK(path == planner_checkpoint_path(dir, 20));

  // Not HDF5 at all, and a file whose name disagrees with its step.
  std::ofstream(planner_checkpoint_path(dir, 40)) << "not a checkpoint";
  fs::copy_file(planner_checkpoint_path(dir, 10), planner_checkpoint_path(dir, 50));
  CHECK_THROWS_AS(read_planner_checkpoint(planner_checkpoint_path(dir, 50)), IoError);
  CHECK(latest_planner_checkpoint(dir)->step == 20);

  // A temporary file left by a crash is not a checkpoint.
  fs::copy_file(planner_checkpoint_path(dir, 20), temporary_path(planner_checkpoint_path(dir, 60)));
  CHECK(latest_planner_checkpoint(dir)->step == 20);
}

TEST_CASE("planner checkpoints keep the newest K", "[checkpoint]") {
  const std::string dir = scratch_dir("planner_keep");
  for (uint64_t step = 0; step < 60; step += 10) write_planner_checkpoint(dir, sample_checkpoint(step), 3);
  const auto files = list_step_files(dir, "planner");
  REQUIRE(files.size() == 3);
  CHECK(files[0].first == 50);
  CHECK(files[2].first == 30);
  for (uint64_t step = 60; step < 70; step += 5) write_planner_checkpoint(dir, sample_checkpoint(step), 0);
  CHECK(list_step_files(dir, "planner").size() == 5);
}

TEST_CASE("the checkpoint writer thread lands every last checkpoint", "[checkpoint]") {
  const std::string dir = scratch_dir("planner_writer");
  double encode_seconds = 0.0;
  {
    PlannerCheckpointWriter writer(dir, 2);
    for (uint64_t step = 1; step <= 40; ++step) {
      writer.submit(sample_checkpoint(step));
      encode_seconds += writer.last_write_seconds();
    }
    writer.finish();
    CHECK(read_planner_checkpoint(planner_checkpoint_path(dir, 40)) == sample_checkpoint(40));
  }
  CHECK(list_step_files(dir, "planner").size() <= 2);
  CHECK(latest_planner_checkpoint(dir)->step == 40);
  // Measured, not asserted (timing): what the planner's step pays.
  WARN("planner checkpoint through the writer, the planner thread's share: " << encode_seconds / 40 * 1e6 << " us");

  // A write that fails (the directory is gone) is reported to the caller.
  const std::string gone = scratch_dir("planner_writer_gone");
  PlannerCheckpointWriter failing(gone, 2);
  fs::remove_all(gone);
  CHECK_THROWS_AS(failing.submit(sample_checkpoint(1)), IoError);
}

TEST_CASE("synchronous planner checkpoint cost", "[checkpoint]") {
  const std::string dir = scratch_dir("planner_cost");
  PlannerCheckpoint c = sample_checkpoint(1);
  c.source_samples.assign(8, 100000);
  c.consumed.assign(8, 5000);
  c.mixer_realized.assign(8, 5000);
  c.stream_keys.clear();
  c.stream_eras.clear();
  c.mixer_origin.clear();
  c.mixer_origin_step = 0;
  c.in_flight.assign(512, InFlightSample{3, SampleState::loaded, 2, 5001, 77});
  const int rounds = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    c.step = static_cast<uint64_t>(i);
    write_planner_checkpoint(dir, c);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / rounds;
  const auto file_start = std::chrono::steady_clock::now();
  // New names each time, as in a run (ext4 flushes a file truncated and rewritten on close).
  for (int i = 0; i < rounds; ++i) write_planner_checkpoint_file(dir + "/unsynced-" + std::to_string(i) + ".h5", c);
  const double file =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - file_start).count() / rounds;
  WARN("planner checkpoint, 8 sources, 512 in flight: HDF5 file " << file * 1e6 << " us; with fsync, rename "
                                                                   << "and directory fsync " << seconds * 1e6 << " us");
  CHECK(read_planner_checkpoint(dir + "/unsynced-0.h5") == c);
  CHECK(read_planner_checkpoint(planner_checkpoint_path(dir, rounds - 1)) == c);
}

TEST_CASE("resume refuses a configuration that changes the stream", "[checkpoint]") {
  const PlannerCheckpoint c = sample_checkpoint(10);
  check_resumable(c, test::parse_config(job_args()), c.data);
  // Options that cannot change the stream may differ.
  auto args = job_args();
  for (const char* extra : {"--job.steps=500", "--topology.loaders=3", "--output.log_level=warn",
                            "--checkpoint.dir=/tmp/x", "--job.prefetch_steps=4", "--topology.tp=2",
                            "--job.micro_batches=4", "--job.stall_timeout_s=30"})
    args.push_back(extra);
  check_resumable(c, test::parse_config(args), c.data);

  // Options the stream depends on: each change is refused, naming the option.
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"job.seed", "78"}, {"job.seq_len", "4096"}, {"source.corpus.weight", "0.4"},
           {"job.global_batch", "64"}, {"job.balance", "tokens"}}) {
    // The option's value replaced, not given twice: parsing must succeed, so
    // that the refusal comes from check_resumable.
    auto changed = job_args();
    std::erase_if(changed, [&](const std::string& arg) { return arg.rfind("--" + option + "=", 0) == 0; });
    changed.push_back("--" + option + "=" + value);
    const Config config = test::parse_config(changed);
    CHECK_THROWS_WITH(check_resumable(c, config, c.data), Catch::Contains("--resume: ") && Catch::Contains(option));
  }
}

TEST_CASE("resume compares each source's stream order, taking a checkpoint without the option as uniform", "[checkpoint]") {
  PlannerCheckpoint c = sample_checkpoint(10);
  const Config config = test::parse_config(job_args());
  // The checkpoint of a run from before source.NAME.shuffle existed.
  std::string old_ini;
  std::istringstream lines(c.config_ini);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("shuffle", 0) != 0) old_ini += line + "\n";
  c.config_ini = old_ini;
  DataFingerprint plain;
  plain.files = {{0, "/data/web/a.jsonl", 10, 1}, {1, "/data/corpus/a.idx", 10, 2}};
  c.data = plain;
  check_resumable(c, config, plain);  // auto on plain files is the uniform order it took
  DataFingerprint compressed = plain;
  compressed.files[0].path = "/data/web/a.jsonl.zst";
  c.data = compressed;
  CHECK_THROWS_WITH(check_resumable(c, config, compressed),
                    Catch::Contains("source.web.shuffle") && Catch::Contains("was uniform") &&
                        Catch::Contains("is block (2048 records a block, 16 a window) now"));
  auto uniform = job_args();
  uniform.push_back("--source.web.shuffle=uniform");
  check_resumable(c, test::parse_config(uniform), compressed);
  // Spelled otherwise, the same order: block options do nothing under the uniform order.
  uniform.push_back("--source.web.shuffle_block_records=7");
  check_resumable(c, test::parse_config(uniform), compressed);
  // The cache of decoded blocks does not change the stream.
  auto cache = job_args();
  cache.push_back("--source.web.cache_mib=1");
  c.data = plain;
  check_resumable(c, test::parse_config(cache), plain);
}

TEST_CASE("a planner checkpoint changed after it was written is refused, naming where", "[checkpoint][integrity]") {
  const std::string dir = scratch_dir("planner_integrity");
  PlannerCheckpoint c = sample_checkpoint(20);
  c.data.files = {{0, "/data/web/a.jsonl", 1234, 99}, {1, "/data/corpus/a.idx", 56, 7}};
  c.data.vocabulary = "/data/vocab.tiktoken";
  write_planner_checkpoint(dir, c);
  const std::string path = planner_checkpoint_path(dir, 20);
  REQUIRE_FALSE(check_planner_checkpoint_integrity(path).has_value());
  REQUIRE(read_planner_checkpoint(path) == c);
  const std::string copy = dir + "/copy.h5";
  auto changed = [&](auto&& poke) {
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    poke();
    const auto where = check_planner_checkpoint_integrity(copy);
    REQUIRE(where.has_value());
    CHECK_THROWS_WITH(read_planner_checkpoint(copy), Catch::Contains("changed after it was written"));
    return *where;
  };
  CHECK_THAT(changed([&] { test::poke_attribute(copy, "seed"); }), Catch::Contains("attribute @seed"));
  CHECK_THAT(changed([&] { test::poke_attribute(copy, "step"); }), Catch::Contains("attribute @step"));
  CHECK_THAT(changed([&] { test::poke_dataset(copy, "source_samples", 1, ""); }),
             Catch::Contains("dataset /source_samples"));
  CHECK_THAT(changed([&] { test::poke_dataset(copy, "consumed", 0, ""); }), Catch::Contains("dataset /consumed"));
  CHECK_THAT(changed([&] { test::poke_dataset(copy, "in_flight", 2, "cursor"); }),
             Catch::Contains("dataset /in_flight"));
  CHECK_THAT(changed([&] { test::poke_dataset(copy, "data_file_bytes", 1, ""); }),
             Catch::Contains("dataset /data_file_bytes"));
  CHECK_THAT(changed([&] { test::poke_attribute(copy, "vocabulary_digest"); }),
             Catch::Contains("attribute @vocabulary_digest"));
  CHECK_THAT(changed([&] { test::poke_dataset(copy, "integrity_digests", 0, ""); }),
             Catch::Contains("integrity record itself"));
  // A resume skips a changed checkpoint and takes an older intact one.
  write_planner_checkpoint(dir, sample_checkpoint(10));
  test::poke_dataset(path, "mixer_realized", 0, "");
  std::string used;
  const auto latest = latest_planner_checkpoint(dir, &used);
  REQUIRE(latest.has_value());
  CHECK(latest->step == 10);
}

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

}  // namespace

TEST_CASE("resume refuses changed data, naming what changed; the override accepts it", "[checkpoint][integrity]") {
  const std::string dir = scratch_dir("resume_data");
  fs::create_directories(dir + "/web");
  const std::string big(3 * kFingerprintBlockBytes, 'x');  // the middle of a file is not fingerprinted
  write_text(dir + "/web/a.jsonl", "{\"text\": \"one\"}\n" + big + "\n");
  write_text(dir + "/web/b.jsonl", "{\"text\": \"two\"}\n");
  write_text(dir + "/vocab.tiktoken", "YQ== 0\nYg== 1\n");
  std::vector<std::string> args;
  for (const auto& arg : job_args())  // the data of this test instead of /data
    if (arg.find("path=") == std::string::npos && arg.find("vocab=") == std::string::npos &&
        arg.find("corpus.format=") == std::string::npos)
      args.push_back(arg);
  args.push_back("--source.web.path=" + dir + "/web/*.jsonl");
  args.push_back("--source.corpus.format=jsonl");
  args.push_back("--source.corpus.path=" + dir + "/web/b.jsonl");
  args.push_back("--tokenizer.vocab=" + dir + "/vocab.tiktoken");
  const Config config = test::parse_config(args);
  PlannerCheckpoint c = sample_checkpoint(10);
  c.config_ini = to_ini(config);
  c.data = fingerprint_data(config.sources, config.tokenizer);
  REQUIRE(c.data.files.size() == 3);  // web: a, b; corpus: b
  check_resumable(c, config, fingerprint_data(config.sources, config.tokenizer));
  // A copy elsewhere with the same contents is the same data.
  DataFingerprint moved = c.data;
  for (auto& f : moved.files) f.path = "/elsewhere/" + fs::path(f.path).filename().string();
  check_resumable(c, config, moved);

  SECTION("a file that grew") {
    write_text(dir + "/web/b.jsonl", "{\"text\": \"two\"}\n{\"text\": \"three\"}\n");
    CHECK_THROWS_WITH(check_resumable(c, config, fingerprint_data(config.sources, config.tokenizer)),
                      Catch::Contains("source web: file " + dir + "/web/b.jsonl holds 34 bytes, it held 16") &&
                          Catch::Contains("source corpus: file " + dir + "/web/b.jsonl") &&
                          Catch::Contains("--resume-accept-changed-data"));
    Config accept = test::parse_config([&] {
      auto a = args;
      a.push_back("--resume-accept-changed-data");  // which does nothing without a resume
      a.push_back("--resume");
      a.push_back("--checkpoint.dir=" + dir);
      return a;
    }());
    CHECK(accept.checkpoint.accept_changed_data);
    check_resumable(c, accept, fingerprint_data(accept.sources, accept.tokenizer));
  }
  SECTION("a file of the same size with other contents at its end") {
    write_text(dir + "/web/a.jsonl", "{\"text\": \"one\"}\n" + big + "y");
    CHECK_THROWS_WITH(check_resumable(c, config, fingerprint_data(config.sources, config.tokenizer)),
                      Catch::Contains("file " + dir + "/web/a.jsonl has its recorded size"));
  }
  SECTION("a file added to the source") {
    write_text(dir + "/web/c.jsonl", "{\"text\": \"new\"}\n");
    CHECK_THROWS_WITH(check_resumable(c, config, fingerprint_data(config.sources, config.tokenizer)),
                      Catch::Contains("web/c.jsonl") && Catch::Contains("is new"));
  }
  SECTION("the vocabulary") {
    write_text(dir + "/vocab.tiktoken", "YQ== 0\nYw== 1\n");
    CHECK_THROWS_WITH(check_resumable(c, config, fingerprint_data(config.sources, config.tokenizer)),
                      Catch::Contains("tokenizer.vocab") && Catch::Contains("other contents"));
  }
}
