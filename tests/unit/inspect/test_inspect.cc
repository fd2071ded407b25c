// msd-inspect's logic on fixtures written here: text with a vocabulary,
// pre-tokenized data, image-text with a JPEG made by tjCompress2, bad samples.
#include <catch2/catch.hpp>

#include <turbojpeg.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "unit/scratch.h"
#include "inspect/inspect.h"
#include "source/indexed/indexed_source.h"
#include "source/jsonl/jsonl_source.h"
#include "source/wds/tar.h"

using namespace msd;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

// A vocabulary of the 256 single bytes: token id == byte value.
void write_byte_vocab(const std::string& path) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string text;
  for (int b = 0; b < 256; ++b) {
    text += alphabet[b >> 2];
    text += alphabet[(b & 3) << 4];
    text += "== " + std::to_string(b) + "\n";
  }
  write_text(path, text);
}

std::string make_jpeg(int width, int height) {
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<unsigned char>(i * 7);
  tjhandle handle = tjInitCompress();
  REQUIRE(handle != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, pixels.data(), width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_420, 85, 0) == 0);
  std::string out(reinterpret_cast<const char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(handle);
  return out;
}

std::string inspect(const InspectOptions& options) {
  std::ostringstream out;
  run_inspect(options, out);
  return out.str();
}

}  // namespace

TEST_CASE("length statistics use nearest-rank percentiles over the length hints") {
  TempDir dir;
  std::vector<std::vector<int32_t>> documents;
  for (int32_t n = 1; n <= 100; ++n) documents.emplace_back(n, 1);  // lengths 1..100
  write_indexed_dataset(dir / "c", documents, IndexedDtype::uint16);
  IndexedSource source({dir / "c.idx"});
  LengthStats stats = length_stats(source);
  CHECK(stats.count == 100);
  CHECK(stats.min == 1);
  CHECK(stats.max == 100);
  CHECK(stats.mean == Approx(50.5));
  CHECK(stats.p50 == 50);
  CHECK(stats.p90 == 90);
  CHECK(stats.p99 == 99);
  LengthStats sampled = length_stats(source, 10);
  CHECK(sampled.count == 10);
  CHECK(sampled.min == 1);  // indexes 0, 10, ..., 90
  CHECK(sampled.max == 91);
  CHECK(std::string(length_unit(SampleKind::tokens)) == "tokens");
  CHECK(std::string(length_unit(SampleKind::text)) == "bytes");
}

TEST_CASE("inspect rejects a malformed --source and an out-of-range sample") {
  TempDir dir;
  InspectOptions options;
  CHECK_THROWS_WITH(parse_source_spec("data.jsonl", options), Catch::Contains("--source"));
  CHECK_THROWS_AS(parse_source_spec("jsonl:", options), ConfigError);
  CHECK(parse_source_spec("jsonl:a:b.jsonl", options).path == "a:b.jsonl");
  options.source = "jsonl:" + dir / "none-*.jsonl";
  CHECK_THROWS_WITH(inspect(options), Catch::Contains("--source") && Catch::Contains("matches no file"));
  write_text(dir / "a.jsonl", "{\"text\": \"x\"}\n");
  options.source = "jsonl:" + dir / "a.jsonl";
  options.sample = 1;
  CHECK_THROWS_WITH(inspect(options), Catch::Contains("--sample"));
}

TEST_CASE("inspect shows text, its token ids, and bad samples as a report") {
  TempDir dir;
  write_byte_vocab(dir / "vocab.tiktoken");
  std::string long_text(1000, 'z');
  write_text(dir / "a.jsonl", "{\"text\": \"Hi\"}\n{\"text\": \"" + long_text + "\"}\n{\"body\": 1}\n");
  InspectOptions options;
  options.source = "jsonl:" + dir / "*.jsonl";
  options.vocab = dir / "vocab.tiktoken";
  options.pattern = "gpt2";
  std::string out = inspect(options);
  CHECK_THAT(out, Catch::Contains("files: 1"));
  CHECK_THAT(out, Catch::Contains("samples: 3"));
  CHECK_THAT(out, Catch::Contains("length (bytes): min 12 ") && Catch::Contains("max 1013"));
  CHECK_THAT(out, Catch::Contains("sample 0: " + dir / "a.jsonl" + " offset 0"));
  CHECK_THAT(out, Catch::Contains("text (2 bytes): Hi"));
  CHECK_THAT(out, Catch::Contains("token ids (2): 72 105"));
  options.sample = 1;
  out = inspect(options);
  CHECK_THAT(out, Catch::Contains("text (1000 bytes): " + std::string(300, 'z') + "... (700 more bytes)"));
  CHECK_THAT(out, Catch::Contains("index: 0 file(s) scanned, 1 from cache"));
  options.sample = 2;
  out = inspect(options);
  CHECK_THAT(out, Catch::Contains("bad sample: missing_field: no field 'text'"));
}

TEST_CASE("inspect shows pre-tokenized ids and image sizes and patches") {
  TempDir dir;
  std::vector<std::vector<int32_t>> documents = {{5, 6, 7}, {72, 105}};
  write_indexed_dataset(dir / "t", documents, IndexedDtype::int32);
  InspectOptions options;
  options.source = "indexed:" + dir / "t.idx";
  options.sample = 1;
  std::string out = inspect(options);
  CHECK_THAT(out, Catch::Contains("length (tokens): min 2"));
  CHECK_THAT(out, Catch::Contains("token ids (2): 72 105"));
  write_byte_vocab(dir / "vocab.tiktoken");
  options.vocab = dir / "vocab.tiktoken";
  CHECK_THAT(inspect(options), Catch::Contains("decoded: Hi"));

  {
    TarWriter writer(dir / "i.tar");
    writer.add("k/0.jpg", make_jpeg(320, 200));
    writer.add("k/0.txt", "a cat");
    writer.add("k/1.jpg", "not a jpeg");
    writer.add("k/1.txt", "broken");
    writer.finish();
  }
  options = InspectOptions{};
  options.source = "wds:" + dir / "i.tar";
  options.max_side = 224;
  options.patch = 16;
  out = inspect(options);
  CHECK_THAT(out, Catch::Contains("caption (5 bytes): a cat"));
  CHECK_THAT(out, Catch::Contains("stored 320x200"));
  CHECK_THAT(out, Catch::Contains("patches of 16x16"));
  options.vocab = dir / "vocab.tiktoken";
  out = inspect(options);
  CHECK_THAT(out, Catch::Contains("token ids (5): 97 32 99 97 116"));
  options.sample = 1;
  out = inspect(options);
  CHECK_THAT(out, Catch::Contains("bad sample: corrupt_jpeg"));
}
