// What every reader guarantees: samples served without mapping the data, and
// the same records on several threads as on one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/worker_pool.h"
#include "source/indexed/indexed_source.h"
#include "source/jsonl/jsonl_source.h"
#include "source/wds/wds_source.h"
#include "unit/scratch.h"
#include "unit/source/source_files.h"

using namespace msd;
using namespace msd::test;

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
