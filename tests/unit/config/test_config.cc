#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "msd/config.h"

namespace fs = std::filesystem;
using msd::ConfigError;
using msd::Invocation;
using msd::ScheduleKind;
using msd::WeightPoint;

namespace {

const std::string kData = MSD_TEST_DATA "/config";

Invocation parse(std::vector<std::string> args) {
  args.insert(args.begin(), "msd-run");
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return msd::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

// The message of the ConfigError that parsing `args` throws.
std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for the arguments");
  return {};
}

// Writes an INI file under the build tree and returns its path.
std::string write_ini(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(MSD_BINARY_DIR) / "test_config";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// A valid text-only job other tests vary.
const std::string kBase =
    "[mix]\nsources = web\n"
    "[source.web]\nformat = jsonl\npath = /data/web-*.jsonl\n"
    "[tokenizer]\nvocab = /data/vocab.tiktoken\n";

std::string error_of_ini(const std::string& text, std::vector<std::string> extra = {}) {
  const std::string path = write_ini("case.ini", text);
  extra.insert(extra.begin(), {"--config", path});
  return error_of(extra);
}

std::string normal(const fs::path& path) { return path.lexically_normal().string(); }

bool same(const std::vector<WeightPoint>& a, const std::vector<WeightPoint>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].step != b[i].step || a[i].weight != b[i].weight) return false;
  return true;
}

}  // namespace

TEST_CASE("config: every option of a full INI file lands in its field", "[config]") {
  const std::string path = kData + "/full.ini";
  const Invocation inv = parse({"--config", path});
  const msd::Config& c = inv.config;
  CHECK(c.config_path == path);
  CHECK(c.job.steps == 500);
  CHECK(c.job.seed == 99);
  CHECK(c.job.global_batch == 64);
  CHECK(c.job.seq_len == 4096);
  CHECK(c.job.micro_batches == 4);
  CHECK(c.job.prefetch_steps == 3);
  CHECK(c.job.mode() == msd::TrainingMode::colocated_samples);  // the alias colocated
  CHECK(c.job.long_docs == msd::LongDocs::truncate);
  CHECK(c.topology.dp == 4);
  CHECK(c.topology.pp == 2);
  CHECK(c.topology.cp == 2);
  CHECK(c.topology.tp == 2);
  CHECK(c.topology.order == "tp,dp,cp,pp");
  CHECK(c.topology.loaders == 6);
  CHECK(c.schedule == ScheduleKind::linear);
  REQUIRE(c.sources.size() == 3);
  CHECK(c.sources[0].name == "web");
  CHECK(c.sources[0].format == msd::SourceFormat::jsonl);
  CHECK(c.sources[0].path == normal(fs::path(kData) / "sub/web-*.jsonl") + ",/abs/more-*.jsonl");
  CHECK(same(c.sources[0].weight, {{0, 0.6}, {500, 0.3}}));
  CHECK(c.sources[0].text_field == "content");
  CHECK(c.sources[1].name == "captions");
  CHECK(c.sources[1].format == msd::SourceFormat::wds);
  CHECK(c.sources[1].weight.size() == 1);
  CHECK(c.sources[1].weight[0].weight == 0.25);
  CHECK(c.sources[1].caption_field == "txt");
  CHECK(c.sources[2].name == "code");
  CHECK(c.sources[2].format == msd::SourceFormat::indexed);
  CHECK(same(c.sources[2].weight, {{0, 0.0}, {100, 1.0}}));
  CHECK(c.tokenizer.vocab == normal(fs::path(kData) / "vocab/cl100k.tiktoken"));
  CHECK(c.tokenizer.pattern == "o200k");
  CHECK(c.tokenizer.normalize == "nfkc");
  CHECK(c.image.max_side == 448);
  CHECK(c.image.patch == 14);
  CHECK(c.image.token_id == 100257);
  CHECK(c.loader.window_mb == 512);
  CHECK(c.loader.cache_dir == normal(fs::path(kData) / "cache"));
  CHECK(c.model.hidden == 4096);
  CHECK(c.model.layers == 32);
  CHECK(c.model.vision_hidden == 1024);
  CHECK(c.model.vision_layers == 24);
  CHECK(c.model.preset == "llama3-8b");
  CHECK(c.device.preset == "h200");
  CHECK(c.emulator.time_scale == 0.5);
  CHECK(c.output.summary_json == "out/summary.json");  // never resolved against the file
  CHECK(c.output.metrics == "out/metrics.jsonl");       // nor is this
  CHECK(c.output.progress_every == 10);
  CHECK(c.output.log_level == "warn");
  CHECK_FALSE(inv.help);
  CHECK_FALSE(inv.print_world_size);
}

