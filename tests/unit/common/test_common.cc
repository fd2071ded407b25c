// lib/common: the error model's helpers, UTF-8 validation, the digest and the
// file helpers every reader stands on.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/digest.h"
#include "common/error.h"
#include "common/files.h"
#include "common/log.h"
#include "common/utf8.h"
#include "unit/scratch.h"

using namespace msd;

TEST_CASE("checked_cast refuses a value the target cannot hold", "[common]") {
  CHECK(checked_cast<int>(uint64_t{2147483647}) == 2147483647);
  CHECK(checked_cast<uint8_t>(255) == 255);
  CHECK_THROWS_AS(checked_cast<int>(uint64_t{2147483648u}), Error);
  CHECK_THROWS_AS(checked_cast<uint32_t>(-1), Error);
  CHECK_THROWS_WITH(checked_cast<uint8_t>(300), Catch::Contains("300"));
}

TEST_CASE("checked_mul refuses a product of sizes that would wrap", "[common]") {
  CHECK(checked_mul(uint64_t{1} << 31, uint64_t{1} << 32, "x") == uint64_t{1} << 63);
  CHECK(checked_mul(0, ~uint64_t{0}, "x") == 0);
  CHECK_THROWS_WITH(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32, "rows of /steps"),
                    Catch::StartsWith("rows of /steps: 4294967296 x 4294967296 does not fit 64 bits"));
}

TEST_CASE("UTF-8 validation rejects every ill-formed kind and says where", "[common][utf8]") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  CHECK(is_valid_utf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));                        // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xe0\x80\xaf"));                    // overlong, 3 bytes
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));                    // surrogate U+D800
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));                // beyond U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xe2\x82"));                        // truncated
  CHECK_FALSE(is_valid_utf8("\x80"));                            // lone continuation
  CHECK(first_invalid_utf8("ok \xc3\xa9 then \xff") == 11);
  CHECK(first_invalid_utf8("all good") == 8);
}

TEST_CASE("digest depends on every byte, on order and on the seed", "[common][digest]") {
  auto digest_of = [](const std::string& text, uint64_t seed) {
    Digest d(seed);
    d.update(text.data(), text.size());
    return d.value();
  };
  CHECK(digest_of("abc", 1) == digest_of("abc", 1));
  CHECK(digest_of("abc", 1) != digest_of("abd", 1));
  CHECK(digest_of("abc", 1) != digest_of("cba", 1));
  CHECK(digest_of("abc", 1) != digest_of("abc", 2));
  CHECK(digest_of("", 1) != digest_of(std::string(1, '\0'), 1));  // the length counts
  Digest d;
  d.update_u64(42);
  CHECK(d.hex().size() == 16);
}

TEST_CASE("file helpers: atomic write, read back, errors name the path", "[common][files]") {
  test::TempDir dir;
  const std::string path = dir / "data.bin";
  const std::vector<unsigned char> bytes = {1, 2, 3, 0, 255};
  write_file_atomic(path, bytes);
  CHECK(file_exists(path));
  CHECK(read_file(path) == bytes);
  CHECK(file_stamp(path).size_bytes == bytes.size());
  const MappedFile mapped(path);
  CHECK(std::vector<unsigned char>(mapped.bytes().begin(), mapped.bytes().end()) == bytes);
  CHECK(join_path(dir.path(), "x") == dir / "x");
  CHECK_THROWS_AS(read_file(dir / "missing"), IoError);
  CHECK_THROWS_WITH(MappedFile(dir / "missing"), Catch::Contains("missing"));
  CHECK_THROWS_WITH(expand_globs(dir / "*.none", "source.web.path"), Catch::Contains("source.web.path"));
  write_file_atomic(dir / "b.txt", bytes);
  write_file_atomic(dir / "a.txt", bytes);
  CHECK(expand_globs(dir / "*.txt," + dir / "a.txt", "x") == std::vector<std::string>{dir / "a.txt", dir / "b.txt"});
}

