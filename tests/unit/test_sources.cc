#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "unit/scratch.h"
#include "common/files.h"
#include "common/worker_pool.h"
#include "source/index_cache.h"
#include "source/indexed/indexed_source.h"
#include "common/json_writer.h"
#include "common/utf8.h"
#include "source/jsonl/json.h"
#include "source/jsonl/jsonl_source.h"
#include "source/source.h"
#include "source/wds/tar.h"
#include "source/wds/wds_source.h"

using namespace msd;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

std::string read_text(const std::string& path) {
  auto bytes = read_file(path);
  return {bytes.begin(), bytes.end()};
}

void truncate_to(const std::string& path, uint64_t bytes) { REQUIRE(::truncate(path.c_str(), static_cast<off_t>(bytes)) == 0); }

// Sets a file's mtime back to `stamp` (to rewrite data "invisibly").
void restore_mtime(const std::string& path, const FileStamp& stamp) {
  timespec times[2];
  times[0].tv_sec = stamp.mtime_ns / 1000000000;
  times[0].tv_nsec = stamp.mtime_ns % 1000000000;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

SourceConfig source_config(const std::string& format, const std::string& path) {
  SourceConfig config;
  config.name = "test";
  config.format = format;
  config.path = path;
  return config;
}

std::string json_line(const std::string& text) {
  std::string line = "{\"id\": 1, \"text\": ";
  append_json_string(line, text);
  line += ", \"meta\": {\"tags\": [1, 2.5e3, true, null]}}\n";
  return line;
}

// Whether this process maps `path` (/proc/self/maps: a mapped file's pages
// count in the process's resident set).
bool is_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  REQUIRE(maps.good());
  const std::string absolute = fs::absolute(path).lexically_normal().string();
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= absolute.size() && line.compare(line.size() - absolute.size(), absolute.size(), absolute) == 0)
      return true;
  return false;
}

// Pretend JPEG bytes: the readers never decode images.
std::string fake_jpeg(int i) { return std::string("\xff\xd8\xff\xe0", 4) + std::string(100 + i * 37, char('a' + i % 26)); }

}  // namespace

// --- JSON ----------------------------------------------------------------------

TEST_CASE("json parses every value type and escape") {
  JsonValue value;
  auto status = parse_json(R"( {"a": [1, -2.5e-3, 0, true, false, null], "b": {"c": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}} )",
                           value);
  REQUIRE(status.ok);
  REQUIRE(value.type == JsonType::object);
  const JsonValue* a = value.find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->array.size() == 6);
  CHECK(a->array[0].number == 1.0);
  CHECK(a->array[1].number == Approx(-2.5e-3));
  CHECK(a->array[3].type == JsonType::boolean);
  CHECK(a->array[3].boolean);
  CHECK(a->array[5].type == JsonType::null);
  CHECK(value.find("b")->find("c")->string == "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(value.find("missing") == nullptr);
}

TEST_CASE("json rejects malformed text with the offset of the first error") {
  struct Case {
    const char* text;
    size_t offset;
  };
  for (auto [text, offset] : {Case{"{\"a\": 1,}", 8}, Case{"[1 2]", 3}, Case{"{\"a\" 1}", 5}, Case{"01", 1},
                              Case{"\"abc", 4}, Case{"\"a\\x\"", 2}, Case{"\"\\u12g4\"", 1}, Case{"tru", 0},
                              Case{"{} x", 3}, Case{"", 0}, Case{"1.", 2}, Case{"-", 1}, Case{"\"a\tb\"", 2},
                              Case{"[1e]", 3}}) {
    INFO(text);
    JsonValue value;
    auto status = parse_json(text, value);
    CHECK_FALSE(status.ok);
    CHECK(status.offset == offset);
    CHECK_FALSE(status.message.empty());
    CHECK_FALSE(validate_json(text).ok);
  }
  std::string deep(json_max_depth + 1, '[');
  deep += std::string(json_max_depth + 1, ']');
  CHECK_FALSE(validate_json(deep).ok);
  std::string ok_depth(100, '[');
  ok_depth += std::string(100, ']');
  CHECK(validate_json(ok_depth).ok);
}

