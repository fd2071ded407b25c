#include "source/wds/wds_source.h"

#include <algorithm>
#include <cctype>

#include "common/log.h"
#include "common/utf8.h"
#include "source/jsonl/json.h"
#include "source/wds/tar.h"

namespace msd {

namespace {

// WebDataset's split of a member path into (key, extension): the key is the
// path up to the first '.' of the basename. False for names without one.
bool split_key(const std::string& name, std::string_view& key, std::string& extension) {
  size_t slash = name.rfind('/');
  size_t base = slash == std::string::npos ? 0 : slash + 1;
  size_t dot = name.find('.', base);
  if (dot == std::string::npos || dot == base) return false;
  key = std::string_view(name).substr(0, dot);
  extension = name.substr(dot + 1);
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return true;
}

std::vector<WdsSource::Entry> scan_shard(std::span<const unsigned char> bytes, WdsSource::ScanEnd& scan_end) {
  using Entry = WdsSource::Entry;
  std::vector<Entry> entries;
  TarScanner scanner(bytes);
  TarMember member;
  std::string current_key;
  std::string_view key;
  std::string extension;
  bool open = false;
  while (scanner.next(member)) {
    if (!split_key(member.name, key, extension)) continue;
    if (!open || key != current_key) {
      entries.emplace_back().first_header = member.header_offset;
      current_key.assign(key);
      open = true;
    }
    Entry& entry = entries.back();
    if (member.truncated) entry.flags |= Entry::truncated;
    if ((extension == "jpg" || extension == "jpeg") && !(entry.flags & Entry::has_image)) {
      entry.flags |= Entry::has_image;
      entry.image_offset = member.data_offset;
      entry.image_bytes = member.size_bytes;
    } else if ((extension == "txt" || extension == "json") &&
               !(entry.flags & (Entry::caption_txt | Entry::caption_json))) {
      entry.flags |= extension == "txt" ? Entry::caption_txt : Entry::caption_json;
      entry.caption_offset = member.data_offset;
      entry.caption_bytes = member.size_bytes;
    }
    if (member.truncated) scan_end.member_bytes = member.size_bytes;
  }
  scan_end.stop = static_cast<uint8_t>(scanner.stop());
  scan_end.offset = scanner.stop_offset();
  return entries;
}

void warn_scan_end(const std::string& path, uint64_t file_bytes, const WdsSource::ScanEnd& end) {
  uint64_t rest = file_bytes - std::min(end.offset, file_bytes);
  switch (static_cast<TarScanner::Stop>(end.stop)) {
    case TarScanner::Stop::none:
    case TarScanner::Stop::end: return;
    case TarScanner::Stop::bad_checksum:
      log_warn(path, ": tar header with a bad checksum at offset ", end.offset, "; ignoring the remaining ", rest,
               " bytes of the shard");
      return;
    case TarScanner::Stop::bad_header:
      log_warn(path, ": unreadable tar header at offset ", end.offset, "; ignoring the remaining ", rest,
               " bytes of the shard");
      return;
    case TarScanner::Stop::truncated:
      log_warn(path, ": shard is truncated: the entry at offset ", end.offset, " runs past the end of the file (",
               file_bytes, " bytes)");
      return;
  }
}

}  // namespace

WdsSource::WdsSource(std::vector<std::string> files, const WdsOptions& options)
    : caption_field_(options.caption_field) {
  shards_.reserve(files.size());
  for (auto& path : files) {
    Shard& shard = shards_.emplace_back();
    shard.path = std::move(path);
    const FileStamp stamp = file_stamp(shard.path);
    shard.size_bytes = stamp.size_bytes;
    if (shard.size_bytes == 0) {
      warn_empty_file(shard.path);
    } else {
      index_shard(shard, stamp, options.cache_dir);
      warn_scan_end(shard.path, shard.size_bytes, shard.scan_end);
    }
    offsets_.add_file(shard.entries.size());
  }
}

void WdsSource::index_shard(Shard& shard, const FileStamp& stamp, const std::string& cache_dir) {
  const std::string cache_path = index_cache_path(shard.path, cache_dir);
  if (auto payload = load_index_cache(cache_path, cache_tag, cache_version, stamp)) {
    PayloadReader reader(*payload);
    std::vector<Entry> entries;
    ScanEnd scan_end;
    if (reader.get_all(entries) && reader.get(scan_end) && reader.at_end()) {
      shard.entries = std::move(entries);
      shard.scan_end = scan_end;
      ++index_counts_.cached;
      return;
    }
  }
  // The map lives for the scan only; samples are read with pread. The stamp
  // was taken before the map: a shard that changed in between is cached under
  // the old stamp (or not at all, when its size moved), so the next open
  // rebuilds it.
  const MappedFile data(shard.path);
  const bool consistent = stamp.size_bytes == data.size();
  shard.size_bytes = data.size();
  shard.entries = scan_shard(data.bytes(), shard.scan_end);
  ++index_counts_.scanned;
  if (consistent) {
    PayloadWriter writer;
    writer.put_all(std::span<const Entry>(shard.entries));
    writer.put(shard.scan_end);
    store_index_cache(cache_path, cache_tag, cache_version, stamp, writer.bytes());
  }
}

uint64_t WdsSource::length_hint(uint64_t index) const {
  auto [shard, local] = offsets_.find(index);
  const Entry& entry = shards_[shard].entries[local];
  return entry.image_bytes + entry.caption_bytes;
}

SampleLocation WdsSource::locate(uint64_t index) const {
  auto [shard, local] = offsets_.find(index);
  return {shards_[shard].path, shards_[shard].entries[local].first_header};
}

void WdsSource::read(uint64_t index, RawSample& out) {
  out.clear();
  out.kind = SampleKind::image_text;
  auto [shard_index, local] = offsets_.find(index);
  const Shard& shard = shards_[shard_index];
  const Entry& entry = shard.entries[local];
  out.where = {shard.path, entry.first_header};
  auto fail = [&](BadKind kind, std::string reason) {
    out.bad = kind;
    out.reason = std::move(reason);
    out.text.clear();
    out.image.clear();
  };
  if (entry.flags & Entry::truncated)
    return fail(BadKind::truncated_member,
                str("member at offset ", shard.scan_end.offset, " of ", shard.path, " declares ",
                    shard.scan_end.member_bytes, " bytes but the shard ends after ", shard.size_bytes, " bytes"));
  bool has_caption = entry.flags & (Entry::caption_txt | Entry::caption_json);
  if (!(entry.flags & Entry::has_image) || !has_caption)
    return fail(BadKind::missing_member, str("sample at offset ", entry.first_header, " of ", shard.path, " has no ",
                                             (entry.flags & Entry::has_image) ? "caption (.txt or .json)"
                                                                              : "image (.jpg or .jpeg)"));
  // The caption is read into a buffer freed after the read (a .txt caption
  // straight into the sample's text).
  std::string json_caption;
  std::string& caption_bytes = entry.flags & Entry::caption_txt ? out.text : json_caption;
  out.image.resize(entry.image_bytes);
  caption_bytes.resize(entry.caption_bytes);
  std::string error;
  if (!reader_.read(shard_index, shard.path, entry.image_offset, out.image.data(), out.image.size(), error) ||
      !reader_.read(shard_index, shard.path, entry.caption_offset, caption_bytes.data(), caption_bytes.size(), error))
    return fail(BadKind::read_error, str(error, " (sample at offset ", entry.first_header,
                                         "; a shard that shrank after indexing ends early)"));
  const std::string_view caption(caption_bytes);
  if (entry.flags & Entry::caption_txt) {
    size_t bad = first_invalid_utf8(caption);
    if (bad < caption.size())
      return fail(BadKind::invalid_utf8, str("caption (.txt at offset ", entry.caption_offset, " of ", shard.path,
                                             ") is not valid UTF-8 at byte ", bad));
    return;
  }
  JsonStatus status;
  JsonFieldResult result = extract_string_field(caption, caption_field_, out.text, status);
  if (result == JsonFieldResult::missing && caption_field_ != "text")
    result = extract_string_field(caption, "text", out.text, status);
  std::string where = str(".json caption at offset ", entry.caption_offset, " of ", shard.path);
  switch (result) {
    case JsonFieldResult::ok: return;
    case JsonFieldResult::invalid_json:
      return fail(BadKind::invalid_json, str(where, ": invalid JSON at byte ", status.offset, ": ", status.message));
    case JsonFieldResult::missing:
      return fail(BadKind::missing_field,
                  str(where, ": no string field '", caption_field_, "' (nor 'text')"));
    case JsonFieldResult::not_string:
      return fail(BadKind::missing_field, str(where, ": ", status.message));
    case JsonFieldResult::invalid_utf8:
      return fail(BadKind::invalid_utf8, str(where, ": invalid UTF-8 at byte ", status.offset, ": ", status.message));
  }
}

uint64_t WdsSource::state_bytes() const {
  uint64_t bytes = sizeof(*this) + offsets_.state_bytes() + caption_field_.capacity();
  for (const auto& shard : shards_)
    bytes += sizeof(Shard) + shard.path.capacity() + shard.entries.capacity() * sizeof(Entry);
  return bytes;
}

}  // namespace msd
