// Compressed JSON lines: a .jsonl.zst / .jsonl.gz / .json.gz file gives
// exactly the records of the plain file, in any read order, whoever wrote it
// (msd's writers, Debian's zstd, pzstd and gzip); corrupt data is an error
// naming the file and the offset; the index is cached.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "source/jsonl/compressed.h"
#include "source/jsonl/jsonl_source.h"
#include "source/source.h"
#include "unit/scratch.h"
#include "unit/skip.h"
#include "unit/source/source_files.h"

using namespace msd;
using test::TempDir;
using test::read_text;
using test::write_text;

namespace {

std::string json_line_without_newline() { return "{\"text\": \"the last line has no newline\"}"; }

// Records of varied lengths (a few longer than the restart spacing the tests
// use), blank lines, and the bad records of the plain reader's tests.
std::string corpus(size_t records) {
  std::mt19937_64 rng(7);
  std::string lines;
  for (size_t i = 0; i < records; ++i) {
    std::string text = "record " + std::to_string(i) + ":";
    const size_t words = i % 97 == 5 ? 6000 : rng() % 200;
    for (size_t w = 0; w < words; ++w) text += " w" + std::to_string(rng() % 5000);
    std::string line = "{\"id\": " + std::to_string(i) + ", \"text\": ";
    append_json_string(line, text);
    lines += line + "}\n";
    if (i % 50 == 3) lines += "\n  \r\n";
    if (i % 61 == 7) lines += "{\"text\": \"unterminated}\n";
    if (i % 67 == 9) lines += "{\"body\": \"no text field\"}\n";
    if (i % 71 == 11) lines += "{\"text\": \"bad \xc0\xaf byte\"}\n";
  }
  return lines + json_line_without_newline();
}

}  // namespace