TEST_CASE("extract_string_field classifies objects, fields and encodings") {
  std::string out;
  JsonStatus status;
  CHECK(extract_string_field(R"({"x": {"text": 1}, "text": "hi \u00e9", "y": []})", "text", out, status) ==
        JsonFieldResult::ok);
  CHECK(out == "hi \xc3\xa9");
  CHECK(extract_string_field(R"({"text": "a", "text": "b"})", "text", out, status) == JsonFieldResult::ok);
  CHECK(out == "b");
  CHECK(extract_string_field(R"({"other": "a"})", "text", out, status) == JsonFieldResult::missing);
  CHECK(extract_string_field(R"({"text": 12})", "text", out, status) == JsonFieldResult::not_string);
  CHECK(status.message.find("number") != std::string::npos);
  CHECK(extract_string_field(R"(["text"])", "text", out, status) == JsonFieldResult::invalid_json);
  CHECK(extract_string_field(R"({"text": "a"} {)", "text", out, status) == JsonFieldResult::invalid_json);
  CHECK(status.offset == 14);
  CHECK(extract_string_field(R"({"text": "a", "b": [1,}])", "text", out, status) == JsonFieldResult::invalid_json);
  // Raw invalid byte at offset 12 of the line.
  CHECK(extract_string_field("{\"text\": \"ab\xff\"}", "text", out, status) == JsonFieldResult::invalid_utf8);
  CHECK(status.offset == 12);
  // An unpaired surrogate escape cannot be UTF-8; the offset is the escape's.
  CHECK(extract_string_field(R"({"text": "ok \ud800 x"})", "text", out, status) == JsonFieldResult::invalid_utf8);
  CHECK(status.offset == 13);
  // A surrogate pair is fine.
  CHECK(extract_string_field(R"({"text": "\ud83d\ude00"})", "text", out, status) == JsonFieldResult::ok);
  CHECK(out == "\xf0\x9f\x98\x80");
}

TEST_CASE("append_json_string round-trips through the parser") {
  std::string value = std::string("quote\" back\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9", 34);
  std::string literal;
  append_json_string(literal, value);
  JsonValue parsed;
  REQUIRE(parse_json(literal, parsed).ok);
  CHECK(parsed.string == value);
}

TEST_CASE("the JSON writer writes valid JSON for bytes that are not UTF-8") {
  // A lone continuation byte, a lead byte before ASCII, 0xFF, a truncated
  // 3-byte sequence, an encoded surrogate and an overlong '/', between
  // well-formed text that must pass unchanged.
  const std::string bad = "ok \x80 \xC3( \xFF \xE2\x82 \xED\xA0\x80 \xC0\xAF \xc3\xa9\xe2\x82\xac";
  // Each byte of an ill-formed sequence becomes the code point of its value.
  const std::string read_back =
      "ok \xC2\x80 \xC3\x83( \xC3\xBF \xC3\xA2\xC2\x82 \xC3\xAD\xC2\xA0\xC2\x80 \xC3\x80\xC2\xAF \xc3\xa9\xe2\x82\xac";
  CHECK(json_escape("a\xFF\x80" "b") == "a\\u00ff\\u0080b");
  CHECK(json_escape("\xc3\xa9\xf0\x9f\x98\x80") == "\xc3\xa9\xf0\x9f\x98\x80");
  JsonWriter w;
  w.begin_object().value(bad, bad).begin_array("list").value("", bad).end_array().end_object();
  CHECK(is_valid_utf8(w.str()));  // the parser below passes any bytes through
  JsonValue parsed;
  const JsonStatus status = parse_json(w.str(), parsed);
  INFO(status.message);
  REQUIRE(status.ok);
  REQUIRE(parsed.type == JsonType::object);
  REQUIRE(parsed.object.size() == 2);
  CHECK(parsed.object[0].first == read_back);
  CHECK(parsed.object[0].second.string == read_back);
  CHECK(parsed.object[1].second.array.at(0).string == read_back);
}

// --- common source behaviour ------------------------------------------------------

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
  CHECK_THROWS_WITH(open_source(source_config("parquet", dir / "a.jsonl"), {}),
                    Catch::Contains("source.test.format") && Catch::Contains("parquet"));
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

// Where a cache lives beside its data file: in the folder's hidden .msd/.
std::string cache_beside(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / ".msd" / (p.filename().string() + ".msdidx")).string();
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
  REQUIRE(cached.size() == 1);
  CHECK(cached[0].rfind("x.jsonl.", 0) == 0);
  CHECK(cached[0].find(".msdidx") != std::string::npos);
  JsonlSource again({data_dir + "/x.jsonl"}, {.text_field = "text", .cache_dir = cache_dir});
  CHECK(again.index_counts().cached == 1);
  // The derived name depends on the absolute path: another file, another cache.
  CHECK(index_cache_path(data_dir + "/x.jsonl", cache_dir) != index_cache_path(data_dir + "/y.jsonl", cache_dir));
}

// --- wds -----------------------------------------------------------------------------