TEST_CASE("config: defaults match config.h when the file sets little", "[config]") {
  const Invocation inv = parse({"--config", kData + "/sub/minimal.ini"});
  const msd::Config defaults;
  const msd::Config& c = inv.config;
  CHECK(c.job.steps == defaults.job.steps);
  CHECK(c.job.seq_len == defaults.job.seq_len);
  CHECK(c.topology.order == defaults.topology.order);
  CHECK(c.schedule == ScheduleKind::constant);
  REQUIRE(c.sources.size() == 1);
  CHECK(same(c.sources[0].weight, {{0, 1.0}}));
  CHECK(c.sources[0].path == normal(fs::path(kData) / "data/*.bin"));
  CHECK(c.tokenizer.vocab.empty());  // an indexed source needs no vocabulary
}

TEST_CASE("config: command-line options override the file", "[config]") {
  const Invocation inv = parse({"--config", kData + "/full.ini", "--job.seq_len=8192", "--topology.dp", "8",
                                "--source.web.weight=0:1, 10:2", "--mix.schedule=piecewise"});
  CHECK(inv.config.job.seq_len == 8192);
  CHECK(inv.config.topology.dp == 8);
  CHECK(inv.config.schedule == ScheduleKind::piecewise);
  CHECK(same(inv.config.sources[0].weight, {{0, 1.0}, {10, 2.0}}));
  CHECK(inv.config.job.steps == 500);  // untouched values still come from the file
}

TEST_CASE("config: aliases set their section keys", "[config]") {
  const Invocation inv = parse({"--config", kData + "/full.ini", "--steps=7", "--seed", "5", "--mode=disaggregated",
                                "--loaders=3", "--summary-json=s.json", "--metrics=m.jsonl", "--print-world-size"});
  CHECK(inv.config.job.steps == 7);
  CHECK(inv.config.job.seed == 5);
  CHECK(!inv.config.job.named_mode);  // disaggregated: job.balance picks the msd mode
  CHECK(inv.config.topology.loaders == 3);
  CHECK(inv.config.output.summary_json == "s.json");
  CHECK(inv.config.output.metrics == "m.jsonl");
  CHECK(inv.print_world_size);
  CHECK_THAT(error_of({"--config", kData + "/full.ini", "--steps=7", "--job.steps=8"}),
             Catch::Contains("job.steps: given twice on the command line"));
}

TEST_CASE("config: --help needs no valid configuration and lists every section", "[config]") {
  const Invocation inv = parse({"--help", "--job.seq_len=abc"});
  CHECK(inv.help);
  for (const char* expected : {"usage: msd-run", "[job]", "--job.seq_len", "(=2048)", "[topology]", "[mix]",
                               "[tokenizer]", "[image]", "[loader]", "[model]", "[emulator]", "[output]",
                               "[source.NAME]", "source.NAME.weight", "--print-world-size", "--summary-json",
                               "working directory"}) {
    CHECK_THAT(inv.usage, Catch::Contains(expected));
  }
}

TEST_CASE("config: relative paths resolve against the file, or the working directory", "[config]") {
  const fs::path cwd = fs::current_path();
  const Invocation inv = parse({"--config", kData + "/sub/minimal.ini", "--tokenizer.vocab=v/x.tiktoken",
                                "--loader.cache_dir=c", "--source.tokens.path=a/*.bin, /b/*.bin"});
  CHECK(inv.config.tokenizer.vocab == normal(cwd / "v/x.tiktoken"));
  CHECK(inv.config.loader.cache_dir == normal(cwd / "c"));
  CHECK(inv.config.sources[0].path == normal(cwd / "a/*.bin") + ",/b/*.bin");
}

