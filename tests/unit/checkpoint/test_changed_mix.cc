// A resume with a changed mixture (checkpoint/changed_mix.h): what is
// refused without the flag, and the state a checkpoint is continued into
// under new weights, sources and files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/changed_mix.h"
#include "checkpoint/planner_checkpoint.h"
#include "common/error.h"
#include "config/part_options.h"
#include "plan/step/mix.h"
#include "unit/checkpoint/parse_config.h"
#include "unit/scratch.h"

namespace fs = std::filesystem;
using namespace msd;

namespace {

// A JSON-lines file of `lines` documents.
void write_docs(const std::string& path, int lines, const std::string& tag) {
  std::ofstream out(path);
  for (int i = 0; i < lines; ++i) out << "{\"text\": \"" << tag << " " << i << "\"}\n";
}

// The data's fingerprint with each file's samples (what the loaders report).
DataFingerprint data_of(const Config& config) {
  DataFingerprint data = fingerprint_data(config.sources, config.tokenizer);
  for (FileFingerprint& f : data.files) {
    std::ifstream in(f.path);
    uint64_t lines = 0;
    for (std::string line; std::getline(in, line);) lines += !line.empty();
    f.samples = lines;
  }
  return data;
}

struct Fixture {
  std::string dir = test::scratch_dir("changed_mix");
  Fixture() {
    fs::create_directories(dir + "/web");
    fs::create_directories(dir + "/books");
    write_docs(dir + "/web/a.jsonl", 10, "a");
    write_docs(dir + "/web/b.jsonl", 10, "b");
    write_docs(dir + "/web/c.jsonl", 10, "c");
    write_docs(dir + "/books/x.jsonl", 5, "x");
    write_docs(dir + "/code.jsonl", 4, "code");
    std::ofstream(dir + "/vocab.tiktoken") << "YQ== 0\nYg== 1\n";
  }
  // sources: name:weight:path, in order.
  Config config(const std::vector<std::string>& sources, std::vector<std::string> extra = {}) const {
    std::string names;
    std::vector<std::string> args = {"--job.seed=5", "--job.global_batch=24", "--tokenizer.vocab=" + dir + "/vocab.tiktoken"};
    for (const auto& s : sources) {
      const size_t a = s.find(':'), b = s.find(':', a + 1);
      const std::string name = s.substr(0, a);
      names += (names.empty() ? "" : ",") + name;
      args.push_back("--source." + name + ".format=jsonl");
      args.push_back("--source." + name + ".weight=" + s.substr(a + 1, b - a - 1));
      args.push_back("--source." + name + ".path=" + dir + "/" + s.substr(b + 1));
    }
    args.push_back("--mix.sources=" + names);
    args.insert(args.end(), extra.begin(), extra.end());
    return test::parse_config(args);
  }
  // The run's checkpoint at step 10: web consumed 35 (epoch 1, 5 in), books 9.
  PlannerCheckpoint checkpoint(const Config& config) const {
    PlannerCheckpoint c;
    c.step = 10;
    c.seed = 5;
    c.config_ini = to_ini(config);
    c.data = data_of(config);
    c.source_samples = {30, 5};
    c.consumed = {35, 9};
    c.mixer_realized = {170, 70};
    c.bad_samples.assign(10, 0);
    c.held = {{1, 8, 100, 0, 9}};  // a book the outlier hold keeps
    return c;
  }
};

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("a changed mixture is refused without the flag, listing every change", "[checkpoint][changed_mix]") {
  const Fixture f;
  const Config old = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"});
  const PlannerCheckpoint c = f.checkpoint(old);
  CHECK_FALSE(check_resumable(c, old, c.data));
  const Config changed = f.config({"books:0.5:books/*.jsonl", "code:0.2:code.jsonl", "web:0.3:web/[ab].jsonl"});
  CHECK_THROWS_WITH(check_resumable(c, changed, data_of(changed)),
                    Catch::Contains("--resume: the mixture changed since the checkpoint at step 10") &&
                        Catch::Contains("source.web.weight: '0:0.7' -> '0:0.3'") && Catch::Contains("source 'code' added") &&
                        Catch::Contains("mix.sources") && Catch::Contains("file " + f.dir + "/web/c.jsonl removed") &&
                        Catch::Contains("--resume-accept-changed-mix"));
  const Config accepted = f.config({"books:0.5:books/*.jsonl", "code:0.2:code.jsonl", "web:0.3:web/[ab].jsonl"},
                                   {"--resume", "--checkpoint.dir=" + f.dir, "--resume-accept-changed-mix"});
  CHECK(check_resumable(c, accepted, data_of(accepted)));
  // Options that change every document are refused with the flag too.
  const Config longer = f.config({"web:0.3:web/*.jsonl", "books:0.3:books/*.jsonl"},
                                 {"--job.seq_len=4096", "--resume", "--checkpoint.dir=" + f.dir, "--resume-accept-changed-mix"});
  CHECK_THROWS_WITH(check_resumable(c, longer, data_of(longer)), Catch::Contains("job.seq_len"));
  // Files added to a source with nothing else changed: refused by name, accepted with the flag.
  write_docs(f.dir + "/web/d.jsonl", 7, "d");
  CHECK_THROWS_WITH(check_resumable(c, old, data_of(old)), Catch::Contains("--resume-accept-changed-mix"));
  const Config grown = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"},
                                {"--resume", "--checkpoint.dir=" + f.dir, "--resume-accept-changed-mix"});
  CHECK(check_resumable(c, grown, data_of(grown)));
}