namespace {

struct ShardSample {
  std::string key;
  std::string image;    // empty: no image member
  std::string caption;  // the expected caption
};

// Writes samples as key.jpg + key.txt (plus an ignored key.cls).
std::vector<ShardSample> write_simple_shard(const std::string& path, int first, int count) {
  std::vector<ShardSample> samples;
  TarWriter writer(path);
  for (int i = first; i < first + count; ++i) {
    ShardSample sample{"s/" + std::to_string(1000 + i), fake_jpeg(i), "caption " + std::to_string(i)};
    writer.add(sample.key + ".jpg", sample.image);
    writer.add(sample.key + ".cls", std::to_string(i % 3));
    writer.add(sample.key + ".txt", sample.caption);
    samples.push_back(sample);
  }
  writer.finish();
  return samples;
}

}  // namespace

TEST_CASE("wds reads image-text samples from several shards") {
  TempDir dir;
  auto first = write_simple_shard(dir / "shard-000.tar", 0, 4);
  auto second = write_simple_shard(dir / "shard-001.tar", 4, 3);
  write_text(dir / "shard-002.tar", "");  // zero-length shard: no samples
  first.insert(first.end(), second.begin(), second.end());

  auto source = open_source(source_config("wds", dir / "shard-*.tar"), {});
  REQUIRE(source->kind() == SampleKind::image_text);
  REQUIRE(source->size() == first.size());
  RawSample sample;
  for (uint64_t i = 0; i < first.size(); ++i) {
    source->read(i, sample);
    INFO("sample " << i << ": " << sample.reason);
    REQUIRE(sample.bad == BadKind::none);
    CHECK(sample.kind == SampleKind::image_text);
    CHECK(sample.image == first[i].image);
    CHECK(sample.text == first[i].caption);
    CHECK(source->length_hint(i) == first[i].image.size() + first[i].caption.size());
  }
  CHECK(source->locate(0).file == dir / "shard-000.tar");
  CHECK(source->locate(0).offset == 0);
  CHECK(source->locate(4).file == dir / "shard-001.tar");
  CHECK(source->locate(4).offset == 0);
  CHECK(source->locate(1).offset > 0);
  CHECK(source->state_bytes() >= first.size() * sizeof(WdsSource::Entry));
}

TEST_CASE("wds groups members by WebDataset keys and finds captions in txt or json") {
  TempDir dir;
  std::string path = dir / "mixed.tar";
  std::string long_dir(120, 'd');
  {
    TarWriter writer(path);
    writer.add("a/x.jpg", fake_jpeg(1));  // 0: jpg + txt
    writer.add("a/x.txt", "plain caption\n");
    writer.add("a/y.json", R"({"caption": "from json \u00e9"})");  // 1: json first, then JPEG
    writer.add("a/y.JPEG", fake_jpeg(2));
    writer.add("a/z.jpg", fake_jpeg(3));  // 2: json with only "text"
    writer.add("a/z.json", R"({"text": "fallback text"})");
    writer.add("README", "no extension: ignored");
    writer.add(long_dir + "/w.seg.jpg", fake_jpeg(4));  // 3: long name ('L'), dotted extension ignored
    writer.add(long_dir + "/w.jpg", fake_jpeg(5));
    writer.add(long_dir + "/w.txt", "long name caption");
    writer.add_with_pax_path("pax/" + std::string(150, 'p') + ".jpg", fake_jpeg(6));  // 4: pax paths
    writer.add_with_pax_path("pax/" + std::string(150, 'p') + ".txt", "pax caption");
    writer.add("b/only-image.jpg", fake_jpeg(7));  // 5: no caption
    writer.add("b/only-text.txt", "no image");     // 6: no image
    writer.add("b/v.jpg", fake_jpeg(8));  // 7: json without either field
    writer.add("b/v.json", R"({"title": "x"})");
    writer.add("b/u.jpg", fake_jpeg(9));  // 8: caption not UTF-8
    writer.add("b/u.txt", "bad \xff caption");
    writer.add("b/t.jpg", fake_jpeg(10));  // 9: json caption that is not JSON
    writer.add("b/t.json", "{caption: 1}");
    writer.add("a/x.jpg", fake_jpeg(11));  // 10: same key again, not consecutive: a new sample
    writer.add("a/x.txt", "again");
    writer.finish();
  }
  WdsSource source({path}, {});
  REQUIRE(source.size() == 11);
  RawSample sample;
  auto read = [&](uint64_t i) {
    source.read(i, sample);
    INFO("sample " << i << ": " << sample.reason);
    return sample.bad;
  };
  REQUIRE(read(0) == BadKind::none);
  CHECK(sample.image == fake_jpeg(1));
  CHECK(sample.text == "plain caption\n");
  REQUIRE(read(1) == BadKind::none);
  CHECK(sample.image == fake_jpeg(2));
  CHECK(sample.text == "from json \xc3\xa9");
  REQUIRE(read(2) == BadKind::none);
  CHECK(sample.text == "fallback text");
  REQUIRE(read(3) == BadKind::none);
  CHECK(sample.image == fake_jpeg(5));
  CHECK(sample.text == "long name caption");
  REQUIRE(read(4) == BadKind::none);
  CHECK(sample.image == fake_jpeg(6));
  CHECK(sample.text == "pax caption");
  CHECK(read(5) == BadKind::missing_member);
  CHECK(sample.reason.find("caption") != std::string::npos);
  CHECK(read(6) == BadKind::missing_member);
  CHECK(sample.reason.find("image") != std::string::npos);
  CHECK(read(7) == BadKind::missing_field);
  CHECK(read(8) == BadKind::invalid_utf8);
  CHECK(sample.reason.find("byte 4") != std::string::npos);
  CHECK(read(9) == BadKind::invalid_json);
  REQUIRE(read(10) == BadKind::none);
  CHECK(sample.text == "again");

  // A custom caption field.
  WdsSource titled({path}, {.caption_field = "title", .cache_dir = ""});
  CHECK(titled.index_counts().cached == 1);
  titled.read(7, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == "x");
}