TEST_CASE("config: weight syntax", "[config]") {
  auto weight_of = [](const std::string& text) {
    return parse({"--config", kData + "/sub/minimal.ini", "--source.tokens.weight=" + text}).config.sources[0].weight;
  };
  CHECK(same(weight_of("0.5"), {{0, 0.5}}));
  CHECK(same(weight_of(" 3 "), {{0, 3.0}}));
  CHECK(same(weight_of("0:0.6, 500:0.3"), {{0, 0.6}, {500, 0.3}}));
  CHECK(same(weight_of("10:1"), {{10, 1.0}}));
  CHECK(same(weight_of("0:1,1:0,2:1e-3"), {{0, 1.0}, {1, 0.0}, {2, 1e-3}}));
  CHECK_THAT(error_of({"--config", kData + "/sub/minimal.ini", "--source.tokens.weight="}),
             Catch::Contains("source.tokens.weight"));
  for (const char* bad : {"x", "-1", "0:-0.5", "500:0.3, 0:0.6", "0:1, 0:2", "0.5, 100:1", "-5:1", "a:1",
                          "0:1,", "0:inf", "nan"}) {
    INFO(bad);
    CHECK_THAT(error_of({"--config", kData + "/sub/minimal.ini", std::string("--source.tokens.weight=") + bad}),
               Catch::StartsWith("source.tokens.weight: '"));
  }
}

TEST_CASE("config: source sections follow mix.sources", "[config]") {
  SECTION("a source given wholly on the command line") {
    const Invocation inv = parse({"--mix.sources=a,b", "--source.a.format=indexed", "--source.a.path=/x/*.bin",
                                  "--source.b.format=indexed", "--source.b.path=/y/*.bin", "--source.b.weight=3"});
    REQUIRE(inv.config.sources.size() == 2);
    CHECK(inv.config.sources[0].name == "a");
    CHECK(inv.config.sources[1].name == "b");
    CHECK(inv.config.sources[1].weight[0].weight == 3.0);
  }
  SECTION("a section the list does not name") {
    CHECK_THAT(error_of_ini(kBase + "[source.extra]\nformat = jsonl\n"),
               Catch::Contains("unknown option 'source.extra.format' in ") &&
                   Catch::Contains("source 'extra' is not listed in mix.sources (web)"));
  }
  SECTION("the command line narrows the list, leaving a section of the file unlisted") {
    const std::string text = kBase + "[source.other]\nformat = indexed\npath = /o\n";
    const std::string path = write_ini("two.ini", "[mix]\nsources = web, other\n" + text.substr(text.find("[source")));
    CHECK(parse({"--config", path}).config.sources.size() == 2);
    CHECK_THAT(error_of({"--config", path, "--mix.sources=web"}), Catch::Contains("source 'other' is not listed"));
  }
  SECTION("an option of a source that is not listed, on the command line") {
    CHECK_THAT(error_of_ini(kBase, {"--source.nope.weight=1"}),
               Catch::Contains("unknown option 'source.nope.weight' on the command line"));
  }
  SECTION("an unknown key of a listed source") {
    CHECK_THAT(error_of_ini(kBase + "[source.web]\nfromat = jsonl\n"),
               Catch::Contains("unknown option 'source.web.fromat'"));
  }
  SECTION("names") {
    CHECK_THAT(error_of({"--mix.sources=a,a"}), Catch::Contains("mix.sources: source 'a' is listed twice"));
    CHECK_THAT(error_of({"--mix.sources=a b"}), Catch::StartsWith("mix.sources: 'a b' is not a valid value"));
    CHECK_THAT(error_of({"--job.steps=3"}), Catch::Contains("mix.sources: at least one source"));
  }
}

