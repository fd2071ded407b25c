#include "source/index_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/digest.h"
#include "common/log.h"

namespace msd {

namespace {

constexpr char cache_magic[8] = {'M', 'S', 'D', 'I', 'N', 'D', 'E', 'X'};

bool ensure_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  return std::filesystem::is_directory(dir, error) && ::access(dir.c_str(), W_OK) == 0;
}

std::string derived_name(const std::string& data_path) {
  std::error_code error;
  std::string absolute = std::filesystem::absolute(data_path, error).lexically_normal().string();
  if (error) absolute = data_path;
  Digest digest;
  digest.update(absolute.data(), absolute.size());
  return str(std::filesystem::path(data_path).filename().string(), ".", digest.hex(), kIndexCacheSuffix);
}

}  // namespace

std::string index_cache_path(const std::string& data_path, const std::string& cache_dir) {
  if (!cache_dir.empty()) {
    if (ensure_directory(cache_dir)) return join_path(cache_dir, derived_name(data_path));
    log_warn("index cache directory ", cache_dir, " is not writable; indexes of ", data_path,
             " will not be cached");
    return {};
  }
  std::string dir = std::filesystem::path(data_path).parent_path().string();
  if (dir.empty()) dir = ".";
  // A hidden folder: no source glob (`*`, `*.jsonl`) matches its files.
  if (::access(dir.c_str(), W_OK) == 0 && ensure_directory(join_path(dir, kIndexCacheFolder)))
    return join_path(join_path(dir, kIndexCacheFolder),
                     std::filesystem::path(data_path).filename().string() + kIndexCacheSuffix);
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    std::string home_cache = join_path(join_path(home, ".cache"), "msd");
    if (ensure_directory(home_cache)) return join_path(home_cache, derived_name(data_path));
  }
  log_warn("no writable place for the index cache of ", data_path, "; it will be rebuilt on every open");
  return {};
}

std::optional<std::vector<unsigned char>> load_index_cache(const std::string& cache_path, uint32_t format_tag,
                                                           uint32_t version, const FileStamp& stamp) {
  if (cache_path.empty() || !file_exists(cache_path)) return std::nullopt;
  std::vector<unsigned char> bytes;
  try {
    bytes = read_file(cache_path);
  } catch (const IoError& error) {
    log_warn("ignoring unreadable index cache: ", error.what());
    return std::nullopt;
  }
  PayloadReader reader(bytes);
  char magic[8];
  uint32_t tag = 0, cached_version = 0;
  uint64_t size_bytes = 0, payload_bytes = 0;
  int64_t mtime_ns = 0;
  for (char& c : magic) reader.get(c);
  reader.get(tag);
  reader.get(cached_version);
  reader.get(size_bytes);
  reader.get(mtime_ns);
  reader.get(payload_bytes);
  if (!reader.ok() || std::memcmp(magic, cache_magic, sizeof magic) != 0 || tag != format_tag ||
      cached_version != version)
    return std::nullopt;
  if (size_bytes != stamp.size_bytes || mtime_ns != stamp.mtime_ns) return std::nullopt;
  constexpr size_t header_bytes = 8 + 4 + 4 + 8 + 8 + 8;
  // Compared without adding the file's payload_bytes, which could wrap.
  if (bytes.size() < header_bytes + sizeof(uint64_t) || payload_bytes != bytes.size() - header_bytes - sizeof(uint64_t))
    return std::nullopt;
  Digest digest;
  digest.update(bytes.data() + header_bytes, payload_bytes);
  uint64_t stored_digest = 0;
  std::memcpy(&stored_digest, bytes.data() + header_bytes + payload_bytes, sizeof stored_digest);
  if (stored_digest != digest.value()) {
    log_warn("index cache ", cache_path, " is damaged; rebuilding it");
    return std::nullopt;
  }
  return std::vector<unsigned char>(bytes.begin() + header_bytes, bytes.begin() + header_bytes + payload_bytes);
}

void store_index_cache(const std::string& cache_path, uint32_t format_tag, uint32_t version,
                       const FileStamp& stamp, std::span<const unsigned char> payload) {
  if (cache_path.empty()) return;
  PayloadWriter writer;
  for (char c : cache_magic) writer.put(c);
  writer.put(format_tag);
  writer.put(version);
  writer.put(stamp.size_bytes);
  writer.put(stamp.mtime_ns);
  writer.put(uint64_t{payload.size()});
  std::vector<unsigned char> bytes(writer.bytes().begin(), writer.bytes().end());
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  Digest digest;
  digest.update(payload.data(), payload.size());
  uint64_t value = digest.value();
  const auto* p = reinterpret_cast<const unsigned char*>(&value);
  bytes.insert(bytes.end(), p, p + sizeof value);
  try {
    write_file_atomic(cache_path, bytes);
  } catch (const IoError& error) {
    log_warn("cannot write index cache (the index will be rebuilt next time): ", error.what());
  }
}

FileOffsets::Position FileOffsets::find(uint64_t index) const {
  MSD_CHECK_LT(index, total_);
  // The last file whose first sample is <= index; empty files share their
  // start with the next file and are skipped by upper_bound.
  auto it = std::upper_bound(starts_.begin(), starts_.end(), index);
  size_t file = static_cast<size_t>(it - starts_.begin()) - 1;
  return {file, index - starts_[file]};
}

void warn_empty_file(const std::string& path) {
  log_warn(path, " is empty (0 bytes); it contributes no samples");
}

}  // namespace msd