TEST_CASE("tar scanner reads what TarWriter wrote, long names included") {
  TempDir dir;
  std::string path = dir / "t.tar";
  std::string long_name = std::string(200, 'n') + ".txt";
  {
    TarWriter writer(path);
    writer.add("short.txt", "abc");
    writer.add(long_name, std::string(1000, 'z'));
    writer.add_with_pax_path("pax/" + long_name, "");
    writer.finish();
    CHECK(writer.bytes_written() == file_stamp(path).size_bytes);
  }
  MappedFile file(path);
  TarScanner scanner(file.bytes());
  TarMember member;
  REQUIRE(scanner.next(member));
  CHECK(member.name == "short.txt");
  CHECK(member.size_bytes == 3);
  CHECK(member.data_offset == 512);
  REQUIRE(scanner.next(member));
  CHECK(member.name == long_name);
  CHECK(member.size_bytes == 1000);
  REQUIRE(scanner.next(member));
  CHECK(member.name == "pax/" + long_name);
  CHECK(member.size_bytes == 0);
  CHECK_FALSE(scanner.next(member));
  CHECK(scanner.stop() == TarScanner::Stop::end);
  CHECK(file.size() % 512 == 0);
  // An unfinished writer leaves nothing behind.
  { TarWriter abandoned(dir / "abandoned.tar"); abandoned.add("a.txt", "x"); }
  CHECK_FALSE(file_exists(dir / "abandoned.tar"));
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("wds truncated shard: the cut member's sample is truncated_member, earlier ones read") {
  TempDir dir;
  std::string path = dir / "cut.tar";
  auto samples = write_simple_shard(path, 0, 3);
  // Cut inside the last sample's image data: .jpg header of sample 2 is at
  // 2 * (3 members) ... find it with the scanner rather than by arithmetic.
  uint64_t cut = 0;
  {
    MappedFile file(path);
    TarScanner scanner(file.bytes());
    TarMember member;
    while (scanner.next(member))
      if (member.name == samples[2].key + ".jpg") cut = member.data_offset + 10;
  }
  REQUIRE(cut > 0);
  truncate_to(path, cut);
  WdsSource source({path}, {});
  REQUIRE(source.size() == 3);
  RawSample sample;
  source.read(0, sample);
  CHECK(sample.bad == BadKind::none);
  source.read(1, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == samples[1].caption);
  source.read(2, sample);
  CHECK(sample.bad == BadKind::truncated_member);
  CHECK(sample.reason.find(path) != std::string::npos);
  CHECK(sample.reason.find("offset") != std::string::npos);
  CHECK(sample.where.file == path);
  CHECK(sample.image.empty());

  // The flag survives the index cache.
  WdsSource cached({path}, {});
  CHECK(cached.index_counts().cached == 1);
  cached.read(2, sample);
  CHECK(sample.bad == BadKind::truncated_member);

  // Cut inside a header: the samples before it are complete.
  std::string header_cut = dir / "header-cut.tar";
  write_simple_shard(header_cut, 0, 3);
  uint64_t second_sample_header = 0;
  {
    WdsSource full({header_cut}, {});
    second_sample_header = full.locate(1).offset;
  }
  truncate_to(header_cut, second_sample_header + 100);
  WdsSource partial({header_cut}, {});
  CHECK(partial.size() == 1);
  partial.read(0, sample);
  CHECK(sample.bad == BadKind::none);
}

TEST_CASE("wds bad checksum ends the scan of a shard") {
  TempDir dir;
  std::string path = dir / "bad-sum.tar";
  auto samples = write_simple_shard(path, 0, 4);
  uint64_t third = 0;
  {
    WdsSource source({path}, {.caption_field = "caption", .cache_dir = dir / "cache"});
    REQUIRE(source.size() == 4);
    third = source.locate(2).offset;
  }
  std::string bytes = read_text(path);
  bytes[third + 5] ^= 0x20;  // a byte of the member name
  write_text(path, bytes);
  WdsSource source({path}, {});
  REQUIRE(source.size() == 2);
  RawSample sample;
  for (uint64_t i = 0; i < 2; ++i) {
    source.read(i, sample);
    CHECK(sample.bad == BadKind::none);
    CHECK(sample.text == samples[i].caption);
  }
  // A shard that is nothing but garbage holds no samples (and does not crash).
  write_text(dir / "garbage.tar", std::string(2000, 'g'));
  WdsSource garbage({dir / "garbage.tar"}, {});
  CHECK(garbage.size() == 0);
  CHECK_THROWS_AS(open_source(source_config("wds", dir / "garbage.tar"), {}), ConfigError);
}

TEST_CASE("wds index cache is reused and rebuilt when the shard changes") {
  TempDir dir;
  std::string path = dir / "s.tar";
  write_simple_shard(path, 0, 2);
  {
    WdsSource source({path}, {});
    CHECK(source.index_counts().scanned == 1);
  }
  REQUIRE(file_exists(cache_beside(path)));
  {
    WdsSource source({path}, {});
    CHECK(source.index_counts().cached == 1);
    CHECK(source.size() == 2);
  }
  auto samples = write_simple_shard(path, 10, 5);
  WdsSource source({path}, {});
  CHECK(source.index_counts().scanned == 1);
  REQUIRE(source.size() == 5);
  RawSample sample;
  source.read(4, sample);
  CHECK(sample.text == samples[4].caption);
  // A cache of another format at the same place is not taken for this one.
  JsonlSource jsonl_view({path}, {});
  CHECK(jsonl_view.index_counts().scanned == 1);
}

// --- indexed -----------------------------------------------------------------------------

namespace {

std::vector<std::vector<int32_t>> make_documents(int count, int32_t max_token, uint32_t seed) {
  std::vector<std::vector<int32_t>> documents;
  uint64_t state = seed;
  for (int d = 0; d < count; ++d) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::vector<int32_t> tokens((state >> 33) % 50);  // some documents are empty
    for (auto& token : tokens) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      token = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(max_token));
    }
    documents.push_back(std::move(tokens));
  }
  return documents;
}

}  // namespace

