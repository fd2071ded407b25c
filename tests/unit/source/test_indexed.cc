// The Megatron indexed dataset reader (.bin/.idx).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "source/indexed/indexed_source.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using namespace msd::test;
namespace fs = std::filesystem;

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
