// Files for the source readers' tests: write and read them back, cut them,
// stamp them, and build the records each format holds.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/json_writer.h"
#include "source/format.h"
#include "source/source.h"
#include "source/wds/tar.h"

namespace msd::test {

inline void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

inline std::string read_text(const std::string& path) {
  auto bytes = read_file(path);
  return {bytes.begin(), bytes.end()};
}

inline void truncate_to(const std::string& path, uint64_t bytes) { REQUIRE(::truncate(path.c_str(), static_cast<off_t>(bytes)) == 0); }

// Sets a file's mtime back to `stamp` (to rewrite data "invisibly").
inline void restore_mtime(const std::string& path, const FileStamp& stamp) {
  timespec times[2];
  times[0].tv_sec = stamp.mtime_ns / 1000000000;
  times[0].tv_nsec = stamp.mtime_ns % 1000000000;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

inline SourceConfig source_config(const std::string& format, const std::string& path) {
  SourceConfig config;
  config.name = "test";
  config.format = format_named(format);
  config.path = path;
  return config;
}

inline std::string json_line(const std::string& text) {
  std::string line = "{\"id\": 1, \"text\": ";
  append_json_string(line, text);
  line += ", \"meta\": {\"tags\": [1, 2.5e3, true, null]}}\n";
  return line;
}

// Whether this process maps `path` (/proc/self/maps: a mapped file's pages
// count in the process's resident set).
inline bool is_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  REQUIRE(maps.good());
  const std::string absolute = std::filesystem::absolute(path).lexically_normal().string();
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= absolute.size() && line.compare(line.size() - absolute.size(), absolute.size(), absolute) == 0)
      return true;
  return false;
}

// Pretend JPEG bytes: the readers never decode images.
inline std::string fake_jpeg(int i) { return std::string("\xff\xd8\xff\xe0", 4) + std::string(100 + i * 37, char('a' + i % 26)); }

struct ShardSample {
  std::string key;
  std::string image;    // empty: no image member
  std::string caption;  // the expected caption
};

// Writes samples as key.jpg + key.txt (plus an ignored key.cls).
inline std::vector<ShardSample> write_simple_shard(const std::string& path, int first, int count) {
  std::vector<ShardSample> samples;
  TarWriter writer(path);
  for (int i = first; i < first + count; ++i) {
    ShardSample sample{"s/" + std::to_string(1000 + i), fake_jpeg(i), "caption " + std::to_string(i)};
    writer.add(sample.key + ".jpg", sample.image);
    writer.add(sample.key + ".cls", std::to_string(i % 3));
    writer.add(sample.key + ".txt", sample.caption);
    samples.push_back(sample);
  }
  writer.finish();
  return samples;
}

inline std::vector<std::vector<int32_t>> make_documents(int count, int32_t max_token, uint32_t seed) {
  std::vector<std::vector<int32_t>> documents;
  uint64_t state = seed;
  for (int d = 0; d < count; ++d) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::vector<int32_t> tokens((state >> 33) % 50);  // some documents are empty
    for (auto& token : tokens) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      token = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(max_token));
    }
    documents.push_back(std::move(tokens));
  }
  return documents;
}

// Where a cache lives beside its data file: in the folder's hidden .msd/.
inline std::string cache_beside(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / ".msd" / (p.filename().string() + ".msdidx")).string();
}

}  // namespace msd::test
