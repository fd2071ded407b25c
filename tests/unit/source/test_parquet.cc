// Parquet sources: every row of files written by parquet-wasm (arrow-rs's
// writer) in every encoding, data page version and codec reads as hyparquet
// reads it (the goldens of tools/reference/make_parquet_goldens.sh), in any
// order and with any cache; msd's own writer's files read back; nulls,
// invalid UTF-8, damaged pages and truncated files are what docs/formats.md
// says; the index is cached; the Thrift and RLE decoders refuse what is
// malformed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "source/parquet/parquet_file.h"
#include "source/parquet/parquet_source.h"
#include "source/parquet/parquet_writer.h"
#include "source/parquet/thrift.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using test::TempDir;
using test::write_text;

namespace {

const std::string kGoldens = std::string(MSD_TEST_DATA) + "/parquet";

std::string hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The golden line of a sample read from a file of `columns` (1: text, 2:
// caption and image); "bad" when a null row is not missing_field.
bool matches(const RawSample& sample, const std::string& golden, bool images) {
  const size_t space = golden.find(' ');
  const std::string text = images ? golden.substr(0, space) : golden;
  const std::string image = images ? golden.substr(space + 1) : "";
  if (text == "null" || image == "null") return sample.bad == BadKind::missing_field;
  return sample.bad == BadKind::none && hex(sample.text) == text && (!images || hex(sample.image) == image);
}

std::vector<std::optional<std::string>> sample_texts(size_t rows) {
  std::vector<std::optional<std::string>> texts;
  std::mt19937_64 rng(5);
  for (size_t i = 0; i < rows; ++i) {
    if (i % 13 == 7) {
      texts.emplace_back();
      continue;
    }
    std::string text = "row " + std::to_string(i) + " é ";
    text.append(rng() % 300, static_cast<char>('a' + i % 26));
    texts.emplace_back(text);
  }
  return texts;
}

ParquetOptions options_in(const TempDir& dir, const std::string& column = "text") {
  ParquetOptions options;
  options.text_column = column;
  options.cache_dir = dir / "cache";
  return options;
}

}  // namespace

TEST_CASE("parquet-wasm's files in every encoding, page version and codec read as hyparquet reads them") {
  TempDir dir;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kGoldens))
    if (entry.path().extension() == ".parquet") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 36);  // 4 encodings x 2 page versions x 4 codecs, repeats x 2, required, images
  uint64_t rows = 0, nulls = 0;
  for (const std::string& file : files) {
    const std::string name = std::filesystem::path(file).stem().string();
    const bool images = name == "images";
    ParquetOptions options = options_in(dir, images ? "caption" : "text");
    if (images) options.image_column = "image.bytes";
    ParquetSource source({file}, options);
    const std::vector<std::string> golden = lines_of(kGoldens + "/" + name + ".rows");
    INFO(name);
    REQUIRE(source.size() == golden.size());
    RawSample sample;
    uint64_t mismatched = 0;
    for (uint64_t i = 0; i < source.size(); ++i) {
      source.read(i, sample);
      if (!matches(sample, golden[i], images)) ++mismatched;
      nulls += sample.bad == BadKind::missing_field;
    }
    CHECK(mismatched == 0);
    rows += source.size();
  }
  CHECK(rows == 36 * 40);
  CHECK(nulls > 0);
}

TEST_CASE("parquet rows read the same in any order, from a cache of any size") {
  TempDir dir;
  const std::string file = kGoldens + "/dict_v2_zstd.parquet";
  const std::vector<std::string> golden = lines_of(kGoldens + "/dict_v2_zstd.rows");
  for (uint64_t cache_bytes : {uint64_t{0}, uint64_t{1} << 12, uint64_t{64} << 20}) {
    ParquetOptions options = options_in(dir);
    options.cache_bytes = cache_bytes;
    ParquetSource source({file, kGoldens + "/plain_v1_gzip.parquet"}, options);
    REQUIRE(source.size() == 2 * golden.size());
    std::vector<uint64_t> order(source.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(cache_bytes + 3));
    RawSample sample;
    for (uint64_t index : order) {
      source.read(index, sample);
      INFO("cache " << cache_bytes << " row " << index);
      REQUIRE(matches(sample, golden[index % golden.size()], false));
      CHECK(source.locate(index).offset == index % golden.size());
    }
    CHECK(source.cache().bytes() <= cache_bytes);
    if (cache_bytes > (1 << 20)) CHECK(source.cache().misses() == 6);  // 3 row groups a file, each decoded once
  }
}