TEST_CASE("indexed reads back every integer dtype") {
  TempDir dir;
  struct Case {
    IndexedDtype dtype;
    int32_t max_token;
  };
  for (auto [dtype, max_token] : {Case{IndexedDtype::uint8, 256}, Case{IndexedDtype::int8, 128},
                                  Case{IndexedDtype::int16, 32768}, Case{IndexedDtype::uint16, 65536},
                                  Case{IndexedDtype::int32, 1 << 30}, Case{IndexedDtype::int64, 1 << 30}}) {
    std::string name = indexed_dtype_name(static_cast<uint8_t>(dtype));
    INFO(name);
    auto documents = make_documents(40, max_token, static_cast<uint32_t>(dtype));
    write_indexed_dataset(dir / name, documents, dtype);
    auto source = open_source(source_config("indexed", dir / (name + ".idx")), {});
    REQUIRE(source->kind() == SampleKind::tokens);
    REQUIRE(source->size() == documents.size());
    RawSample sample;
    for (uint64_t i = 0; i < documents.size(); ++i) {
      CHECK(source->length_hint(i) == documents[i].size());
      source->read(i, sample);
      REQUIRE(sample.bad == BadKind::none);
      CHECK(sample.kind == SampleKind::tokens);
      CHECK(sample.tokens == documents[i]);
      CHECK(sample.where.file == dir / (name + ".bin"));
    }
    CHECK(file_stamp(dir / (name + ".bin")).size_bytes ==
          [&] {
            uint64_t tokens = 0;
            for (const auto& d : documents) tokens += d.size();
            return tokens * indexed_dtype_bytes(static_cast<uint8_t>(dtype));
          }());
    auto* indexed = dynamic_cast<IndexedSource*>(source.get());
    REQUIRE(indexed != nullptr);
    CHECK(indexed->document_count(0) == documents.size());
  }
}

