// What every source does (bad kinds, offsets, configuration errors) and the
// JSON lines reader with its index cache.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "source/index_cache.h"
#include "source/jsonl/jsonl_source.h"
#include "source/source.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using namespace msd::test;
namespace fs = std::filesystem;

TEST_CASE("bad kinds have distinct names and RawSample::clear resets everything") {
  std::vector<std::string> names;
  for (int k = 0; k < bad_kind_count; ++k) names.push_back(bad_kind_name(static_cast<BadKind>(k)));
  std::sort(names.begin(), names.end());
  CHECK(std::unique(names.begin(), names.end()) == names.end());
  CHECK(std::string(bad_kind_name(BadKind::truncated_member)) == "truncated_member");

  RawSample sample;
  sample.kind = SampleKind::tokens;
  sample.text = "x";
  sample.image = "y";
  sample.tokens = {1};
  sample.bad = BadKind::empty;
  sample.reason = "r";
  sample.where = {"f", 3};
  sample.clear();
  CHECK(sample.kind == SampleKind::text);
  CHECK(sample.text.empty());
  CHECK(sample.image.empty());
  CHECK(sample.tokens.empty());
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.reason.empty());
  CHECK(sample.where.file.empty());
  CHECK(sample.where.offset == 0);
}

TEST_CASE("file offsets locate indexes across files, skipping empty ones") {
  FileOffsets offsets;
  offsets.add_file(3);
  offsets.add_file(0);
  offsets.add_file(2);
  offsets.add_file(0);
  offsets.add_file(1);
  REQUIRE(offsets.total() == 6);
  std::vector<std::pair<size_t, uint64_t>> expected = {{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}, {4, 0}};
  for (uint64_t i = 0; i < offsets.total(); ++i) {
    auto position = offsets.find(i);
    CHECK(position.file == expected[i].first);
    CHECK(position.local == expected[i].second);
  }
}

TEST_CASE("open_source reports configuration errors with the option name") {
  TempDir dir;
  CHECK_THROWS_WITH(open_source(source_config("jsonl", dir / "nothing-*.jsonl"), {}),
                    Catch::Contains("source.test.path") && Catch::Contains("matches no file"));
  CHECK_THROWS_AS(open_source(source_config("jsonl", dir / "nothing.jsonl"), {}), ConfigError);
  write_text(dir / "a.jsonl", json_line("x"));
  CHECK_THROWS_WITH(open_source(source_config("orc", dir / "a.jsonl"), {}),
                    Catch::Contains("source.test.format: missing") && Catch::Contains("jsonl | wds | indexed | parquet"));
  // One pattern of several matching nothing is an error too.
  CHECK_THROWS_AS(open_source(source_config("jsonl", dir / "a.jsonl," + dir / "b*.jsonl"), {}), ConfigError);
  // Files that exist but hold no sample.
  write_text(dir / "empty.jsonl", "");
  write_text(dir / "blank.jsonl", "\n  \n\r\n");
  CHECK_THROWS_WITH(open_source(source_config("jsonl", dir / "empty.jsonl," + dir / "blank.jsonl"), {}),
                    Catch::Contains("source.test.path") && Catch::Contains("no samples"));
}

// --- jsonl -------------------------------------------------------------------------

