#include "source/jsonl/jsonl_source.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "source/jsonl/json.h"

namespace msd {

void JsonlLineScanner::feed(std::span<const unsigned char> bytes) {
  const unsigned char* data = bytes.data();
  const size_t size = bytes.size();
  size_t pos = 0;
  while (pos < size) {
    const void* newline = std::memchr(data + pos, '\n', size - pos);
    const size_t end = newline != nullptr ? static_cast<size_t>(static_cast<const unsigned char*>(newline) - data) : size;
    for (size_t i = pos; i < end && blank_; ++i) {
      const unsigned char c = data[i];
      blank_ = c == ' ' || c == '\t' || c == '\r';
    }
    if (newline == nullptr) break;
    if (!blank_) starts_.push_back(line_start_);
    line_start_ = fed_ + end + 1;
    blank_ = true;
    pos = end + 1;
  }
  fed_ += size;
}

std::vector<uint64_t> JsonlLineScanner::finish() {
  if (!blank_) starts_.push_back(line_start_);
  starts_.push_back(fed_);
  blank_ = true;
  return std::move(starts_);
}

std::vector<uint64_t> scan_jsonl_lines(std::span<const unsigned char> bytes) {
  JsonlLineScanner scanner;
  scanner.feed(bytes);
  return scanner.finish();
}

JsonlSource::JsonlSource(std::vector<std::string> files, const JsonlOptions& options)
    : text_field_(options.text_field),
      restart_spacing_bytes_(std::max<uint64_t>(options.restart_spacing_bytes, 1)),
      cache_(options.cache_bytes) {
  files_.reserve(files.size());
  for (auto& path : files) {
    File& file = files_.emplace_back();
    file.path = std::move(path);
    const FileStamp stamp = file_stamp(file.path);
    if (stamp.size_bytes == 0) {
      warn_empty_file(file.path);
      file.line_starts = {0};
      offsets_.add_file(0);
      continue;
    }
    index_file(file, stamp, options.cache_dir);
    offsets_.add_file(file.line_starts.size() - 1);
  }
}

void JsonlSource::index_file(File& file, const FileStamp& stamp, const std::string& cache_dir) {
  if (const Compression compression = compression_of_path(file.path); compression != Compression::none)
    return index_compressed_file(file, compression, stamp, cache_dir);
  const std::string cache_path = index_cache_path(file.path, cache_dir);
  if (auto payload = load_index_cache(cache_path, cache_tag, cache_version, stamp)) {
    PayloadReader reader(*payload);
    std::vector<uint64_t> starts;
    if (reader.get_all(starts) && reader.at_end() && !starts.empty() && starts.back() == stamp.size_bytes) {
      file.line_starts = std::move(starts);
      ++index_counts_.cached;
      return;
    }
  }
  // The map lives for the scan only; samples are read with pread. The stamp
  // was taken before the map: a file that changed in between is cached under
  // the old stamp (or not at all, when its size moved), so the next open
  // rebuilds it.
  const MappedFile data(file.path);
  const bool consistent = stamp.size_bytes == data.size();
  file.line_starts = scan_jsonl_lines(data.bytes());
  ++index_counts_.scanned;
  if (consistent) {
    PayloadWriter writer;
    writer.put_all(std::span<const uint64_t>(file.line_starts));
    store_index_cache(cache_path, cache_tag, cache_version, stamp, writer.bytes());
  }
}

bool JsonlSource::load_compressed_cache(File& file, Compression compression, const FileStamp& stamp,
                                        const std::string& cache_path) {
  auto payload = load_index_cache(cache_path, compressed_cache_tag, compressed_cache_version, stamp);
  if (!payload) return false;
  PayloadReader reader(*payload);
  uint32_t cached_compression = 0;
  uint64_t spacing_bytes = 0;
  CompressedIndex index;
  std::vector<uint64_t> starts;
  reader.get(cached_compression);
  reader.get(spacing_bytes);
  reader.get(index.compressed_bytes);
  reader.get(index.uncompressed_bytes);
  reader.get(index.streams);
  reader.get_all(starts);
  reader.get_all(index.points);
  reader.get_all(index.windows);
  if (!reader.ok() || !reader.at_end() || cached_compression != static_cast<uint32_t>(compression) ||
      spacing_bytes != restart_spacing_bytes_ || index.compressed_bytes != stamp.size_bytes || starts.empty() ||
      starts.back() != index.uncompressed_bytes || index.points.empty() || index.points[0].uncompressed_offset != 0)
    return false;
  index.compression = compression;
  file.line_starts = std::move(starts);
  file.compressed = std::move(index);
  return true;
}

// A compressed file is decompressed whole, once, to find its lines and its
// restart points; both are cached together.
void JsonlSource::index_compressed_file(File& file, Compression compression, const FileStamp& stamp,
                                        const std::string& cache_dir) {
  const std::string cache_path = index_cache_path(file.path, cache_dir);
  if (load_compressed_cache(file, compression, stamp, cache_path)) {
    ++index_counts_.cached;
  } else {
    const MappedFile data(file.path);
    JsonlLineScanner scanner;
    file.compressed = index_compressed(file.path, data.bytes(), compression, restart_spacing_bytes_,
                                       [&](std::span<const unsigned char> piece) { scanner.feed(piece); });
    file.line_starts = scanner.finish();
    ++index_counts_.scanned;
    if (stamp.size_bytes == data.size()) {
      const CompressedIndex& index = file.compressed;
      PayloadWriter writer;
      writer.put(static_cast<uint32_t>(compression));
      writer.put(restart_spacing_bytes_);
      writer.put(index.compressed_bytes);
      writer.put(index.uncompressed_bytes);
      writer.put(index.streams);
      writer.put_all(std::span<const uint64_t>(file.line_starts));
      writer.put_all(std::span<const RestartPoint>(index.points));
      writer.put_all(std::span<const unsigned char>(index.windows));
      store_index_cache(cache_path, compressed_cache_tag, compressed_cache_version, stamp, writer.bytes());
    }
  }
  const CompressedIndex& index = file.compressed;
  if (index.points.size() == 1 && index.uncompressed_bytes >= 4 * restart_spacing_bytes_)
    log_warn(file.path, " is one ", compression_name(compression), " stream of ", index.uncompressed_bytes >> 20,
             " MiB: every record read decompresses it from its start (write it in frames of a few MiB, e.g. "
             "msd-datagen --compress zst or pzstd, for random access)");
}

uint64_t JsonlSource::length_hint(uint64_t index) const {
  auto [file, local] = offsets_.find(index);
  const auto& starts = files_[file].line_starts;
  return starts[local + 1] - starts[local];
}

SampleLocation JsonlSource::locate(uint64_t index) const {
  auto [file, local] = offsets_.find(index);
  return {files_[file].path, files_[file].line_starts[local]};
}

void JsonlSource::read(uint64_t index, RawSample& out) {
  out.clear();
  out.kind = SampleKind::text;
  auto [file_index, local] = offsets_.find(index);
  const File& file = files_[file_index];
  uint64_t start = file.line_starts[local];
  uint64_t limit = file.line_starts[local + 1];
  out.where = {file.path, start};
  std::string region;  // freed after the read: no source keeps its longest line
  std::string error;
  if (!read_region(file_index, start, limit, region, error)) {
    out.bad = BadKind::read_error;
    out.reason = file.compressed.compression != Compression::none
                     ? str(error, " (the line indexed at uncompressed offset ", start, ")")
                     : str(error, " (the line indexed at offset ", start, "; a file that shrank after indexing ends early)");
    return;
  }
  std::string_view line(region);
  line = line.substr(0, line.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

  JsonStatus status;
  switch (extract_string_field(line, text_field_, out.text, status)) {
    case JsonFieldResult::ok: return;
    case JsonFieldResult::invalid_json:
      out.bad = BadKind::invalid_json;
      out.reason = str("invalid JSON at byte ", status.offset, " of the line: ", status.message);
      return;
    case JsonFieldResult::missing:
    case JsonFieldResult::not_string:
      out.bad = BadKind::missing_field;
      out.reason = status.message;
      return;
    case JsonFieldResult::invalid_utf8:
      out.bad = BadKind::invalid_utf8;
      out.reason = str("invalid UTF-8 at byte ", status.offset, " of the line: ", status.message);
      out.text.clear();
      return;
  }
}

bool JsonlSource::read_region(size_t number, uint64_t start, uint64_t limit, std::string& region, std::string& error) {
  const File& file = files_[number];
  const CompressedIndex& index = file.compressed;
  if (index.compression != Compression::none && cache_.capacity_bytes() > 0) {
    const auto point = std::upper_bound(index.points.begin(), index.points.end(), start,
                                        [](uint64_t v, const RestartPoint& p) { return v < p.uncompressed_offset; });
    const uint64_t end = point == index.points.end() ? index.uncompressed_bytes : point->uncompressed_offset;
    if (end - (point - 1)->uncompressed_offset <= cache_.capacity_bytes() / 8)
      return read_cached(number, start, limit, region, error);
  }
  region.resize(limit - start);
  if (index.compression != Compression::none) {
    uncached_reads_.fetch_add(1, std::memory_order_relaxed);
    return read_decompressed(reader_, number, file.path, index, start, region.data(), region.size(), error);
  }
  return reader_.read(number, file.path, start, region.data(), region.size(), error);
}

// Through the cache: each restart interval the bytes span, decompressed whole.
bool JsonlSource::read_cached(size_t number, uint64_t start, uint64_t limit, std::string& region, std::string& error) {
  const File& file = files_[number];
  const CompressedIndex& index = file.compressed;
  size_t point = static_cast<size_t>(&index.point_before(start) - index.points.data());
  region.clear();
  for (uint64_t at = start; at < limit; ++point) {
    if (point >= index.points.size()) {
      error = str(file.path, ": the data ends at uncompressed offset ", index.uncompressed_bytes);
      return false;
    }
    const uint64_t begin = index.points[point].uncompressed_offset;
    const uint64_t end = point + 1 < index.points.size() ? index.points[point + 1].uncompressed_offset : index.uncompressed_bytes;
    const auto interval = cache_.get(static_cast<uint64_t>(number) << 32 | point, [&] {
      auto made = std::make_shared<DecompressedInterval>();
      made->bytes.resize(end - begin);
      if (!read_decompressed(reader_, number, file.path, index, begin, made->bytes.data(), made->bytes.size(), error))
        made.reset();
      return std::shared_ptr<const DecompressedInterval>(std::move(made));
    });
    if (!interval) return false;
    const uint64_t upto = std::min(limit, end);
    region.append(interval->bytes, at - begin, upto - at);
    at = upto;
  }
  return true;
}

uint64_t JsonlSource::state_bytes() const {
  uint64_t bytes = sizeof(*this) + offsets_.state_bytes() + text_field_.capacity() + cache_.bytes();
  for (const auto& file : files_)
    bytes += sizeof(File) + file.path.capacity() + file.line_starts.capacity() * sizeof(uint64_t) +
             file.compressed.state_bytes();
  return bytes;
}

}  // namespace msd
