#include "source/index_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "common/digest.h"
#include "common/log.h"

namespace msd {

namespace {

constexpr char cache_magic[8] = {'M', 'S', 'D', 'I', 'N', 'D', 'E', 'X'};

// Directories found writable (or made) before: a source of 10,000 files
// asks for the same one 10,000 times.
std::mutex known_mutex;
std::set<std::string> known_writable;

bool ensure_directory(const std::string& dir) {
  {
    std::lock_guard lock(known_mutex);
    if (known_writable.count(dir)) return true;
  }
  Storage& storage = default_storage();
  try {
    storage.make_dirs(dir);
  } catch (const IoError&) {
    return false;
  }
  const bool writable = storage.can_write(dir);
  if (writable) {
    std::lock_guard lock(known_mutex);
    known_writable.insert(dir);
  }
  return writable;
}

thread_local IndexCacheScope* active_scope = nullptr;

// Appends the Digest of `digested` to `bytes`; `digested` may view `bytes`
// itself (it is digested before `bytes` grows).
void append_digest(std::vector<unsigned char>& bytes, std::span<const unsigned char> digested) {
  Digest digest;
  digest.update(digested.data(), digested.size());
  const uint64_t value = digest.value();
  const auto* p = reinterpret_cast<const unsigned char*>(&value);
  bytes.insert(bytes.end(), p, p + sizeof value);
}

constexpr char bundle_magic[8] = {'M', 'S', 'D', 'B', 'U', 'N', 'D', 'L'};
constexpr uint32_t bundle_version = 1;

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
  if (default_storage().can_write(dir) && ensure_directory(join_path(dir, kIndexCacheFolder)))
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

namespace {

// The payload of a cache's bytes when they hold a cache of (format_tag,
// version) for a data file with exactly `stamp`.
std::optional<std::vector<unsigned char>> cache_payload(const std::vector<unsigned char>& bytes,
                                                        const std::string& cache_path, uint32_t format_tag,
                                                        uint32_t version, const FileStamp& stamp) {
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

}  // namespace

std::optional<std::vector<unsigned char>> load_index_cache(const std::string& cache_path, uint32_t format_tag,
                                                           uint32_t version, const FileStamp& stamp) {
  if (cache_path.empty()) return std::nullopt;
  IndexCacheScope* scope = IndexCacheScope::active();
  if (scope != nullptr)
    if (const std::vector<unsigned char>* bytes = scope->bundled(cache_path))
      if (auto payload = cache_payload(*bytes, cache_path, format_tag, version, stamp)) {
        scope->collect(cache_path, *bytes, true);
        return payload;
      }
  std::vector<unsigned char> bytes;
  try {
    Storage& storage = default_storage();
    if (!storage.exists(cache_path)) return std::nullopt;
    bytes = storage.read_all(cache_path);
  } catch (const IoError& error) {
    log_warn("ignoring unreadable index cache: ", error.what());
    return std::nullopt;
  }
  auto payload = cache_payload(bytes, cache_path, format_tag, version, stamp);
  if (payload && scope != nullptr) scope->collect(cache_path, std::move(bytes), false);
  return payload;
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
  append_digest(bytes, payload);
  try {
    default_storage().write_atomic(cache_path, bytes);
  } catch (const IoError& error) {
    log_warn("cannot write index cache (the index will be rebuilt next time): ", error.what());
  }
  if (IndexCacheScope* scope = IndexCacheScope::active()) scope->collect(cache_path, std::move(bytes), false);
}

std::string index_bundle_path(const std::vector<std::string>& files, const std::string& cache_dir) {
  if (files.empty()) return {};
  const std::string first = index_cache_path(files.front(), cache_dir);
  if (first.empty()) return {};
  Digest digest;
  digest.update_u64(files.size());
  for (const std::string& file : files) {
    std::error_code error;
    std::string absolute = std::filesystem::absolute(file, error).lexically_normal().string();
    if (error) absolute = file;
    digest.update(absolute.data(), absolute.size() + 1);  // with the NUL: "ab","c" is not "a","bc"
  }
  const std::string stem = first.substr(0, first.size() - std::strlen(kIndexCacheSuffix));
  return str(stem, ".", digest.hex(), ".bundle", kIndexCacheSuffix);
}

IndexCacheScope::IndexCacheScope() : outer_(active_scope) { active_scope = this; }
IndexCacheScope::~IndexCacheScope() { active_scope = outer_; }
IndexCacheScope* IndexCacheScope::active() { return active_scope; }

const std::vector<unsigned char>* IndexCacheScope::bundled(const std::string& cache_path) const {
  const auto it = bundled_.find(cache_path);
  return it == bundled_.end() ? nullptr : &it->second;
}

void IndexCacheScope::collect(const std::string& cache_path, std::vector<unsigned char> bytes, bool from_bundle) {
  if (!from_bundle) ++outside_;
  collected_[cache_path] = std::move(bytes);
}

void IndexCacheScope::read_bundle(const std::string& path) {
  if (path.empty()) return;
  std::vector<unsigned char> bytes;
  try {
    Storage& storage = default_storage();
    if (!storage.exists(path)) return;
    bytes = storage.read_all(path);
  } catch (const IoError& error) {
    log_warn("ignoring unreadable index bundle: ", error.what());
    return;
  }
  if (bytes.size() < sizeof(bundle_magic) + sizeof(uint64_t)) return;
  const size_t body = bytes.size() - sizeof(uint64_t);
  Digest digest;
  digest.update(bytes.data(), body);
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  PayloadReader reader(std::span<const unsigned char>(bytes.data(), body));
  char magic[8];
  uint32_t version = 0;
  uint64_t records = 0;
  for (char& c : magic) reader.get(c);
  reader.get(version);
  reader.get(records);
  if (stored != digest.value() || !reader.ok() || std::memcmp(magic, bundle_magic, sizeof magic) != 0 ||
      version != bundle_version) {
    log_warn("index bundle ", path, " is damaged or of another version; ignoring it");
    return;
  }
  for (uint64_t r = 0; r < records && reader.ok(); ++r) {
    std::vector<char> name;
    std::vector<unsigned char> cache;
    if (reader.get_all(name) && reader.get_all(cache)) bundled_[std::string(name.begin(), name.end())] = std::move(cache);
  }
}

void IndexCacheScope::write_bundle(const std::string& path) const {
  if (path.empty()) return;
  PayloadWriter writer;
  for (char c : bundle_magic) writer.put(c);
  writer.put(bundle_version);
  writer.put(uint64_t{collected_.size()});
  for (const auto& [cache_path, bytes] : collected_) {
    writer.put_all(std::span<const char>(cache_path.data(), cache_path.size()));
    writer.put_all(std::span<const unsigned char>(bytes));
  }
  std::vector<unsigned char> out(writer.bytes().begin(), writer.bytes().end());
  append_digest(out, out);
  try {
    default_storage().write_atomic(path, out);
  } catch (const IoError& error) {
    log_warn("cannot write index bundle (the per-file caches are used): ", error.what());
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

std::vector<uint64_t> FileOffsets::samples_per_file() const {
  std::vector<uint64_t> samples(starts_.size());
  for (size_t f = 0; f < starts_.size(); ++f) samples[f] = (f + 1 < starts_.size() ? starts_[f + 1] : total_) - starts_[f];
  return samples;
}

void warn_empty_file(const std::string& path) {
  log_warn(path, " is empty (0 bytes); it contributes no samples");
}

}  // namespace msd
