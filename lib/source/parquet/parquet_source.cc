#include "source/parquet/parquet_source.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "common/utf8.h"

namespace msd {

namespace {

std::string option_or(const std::string& option, const char* role) { return option.empty() ? std::string(role) : option; }

std::string column_list(const ParquetFooter& footer) {
  std::string names;
  for (const auto& column : footer.columns) names += (names.empty() ? "" : ", ") + column.path;
  return names;
}

// The column `name` of `footer`, checked to be a flat byte array.
const ParquetColumnInfo& find_column(const ParquetFooter& footer, const std::string& name, const std::string& option,
                                     const std::string& path) {
  const int found = footer.find(name);
  if (found < 0)
    throw ConfigError(str(path, " has no column '", name, "' (its columns: ", column_list(footer), "); ", option,
                          " names the column to read"));
  const ParquetColumnInfo& column = footer.columns[static_cast<size_t>(found)];
  if (column.type != static_cast<int32_t>(ParquetType::byte_array))
    throw ConfigError(str(path, ": column '", name, "' holds ", parquet_type_name(column.type),
                          " values, not byte arrays (strings or binary); ", option, " names the column to read"));
  if (column.max_repetition_level > 0)
    throw ConfigError(str(path, ": column '", name, "' is repeated (a list); msd reads one value per row (", option, ")"));
  return column;
}

}  // namespace

ParquetSource::ParquetSource(std::vector<std::string> files, const ParquetOptions& options)
    : options_(options), cache_(options.cache_bytes) {
  files_.reserve(files.size());
  for (auto& path : files) {
    File& file = files_.emplace_back();
    file.path = std::move(path);
    const FileStamp stamp = file_stamp(file.path);
    if (stamp.size_bytes == 0) {
      warn_empty_file(file.path);
      file.row_starts = {0};
      offsets_.add_file(0);
      continue;
    }
    index_file(file, files_.size() - 1, stamp);
    offsets_.add_file(file.row_starts.back());
  }
}

void ParquetSource::index_file(File& file, size_t number, const FileStamp& stamp) {
  const std::string cache_path = index_cache_path(file.path, options_.cache_dir);
  if (load_cache(file, stamp, cache_path)) {
    ++index_counts_.cached;
    return;
  }
  // The footer: its length and magic in the last 8 bytes, then the footer.
  std::string error;
  unsigned char tail[kParquetTailBytes];
  if (stamp.size_bytes < kParquetTailBytes)
    throw IoError(str(file.path, ": ", stamp.size_bytes, " bytes, too short for a Parquet file (truncated?)"));
  if (!reader_.read(number, file.path, stamp.size_bytes - kParquetTailBytes, tail, sizeof tail, error))
    throw IoError(error);
  const uint64_t footer_bytes = parquet_footer_bytes(tail, stamp.size_bytes, file.path);
  const uint64_t data_end = stamp.size_bytes - kParquetTailBytes - footer_bytes;
  std::vector<unsigned char> metadata(footer_bytes);
  if (!reader_.read(number, file.path, data_end, metadata.data(), metadata.size(), error)) throw IoError(error);
  take_footer(file, parse_parquet_footer(metadata, data_end, file.path));
  ++index_counts_.scanned;
  store_cache(file, stamp, cache_path);
}

void ParquetSource::take_footer(File& file, const ParquetFooter& footer) {
  const bool images = !options_.image_column.empty();
  const std::string text_option = option_or(options_.text_option, images ? "the caption column" : "the text column");
  file.text = find_column(footer, options_.text_column, text_option, file.path);
  if (images) file.image = find_column(footer, options_.image_column, option_or(options_.image_option, "the image column"), file.path);
  const size_t text = static_cast<size_t>(footer.find(options_.text_column));
  const size_t image = images ? static_cast<size_t>(footer.find(options_.image_column)) : 0;
  file.row_starts = {0};
  for (size_t g = 0; g < footer.row_groups.size(); ++g) {
    const ParquetRowGroupInfo& group = footer.row_groups[g];
    if (group.rows > kMaxRowGroupRows)
      throw IoError(str(file.path, ": row group ", g, " holds ", group.rows, " rows, more than msd reads in one (",
                        kMaxRowGroupRows, "); write smaller row groups"));
    for (size_t c : images ? std::vector<size_t>{text, image} : std::vector<size_t>{text}) {
      const ParquetChunk& chunk = group.chunks[c];
      const std::string where = str(file.path, ": row group ", g, ", column '", footer.columns[c].path, "'");
      if (!parquet_codec_supported(chunk.codec))
        throw IoError(str(where, ": codec ", parquet_codec_name(chunk.codec),
                          ", which msd does not read (UNCOMPRESSED, SNAPPY, GZIP and ZSTD are read)"));
      if (chunk.values != group.rows)
        throw IoError(str(where, ": ", chunk.values, " values for the row group's ", group.rows, " rows"));
    }
    file.text_chunks.push_back(group.chunks[text]);
    if (images) file.image_chunks.push_back(group.chunks[image]);
    file.row_starts.push_back(file.row_starts.back() + group.rows);
  }
}

bool ParquetSource::load_cache(File& file, const FileStamp& stamp, const std::string& cache_path) {
  auto payload = load_index_cache(cache_path, cache_tag, cache_version, stamp);
  if (!payload) return false;
  PayloadReader in(*payload);
  std::vector<char> text_name, image_name;
  int32_t text_levels = 0, image_levels = 0;
  std::vector<uint64_t> starts;
  std::vector<ParquetChunk> text, image;
  in.get_all(text_name);
  in.get_all(image_name);
  in.get(text_levels);
  in.get(image_levels);
  in.get_all(starts);
  in.get_all(text);
  in.get_all(image);
  const bool images = !options_.image_column.empty();
  if (!in.ok() || !in.at_end() || std::string(text_name.begin(), text_name.end()) != options_.text_column ||
      std::string(image_name.begin(), image_name.end()) != options_.image_column || starts.empty() ||
      starts.size() != text.size() + 1 || image.size() != (images ? text.size() : 0))
    return false;
  file.row_starts = std::move(starts);
  file.text_chunks = std::move(text);
  file.image_chunks = std::move(image);
  file.text = {options_.text_column, static_cast<int32_t>(ParquetType::byte_array), text_levels, 0};
  if (images) file.image = {options_.image_column, static_cast<int32_t>(ParquetType::byte_array), image_levels, 0};
  return true;
}

void ParquetSource::store_cache(const File& file, const FileStamp& stamp, const std::string& cache_path) {
  PayloadWriter out;
  out.put_all(std::span<const char>(options_.text_column));
  out.put_all(std::span<const char>(options_.image_column));
  out.put(file.text.max_definition_level);
  out.put(file.image.max_definition_level);
  out.put_all(std::span<const uint64_t>(file.row_starts));
  out.put_all(std::span<const ParquetChunk>(file.text_chunks));
  out.put_all(std::span<const ParquetChunk>(file.image_chunks));
  store_index_cache(cache_path, cache_tag, cache_version, stamp, out.bytes());
}

// Reads and decodes the needed column chunks of one row group; null with
// `error` naming the file, the row group, the column and what failed.
std::shared_ptr<const ParquetRowGroup> ParquetSource::decode(size_t number, size_t row_group, std::string& error) {
  const File& file = files_[number];
  auto group = std::make_shared<ParquetRowGroup>();
  std::vector<unsigned char> stored;
  for (int part = 0; part < (options_.image_column.empty() ? 1 : 2); ++part) {
    const ParquetChunk& chunk = part == 0 ? file.text_chunks[row_group] : file.image_chunks[row_group];
    const ParquetColumnInfo& column = part == 0 ? file.text : file.image;
    ParquetValues& values = part == 0 ? group->text : group->image;
    std::string why;
    stored.resize(chunk.compressed_bytes);
    if (!reader_.read(number, file.path, chunk.offset, stored.data(), stored.size(), why)) {
      error = str(why, " (row group ", row_group, ", column '", column.path, "')");
      return nullptr;
    }
    if (!decode_parquet_chunk(stored, chunk, column, values, why) || values.rows.size() != chunk.values) {
      error = str(file.path, ": row group ", row_group, ", column '", column.path, "': ", why);
      return nullptr;
    }
  }
  if (group->memory_bytes() > cache_.capacity_bytes() && !warned_big_group_.exchange(true))
    log_warn(file.path, ": row group ", row_group, " decodes to ", group->memory_bytes(),
             " bytes, more than the decoded row groups a reader keeps (", cache_.capacity_bytes(),
             " bytes: source.NAME.cache_mib): every read of its rows decodes it again; raise the bound or write "
             "smaller row groups");
  return group;
}

uint64_t ParquetSource::length_hint(uint64_t index) const {
  auto [number, local] = offsets_.find(index);
  const File& file = files_[number];
  const size_t g = static_cast<size_t>(std::upper_bound(file.row_starts.begin(), file.row_starts.end(), local) -
                                       file.row_starts.begin() - 1);
  const uint64_t rows = file.row_starts[g + 1] - file.row_starts[g];
  uint64_t bytes = file.text_chunks[g].uncompressed_bytes;
  if (!file.image_chunks.empty()) bytes += file.image_chunks[g].uncompressed_bytes;
  return std::max<uint64_t>(1, bytes / std::max<uint64_t>(rows, 1));
}

SampleLocation ParquetSource::locate(uint64_t index) const {
  auto [number, local] = offsets_.find(index);
  return {files_[number].path, local};
}

void ParquetSource::read(uint64_t index, RawSample& out) {
  out.clear();
  out.kind = kind();
  auto [number, local] = offsets_.find(index);
  const File& file = files_[number];
  const size_t g = static_cast<size_t>(std::upper_bound(file.row_starts.begin(), file.row_starts.end(), local) -
                                       file.row_starts.begin() - 1);
  const uint64_t row = local - file.row_starts[g];
  out.where = {file.path, local};
  std::string error;
  const auto group = cache_.get(static_cast<uint64_t>(number) << 32 | g, [&] { return decode(number, g, error); });
  if (!group) {
    out.bad = BadKind::read_error;
    out.reason = error;
    return;
  }
  const auto where = [&] { return str(" (row group ", g, ", row ", row, ")"); };
  if (group->text.is_null(row) || (!file.image_chunks.empty() && group->image.is_null(row))) {
    out.bad = BadKind::missing_field;
    out.reason = str("null in column '", group->text.is_null(row) ? file.text.path : file.image.path, "'", where());
    return;
  }
  const std::string_view text = group->text.value(row);
  if (const size_t bad = first_invalid_utf8(text); bad < text.size()) {
    out.bad = BadKind::invalid_utf8;
    out.reason = str("invalid UTF-8 at byte ", bad, " of column '", file.text.path, "'", where());
    return;
  }
  out.text.assign(text);
  if (!file.image_chunks.empty()) out.image.assign(group->image.value(row));
}

uint64_t ParquetSource::state_bytes() const {
  uint64_t bytes = sizeof(*this) + offsets_.state_bytes() + cache_.bytes();
  for (const auto& file : files_)
    bytes += sizeof(File) + file.path.capacity() + file.row_starts.capacity() * sizeof(uint64_t) +
             (file.text_chunks.capacity() + file.image_chunks.capacity()) * sizeof(ParquetChunk);
  return bytes;
}

}  // namespace msd