TEST_CASE("config: every error names the option", "[config]") {
  SECTION("unknown keys") {
    const std::string path = write_ini("case.ini", kBase + "[job]\nseqlen = 5\n");
    CHECK(error_of({"--config", path}) == "unknown option 'job.seqlen' in " + path);
    CHECK(error_of_ini(kBase, {"--job.seqlen=5"}) == "unknown option 'job.seqlen' on the command line");
    CHECK_THAT(error_of_ini(kBase, {"--job.ste=5"}), Catch::Contains("'job.ste'"));  // no prefix guessing
    CHECK_THAT(error_of_ini(kBase, {"stray"}), Catch::Contains("unexpected argument 'stray'"));
    CHECK_THAT(error_of_ini(kBase + "[nosuch]\nkey = 1\n"), Catch::Contains("unknown option 'nosuch.key'"));
  }
  SECTION("values that do not parse") {
    CHECK_THAT(error_of_ini(kBase, {"--job.seq_len=abc"}),
               Catch::StartsWith("job.seq_len: 'abc' is not a valid value") && Catch::Contains("on the command line"));
    CHECK_THAT(error_of_ini(kBase + "[job]\nseq_len = 12x\n"),
               Catch::StartsWith("job.seq_len: '12x' is not a valid value") && Catch::Contains("case.ini"));
    CHECK_THAT(error_of_ini(kBase, {"--topology.dp=-2"}), Catch::StartsWith("topology.dp: '-2' is not a valid value"));
    CHECK_THAT(error_of_ini(kBase, {"--job.global_batch=99999999999"}), Catch::StartsWith("job.global_batch: "));
    CHECK_THAT(error_of_ini(kBase, {"--mix.schedule=cubic"}), Catch::StartsWith("mix.schedule: 'cubic'"));
    CHECK_THAT(error_of_ini(kBase, {"--emulator.time_scale=-1"}), Catch::StartsWith("emulator.time_scale: '-1'"));
    CHECK_THAT(error_of_ini(kBase, {"--model.preset=gpt5"}), Catch::StartsWith("model.preset: 'gpt5'"));
    CHECK_THAT(error_of_ini(kBase, {"--device.preset=a100"}), Catch::StartsWith("device.preset: 'a100'"));
    CHECK_THAT(error_of_ini(kBase, {"--job.max_positions_per_micro_batch=8"}),
               Catch::StartsWith("job.max_positions_per_micro_batch: 8 cannot hold one sequence"));
    CHECK_THAT(error_of_ini(kBase, {"--image.token_id=-2"}), Catch::StartsWith("image.token_id: '-2'"));
    CHECK_THAT(error_of_ini(kBase, {"--job.steps"}), Catch::Contains("job.steps"));
  }
  SECTION("given twice") {
    CHECK_THAT(error_of_ini(kBase + "[job]\nsteps = 1\nsteps = 2\n"), Catch::StartsWith("job.steps: given twice in "));
    CHECK_THAT(error_of_ini(kBase, {"--job.seed=1", "--job.seed=2"}), Catch::StartsWith("job.seed: given twice"));
  }
  SECTION("a window that cannot hold one sample of job.max_sample_bytes") {
    CHECK_THAT(error_of_ini(kBase, {"--loader.window_mb=1", "--job.max_sample_bytes=2097152"}),
               Catch::StartsWith("loader.window_mb: 1 MiB cannot hold one sample of job.max_sample_bytes = 2097152"));
    CHECK_THAT(error_of_ini(kBase, {"--job.max_sample_bytes=10"}), Catch::StartsWith("job.max_sample_bytes"));
  }
  SECTION("waits and the window have upper bounds") {
    CHECK_THAT(error_of_ini(kBase, {"--job.stall_timeout_s=604801"}),
               Catch::StartsWith("job.stall_timeout_s: must be at most 604800 (got 604801; a week)"));
    CHECK_THAT(error_of_ini(kBase, {"--loader.deadline_ms=18446744073709551615"}),
               Catch::StartsWith("loader.deadline_ms: must be at most 604800000"));
    CHECK_THAT(error_of_ini(kBase, {"--fault.stall_ms=604800001"}), Catch::StartsWith("fault.stall_ms: must be at most"));
    CHECK_THAT(error_of_ini(kBase, {"--loader.window_mb=17592186044416"}),
               Catch::StartsWith("loader.window_mb: must be at most 1048576"));
  }
  SECTION("crash faults name a rank of the job") {
    CHECK_THAT(error_of_ini(kBase, {"--fault.kind=crash", "--fault.rank=9999"}), Catch::StartsWith("fault.rank: 9999"));
    CHECK_THAT(error_of_ini(kBase, {"--fault.kind=hang", "--fault.rank=0"}), Catch::StartsWith("fault.rank: only"));
  }
  SECTION("values out of their domain") {
    CHECK_THAT(error_of_ini(kBase, {"--job.mode=hybrid"}), Catch::StartsWith("job.mode: 'hybrid'"));
    CHECK_THAT(error_of_ini(kBase, {"--job.mode=megatron"}), Catch::Contains("not a mode a job runs"));
    // One vocabulary: disaggregated is the msd mode job.balance names; a named msd mode keeps its own balance.
    const auto mode_of = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {"--config", write_ini("case.ini", kBase)});
      return parse(args).config.job.mode();
    };
    CHECK(mode_of({"--job.mode=disaggregated", "--job.balance=tokens"}) == msd::TrainingMode::msd_tokens);
    CHECK(mode_of({"--job.mode=msd_kk", "--job.balance=tokens"}) == msd::TrainingMode::msd_kk);
    CHECK(mode_of({"--job.mode=colocated"}) == msd::TrainingMode::colocated_samples);
    CHECK_THAT(error_of_ini(kBase, {"--job.long_docs=drop"}), Catch::StartsWith("job.long_docs: 'drop'"));
    CHECK_THAT(error_of_ini(kBase, {"--topology.dp=0"}), Catch::StartsWith("topology.dp: must be at least 1"));
    CHECK_THAT(error_of_ini(kBase, {"--topology.tp=0"}), Catch::StartsWith("topology.tp: must be at least 1"));
    CHECK_THAT(error_of_ini(kBase, {"--topology.loaders=0"}), Catch::StartsWith("topology.loaders: must be at least 1"));
    CHECK(parse({"--config", write_ini("case.ini", kBase), "--topology.loaders=0", "--mode=colocated"})
              .config.topology.loaders == 0);  // colocated mode has no loaders
    CHECK_THAT(error_of_ini(kBase, {"--topology.dp=8", "--job.global_batch=4"}),
               Catch::StartsWith("job.global_batch: must be at least topology.dp = 8"));
    CHECK_THAT(error_of_ini(kBase, {"--job.seq_len=15"}), Catch::StartsWith("job.seq_len: must be at least 16"));
    CHECK_THAT(error_of_ini(kBase, {"--job.micro_batches=0"}), Catch::StartsWith("job.micro_batches"));
    CHECK_THAT(error_of_ini(kBase, {"--job.prefetch_steps=0"}), Catch::StartsWith("job.prefetch_steps"));
    CHECK_THAT(error_of_ini(kBase, {"--topology.order=tp,cp,dp"}), Catch::StartsWith("topology.order: "));
    CHECK_THAT(error_of_ini(kBase, {"--topology.order=tp,cp,dp,dp"}), Catch::StartsWith("topology.order: "));
    CHECK_THAT(error_of_ini(kBase, {"--source.web.format=orc"}), Catch::StartsWith("source.web.format: 'orc'"));
    CHECK_THAT(error_of_ini(kBase.substr(0, kBase.find("[tokenizer]"))), Catch::StartsWith("tokenizer.vocab: missing"));
    CHECK_THAT(error_of_ini(kBase + "[tokenizer]\nvocab =\n"), Catch::StartsWith("tokenizer.vocab: given twice"));
    CHECK_THAT(error_of_ini(kBase, {"--tokenizer.normalize=nfx"}), Catch::StartsWith("tokenizer.normalize: 'nfx'"));
    CHECK_THAT(error_of_ini(kBase, {"--output.log_level=loud"}), Catch::StartsWith("output.log_level: 'loud'"));
    CHECK_THAT(error_of_ini(kBase, {"--image.patch=300"}), Catch::StartsWith("image.patch: 300 is larger"));
    CHECK_THAT(error_of_ini("[mix]\nsources = w\n[source.w]\nformat = indexed\n"),
               Catch::StartsWith("source.w.path: missing"));
    CHECK_THAT(error_of({"--config", kData + "/nonexistent.ini"}), Catch::StartsWith("--config: cannot open"));
  }
  SECTION("the largest image and a caption token must fit a sequence") {
    const std::string text = "[mix]\nsources = img\n[source.img]\nformat = wds\npath = /d/*.tar\n"
                             "[tokenizer]\nvocab = /v\n[image]\nmax_side = 224\npatch = 16\n";
    // (224/16)^2 = 196 patches; 230/16 rounds down to the same 14 patches a side.
    CHECK(parse({"--config", write_ini("img.ini", text), "--job.seq_len=197"}).config.job.seq_len == 197);
    CHECK(parse({"--config", write_ini("img.ini", text), "--job.seq_len=197", "--image.max_side=239"})
              .config.image.max_side == 239);
    CHECK_THAT(error_of({"--config", write_ini("img.ini", text), "--job.seq_len=196"}),
               Catch::StartsWith("job.seq_len: 196 cannot hold the largest image (196 patches"));
    // Without an image source the same sizes are fine.
    CHECK(parse({"--config", write_ini("case.ini", kBase), "--job.seq_len=16"}).config.job.seq_len == 16);
  }
  SECTION("weights that vanish for every source at once") {
    const std::string two = "[mix]\nsources = a, b\n[source.a]\nformat = indexed\npath = /a\n"
                            "[source.b]\nformat = indexed\npath = /b\n";
    CHECK_THAT(error_of_ini(two, {"--source.a.weight=0", "--source.b.weight=0"}),
               Catch::Contains("all sources are zero at step 0"));
    // Piecewise: a hands over to b at 100, but b starts only at 200.
    const std::vector<std::string> gap = {"--mix.schedule=piecewise", "--source.a.weight=0:1, 100:0",
                                          "--source.b.weight=0:0, 200:1"};
    CHECK_THAT(error_of_ini(two, gap), Catch::Contains("all sources are zero at step 100"));
    // Constant uses the first points only, so the same curves are valid.
    CHECK(parse({"--config", write_ini("case.ini", two), "--source.a.weight=0:1, 100:0",
                 "--source.b.weight=0:0, 200:1"})
              .config.sources.size() == 2);
    // Linear: a ramps down to 0 at step 100 while b is still 0 there.
    CHECK_THAT(error_of_ini(two, {"--mix.schedule=linear", "--source.a.weight=0:1, 100:0",
                                  "--source.b.weight=0:0, 100:0, 200:1"}),
               Catch::Contains("all sources are zero at step 100"));
    CHECK(parse({"--config", write_ini("case.ini", two), "--mix.schedule=linear", "--source.a.weight=0:1, 100:0",
                 "--source.b.weight=0:0, 100:0.5"})
              .config.sources.size() == 2);
  }
}

