// Index caches of the readers that must scan their data to index it (jsonl
// line offsets, wds tar members). A cache is built on the first open of a file
// and reused by later opens while the file's size and mtime are unchanged.
//
// Where a cache lives (index_cache_path):
//   - SourceOptions::cache_dir when set, under a name derived from the data
//     file's absolute path ("<basename>.<hash of the path>.msdidx");
//   - else beside the data file, in its folder's hidden `.msd/`, as
//     "<file>.msdidx" when that folder is writable (no source glob matches
//     it: msd never reads its own files as data, docs/errors.md);
//   - else in $HOME/.cache/msd under the derived name.
//
// Cache file layout (little-endian, the host's; caches are not portable):
//   8 bytes  magic "MSDINDEX"
//   u32      format tag (which reader wrote it), u32 format version
//   u64      data file size in bytes, i64 data file mtime in ns
//   u64      payload bytes, then the payload
//   u64      Digest of the payload (a torn or damaged cache is rebuilt)
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "common/files.h"

namespace msd {

// How the per-file indexes of one open source were obtained.
struct IndexCounts {
  uint32_t scanned = 0;  // files whose index was built by reading the data
  uint32_t cached = 0;   // files whose index came from a valid cache
};

// Where the cache of `data_path` lives (see above); creates the cache
// directory when needed. Empty when no writable place exists.
std::string index_cache_path(const std::string& data_path, const std::string& cache_dir);

// The cache's payload when `cache_path` holds a cache of (format_tag,
// version) for a data file with exactly `stamp`; nullopt otherwise (missing,
// stale, damaged: the caller rebuilds).
std::optional<std::vector<unsigned char>> load_index_cache(const std::string& cache_path, uint32_t format_tag,
                                                           uint32_t version, const FileStamp& stamp);

// Writes a cache atomically. A failure is logged as a warning, not thrown: the
// cache only saves time.
void store_index_cache(const std::string& cache_path, uint32_t format_tag, uint32_t version,
                       const FileStamp& stamp, std::span<const unsigned char> payload);

// Bundles: the caches of a list of data files (a loader's share of a source's
// files, or all of them) in one file, so that opening a source of 10,000
// shards reads a few files instead of 10,000 (docs/formats.md, "Index
// caches"). A bundle holds each file's cache as stored (its own header and
// digest), under the cache's path:
//   8 bytes  magic "MSDBUNDL", u32 version 1, u64 records
//   per record: u64 path bytes, the cache path, u64 cache bytes, the cache file's bytes
//   u64      Digest of everything before it (a torn or damaged bundle is ignored)
// Each record is checked against its data file's stamp as a cache file is, so
// a stale record is rebuilt and never used; a bundle only saves time.
//
// The bundle of `files` (in this order): beside the first file's cache
// (index_cache_path), named after it and a digest of every file's absolute
// path; empty when no writable place exists.
std::string index_bundle_path(const std::vector<std::string>& files, const std::string& cache_dir);

// While one is alive on a thread, the index caches that thread's readers load
// are looked up first in the bundles it read, and every cache they load or
// store is collected, for write_bundle. Not shared between threads; scopes
// nest (the inner one is used).
class IndexCacheScope {
 public:
  IndexCacheScope();
  ~IndexCacheScope();
  IndexCacheScope(const IndexCacheScope&) = delete;
  IndexCacheScope& operator=(const IndexCacheScope&) = delete;

  // Reads the bundle at `path` (missing: nothing; damaged: a warning).
  void read_bundle(const std::string& path);
  // Writes the caches collected so far as the bundle at `path`, atomically
  // (a failure is a warning). Nothing when `path` is empty.
  void write_bundle(const std::string& path) const;
  // Caches collected that did not come from a bundle: those read from their
  // own files or built.
  size_t outside_bundles() const { return outside_; }

  // For load_index_cache / store_index_cache: the active scope of this thread, or null.
  static IndexCacheScope* active();
  const std::vector<unsigned char>* bundled(const std::string& cache_path) const;
  void collect(const std::string& cache_path, std::vector<unsigned char> bytes, bool from_bundle);

 private:
  IndexCacheScope* outer_;
  std::map<std::string, std::vector<unsigned char>> bundled_;    // cache path -> cache bytes, from bundles
  std::map<std::string, std::vector<unsigned char>> collected_;  // cache path -> cache bytes, loaded or stored
  size_t outside_ = 0;
};

// Appends / reads trivially copyable values to / from a payload.
class PayloadWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const unsigned char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put_all(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(values.size());
    const auto* p = reinterpret_cast<const unsigned char*>(values.data());
    bytes_.insert(bytes_.end(), p, p + values.size_bytes());
  }
  std::span<const unsigned char> bytes() const { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

// Reads what PayloadWriter wrote; every read is bounds-checked and a short
// payload makes ok() false instead of reading past the end.
class PayloadReader {
 public:
  explicit PayloadReader(std::span<const unsigned char> bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!ok_ || bytes_.size() - pos_ < sizeof(T)) return ok_ = false;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool get_all(std::vector<T>& values) {
    uint64_t count = 0;
    if (!get(count)) return false;
    if (count > (bytes_.size() - pos_) / sizeof(T)) return ok_ = false;
    values.resize(count);
    if (count > 0) std::memcpy(values.data(), bytes_.data() + pos_, count * sizeof(T));  // data() may be null
    pos_ += count * sizeof(T);
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  std::span<const unsigned char> bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The file-order index of a multi-file source: files in sorted order, each
// contributing a count of samples; global index = prefix sum + local index.
class FileOffsets {
 public:
  struct Position {
    size_t file;
    uint64_t local;
  };

  void add_file(uint64_t samples) { starts_.push_back(total_), total_ += samples; }
  uint64_t total() const { return total_; }
  size_t files() const { return starts_.size(); }
  uint64_t first_of(size_t file) const { return starts_[file]; }
  // Samples of each file, in order.
  std::vector<uint64_t> samples_per_file() const;
  // REQUIRES: index < total().
  Position find(uint64_t index) const;
  uint64_t state_bytes() const { return starts_.capacity() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
};

// Logs the warning for a zero-length data file (it contributes no samples).
void warn_empty_file(const std::string& path);

}  // namespace msd