TEST_CASE("jsonl reads back every line of several files in sorted order") {
  TempDir dir;
  std::vector<std::string> texts = {"first", "second \xc3\xa9", "", "with \"quotes\" and \\n", "fifth"};
  // b sorts after a; the glob order is not the write order.
  std::string b = json_line(texts[3]) + "\n" + json_line(texts[4]);
  std::string a = json_line(texts[0]) + "   \n" + json_line(texts[1]);
  std::string a_third = json_line(texts[2]);
  a_third.insert(a_third.size() - 1, "\r");  // a CRLF line
  a += a_third;
  write_text(dir / "part-b.jsonl", b);
  write_text(dir / "part-a.jsonl", a);
  write_text(dir / "part-c.jsonl", "");  // zero-length: no samples, a warning

  auto source = open_source(source_config("jsonl", dir / "part-*.jsonl"), {});
  REQUIRE(source->kind() == SampleKind::text);
  REQUIRE(source->size() == texts.size());
  RawSample sample;
  for (uint64_t i = 0; i < texts.size(); ++i) {
    source->read(i, sample);
    INFO("sample " << i << ": " << sample.reason);
    REQUIRE(sample.bad == BadKind::none);
    CHECK(sample.kind == SampleKind::text);
    CHECK(sample.text == texts[i]);
    CHECK(sample.where.file == source->locate(i).file);
    CHECK(sample.where.offset == source->locate(i).offset);
  }
  CHECK(source->locate(0).file == dir / "part-a.jsonl");
  CHECK(source->locate(0).offset == 0);
  CHECK(source->locate(1).offset == json_line(texts[0]).size() + 4);
  CHECK(source->locate(3).file == dir / "part-b.jsonl");
  CHECK(source->locate(4).offset == json_line(texts[3]).size() + 1);
  // The first line's hint: its bytes, newline, and the blank line after it.
  CHECK(source->length_hint(0) == json_line(texts[0]).size() + 4);
  CHECK(source->length_hint(4) == json_line(texts[4]).size());
  CHECK(source->state_bytes() > 5 * sizeof(uint64_t));

  auto* jsonl = dynamic_cast<JsonlSource*>(source.get());
  REQUIRE(jsonl != nullptr);
  CHECK(jsonl->file_count() == 3);
}

TEST_CASE("jsonl uses a custom text field") {
  TempDir dir;
  write_text(dir / "d.jsonl", "{\"content\": \"abc\", \"text\": 5}\n");
  auto config = source_config("jsonl", dir / "d.jsonl");
  config.text_field = "content";
  auto source = open_source(config, {});
  RawSample sample;
  source->read(0, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == "abc");
}

TEST_CASE("jsonl bad lines are bad samples with what and where") {
  TempDir dir;
  std::string lines;
  lines += json_line("good");                          // 0
  lines += "{\"text\": \"unterminated}\n";              // 1 invalid json
  lines += "not json at all\n";                        // 2 invalid json
  lines += "{\"body\": \"no text field\"}\n";           // 3 missing field
  lines += "{\"text\": [\"not\", \"a string\"]}\n";     // 4 missing field (wrong type)
  lines += "{\"text\": \"bad \xc0\xaf byte\"}\n";       // 5 invalid utf-8 (overlong)
  lines += "{\"text\": \"lone \\udc00 low\"}\n";        // 6 invalid utf-8 (escape)
  lines += "[1, 2, 3]\n";                              // 7 not an object
  lines += json_line("also good");                     // 8
  write_text(dir / "bad.jsonl", lines);
  auto source = open_source(source_config("jsonl", dir / "bad.jsonl"), {});
  REQUIRE(source->size() == 9);
  std::vector<BadKind> expected = {BadKind::none,          BadKind::invalid_json,  BadKind::invalid_json,
                                   BadKind::missing_field, BadKind::missing_field, BadKind::invalid_utf8,
                                   BadKind::invalid_utf8,  BadKind::invalid_json,  BadKind::none};
  RawSample sample;
  for (uint64_t i = 0; i < expected.size(); ++i) {
    source->read(i, sample);
    INFO("line " << i << ": " << bad_kind_name(sample.bad) << ": " << sample.reason);
    CHECK(sample.bad == expected[i]);
    CHECK(sample.where.file == dir / "bad.jsonl");
    if (expected[i] != BadKind::none) {
      CHECK_FALSE(sample.reason.empty());
      CHECK(sample.text.empty());
    }
  }
  source->read(5, sample);
  CHECK(sample.reason.find("byte 14") != std::string::npos);
  source->read(6, sample);
  CHECK(sample.reason.find("byte 15") != std::string::npos);
  source->read(1, sample);
  CHECK(sample.reason.find("byte") != std::string::npos);
  source->read(3, sample);
  CHECK(sample.reason.find("'text'") != std::string::npos);
  // A good sample after bad ones is unaffected by them.
  source->read(8, sample);
  CHECK(sample.text == "also good");
}


