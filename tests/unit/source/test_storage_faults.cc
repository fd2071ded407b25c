// The readers and the index caches over a failing storage
// (common/faulty_storage.h): a read that fails is the sample's read_error
// naming the file and the offset, a full disk only costs the cache, a data
// file that cannot be mapped fails the open naming it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/error.h"
#include "common/faulty_storage.h"
#include "common/storage.h"
#include "source/jsonl/jsonl_source.h"
#include "source/source.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using namespace msd::test;

TEST_CASE("a failing read is the sample's read_error; the records around it read", "[source][storage]") {
  TempDir dir;
  const std::string path = dir / "web.jsonl";
  const std::string first = json_line("one"), second = json_line("two");
  write_text(path, first + second + json_line("three"));
  FaultyStorage storage(default_storage());
  const ScopedDefaultStorage installed(storage);
  JsonlSource source({path}, {});
  REQUIRE(source.size() == 3);
  storage.fail_reads({path, first.size() + 3, first.size() + 4});  // inside the second line
  RawSample sample;
  source.read(1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains(path) && Catch::Contains(std::to_string(first.size())) &&
                                Catch::Contains("Input/output error"));
  source.read(0, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == "one");
  source.read(2, sample);
  CHECK(sample.bad == BadKind::none);
  CHECK(sample.text == "three");
  // A file cut short under the reader: the read says where it ended.
  storage.clear();
  storage.fail_reads({path, first.size() + second.size() / 2, UINT64_MAX, FaultyStorage::ReadFault::Kind::truncated});
  source.read(1, sample);
  CHECK(sample.bad == BadKind::read_error);
  CHECK_THAT(sample.reason, Catch::Contains("ends"));
  storage.clear();
  source.read(1, sample);
  CHECK(sample.text == "two");
}

TEST_CASE("a full disk costs only the index cache: the source opens and indexes again next time",
          "[source][storage]") {
  TempDir dir;
  const std::string path = dir / "web.jsonl";
  write_text(path, json_line("one") + json_line("two"));
  FaultyStorage storage(default_storage());
  const ScopedDefaultStorage installed(storage);
  storage.fail_writes({}, ENOSPC);
  {
    JsonlSource source({path}, {});
    CHECK(source.size() == 2);
    CHECK(source.index_counts().scanned == 1);
  }
  storage.clear();
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().scanned == 1);  // nothing was cached
  }
  {
    JsonlSource source({path}, {});
    CHECK(source.index_counts().cached == 1);
  }
}

TEST_CASE("a data file that cannot be read while indexing fails the open, naming it", "[source][storage]") {
  TempDir dir;
  const std::string path = dir / "web.jsonl";
  write_text(path, json_line("one") + json_line("two"));
  FaultyStorage storage(default_storage());
  const ScopedDefaultStorage installed(storage);
  storage.fail_reads({path});
  CHECK_THROWS_WITH(open_source(source_config("jsonl", path), SourceOptions{dir / "cache"}), Catch::Contains(path));
}