TEST_CASE("config: validate() on a Config built in C++", "[config]") {
  msd::Config config;
  CHECK_THROWS_AS(msd::validate(config), ConfigError);  // no source
  config.sources.emplace_back();
  config.sources[0].name = "t";
  config.sources[0].format = msd::SourceFormat::indexed;
  config.sources[0].path = "/t/*.bin";
  CHECK_NOTHROW(msd::validate(config));
  config.sources[0].weight = {{5, 1.0}, {5, 2.0}};
  CHECK_THROWS_WITH(msd::validate(config), Catch::StartsWith("source.t.weight: "));
  config.sources[0].weight = {};
  CHECK_THROWS_WITH(msd::validate(config), Catch::StartsWith("source.t.weight: "));
}

TEST_CASE("config: world_size counts planner, loaders and clients", "[config]") {
  msd::Config config;
  config.topology.dp = 4;
  config.topology.pp = 2;
  config.topology.cp = 2;
  config.topology.tp = 2;
  config.topology.loaders = 5;
  CHECK(config.clients() == 32);
  CHECK(config.world_size() == 1 + 5 + 32);
  config.job.named_mode = msd::TrainingMode::colocated_samples;
  CHECK(config.world_size() == 32);
  const Invocation inv = parse({"--config", kData + "/full.ini", "--mode=disaggregated"});
  CHECK(inv.config.world_size() == 1 + 6 + 32);
}
