#include "source/jsonl/jsonl_source.h"

#include <cstring>

#include "common/log.h"
#include "source/jsonl/json.h"

namespace msd {

std::vector<uint64_t> scan_jsonl_lines(std::span<const unsigned char> bytes) {
  std::vector<uint64_t> starts;
  const unsigned char* data = bytes.data();
  size_t size = bytes.size();
  size_t pos = 0;
  while (pos < size) {
    const void* newline = std::memchr(data + pos, '\n', size - pos);
    size_t end = newline != nullptr ? static_cast<size_t>(static_cast<const unsigned char*>(newline) - data) : size;
    bool blank = true;
    for (size_t i = pos; i < end && blank; ++i) {
      unsigned char c = data[i];
      blank = c == ' ' || c == '\t' || c == '\r';
    }
    if (!blank) starts.push_back(pos);
    pos = end + 1;
  }
  starts.push_back(size);
  return starts;
}

JsonlSource::JsonlSource(std::vector<std::string> files, const JsonlOptions& options)
    : text_field_(options.text_field) {
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
  std::string region(limit - start, '\0');  // freed after the read: no source keeps its longest line
  if (std::string error; !reader_.read(file_index, file.path, start, region.data(), region.size(), error)) {
    out.bad = BadKind::read_error;
    out.reason = str(error, " (the line indexed at offset ", start, "; a file that shrank after indexing ends early)");
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

uint64_t JsonlSource::state_bytes() const {
  uint64_t bytes = sizeof(*this) + offsets_.state_bytes() + text_field_.capacity();
  for (const auto& file : files_)
    bytes += sizeof(File) + file.path.capacity() + file.line_starts.capacity() * sizeof(uint64_t);
  return bytes;
}

}  // namespace msd
