#include "source/parquet/parquet_writer.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "source/parquet/thrift.h"

namespace msd {

namespace {

void put_u32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}

void put_uleb(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Definition levels (0 null, 1 present) as RLE runs of the hybrid.
std::string encode_levels(const std::vector<uint8_t>& levels) {
  std::string out;
  for (size_t i = 0; i < levels.size();) {
    size_t end = i;
    while (end < levels.size() && levels[end] == levels[i]) ++end;
    put_uleb(out, (end - i) << 1);
    out.push_back(static_cast<char>(levels[i]));
    i = end;
  }
  return out;
}

// Dictionary indices: the bit width, then bit-packed groups of eight.
std::string encode_indices(const std::vector<uint32_t>& indices, int width) {
  std::string out(1, static_cast<char>(width));
  const size_t groups = (indices.size() + 7) / 8;
  if (groups == 0) return out;
  put_uleb(out, groups << 1 | 1);
  std::string packed(groups * static_cast<size_t>(width), '\0');
  for (size_t i = 0; i < indices.size(); ++i)
    for (int b = 0; b < width; ++b)
      if (indices[i] >> b & 1) {
        const size_t bit = i * static_cast<size_t>(width) + static_cast<size_t>(b);
        packed[bit >> 3] = static_cast<char>(packed[bit >> 3] | 1 << (bit & 7));
      }
  return out + packed;
}

void put_plain(std::string& out, std::string_view value) {
  put_u32(out, static_cast<uint32_t>(value.size()));
  out.append(value);
}

struct ChunkWritten {
  uint64_t offset = 0, dictionary_offset = 0, data_offset = 0;
  uint64_t compressed = 0, uncompressed = 0, values = 0;
  bool dictionary = false;
};

class ChunkWriter {
 public:
  ChunkWriter(std::string& file, const ParquetWriteOptions& options) : file_(file), options_(options) {}

  ChunkWritten write(const std::vector<std::optional<std::string>>& values, size_t begin, size_t end) {
    ChunkWritten chunk;
    chunk.offset = file_.size();
    chunk.values = end - begin;
    chunk.dictionary = options_.dictionary;
    std::unordered_map<std::string_view, uint32_t> ids;
    std::vector<std::string_view> entries;
    if (options_.dictionary) {
      for (size_t r = begin; r < end; ++r)
        if (values[r] && ids.emplace(*values[r], static_cast<uint32_t>(entries.size())).second)
          entries.push_back(*values[r]);
      std::string page;
      for (std::string_view entry : entries) put_plain(page, entry);
      chunk.dictionary_offset = file_.size();
      page_out(2, page, static_cast<int32_t>(entries.size()), 0, chunk);
    }
    chunk.data_offset = file_.size();
    int width = 1;
    while (entries.size() > (uint64_t{1} << width)) ++width;
    for (size_t first = begin; first < end;) {
      std::vector<uint8_t> levels;
      std::vector<uint32_t> indices;
      std::string plain;
      uint64_t bytes = 0;
      size_t r = first;
      for (; r < end && (r == first || bytes < options_.page_bytes); ++r) {
        levels.push_back(values[r] ? 1 : 0);
        if (!values[r]) continue;
        bytes += values[r]->size() + 4;
        if (options_.dictionary) indices.push_back(ids.at(*values[r]));
        else put_plain(plain, *values[r]);
      }
      const std::string encoded_levels = encode_levels(levels);
      std::string page;
      put_u32(page, static_cast<uint32_t>(encoded_levels.size()));
      page += encoded_levels;
      page += options_.dictionary ? encode_indices(indices, width) : plain;
      page_out(0, page, static_cast<int32_t>(r - first), options_.dictionary ? 8 : 0, chunk);
      first = r;
    }
    return chunk;
  }

 private:
  // One page: its header (type 0 data page v1, 2 dictionary page) and bytes.
  void page_out(int32_t type, const std::string& page, int32_t values, int32_t encoding, ChunkWritten& chunk) {
    const std::string stored = compress_parquet_page(options_.codec, page, options_.level);
    ThriftWriter header;
    header.begin_struct();
    header.field_i32(1, type);
    header.field_i32(2, static_cast<int32_t>(page.size()));
    header.field_i32(3, static_cast<int32_t>(stored.size()));
    header.field_struct(type == 0 ? 5 : 7);
    header.field_i32(1, values);
    header.field_i32(2, encoding);
    if (type == 0) {
      header.field_i32(3, static_cast<int32_t>(ParquetEncoding::rle));
      header.field_i32(4, static_cast<int32_t>(ParquetEncoding::rle));
    }
    header.end_struct();
    header.end_struct();
    file_ += header.bytes();
    file_ += stored;
    chunk.compressed += header.bytes().size() + stored.size();
    chunk.uncompressed += header.bytes().size() + page.size();
  }

  std::string& file_;
  const ParquetWriteOptions& options_;
};

void write_column_meta(ThriftWriter& out, const std::string& name, const ChunkWritten& chunk, int32_t codec) {
  out.field_struct(3);  // ColumnMetaData
  out.field_i32(1, static_cast<int32_t>(ParquetType::byte_array));
  std::vector<int32_t> encodings{static_cast<int32_t>(ParquetEncoding::plain), static_cast<int32_t>(ParquetEncoding::rle)};
  if (chunk.dictionary) encodings.push_back(static_cast<int32_t>(ParquetEncoding::rle_dictionary));
  out.field_list(2, ThriftType::i32, static_cast<uint32_t>(encodings.size()));
  for (int32_t e : encodings) out.element_i32(e);
  out.field_list(3, ThriftType::binary, 1);
  out.element_string(name);
  out.field_i32(4, codec);
  out.field_i64(5, static_cast<int64_t>(chunk.values));
  out.field_i64(6, static_cast<int64_t>(chunk.uncompressed));
  out.field_i64(7, static_cast<int64_t>(chunk.compressed));
  out.field_i64(9, static_cast<int64_t>(chunk.data_offset));
  if (chunk.dictionary) out.field_i64(11, static_cast<int64_t>(chunk.dictionary_offset));
  out.end_struct();
}

void write_schema(ThriftWriter& out, const std::vector<ParquetWriteColumn>& columns) {
  out.field_list(2, ThriftType::structure, static_cast<uint32_t>(columns.size() + 1));
  out.element_struct();
  out.field_string(4, "schema");
  out.field_i32(5, static_cast<int32_t>(columns.size()));
  out.end_struct();
  for (const auto& column : columns) {
    out.element_struct();
    out.field_i32(1, static_cast<int32_t>(ParquetType::byte_array));
    out.field_i32(3, 1);  // OPTIONAL
    out.field_string(4, column.name);
    if (column.utf8) out.field_i32(6, 0);  // converted type UTF8
    out.end_struct();
  }
}

}  // namespace

std::string write_parquet(const std::vector<ParquetWriteColumn>& columns, const ParquetWriteOptions& options) {
  if (!parquet_codec_supported(options.codec)) throw Error(str("msd does not write codec ", parquet_codec_name(options.codec)));
  const size_t rows = columns.empty() ? 0 : columns.front().values.size();
  for (const auto& column : columns)
    if (column.values.size() != rows) throw Error(str("column '", column.name, "' has ", column.values.size(), " rows, not ", rows));
  const size_t group_rows = static_cast<size_t>(std::max<uint64_t>(options.row_group_rows, 1));
  std::string file = "PAR1";
  ChunkWriter writer(file, options);
  std::vector<std::vector<ChunkWritten>> groups;
  for (size_t first = 0; first < rows; first += group_rows) {
    auto& group = groups.emplace_back();
    for (const auto& column : columns) group.push_back(writer.write(column.values, first, std::min(rows, first + group_rows)));
  }
  ThriftWriter footer;
  footer.begin_struct();
  footer.field_i32(1, 1);  // version
  write_schema(footer, columns);
  footer.field_i64(3, static_cast<int64_t>(rows));
  footer.field_list(4, ThriftType::structure, static_cast<uint32_t>(groups.size()));
  for (size_t g = 0; g < groups.size(); ++g) {
    footer.element_struct();
    footer.field_list(1, ThriftType::structure, static_cast<uint32_t>(columns.size()));
    uint64_t bytes = 0;
    for (size_t c = 0; c < columns.size(); ++c) {
      const ChunkWritten& chunk = groups[g][c];
      bytes += chunk.uncompressed;
      footer.element_struct();
      footer.field_i64(2, static_cast<int64_t>(chunk.offset));
      write_column_meta(footer, columns[c].name, chunk, options.codec);
      footer.end_struct();
    }
    footer.field_i64(2, static_cast<int64_t>(bytes));
    footer.field_i64(3, static_cast<int64_t>(std::min(rows - g * group_rows, group_rows)));
    footer.end_struct();
  }
  footer.field_string(6, "msd");
  footer.end_struct();
  file += footer.bytes();
  put_u32(file, static_cast<uint32_t>(footer.bytes().size()));
  file += "PAR1";
  return file;
}

}  // namespace msd
