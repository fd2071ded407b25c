// lib/common/storage.h and faulty_storage.h: the POSIX storage every file
// goes through, and the fault-injecting wrapper the tests drive it with.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/faulty_storage.h"
#include "common/files.h"
#include "common/storage.h"
#include "unit/scratch.h"

using namespace msd;

namespace {

std::vector<unsigned char> counting_bytes(size_t n) {
  std::vector<unsigned char> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(i * 31 + 7);
  return bytes;
}

}  // namespace

TEST_CASE("posix storage: read at offsets, stat, map, short reads only at the end", "[common][storage]") {
  test::TempDir dir;
  PosixStorage storage;
  const std::string path = dir / "data.bin";
  const auto bytes = counting_bytes(5000);
  storage.write_atomic(path, bytes);
  const auto file = storage.open(path);
  CHECK(file->size() == 5000);
  CHECK(file->path() == path);
  std::vector<unsigned char> out(100);
  REQUIRE(file->read_at(1234, out.data(), out.size()) == 100);
  CHECK(std::equal(out.begin(), out.end(), bytes.begin() + 1234));
  CHECK(file->read_at(4950, out.data(), out.size()) == 50);  // the file ends
  CHECK(file->read_at(9000, out.data(), out.size()) == 0);
  const std::optional<FileStamp> stamp = storage.stat(path);
  REQUIRE(stamp);
  CHECK(stamp->size_bytes == 5000);
  CHECK(stamp->mtime_ns > 0);
  CHECK_FALSE(storage.stat(dir / "missing"));
  CHECK_FALSE(storage.exists(dir / "missing/below"));
  CHECK_THROWS_WITH(storage.stamp(dir / "missing"), Catch::Contains("missing"));
  CHECK_THROWS_WITH(storage.open(dir / "missing"), Catch::Contains("cannot open") && Catch::Contains("missing"));
  const MappedFile mapped = storage.map(path);
  CHECK(std::equal(mapped.bytes().begin(), mapped.bytes().end(), bytes.begin(), bytes.end()));
  storage.write_atomic(dir / "empty", {});
  CHECK(storage.map(dir / "empty").size() == 0);
  CHECK(storage.read_all(path) == bytes);
  CHECK(storage.read_all(dir / "empty").empty());
}

TEST_CASE("posix storage: atomic writes leave no temporary file; glob, list, rename, remove, directories",
          "[common][storage]") {
  test::TempDir dir;
  PosixStorage storage;
  const std::vector<unsigned char> bytes = {1, 2, 3};
  storage.make_dirs(dir / "a/b/c");
  storage.make_dirs(dir / "a/b/c");  // already there: no error
  CHECK(storage.can_write(dir / "a/b/c"));
  CHECK_FALSE(storage.can_write(dir / "nowhere"));
  storage.write_atomic(dir / "a/b/c/x.txt", bytes);
  storage.write_atomic(dir / "a/b/c/x.txt", std::vector<unsigned char>{9});  // replaced whole
  storage.write_atomic(dir / "a/b/c/y.txt", bytes);
  std::vector<std::string> listed = storage.list(dir / "a/b/c");
  std::sort(listed.begin(), listed.end());
  CHECK(listed == std::vector<std::string>{dir / "a/b/c/x.txt", dir / "a/b/c/y.txt"});  // no .tmp.<pid> left
  CHECK(storage.read_all(dir / "a/b/c/x.txt") == std::vector<unsigned char>{9});
  CHECK(storage.list(dir / "none").empty());
  std::vector<std::string> globbed = storage.glob(dir / "a/b/*/*.txt");
  std::sort(globbed.begin(), globbed.end());
  CHECK(globbed == listed);
  CHECK(storage.glob(dir / "a/*").empty());  // directories are not files
  storage.rename(dir / "a/b/c/y.txt", dir / "a/z.txt");
  CHECK(storage.exists(dir / "a/z.txt"));
  CHECK_FALSE(storage.exists(dir / "a/b/c/y.txt"));
  CHECK_THROWS_WITH(storage.rename(dir / "a/b/c/y.txt", dir / "a/w.txt"), Catch::Contains("y.txt"));
  storage.sync(dir / "a/z.txt");
  CHECK(storage.remove(dir / "a/z.txt"));
  CHECK_FALSE(storage.remove(dir / "a/z.txt"));
  CHECK_THROWS_AS(storage.write_atomic(dir / "nowhere/f", bytes), IoError);
  CHECK_THROWS_WITH(storage.make_dirs(dir / "a/b/c/x.txt/d"), Catch::Contains("x.txt"));
}