TEST_CASE("msd's parquet writer: every codec, plain and dictionary, reads back with nulls in place") {
  TempDir dir;
  const auto texts = sample_texts(3000);
  std::vector<std::optional<std::string>> ids;
  for (size_t i = 0; i < texts.size(); ++i) ids.emplace_back("id-" + std::to_string(i));
  for (auto codec : {ParquetCodec::uncompressed, ParquetCodec::snappy, ParquetCodec::gzip, ParquetCodec::zstd}) {
    for (bool dictionary : {false, true}) {
      ParquetWriteOptions write;
      write.codec = static_cast<int32_t>(codec);
      write.dictionary = dictionary;
      write.row_group_rows = 700;
      write.page_bytes = 5000;
      const std::string path = dir / (std::string(parquet_codec_name(write.codec)) + (dictionary ? "-dict" : "") + ".parquet");
      write_text(path, write_parquet({{"id", ids}, {"text", texts}}, write));
      ParquetSource source({path}, options_in(dir));
      INFO(path);
      REQUIRE(source.size() == texts.size());
      REQUIRE(source.row_groups(0) == 5);
      RawSample sample;
      for (uint64_t i = 0; i < texts.size(); ++i) {
        source.read(i, sample);
        if (!texts[i]) {
          REQUIRE(sample.bad == BadKind::missing_field);
          CHECK(sample.reason == "null in column 'text' (row group " + std::to_string(i / 700) + ", row " +
                                     std::to_string(i % 700) + ")");
        } else {
          REQUIRE(sample.bad == BadKind::none);
          REQUIRE(sample.text == *texts[i]);
        }
      }
    }
  }
}

TEST_CASE("parquet image-text rows: the image's bytes and the caption; a null in either is missing_field") {
  TempDir dir;
  std::vector<std::optional<std::string>> captions, images;
  for (int i = 0; i < 100; ++i) {
    captions.emplace_back(i == 3 ? std::nullopt : std::optional<std::string>("caption " + std::to_string(i)));
    images.emplace_back(i == 5 ? std::nullopt : std::optional<std::string>(std::string("\xff\xd8\x00", 3) + std::to_string(i)));
  }
  const std::string path = dir / "pairs.parquet";
  write_text(path, write_parquet({{"caption", captions}, {"jpg", images, false}}, {}));
  ParquetOptions options = options_in(dir, "caption");
  options.image_column = "jpg";
  ParquetSource source({path}, options);
  CHECK(source.kind() == SampleKind::image_text);
  RawSample sample;
  for (uint64_t i = 0; i < 100; ++i) {
    source.read(i, sample);
    if (i == 3 || i == 5) {
      CHECK(sample.bad == BadKind::missing_field);
      CHECK(sample.reason.find(i == 3 ? "'caption'" : "'jpg'") != std::string::npos);
    } else {
      REQUIRE(sample.bad == BadKind::none);
      CHECK(sample.text == *captions[i]);
      CHECK(sample.image == *images[i]);
    }
  }
}

TEST_CASE("parquet text that is not UTF-8 is invalid_utf8, naming the byte, row group and row") {
  TempDir dir;
  const std::string path = dir / "bad.parquet";
  write_text(path, write_parquet({{"text", {std::string("fine"), std::string("bad \xc0\xaf byte")}}}, {}));
  ParquetSource source({path}, options_in(dir));
  RawSample sample;
  source.read(0, sample);
  CHECK(sample.bad == BadKind::none);
  source.read(1, sample);
  CHECK(sample.bad == BadKind::invalid_utf8);
  CHECK(sample.reason == "invalid UTF-8 at byte 4 of column 'text' (row group 0, row 1)");
}