namespace {

// Every record of `compressed` equals `plain`'s (text, kind, reason, length
// and offset), read in a shuffled order.
void check_same_records(JsonlSource& plain, JsonlSource& compressed) {
  REQUIRE(compressed.size() == plain.size());
  std::vector<uint64_t> order(plain.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(11));
  RawSample expected, got;
  uint64_t bad = 0;
  for (uint64_t index : order) {
    plain.read(index, expected);
    compressed.read(index, got);
    INFO("record " << index << ": " << got.reason);
    REQUIRE(got.bad == expected.bad);
    CHECK(got.text == expected.text);
    CHECK(got.reason == expected.reason);
    CHECK(compressed.length_hint(index) == plain.length_hint(index));
    CHECK(compressed.locate(index).offset == plain.locate(index).offset);
    bad += got.bad != BadKind::none;
  }
  CHECK(bad > 0);  // the bad records are there, and bad in the same way
}

JsonlOptions small_spacing() {
  JsonlOptions options;
  options.restart_spacing_bytes = 16 << 10;  // many restart points in a small file
  return options;
}

bool have_tool(const char* name) { return std::system((std::string("command -v ") + name + " > /dev/null 2>&1").c_str()) == 0; }

void run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

// Rewrites byte `offset` of `path`, keeping its size and mtime.
void damage_in_place(const std::string& path, uint64_t offset) {
  const FileStamp stamp = file_stamp(path);
  std::string bytes = read_text(path);
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
  write_text(path, bytes);
  timespec times[2];
  times[0].tv_sec = stamp.mtime_ns / 1000000000;
  times[0].tv_nsec = stamp.mtime_ns % 1000000000;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("the line scanner fed in pieces finds the lines of the whole") {
  const std::string text = corpus(300);
  const std::span<const unsigned char> bytes(reinterpret_cast<const unsigned char*>(text.data()), text.size());
  const auto whole = scan_jsonl_lines(bytes);
  std::mt19937_64 rng(3);
  JsonlLineScanner scanner;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t piece = std::min<size_t>(bytes.size() - pos, rng() % 9);
    scanner.feed(bytes.subspan(pos, piece));
    pos += piece;
  }
  CHECK(scanner.finish() == whole);
  CHECK(compression_of_path("a/b.jsonl.zst") == Compression::zstd);
  CHECK(compression_of_path("c4-train.00000-of-01024.json.gz") == Compression::gzip);
  CHECK(compression_of_path("x.jsonl") == Compression::none);
}

TEST_CASE("compressed jsonl written by msd gives the plain file's records in any order") {
  TempDir dir;
  const std::string text = corpus(1500);
  write_text(dir / "a.jsonl", text);
  write_text(dir / "frames.jsonl.zst", zstd_compress_frames(text, 32 << 10, 3));
  write_text(dir / "one-frame.jsonl.zst", zstd_compress_frames(text, 0, 3));
  write_text(dir / "a.jsonl.gz", gzip_compress(text, 6));
  JsonlSource plain({dir / "a.jsonl"}, {});
  for (const char* name : {"frames.jsonl.zst", "one-frame.jsonl.zst", "a.jsonl.gz"}) {
    INFO(name);
    JsonlSource compressed({dir / name}, small_spacing());
    const CompressedIndex& index = compressed.compressed_index(0);
    CHECK(index.uncompressed_bytes == text.size());
    CHECK(index.compressed_bytes == file_stamp(dir / name).size_bytes);
    if (std::string(name) == "one-frame.jsonl.zst") {
      CHECK(index.points.size() == 1);  // a frame cannot be entered in the middle
    } else {
      // Points at least the spacing apart: at frame starts, or at the ends of
      // deflate blocks (zlib's hold about 100 KB of this text).
      CHECK(index.points.size() > text.size() / (256 << 10));
      for (size_t i = 1; i < index.points.size(); ++i)
        CHECK(index.points[i].uncompressed_offset - index.points[i - 1].uncompressed_offset >= (16 << 10));
    }
    check_same_records(plain, compressed);
  }
  JsonlSource frames({dir / "frames.jsonl.zst"}, small_spacing());
  CHECK(frames.compressed_index(0).streams > text.size() / (128 << 10));
  CHECK(frames.compressed_index(0).points[1].kind == RestartPoint::stream_start);
  JsonlSource gzip({dir / "a.jsonl.gz"}, small_spacing());
  CHECK(gzip.compressed_index(0).points[1].kind == RestartPoint::deflate_block);
  CHECK(gzip.compressed_index(0).windows.size() < (gzip.compressed_index(0).points.size() - 1) * kDeflateWindowBytes);
}

TEST_CASE("compressed jsonl read through the restart-interval cache gives the plain file's records") {
  TempDir dir;
  const std::string text = corpus(1500);
  write_text(dir / "a.jsonl", text);
  write_text(dir / "frames.jsonl.zst", zstd_compress_frames(text, 32 << 10, 3));
  write_text(dir / "a.jsonl.gz", gzip_compress(text, 6));
  JsonlSource plain({dir / "a.jsonl"}, {});
  for (const char* name : {"frames.jsonl.zst", "a.jsonl.gz"}) {
    // A cache that holds every interval, one that holds a few, and one too
    // small for any (those reads decompress up to the record, uncached).
    for (uint64_t cache_bytes : {uint64_t{64} << 20, uint64_t{1} << 20, uint64_t{64} << 10}) {
      INFO(name << ", cache " << cache_bytes);
      JsonlOptions options = small_spacing();
      options.cache_bytes = cache_bytes;
      JsonlSource compressed({dir / name}, options);
      check_same_records(plain, compressed);
      CHECK(compressed.cache().bytes() <= cache_bytes);
      if (cache_bytes == (uint64_t{64} << 20))  // each interval decompressed once
        CHECK(compressed.cache().misses() == compressed.compressed_index(0).points.size());
      if (cache_bytes == (uint64_t{64} << 10)) CHECK(compressed.cache().misses() == 0);
    }
  }
}

namespace {

// What open_source writes to stderr (fd 2, where the log goes) for `config`.
std::string open_source_log(const SourceConfig& config, const std::string& log_path) {
  const int saved = ::dup(2);
  const int file = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE((saved >= 0 && file >= 0));
  ::dup2(file, 2);
  ::close(file);
  try {
    open_source(config, {});
  } catch (...) {
    ::dup2(saved, 2);
    ::close(saved);
    throw;
  }
  ::dup2(saved, 2);
  ::close(saved);
  return read_text(log_path);
}

}  // namespace

TEST_CASE("open_source warns when a window of the block order outgrows the cache of decoded blocks") {
  TempDir dir;
  write_text(dir / "a.jsonl.zst", zstd_compress_frames(corpus(1500), 32 << 10, 3));
  SourceConfig config;
  config.name = "web";
  config.format = SourceFormat::jsonl;
  config.path = dir / "a.jsonl.zst";
  config.cache_mib = 1;
  config.shuffle_block_records = 16;  // a window of 64 records: tens of KB
  config.shuffle_window_blocks = 4;
  CHECK(open_source_log(config, dir / "fits.log").find("window") == std::string::npos);
  config.shuffle_block_records = 100000;  // every record in one block: past 1 MiB
  const std::string log = open_source_log(config, dir / "past.log");
  CHECK_THAT(log, Catch::Contains("source.web: a window of the block order holds about") &&
                      Catch::Contains("source.web.cache_mib = 1"));
  config.shuffle = Shuffle::uniform;  // no blocks, nothing cached: nothing to warn of
  CHECK(open_source_log(config, dir / "uniform.log").find("window") == std::string::npos);
}

TEST_CASE("compressed jsonl made by the zstd, pzstd and gzip tools reads as the plain file", "[compress_tools]") {
  for (const char* tool : {"zstd", "pzstd", "gzip"})
    if (!have_tool(tool)) MSD_SKIP(std::string("no ") + tool + " on PATH (tools/setup.sh installs it)");
  TempDir dir;
  const std::string text = corpus(2000);
  const std::string plain_path = dir / "a.jsonl";
  write_text(plain_path, text);
  write_text(dir / "first.jsonl", text.substr(0, text.size() / 3));
  write_text(dir / "rest.jsonl", text.substr(text.size() / 3));
  run("zstd -q -19 -o " + dir / "a.jsonl.zst " + plain_path);
  run("pzstd -q -p 2 -3 -o " + dir / "p.jsonl.zst " + plain_path);
  run("gzip -c -9 " + plain_path + " > " + dir / "a.json.gz");
  // Concatenated frames and members are valid files too (zstd -d and gunzip read them whole).
  run("zstd -q -c " + dir / "first.jsonl > " + dir / "cat.jsonl.zst && zstd -q -c " + dir / "rest.jsonl >> " + dir / "cat.jsonl.zst");
  run("gzip -c " + dir / "first.jsonl > " + dir / "cat.jsonl.gz && gzip -c " + dir / "rest.jsonl >> " + dir / "cat.jsonl.gz");
  JsonlSource plain({plain_path}, {});
  for (const char* name : {"a.jsonl.zst", "p.jsonl.zst", "a.json.gz", "cat.jsonl.zst", "cat.jsonl.gz"}) {
    INFO(name);
    JsonlSource compressed({dir / name}, small_spacing());
    CHECK(compressed.compressed_index(0).uncompressed_bytes == text.size());
    check_same_records(plain, compressed);
  }
  JsonlSource cat_zstd({dir / "cat.jsonl.zst"}, small_spacing());
  CHECK(cat_zstd.compressed_index(0).streams == 2);
  JsonlSource cat_gzip({dir / "cat.jsonl.gz"}, small_spacing());
  CHECK(cat_gzip.compressed_index(0).streams == 2);
  // msd's writer and the tool decompress to the same bytes.
  write_text(dir / "msd.jsonl.zst", zstd_compress_frames(text, 64 << 10, 3));
  run("zstd -q -d -o " + dir / "msd.out " + dir / "msd.jsonl.zst");
  CHECK(read_text(dir / "msd.out") == text);
  write_text(dir / "msd.jsonl.gz", gzip_compress(text, 6));
  run("gzip -d -c " + dir / "msd.jsonl.gz > " + dir / "msd-gz.out");
  CHECK(read_text(dir / "msd-gz.out") == text);
}

TEST_CASE("corrupt or truncated compressed data is an IoError naming the file and the offset") {
  TempDir dir;
  const std::string text = corpus(800);
  for (const char* name : {"c.jsonl.zst", "c.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    const std::string good =
        compression_of_path(path) == Compression::zstd ? zstd_compress_frames(text, 32 << 10, 3) : gzip_compress(text, 6);
    std::string corrupt = good;
    for (size_t i = good.size() / 2; i < good.size() / 2 + 64; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0xa5);
    write_text(path, corrupt);
    CHECK_THROWS_AS(JsonlSource({path}, {}), IoError);
    CHECK_THROWS_WITH(JsonlSource({path}, {}),
                      Catch::Contains(path) && Catch::Contains("corrupt") && Catch::Contains("compressed offset"));
    write_text(path, good.substr(0, good.size() - 100));
    CHECK_THROWS_WITH(JsonlSource({path}, {}), Catch::Contains(path) && Catch::Contains("ends inside") &&
                                                   Catch::Contains("compressed offset " + std::to_string(good.size() - 100)));
  }
  write_text(dir / "plain-text.jsonl.gz", text.substr(0, 1000));
  CHECK_THROWS_WITH(JsonlSource({dir / "plain-text.jsonl.gz"}, {}),
                    Catch::Contains("plain-text.jsonl.gz") && Catch::Contains("corrupt gzip data"));
}

TEST_CASE("data damaged after indexing is a read_error naming the file and the offsets") {
  // The damage hits the header of the file's second zstd frame or gzip
  // member: a read of the first record after it decodes that header. (Damage inside a
  // frame's data is found where the decoder notices, at the latest by the
  // frame's checksum; a rewrite that keeps size and mtime is trusted, as for
  // plain files.)
  TempDir dir;
  const std::string text = corpus(800);
  const std::string head = text.substr(0, text.find('\n', text.size() / 2) + 1);
  for (const char* name : {"d.jsonl.zst", "d.jsonl.gz"}) {
    INFO(name);
    const std::string path = dir / name;
    const bool zstd = compression_of_path(path) == Compression::zstd;
    write_text(path, zstd ? zstd_compress_frames(head, 0, 3) + zstd_compress_frames(text.substr(head.size()), 0, 3)
                           : gzip_compress(head, 6) + gzip_compress(text.substr(head.size()), 6));
    uint64_t second_stream = 0;
    {
      JsonlSource source({path}, small_spacing());
      REQUIRE(source.compressed_index(0).streams == 2);
      second_stream = (zstd ? zstd_compress_frames(head, 0, 3) : gzip_compress(head, 6)).size();
    }
    damage_in_place(path, second_stream);  // same size and mtime: the cached index is trusted
    JsonlSource again({path}, small_spacing());
    CHECK(again.index_counts().cached == 1);
    RawSample sample;
    again.read(0, sample);  // before the damage
    CHECK(sample.bad == BadKind::none);
    uint64_t first_after = 0;
    while (again.locate(first_after).offset < head.size()) ++first_after;
    REQUIRE(again.locate(first_after).offset == head.size());
    again.read(first_after, sample);
    INFO(sample.reason);
    CHECK(sample.bad == BadKind::read_error);
    CHECK(sample.reason.find(path) != std::string::npos);
    CHECK(sample.reason.find("corrupt") != std::string::npos);
    CHECK(sample.reason.find("compressed offset") != std::string::npos);
    CHECK(sample.reason.find("uncompressed offsets " + std::to_string(head.size())) != std::string::npos);
  }
}

TEST_CASE("a compressed file's index is cached, reused on the next open, and rebuilt after a change") {
  TempDir dir;
  const std::string text = corpus(600);
  const std::string path = dir / "e.jsonl.gz";
  write_text(path, gzip_compress(text, 6));
  write_text(dir / "e.jsonl", text);
  JsonlSource plain({dir / "e.jsonl"}, {});
  size_t points = 0;
  {
    JsonlSource source({path}, small_spacing());
    CHECK(source.index_counts().scanned == 1);
    points = source.compressed_index(0).points.size();
  }
  REQUIRE(file_exists(index_cache_path(path, "")));
  {
    JsonlSource source({path}, small_spacing());
    CHECK(source.index_counts().cached == 1);
    CHECK(source.index_counts().scanned == 0);
    CHECK(source.compressed_index(0).points.size() == points);
    check_same_records(plain, source);
  }
  {
    JsonlSource other_spacing({path}, {});  // 1 MiB: another index
    CHECK(other_spacing.index_counts().scanned == 1);
  }
  write_text(path, gzip_compress(text + "\n{\"text\": \"one more\"}\n", 6));
  JsonlSource changed({path}, {});
  CHECK(changed.index_counts().scanned == 1);
  CHECK(changed.size() == plain.size() + 1);
}
