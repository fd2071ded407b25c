// The loaders' checkpoint: each loader's part reads back equal; a loader of a
// different pool gets the snapshot records of its sources from every part;
// retention keeps whole rounds; a part with one stored value changed, a round
// of another seed, configuration or data, and a round lacking a part are each
// handled as docs/checkpoint.md says.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/loader_checkpoint.h"
#include "checkpoint/step_files.h"
#include "common/error.h"
#include "tools/h5_poke.h"
#include "unit/scratch.h"

namespace fs = std::filesystem;
using namespace msd;

namespace {

constexpr uint32_t kLoaders = 3;
const LoaderCheckpointIdentity kIdentity{77, 0x1234, 0x5678};

// Loader 1 holds no snapshot, the others hold loader+1 records of sources
// loader, loader+1, ... (mod 4) of growing size (the first is empty).
LoaderCheckpointPart part_of(uint32_t loader, uint64_t step) {
  LoaderCheckpointPart part;
  part.loader = loader;
  if (loader == 1) return part;
  for (uint32_t i = 0; i <= loader; ++i) {
    SnapshotRecord r{(loader + i) % 4, step * 10 + i, 1000 * loader + i, 3 * i, i, 768, {}};
    for (uint32_t b = 0; b < 37 * i; ++b) r.bytes.push_back(static_cast<unsigned char>(loader * 31 + b));
    part.records.push_back(std::move(r));
  }
  return part;
}

void write_round(const std::string& dir, uint64_t step, const LoaderCheckpointIdentity& identity = kIdentity,
                 uint32_t written = kLoaders) {
  for (uint32_t loader = 0; loader < written; ++loader)
    write_loader_checkpoint(dir, {step, kLoaders, identity}, part_of(loader, step));
}

std::vector<std::string> parts_of(const std::string& dir, uint64_t step, uint32_t count = kLoaders) {
  std::vector<std::string> paths;
  for (uint32_t loader = 0; loader < count; ++loader) paths.push_back(loader_checkpoint_path(dir, step, loader));
  return paths;
}

}  // namespace

TEST_CASE("loader checkpoint parts read back, snapshots gather every part, retention keeps rounds") {
  test::TempDir dir;
  for (uint64_t step : {10, 20, 30}) write_round(dir.path(), step);
  prune_loader_checkpoints(dir.path(), 2);
  const auto files = list_step_files(dir.path(), "loaders");
  REQUIRE(files.size() == 2 * kLoaders);
  CHECK(files.front().first == 30);
  CHECK(files.back().first == 20);
  CHECK(fs::path(loader_checkpoint_path(dir.path(), 30, 2)).filename() == "loaders-000000000030-00002.h5");
  CHECK_FALSE(fs::exists(temporary_path(loader_checkpoint_path(dir.path(), 30, 0))));

  for (uint32_t loader = 0; loader < kLoaders; ++loader) {
    const LoaderCheckpointFile file = read_loader_checkpoint(loader_checkpoint_path(dir.path(), 30, loader));
    CHECK(file.round == LoaderCheckpointRound{30, kLoaders, kIdentity});
    CHECK(file.part == part_of(loader, 30));
  }
  // A loader of another pool that serves sources 0 and 2 gets every record of
  // those sources, ordered by (source, cursor).
  const std::vector<uint32_t> mine = {0, 2};
  const auto records = read_loader_snapshot(parts_of(dir.path(), 30), mine);
  size_t expected = 0;
  for (uint32_t loader = 0; loader < kLoaders; ++loader)
    for (const auto& record : part_of(loader, 30).records) expected += record.source == 0 || record.source == 2;
  CHECK(records.size() == expected);
  for (size_t i = 1; i < records.size(); ++i)
    CHECK((records[i - 1].source < records[i].source ||
           (records[i - 1].source == records[i].source && records[i - 1].cursor <= records[i].cursor)));
  for (const auto& record : records) CHECK((record.source == 0 || record.source == 2));

  CHECK(latest_loader_checkpoint(dir.path(), 25, kIdentity) == parts_of(dir.path(), 20));
  CHECK_FALSE(latest_loader_checkpoint(dir.path(), 5, kIdentity));
}

TEST_CASE("a loader checkpoint part changed after it was written is named and skipped") {
  test::TempDir dir;
  for (uint64_t step : {20, 30}) write_round(dir.path(), step);
  const std::string part = loader_checkpoint_path(dir.path(), 30, 2);
  for (const char* member : {"cursor", "bytes_length"}) {
    const std::string copy = dir / "copy.h5";
    fs::copy_file(part, copy, fs::copy_options::overwrite_existing);
    test::poke_dataset(copy, "records", 0, member);
    CHECK_THROWS_WITH(read_loader_checkpoint(copy), Catch::Contains("dataset /records"));
  }
  {
    const std::string copy = dir / "copy.h5";
    fs::copy_file(part, copy, fs::copy_options::overwrite_existing);
    test::poke_attribute(copy, "seed");
    CHECK_THROWS_WITH(read_loader_checkpoint(copy), Catch::Contains("seed"));
  }
  // The changed part is left out; the round's other parts still serve.
  test::poke_dataset(part, "records", 0, "index");
  const auto usable = latest_loader_checkpoint(dir.path(), 30, kIdentity);
  REQUIRE(usable);
  CHECK(*usable == parts_of(dir.path(), 30, 2));
}

TEST_CASE("a loader checkpoint of another seed, configuration or data is not used") {
  test::TempDir dir;
  write_round(dir.path(), 20);
  for (const LoaderCheckpointIdentity other :
       {LoaderCheckpointIdentity{78, 0x1234, 0x5678}, LoaderCheckpointIdentity{77, 0x1235, 0x5678},
        LoaderCheckpointIdentity{77, 0x1234, 0x5679}}) {
    write_round(dir.path(), 30, other);
    CHECK(latest_loader_checkpoint(dir.path(), 30, kIdentity) == parts_of(dir.path(), 20));
    CHECK(latest_loader_checkpoint(dir.path(), 30, other) == parts_of(dir.path(), 30));
  }
}

TEST_CASE("a loader checkpoint round lacking the part of a loader taken over in it is used") {
  test::TempDir dir;
  write_round(dir.path(), 20);
  write_round(dir.path(), 30, kIdentity, 2);  // loader 2 stopped before its rename
  CHECK(latest_loader_checkpoint(dir.path(), 30, kIdentity) == parts_of(dir.path(), 30, 2));
  prune_loader_checkpoints(dir.path(), 1);
  CHECK(list_step_files(dir.path(), "loaders").size() == 2);
}
