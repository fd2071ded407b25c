// The WebDataset reader: tar shards of image-text samples.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "source/index_cache.h"
#include "source/jsonl/jsonl_source.h"
#include "source/wds/tar.h"
#include "source/wds/wds_source.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using namespace msd::test;
namespace fs = std::filesystem;

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