TEST_CASE("msd never reads its own files as data: caches are hidden from globs, and refused by name") {
  TempDir dir;
  const std::string path = dir / "a.jsonl";
  write_text(path, json_line("one"));
  auto config = source_config("jsonl", dir / "*");
  CHECK(open_source(config, {})->size() == 1);
  REQUIRE(file_exists(cache_beside(path)));
  CHECK(open_source(config, {})->size() == 1);  // the second open does not read the cache as data
  write_text(dir / "old.jsonl.msdidx", "a cache of an earlier layout");
  CHECK_THROWS_WITH(open_source(config, {}), Catch::Contains("matches " + (dir / "old.jsonl.msdidx")) &&
                                                  Catch::Contains("msd's own index cache"));
  fs::remove(dir / "old.jsonl.msdidx");
  write_text(dir / "b.jsonl.tmp.4242", json_line("torn"));
  CHECK_THROWS_WITH(open_source(config, {}), Catch::Contains("b.jsonl.tmp.4242"));
  CHECK(is_msd_own_file("/x/y.msdidx"));
  CHECK_FALSE(is_msd_own_file("/x/y.tmp.jsonl"));
  CHECK_FALSE(is_msd_own_file("/x/y.tmp."));
}

TEST_CASE("read_sample caps a record's stored size before reading it (source.NAME.max_read_bytes)") {
  TempDir dir;
  write_text(dir / "a.jsonl", json_line("short") + json_line(std::string(5000, 'x')) + json_line("also short"));
  SourceConfig config = source_config("jsonl", dir / "a.jsonl");
  config.max_read_bytes = 1000;
  auto source = open_source(config, {});
  RawSample sample;
  read_sample(*source, config, 1, sample);
  CHECK(sample.bad == BadKind::too_large);
  CHECK_THAT(sample.reason, Catch::Contains("more than source.") && Catch::Contains(".max_read_bytes = 1000"));
  CHECK(sample.where.file == dir / "a.jsonl");
  CHECK(sample.text.empty());
  read_sample(*source, config, 2, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == "also short");
  config.max_read_bytes = 0;  // no cap
  read_sample(*source, config, 1, sample);
  CHECK(sample.text.size() == 5000);
}

TEST_CASE("jsonl index cache is created, reused without a rescan, and rebuilt after a change") {
  TempDir dir;
  std::string path = dir / "c.jsonl";
  write_text(path, json_line("one") + json_line("two") + json_line("three"));
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().scanned == 1);
    CHECK(source.index_counts().cached == 0);
    CHECK(source.size() == 3);
  }
  REQUIRE(file_exists(cache_beside(path)));
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().scanned == 0);
    CHECK(source.index_counts().cached == 1);
    CHECK(source.size() == 3);
    RawSample sample;
    source.read(2, sample);
    CHECK(sample.text == "three");
  }
  // Same size, same mtime: the cache is trusted, so the old offsets are used
  // (this is what "no rescan" means; real data is never rewritten this way).
  FileStamp stamp = file_stamp(path);
  std::string same_size = json_line("one") + json_line("owt") + json_line("three");
  REQUIRE(same_size.size() == stamp.size_bytes);
  write_text(path, same_size);
  restore_mtime(path, stamp);
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().cached == 1);
    RawSample sample;
    source.read(1, sample);
    CHECK(sample.text == "owt");
  }
  // A change of size (or mtime) makes the cache stale: rebuilt and rewritten.
  write_text(path, json_line("one") + json_line("two") + "\n" + json_line("three") + json_line("four"));
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().scanned == 1);
    CHECK(source.size() == 4);
    RawSample sample;
    source.read(3, sample);
    CHECK(sample.text == "four");
  }
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().cached == 1);
    CHECK(source.size() == 4);
  }
  // A damaged cache is rebuilt, never trusted.
  std::string cache = read_text(cache_beside(path));
  cache[cache.size() - 20] ^= 0x55;
  write_text(cache_beside(path), cache);
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().scanned == 1);
    CHECK(source.size() == 4);
  }
}