TEST_CASE("indexed concatenates several .idx files named by globs") {
  TempDir dir;
  auto first = make_documents(10, 1000, 1);
  auto second = make_documents(7, 1000, 2);
  auto third = make_documents(5, 1000, 3);
  write_indexed_dataset(dir / "corpus_01", second, IndexedDtype::uint16);
  write_indexed_dataset(dir / "corpus_00", first, IndexedDtype::int32);
  write_indexed_dataset(dir / "other", third, IndexedDtype::uint16);
  auto source = open_source(source_config("indexed", dir / "corpus_*.idx," + dir / "other.idx"), {});
  REQUIRE(source->size() == 22);
  auto all = first;
  all.insert(all.end(), second.begin(), second.end());
  all.insert(all.end(), third.begin(), third.end());
  RawSample sample;
  for (uint64_t i = 0; i < all.size(); ++i) {
    source->read(i, sample);
    CHECK(sample.tokens == all[i]);
  }
  CHECK(source->locate(10).file == dir / "corpus_01.bin");
  CHECK(source->locate(10).offset == 0);
  CHECK(source->locate(11).offset == second[0].size() * 2);
  CHECK(source->state_bytes() >= file_stamp(dir / "corpus_00.idx").size_bytes);
}

TEST_CASE("indexed validation: every mismatch is an IoError at open naming both files") {
  TempDir dir;
  auto documents = make_documents(20, 500, 9);
  documents[5].resize(30, 7);  // make sure late sequences are non-empty
  documents[19].resize(30, 7);
  std::string prefix = dir / "v";
  auto rewrite = [&] { write_indexed_dataset(prefix, documents, IndexedDtype::uint16); };
  auto open = [&] { return IndexedSource({prefix + ".idx"}); };

  rewrite();
  REQUIRE_NOTHROW(open());

  // .bin shorter than the index says: the last sequence sticks out.
  truncate_to(prefix + ".bin", file_stamp(prefix + ".bin").size_bytes - 2);
  CHECK_THROWS_WITH(open(), Catch::Contains(prefix + ".idx") && Catch::Contains(prefix + ".bin") &&
                                Catch::Contains("sequence 19"));
  CHECK_THROWS_AS(open(), IoError);

  // .idx shorter than its counts.
  rewrite();
  truncate_to(prefix + ".idx", file_stamp(prefix + ".idx").size_bytes - 8);
  CHECK_THROWS_WITH(open(), Catch::Contains(prefix + ".bin") && Catch::Contains("do not match"));

  // Bad magic, version, dtype.
  rewrite();
  std::string idx = read_text(prefix + ".idx");
  auto patched = [&](size_t offset, char value) {
    std::string copy = idx;
    copy[offset] = value;
    write_text(prefix + ".idx", copy);
  };
  patched(0, 'X');
  CHECK_THROWS_WITH(open(), Catch::Contains("magic"));
  patched(9, 2);
  CHECK_THROWS_WITH(open(), Catch::Contains("version 2"));
  patched(17, static_cast<char>(IndexedDtype::float32));
  CHECK_THROWS_WITH(open(), Catch::Contains("float32"));
  patched(17, 42);
  CHECK_THROWS_AS(open(), IoError);
  // A huge sequence count must not overflow the size check.
  patched(25, static_cast<char>(0x7f));
  CHECK_THROWS_AS(open(), IoError);
  // A pointer beyond the .bin.
  std::string copy = idx;
  int64_t far = 1 << 20;
  std::memcpy(copy.data() + 34 + 20 * 4 + 3 * 8, &far, sizeof far);
  write_text(prefix + ".idx", copy);
  CHECK_THROWS_WITH(open(), Catch::Contains("sequence 3"));

  // Missing .bin.
  rewrite();
  fs::remove(prefix + ".bin");
  CHECK_THROWS_WITH(open(), Catch::Contains(prefix + ".bin") && Catch::Contains("does not exist"));

  // Zero-length .idx: no samples, a warning, no error.
  write_text(dir / "empty.idx", "");
  IndexedSource empty({dir / "empty.idx"});
  CHECK(empty.size() == 0);
}