TEST_CASE("file reader: exact ranges, errors as values, at most max_open descriptors", "[common][files]") {
  test::TempDir dir;
  std::vector<std::string> paths;
  for (int f = 0; f < 4; ++f) {
    paths.push_back(dir / ("f" + std::to_string(f)));
    std::vector<unsigned char> bytes(10000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>((i * 7 + f) & 0xff);
    write_file_atomic(paths.back(), bytes);
  }
  FileReader reader(2);
  std::string error;
  std::vector<unsigned char> out(300);
  for (int round = 0; round < 3; ++round)
    for (size_t f = 0; f < paths.size(); ++f) {
      REQUIRE(reader.read(f, paths[f], 4321, out.data(), out.size(), error));
      for (size_t i = 0; i < out.size(); ++i) CHECK(out[i] == static_cast<unsigned char>(((4321 + i) * 7 + f) & 0xff));
      CHECK(reader.open_files() <= 2);
    }
  CHECK(reader.open_files() == 2);
  // Past the end: a short read is an error naming the file and the offset.
  CHECK_FALSE(reader.read(1, paths[1], 9900, out.data(), out.size(), error));
  CHECK_THAT(error, Catch::Contains(paths[1]) && Catch::Contains("9900") && Catch::Contains("ends 100 bytes"));
  CHECK_FALSE(reader.read(9, dir / "missing", 0, out.data(), 1, error));
  CHECK_THAT(error, Catch::Contains("missing") && Catch::Contains("cannot open"));
  // A file that shrank while open: the descriptor sees the new size.
  REQUIRE(reader.read(0, paths[0], 0, out.data(), 10, error));
  REQUIRE(::truncate(paths[0].c_str(), 50) == 0);
  CHECK_FALSE(reader.read(0, paths[0], 40, out.data(), 20, error));
  CHECK(reader.read(0, paths[0], 40, out.data(), 10, error));
  FileReader moved = std::move(reader);
  CHECK(moved.read(3, paths[3], 0, out.data(), 0, error));

  // Out of descriptors: the reader gives back its own and opens the file.
  FileReader many(8);
  for (size_t f = 1; f < paths.size(); ++f) REQUIRE(many.read(f, paths[f], 0, out.data(), 10, error));
  REQUIRE(many.open_files() == 3);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  const int lowest_free = ::dup(0);
  REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);  // no descriptor can be opened now
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  const bool read_when_full = many.read(0, paths[0], 0, out.data(), 10, error);
  const size_t open_after = many.open_files();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(read_when_full);
  CHECK(open_after == 1);
}

TEST_CASE("file reader: threads reading at once get their own bytes while files close under them",
          "[common][files]") {
  test::TempDir dir;
  std::vector<std::string> paths;
  for (int f = 0; f < 6; ++f) {
    paths.push_back(dir / ("f" + std::to_string(f)));
    std::vector<unsigned char> bytes(20000);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>((i * 13 + f * 5) & 0xff);
    write_file_atomic(paths.back(), bytes);
  }
  // Two descriptors for six files: almost every read closes one that another
  // thread may be reading.
  FileReader reader(2);
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<unsigned char> out(777);
      std::string error;
      for (int k = 0; k < 2000; ++k) {
        const size_t f = static_cast<size_t>(k * 7 + t) % paths.size();
        const uint64_t offset = static_cast<uint64_t>(k * 131 + t * 17) % (20000 - out.size());
        if (!reader.read(f, paths[f], offset, out.data(), out.size(), error)) {
          failed.fetch_add(1);
          continue;
        }
        for (size_t i = 0; i < out.size(); ++i)
          if (out[i] != static_cast<unsigned char>(((offset + i) * 13 + f * 5) & 0xff)) {
            wrong.fetch_add(1);
            break;
          }
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(failed.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(reader.open_files() <= 2);
}

TEST_CASE("log levels parse by name; an unknown one is a configuration error", "[common][log]") {
  CHECK(parse_log_level("warn") == LogLevel::warn);
  CHECK(parse_log_level("debug") == LogLevel::debug);
  CHECK_THROWS_AS(parse_log_level("loud"), ConfigError);
}