TEST_CASE("index caches go to the cache directory when one is given") {
  TempDir dir;
  std::string data_dir = dir / "data";
  std::string cache_dir = dir / "cache";
  fs::create_directories(data_dir);
  write_text(data_dir + "/x.jsonl", json_line("a"));
  auto config = source_config("jsonl", data_dir + "/*.jsonl");
  {
    auto source = open_source(config, SourceOptions{cache_dir});
    CHECK(source->size() == 1);
  }
  CHECK_FALSE(file_exists(cache_beside(data_dir + "/x.jsonl")));
  std::vector<std::string> cached;
  for (const auto& entry : fs::directory_iterator(cache_dir)) cached.push_back(entry.path().filename().string());
  std::sort(cached.begin(), cached.end());
  REQUIRE(cached.size() == 2);  // the file's cache, and the bundle of the source's one file
  CHECK(cached[0].rfind("x.jsonl.", 0) == 0);
  CHECK(cached[0].ends_with(".bundle.msdidx"));
  CHECK(cached[1].rfind("x.jsonl.", 0) == 0);
  CHECK(cached[1].ends_with(".msdidx"));
  CHECK_FALSE(cached[1].ends_with(".bundle.msdidx"));
  JsonlSource again({data_dir + "/x.jsonl"}, {.text_field = "text", .cache_dir = cache_dir});
  CHECK(again.index_counts().cached == 1);
  // The derived name depends on the absolute path: another file, another cache.
  CHECK(index_cache_path(data_dir + "/x.jsonl", cache_dir) != index_cache_path(data_dir + "/y.jsonl", cache_dir));
}

TEST_CASE("index bundles: a source of many files reads one cache file, and a stale or damaged one costs only time") {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 5; ++f) {
    files.push_back(dir / ("s" + std::to_string(f) + ".jsonl"));
    write_text(files.back(), json_line("a" + std::to_string(f)) + json_line("b"));
  }
  auto config = source_config("jsonl", dir / "*.jsonl");
  const std::string bundle = index_bundle_path(files, "");
  CHECK(open_source(config, {})->index_counts().scanned == 5);
  REQUIRE(file_exists(bundle));
  for (const auto& f : files) fs::remove(cache_beside(f));  // only the bundle is left
  {
    const auto again = open_source(config, {});
    CHECK(again->index_counts().cached == 5);
    CHECK(again->size() == 10);
  }
  for (const auto& f : files) CHECK_FALSE(file_exists(cache_beside(f)));
  // A file that changed: its record is stale and rebuilt; the bundle is written again.
  write_text(files[2], json_line("a") + json_line("b") + json_line("c"));
  {
    const auto changed = open_source(config, {});
    CHECK(changed->index_counts().scanned == 1);
    CHECK(changed->index_counts().cached == 4);
    CHECK(changed->size() == 11);
  }
  CHECK(open_source(config, {})->index_counts().cached == 5);
  // A damaged bundle is ignored (the per-file caches, where there are any, are used).
  auto bytes = read_file(bundle);
  bytes[bytes.size() / 2] ^= 0xff;
  write_file_atomic(bundle, bytes);
  CHECK(open_source(config, {})->index_counts().scanned == 4);
}

TEST_CASE("index shares: each share's caches in a bundle, the whole source opened from the bundles") {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 7; ++f) {
    files.push_back(dir / ("s" + std::to_string(f) + ".jsonl"));
    write_text(files.back(), json_line("x" + std::to_string(f)));
  }
  auto config = source_config("jsonl", dir / "*.jsonl");
  const std::string cache_dir = dir / "cache";
  for (size_t share = 0; share < 3; ++share) {
    std::vector<std::string> mine;
    for (size_t f = share; f < files.size(); f += 3) mine.push_back(files[f]);
    CHECK(build_index_caches(config, mine, SourceOptions{cache_dir}).scanned == mine.size());
  }
  for (const auto& entry : fs::directory_iterator(cache_dir))
    if (!entry.path().filename().string().ends_with(".bundle.msdidx")) fs::remove(entry.path());
  SourceOptions three{cache_dir};
  three.index_shares = 3;
  const auto source = open_source(config, files, three);
  CHECK(source->index_counts().cached == 7);
  CHECK(source->file_samples() == std::vector<uint64_t>(7, 1));
  // Another division finds no bundle of its shares and reads (here: builds) the files' own.
  SourceOptions two{cache_dir};
  two.index_shares = 2;
  CHECK(open_source(config, files, two)->index_counts().scanned == 7);
}