TEST_CASE("indexed writer rejects tokens that do not fit and non-integer dtypes") {
  TempDir dir;
  std::vector<std::vector<int32_t>> too_big = {{1, 2, 300}};
  CHECK_THROWS_WITH(write_indexed_dataset(dir / "u8", too_big, IndexedDtype::uint8),
                    Catch::Contains("300") && Catch::Contains("uint8"));
  std::vector<std::vector<int32_t>> negative = {{-1}};
  CHECK_THROWS_AS(write_indexed_dataset(dir / "u16", negative, IndexedDtype::uint16), Error);
  CHECK_THROWS_AS(write_indexed_dataset(dir / "f", negative, IndexedDtype::float32), Error);
  CHECK_FALSE(file_exists(dir / "u8.bin"));
  CHECK_FALSE(file_exists(dir / "u8.idx"));
  // Streaming writer gives the same files as the one-shot form.
  auto documents = make_documents(12, 1000, 5);
  write_indexed_dataset(dir / "a", documents, IndexedDtype::int16);
  {
    IndexedDatasetWriter writer(dir / "b", IndexedDtype::int16);
    for (const auto& d : documents) writer.add_document(d);
    writer.finish();
  }
  CHECK(read_text(dir / "a.bin") == read_text(dir / "b.bin"));
  CHECK(read_text(dir / "a.idx") == read_text(dir / "b.idx"));
}