TEST_CASE("a missing or unsuitable parquet column is a ConfigError naming the file, the column and the option") {
  TempDir dir;
  const std::string file = kGoldens + "/plain_v1_snappy.parquet";
  ParquetOptions options = options_in(dir, "body");
  options.text_option = "source.web.text_field";
  CHECK_THROWS_WITH(ParquetSource({file}, options),
                    Catch::Contains(file) && Catch::Contains("no column 'body' (its columns: id, text)") &&
                        Catch::Contains("source.web.text_field"));
  CHECK_THROWS_WITH(ParquetSource({file}, options_in(dir, "id")),
                    Catch::Contains("column 'id' holds INT32 values, not byte arrays"));
}

TEST_CASE("truncated parquet files are IoErrors naming the file, and where a chunk lies past the data, the row group and column") {
  TempDir dir;
  const std::string whole = dir / "whole.parquet";
  write_text(whole, write_parquet({{"text", sample_texts(500)}}, {.row_group_rows = 100}));
  const std::vector<unsigned char> bytes = read_file(whole);
  const std::string cut = dir / "cut.parquet";
  write_text(cut, std::string(bytes.begin(), bytes.end() - 3));
  CHECK_THROWS_AS(ParquetSource({cut}, options_in(dir)), IoError);
  CHECK_THROWS_WITH(ParquetSource({cut}, options_in(dir)), Catch::Contains(cut) && Catch::Contains("PAR1"));
  write_text(cut, "PAR1");
  CHECK_THROWS_WITH(ParquetSource({cut}, options_in(dir)), Catch::Contains(cut) && Catch::Contains("too short"));
  // The footer of the whole file behind the first half of its data: the
  // later row groups' chunks lie past the data that is left.
  const uint32_t footer = static_cast<uint32_t>(bytes[bytes.size() - 8]) | bytes[bytes.size() - 7] << 8 |
                          bytes[bytes.size() - 6] << 16 | bytes[bytes.size() - 5] << 24;
  const size_t data_end = bytes.size() - 8 - footer;
  std::string shortened(bytes.begin(), bytes.begin() + static_cast<long>(data_end / 2));
  shortened.append(bytes.begin() + static_cast<long>(data_end), bytes.end());
  write_text(cut, shortened);
  CHECK_THROWS_WITH(ParquetSource({cut}, options_in(dir)),
                    Catch::Contains(cut) && Catch::Contains("column 'text'") && Catch::Contains("row group ") &&
                        Catch::Contains("lies outside the file's data"));
}

TEST_CASE("a damaged parquet page is a read_error naming the file, the row group, the column and the page") {
  TempDir dir;
  const std::string path = dir / "damaged.parquet";
  std::string bytes = write_parquet({{"text", sample_texts(500)}},
                                    {.codec = static_cast<int32_t>(ParquetCodec::zstd), .row_group_rows = 100});
  write_text(path, bytes);
  ParquetSource clean({path}, options_in(dir));
  const ParquetChunk chunk = clean.text_chunk(0, 2);
  for (uint64_t at = chunk.offset + chunk.compressed_bytes / 2; at < chunk.offset + chunk.compressed_bytes / 2 + 16; ++at)
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  write_text(path, bytes);
  TempDir other;  // a fresh index: the file's stamp may not have moved
  ParquetSource source({path}, options_in(other));
  RawSample sample;
  source.read(250, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains(path) && Catch::Contains("row group 2, column 'text'") &&
                                Catch::Contains("the page at byte"));
  source.read(150, sample);  // row group 1 is intact
  CHECK(sample.bad != BadKind::read_error);
}