TEST_CASE("faulty storage: EIO and truncation in a byte range, full disks, delays, then clear", "[common][storage]") {
  test::TempDir dir;
  PosixStorage posix;
  FaultyStorage storage(posix);
  const std::string path = dir / "data.bin", other = dir / "other.bin";
  const auto bytes = counting_bytes(4096);
  storage.write_atomic(path, bytes);
  storage.write_atomic(other, bytes);
  storage.fail_reads({path, 1000, 2000});
  const auto file = storage.open(path);
  std::vector<unsigned char> out(100);
  CHECK(file->read_at(0, out.data(), out.size()) == 100);
  CHECK(file->read_at(2000, out.data(), out.size()) == 100);
  CHECK_THROWS_WITH(file->read_at(950, out.data(), out.size()),
                    Catch::Contains(path) && Catch::Contains("offset 950") && Catch::Contains("Input/output error"));
  CHECK(storage.open(other)->read_at(1500, out.data(), out.size()) == 100);  // another file reads
  CHECK_THROWS_WITH(storage.map(path), Catch::Contains(path));
  CHECK(storage.map(other).size() == 4096);

  // The readers see an error as a value naming the file and the offset.
  FileReader reader(storage, 2);
  std::string error;
  CHECK_FALSE(reader.read(0, path, 1500, out.data(), out.size(), error));
  CHECK_THAT(error, Catch::Contains(path) && Catch::Contains("1500"));
  CHECK(reader.read(1, other, 1500, out.data(), out.size(), error));

  storage.clear();
  storage.fail_reads({path, 3000, 4096, FaultyStorage::ReadFault::Kind::truncated});
  CHECK(file->read_at(2950, out.data(), out.size()) == 50);  // short: the file seems to end at 3000
  CHECK(file->read_at(3000, out.data(), out.size()) == 0);
  CHECK_FALSE(reader.read(0, path, 2950, out.data(), out.size(), error));
  CHECK_THAT(error, Catch::Contains("ends 50 bytes"));
  CHECK(reader.read(0, path, 2800, out.data(), out.size(), error));

  storage.fail_writes(dir / "full.bin");
  CHECK_THROWS_WITH(storage.write_atomic(dir / "full.bin", bytes),
                    Catch::Contains("full.bin") && Catch::Contains("No space left on device"));
  CHECK_FALSE(storage.exists(dir / "full.bin"));
  storage.write_atomic(dir / "fine.bin", bytes);  // another path writes
  storage.fail_writes();
  CHECK_THROWS_AS(storage.write_atomic(dir / "fine.bin", bytes), IoError);

  storage.clear();
  const uint64_t reads_before = storage.reads();
  storage.delay_reads(std::chrono::milliseconds(20));
  const auto start = std::chrono::steady_clock::now();
  CHECK(file->read_at(3500, out.data(), out.size()) == 100);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(20));
  CHECK(storage.reads() == reads_before + 1);
  storage.clear();
  storage.write_atomic(dir / "full.bin", bytes);
  CHECK(storage.read_all(dir / "full.bin") == bytes);
}

TEST_CASE("the default storage: installed for a scope, restored after; helpers go through it", "[common][storage]") {
  test::TempDir dir;
  const std::string path = dir / "data.bin";
  write_file_atomic(path, counting_bytes(64));
  Storage* const before = &default_storage();
  {
    FaultyStorage faulty(*before);
    const ScopedDefaultStorage installed(faulty);
    CHECK(&default_storage() == &faulty);
    faulty.fail_reads({});
    CHECK_THROWS_WITH(read_file(path), Catch::Contains("injected"));
    CHECK_THROWS_AS(MappedFile(path), IoError);
    FileReader reader;  // takes the default
    std::vector<unsigned char> out(8);
    std::string error;
    CHECK_FALSE(reader.read(0, path, 0, out.data(), out.size(), error));
    faulty.fail_writes();
    CHECK_THROWS_AS(write_file_atomic(dir / "x", counting_bytes(8)), IoError);
    CHECK(expand_globs(dir / "*.bin", "x") == std::vector<std::string>{path});  // globs are not reads
  }
  CHECK(&default_storage() == before);
  CHECK(read_file(path) == counting_bytes(64));
}