TEST_CASE("sources added, removed and reordered keep their streams; targets restart at the realized totals",
          "[checkpoint][changed_mix]") {
  const Fixture f;
  const PlannerCheckpoint c = f.checkpoint(f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"}));
  const Config now = f.config({"books:0.5:books/*.jsonl", "web:0.3:web/*.jsonl", "code:0.2:code.jsonl"});
  std::vector<std::string> lines;
  const PlannerCheckpoint next = continue_with_changed_mix(c, now, data_of(now), lines);
  CHECK(next.step == 10);
  CHECK(next.source_samples == std::vector<uint64_t>{5, 30, 4});
  CHECK(next.consumed == std::vector<uint64_t>{9, 35, 0});
  CHECK(next.stream_keys == std::vector<uint32_t>{1, 0, 2});  // each kept source keeps its permutations
  CHECK(next.stream_eras.empty());                           // no source's files changed
  CHECK(next.mixer_realized == std::vector<uint64_t>{70, 170, 0});
  CHECK(next.mixer_origin == next.mixer_realized);
  CHECK(next.mixer_origin_step == 10);
  REQUIRE(next.held.size() == 1);
  CHECK(next.held[0].source == 0);  // books is now first
  const std::string text = joined(lines);
  CHECK_THAT(text, Catch::Contains("source 'code' added: its stream starts at cursor 0"));
  CHECK_THAT(text, Catch::Contains("source.web.weight: '0:0.7' -> '0:0.3' from step 10"));
  CHECK_THAT(text, Catch::Contains("mix.sources: 'web, books' -> 'books, web, code'"));
  // The mixer continues from there under the new weights.
  Mixer mixer(make_schedule(now), 24);
  mixer.restore(next.step, next.mixer_realized, next.mixer_origin_step, next.mixer_origin);
  const auto quota = mixer.next();
  CHECK(quota[0] == 12);
  CHECK(quota[2] >= 4);
  // A source removed stops, and a document the hold kept of it is dropped.
  lines.clear();
  const Config web_only = f.config({"web:1:web/*.jsonl"});
  const PlannerCheckpoint alone = continue_with_changed_mix(c, web_only, data_of(web_only), lines);
  CHECK(alone.source_samples == std::vector<uint64_t>{30});
  CHECK(alone.held.empty());
  CHECK_THAT(joined(lines), Catch::Contains("source 'books' removed: it stops (9 samples consumed)") &&
                                Catch::Contains("the document at cursor 8 the outlier hold kept since step 9 is gone"));
}

TEST_CASE("files added and removed: the epoch continues over the rest, the removed file's documents counted",
          "[checkpoint][changed_mix]") {
  const Fixture f;
  const Config old = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"});
  const PlannerCheckpoint c = f.checkpoint(old);
  fs::remove(f.dir + "/web/b.jsonl");
  write_docs(f.dir + "/web/d.jsonl", 7, "d");
  const Config now = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"});
  std::vector<std::string> lines;
  const PlannerCheckpoint next = continue_with_changed_mix(c, now, data_of(now), lines);
  CHECK(next.source_samples == std::vector<uint64_t>{27, 5});
  REQUIRE(next.stream_eras.size() == 2);
  REQUIRE(next.stream_eras[0].size() == 2);
  CHECK(next.stream_eras[1].empty());
  // The documents of b the epoch had not reached: 10 less those among its first 5.
  const StreamOrder before(5, 0, 30);
  uint64_t of_b = 0;
  for (uint64_t cursor = 30; cursor < 35; ++cursor) of_b += before.index(cursor) >= 10 && before.index(cursor) < 20;
  const std::string text = joined(lines);
  CHECK_THAT(text, Catch::Contains(str("file ", f.dir, "/web/b.jsonl removed (or changed): ", 10 - of_b,
                                       " of its 10 documents not yet consumed in epoch 1 are dropped")));
  CHECK_THAT(text, Catch::Contains(str("file ", f.dir, "/web/d.jsonl added: its 7 documents join the rest of epoch 1")));
  // The stream as the planner opens it: the epoch's rest, every survivor once.
  const StreamOrder order(5, 0, next.stream_eras[0]);
  CHECK(next.stream_eras[0][1].tail == 30 - 5 - (10 - of_b) + 7);
  // The same inputs, the same state: a pure function.
  std::vector<std::string> again_lines;
  CHECK(continue_with_changed_mix(c, now, data_of(now), again_lines) == next);
  CHECK(again_lines == lines);
  // Written and read back, it continues the same way.
  const std::string dir = test::scratch_dir("changed_mix_round_trip");
  write_planner_checkpoint(dir, next);
  CHECK(read_planner_checkpoint(planner_checkpoint_path(dir, 10)) == next);
}

TEST_CASE("a checkpoint without its files' samples cannot take changed files, but can take new weights",
          "[checkpoint][changed_mix]") {
  const Fixture f;
  PlannerCheckpoint c = f.checkpoint(f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"}));
  for (FileFingerprint& file : c.data.files) file.samples = 0;  // as version 4 files read
  std::vector<std::string> lines;
  const Config weights = f.config({"web:0.5:web/*.jsonl", "books:0.5:books/*.jsonl"});
  CHECK(continue_with_changed_mix(c, weights, data_of(weights), lines).consumed == c.consumed);
  write_docs(f.dir + "/web/d.jsonl", 7, "d");
  const Config grown = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"});
  CHECK_THROWS_WITH(continue_with_changed_mix(c, grown, data_of(grown), lines),
                    Catch::Contains("source 'web'") && Catch::Contains("format version 5"));
}

TEST_CASE("a changed mixture continues a source's block order, and may not change the order",
          "[checkpoint][changed_mix]") {
  const Fixture f;
  const std::vector<std::string> blocks = {"--source.web.shuffle=block", "--source.web.shuffle_block_records=4",
                                           "--source.web.shuffle_window_blocks=2"};
  const Config old = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"}, blocks);
  const PlannerCheckpoint c = f.checkpoint(old);
  fs::remove(f.dir + "/web/b.jsonl");
  write_docs(f.dir + "/web/d.jsonl", 7, "d");
  std::vector<std::string> accept = blocks;
  for (const char* arg : {"--resume", "--resume-accept-changed-mix"}) accept.push_back(arg);
  accept.push_back("--checkpoint.dir=" + f.dir);
  const Config now = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"}, accept);
  CHECK(check_resumable(c, now, data_of(now)));
  std::vector<std::string> lines;
  const PlannerCheckpoint next = continue_with_changed_mix(c, now, data_of(now), lines);
  // The interrupted epoch's documents are the block order's: those of b it had not reached are dropped.
  const ShuffleOrder order = shuffle_orders(now, next.data)[0];
  REQUIRE(order == ShuffleOrder{true, 4, 2});
  const StreamOrder before(5, 0, 30, order);
  uint64_t of_b = 0;
  for (uint64_t cursor = 30; cursor < 35; ++cursor) of_b += before.index(cursor) >= 10 && before.index(cursor) < 20;
  CHECK_THAT(joined(lines), Catch::Contains(str("file ", f.dir, "/web/b.jsonl removed (or changed): ", 10 - of_b,
                                                " of its 10 documents not yet consumed in epoch 1 are dropped")));
  const StreamOrder continued(5, 0, next.stream_eras[0], order);
  CHECK(continued.eras()[1].tail == 30 - 5 - (10 - of_b) + 7);
  const uint64_t whole = continued.eras()[1].begin + continued.eras()[1].tail;
  const SourceOrder epoch(27, permutation_key(5, 0, 2), order);
  for (uint64_t p = 0; p < 27; ++p) REQUIRE(continued.index(whole + p) == epoch(p));
  // A compressed file added under shuffle = auto would turn the uniform order into the block order: refused.
  const Config plain = f.config({"web:0.7:web/*.jsonl", "books:0.3:books/*.jsonl"});
  const PlannerCheckpoint d = f.checkpoint(plain);
  std::ofstream(f.dir + "/web/e.jsonl.zst") << "not read here";
  std::vector<std::string> accept_auto = {"--resume", "--resume-accept-changed-mix", "--checkpoint.dir=" + f.dir};
  const Config grown = f.config({"web:0.7:web/*", "books:0.3:books/*.jsonl"}, accept_auto);
  CHECK_THROWS_WITH(check_resumable(d, grown, fingerprint_data(grown.sources, grown.tokenizer)),
                    Catch::Contains("source.web.shuffle: the stream's order was uniform") &&
                        Catch::Contains("is block (2048 records a block, 16 a window) now"));
}