TEST_CASE("a parquet file's index is cached and reused while the file is unchanged") {
  TempDir dir;
  const std::string path = dir / "cached.parquet";
  write_text(path, write_parquet({{"text", sample_texts(300)}}, {.row_group_rows = 64}));
  {
    ParquetSource first({path}, options_in(dir));
    CHECK(first.index_counts().scanned == 1);
  }
  ParquetSource second({path}, options_in(dir));
  CHECK(second.index_counts().cached == 1);
  CHECK(second.size() == 300);
  CHECK(second.row_groups(0) == 5);
  // Another column is another index: the cache is not used for it.
  ParquetOptions other = options_in(dir);
  other.text_column = "text";
  other.image_column = "text";
  ParquetSource images({path}, other);
  CHECK(images.index_counts().scanned == 1);
}

TEST_CASE("Thrift compact: what the writer writes reads back; malformed bytes are errors, never reads past the end") {
  ThriftWriter out;
  out.begin_struct();
  out.field_i32(1, -5);
  out.field_i64(40, int64_t{1} << 40);
  out.field_string(41, "hello");
  out.field_bool(42, true);
  out.field_list(43, ThriftType::i32, 20);
  for (int i = 0; i < 20; ++i) out.element_i32(i * 1000);
  out.field_struct(44);
  out.field_i32(1, 7);
  out.end_struct();
  out.end_struct();
  const std::string& bytes = out.bytes();
  const std::span<const unsigned char> span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  ThriftReader in(span);
  in.begin_struct();
  int16_t id;
  ThriftType type;
  std::vector<int16_t> ids;
  while (in.next_field(id, type)) {
    ids.push_back(id);
    if (id == 1) CHECK(in.read_i32(type) == -5);
    else if (id == 40) CHECK(in.read_i64(type) == int64_t{1} << 40);
    else if (id == 41) CHECK(in.read_string(type) == "hello");
    else if (id == 42) CHECK(in.read_bool(type));
    else in.skip(type);
  }
  CHECK(ids == std::vector<int16_t>{1, 40, 41, 42, 43, 44});
  CHECK(in.position() == bytes.size());
  // Every prefix ends in an error, never in a read past it.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    ThriftReader partial(span.first(cut));
    partial.begin_struct();
    CHECK_THROWS_AS(([&] { while (partial.next_field(id, type)) partial.skip(type); })(), ThriftError);
  }
  const unsigned char huge_list[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0x0f};  // field 1: a list of 2^32-1 i32
  ThriftReader list(huge_list);
  list.begin_struct();
  REQUIRE(list.next_field(id, type));
  CHECK_THROWS_WITH(list.skip(type), Catch::Contains("elements"));
  std::vector<unsigned char> deep(200, 0x1c);  // struct in struct in struct ...
  ThriftReader nested(deep);
  nested.begin_struct();
  REQUIRE(nested.next_field(id, type));
  CHECK_THROWS_WITH(nested.skip(type), Catch::Contains("deep"));
}

TEST_CASE("the RLE / bit-packed hybrid decodes runs and groups, and refuses data that ends early") {
  // An RLE run of 5 x 3 (width 2), then a bit-packed group of 8 values 0..7 (width 3).
  const unsigned char rle[] = {0x0a, 0x03};
  uint32_t out[16];
  std::string error;
  REQUIRE(decode_rle_hybrid(rle, 2, 5, out, error));
  CHECK(std::vector<uint32_t>(out, out + 5) == std::vector<uint32_t>(5, 3));
  const unsigned char packed[] = {0x03, 0x88, 0xc6, 0xfa};  // values 0..7 at 3 bits, LSB first
  REQUIRE(decode_rle_hybrid(packed, 3, 8, out, error));
  CHECK(std::vector<uint32_t>(out, out + 8) == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK_FALSE(decode_rle_hybrid(std::span(packed, 3), 3, 8, out, error));
  CHECK_FALSE(decode_rle_hybrid(rle, 2, 6, out, error));
  CHECK_THAT(error, Catch::Contains("ends after 5 of 6"));
  const unsigned char too_wide[] = {0x02, 0x09};  // a run of 1 x 9 at width 2
  CHECK_FALSE(decode_rle_hybrid(too_wide, 2, 1, out, error));
}