TEST_CASE("indexed int64 ids outside int32 are bad samples, not crashes") {
  TempDir dir;
  std::vector<std::vector<int32_t>> documents = {{1, 2}, {3, 4, 5}};
  write_indexed_dataset(dir / "w", documents, IndexedDtype::int64);
  std::string bin = read_text(dir / "w.bin");
  int64_t huge = int64_t{1} << 40;
  std::memcpy(bin.data() + 3 * 8, &huge, sizeof huge);  // token 1 of sequence 1
  write_text(dir / "w.bin", bin);
  IndexedSource source({dir / "w.idx"});
  RawSample sample;
  source.read(0, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.tokens == std::vector<int32_t>{1, 2});
  source.read(1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK(sample.tokens.empty());
  CHECK(sample.reason.find("1099511627776") != std::string::npos);
}

// --- Reading without mapping -------------------------------------------------

TEST_CASE("readers serve samples without mapping their data; a file cut after opening gives read_error") {
  TempDir dir;
  std::string lines;
  for (int i = 0; i < 50; ++i) lines += json_line("line " + std::to_string(i));
  write_text(dir / "a.jsonl", lines);
  auto documents = make_documents(30, 500, 4);
  documents.back().resize(40, 7);  // the last sequence, cut off below, is not empty
  write_indexed_dataset(dir / "corpus", documents, IndexedDtype::uint16);
  auto samples = write_simple_shard(dir / "shard.tar", 0, 5);

  // Twice: the first open scans the jsonl and the shard (mapping them for the
  // scan), the second loads their index caches.
  for (int open = 0; open < 2; ++open) {
    auto jsonl = open_source(source_config("jsonl", dir / "a.jsonl"), {});
    auto indexed = open_source(source_config("indexed", dir / "corpus"), {});
    auto wds = open_source(source_config("wds", dir / "shard.tar"), {});
    RawSample sample;
    for (uint64_t i = 0; i < jsonl->size(); ++i) {
      jsonl->read(i, sample);
      CHECK(sample.text == "line " + std::to_string(i));
    }
    for (uint64_t i = 0; i < indexed->size(); ++i) {
      indexed->read(i, sample);
      CHECK(sample.tokens == documents[i]);
    }
    for (uint64_t i = 0; i < wds->size(); ++i) {
      wds->read(i, sample);
      CHECK(sample.image == samples[i].image);
      CHECK(sample.text == samples[i].caption);
    }
    CHECK_FALSE(is_mapped(dir / "a.jsonl"));
    CHECK_FALSE(is_mapped(dir / "corpus.bin"));
    CHECK_FALSE(is_mapped(dir / "shard.tar"));
    CHECK(is_mapped(dir / "corpus.idx"));  // the index is read in place
  }

  // Cut every data file after opening: the records past the cut are
  // read_error values naming the file, the ones before still read.
  auto jsonl = open_source(source_config("jsonl", dir / "a.jsonl"), {});
  auto indexed = open_source(source_config("indexed", dir / "corpus"), {});
  auto wds = open_source(source_config("wds", dir / "shard.tar"), {});
  truncate_to(dir / "a.jsonl", lines.size() / 2);
  truncate_to(dir / "corpus.bin", file_stamp(dir / "corpus.bin").size_bytes / 2);
  truncate_to(dir / "shard.tar", file_stamp(dir / "shard.tar").size_bytes / 2);
  RawSample sample;
  jsonl->read(0, sample);
  CHECK(sample.bad == BadKind::none);
  jsonl->read(jsonl->size() - 1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains(dir / "a.jsonl") && Catch::Contains("shrank"));
  indexed->read(0, sample);
  CHECK(sample.bad == BadKind::none);
  indexed->read(indexed->size() - 1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains(dir / "corpus.bin") && Catch::Contains("sequence 29"));
  CHECK(sample.tokens.empty());
  wds->read(0, sample);
  CHECK(sample.bad == BadKind::none);
  wds->read(wds->size() - 1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains(dir / "shard.tar"));
  CHECK(sample.image.empty());
  CHECK(sample.text.empty());
}

// --- reading on several threads --------------------------------------------------

namespace {

// Every record of `source` read on one thread, then on `threads` threads at
// once (a loader's batch reads: each into its own RawSample, handed out in
// an order unlike the file's), must be the same record, bad ones included.
// Returns how many are bad.
size_t check_concurrent_reads(Source& source, size_t threads) {
  const size_t n = source.size();
  std::vector<RawSample> serial(n);
  for (size_t i = 0; i < n; ++i) source.read(i, serial[i]);
  WorkerPool pool("test reads");
  pool.grow(threads - 1);
  for (int round = 0; round < 20; ++round) {
    std::vector<RawSample> parallel(n);
    pool.run(threads - 1, n, [&](size_t, size_t k) {
      const size_t i = (k * 7 + static_cast<size_t>(round)) % n;  // 7 is prime to every n here
      source.read(i, parallel[i]);
    });
    for (size_t i = 0; i < n; ++i) {
      INFO("round " << round << ", sample " << i << ": " << serial[i].reason);
      CHECK(parallel[i].kind == serial[i].kind);
      CHECK(parallel[i].bad == serial[i].bad);
      CHECK(parallel[i].reason == serial[i].reason);
      CHECK(parallel[i].text == serial[i].text);
      CHECK(parallel[i].image == serial[i].image);
      CHECK(parallel[i].tokens == serial[i].tokens);
      CHECK(parallel[i].where.file == serial[i].where.file);
      CHECK(parallel[i].where.offset == serial[i].where.offset);
    }
  }
  return static_cast<size_t>(
      std::count_if(serial.begin(), serial.end(), [](const RawSample& r) { return r.bad != BadKind::none; }));
}

}  // namespace

TEST_CASE("every format reads the same records on four threads at once as on one, bad ones included") {
  TempDir dir;
  SECTION("jsonl") {
    // More files than a reader keeps open, so descriptors close under other reads.
    for (int f = 0; f < 6; ++f) {
      std::string lines;
      for (int i = 0; i < 9; ++i) lines += json_line("file " + std::to_string(f) + " line " + std::to_string(i));
      lines += "not json at all\n";
      lines += "{\"text\": \"bad \xc0\xaf byte\"}\n";
      write_text(dir / ("part-" + std::to_string(f) + ".jsonl"), lines);
    }
    auto source = open_source(source_config("jsonl", dir / "part-*.jsonl"), {});
    REQUIRE(source->size() == 66);
    CHECK(check_concurrent_reads(*source, 4) == 12);
  }
  SECTION("wds") {
    std::vector<ShardSample> last;
    for (int f = 0; f < 6; ++f) last = write_simple_shard(dir / ("shard-" + std::to_string(f) + ".tar"), f * 5, 5);
    uint64_t cut = 0;  // inside the last sample's image
    {
      MappedFile file(dir / "shard-5.tar");
      TarScanner scanner(file.bytes());
      TarMember member;
      while (scanner.next(member))
        if (member.name == last.back().key + ".jpg") cut = member.data_offset + 10;
    }
    REQUIRE(cut > 0);
    truncate_to(dir / "shard-5.tar", cut);
    auto source = open_source(source_config("wds", dir / "shard-*.tar"), {});
    CHECK(check_concurrent_reads(*source, 4) >= 1);
  }
  SECTION("indexed") {
    for (int f = 0; f < 6; ++f)
      write_indexed_dataset(dir / ("corpus-" + std::to_string(f)), make_documents(20, 60000, 7 + f),
                            f % 2 == 0 ? IndexedDtype::int32 : IndexedDtype::uint16);
    auto source = open_source(source_config("indexed", dir / "corpus-*.idx"), {});
    REQUIRE(source->size() == 120);
    check_concurrent_reads(*source, 4);
  }
}
