#include "source/parquet/parquet_file.h"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "source/jsonl/compressed.h"
#include "source/parquet/thrift.h"

namespace msd {

namespace {

// parquet.thrift's PageType.
enum PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

// No page of a column this reader serves is bigger: a damaged header cannot
// make it allocate more.
constexpr uint64_t kMaxPageBytes = uint64_t{1} << 31;
// Nor does one column chunk decode to more (a DELTA_BYTE_ARRAY page can
// repeat a long prefix at no cost).
constexpr uint64_t kMaxDecodedBytes = uint64_t{4} << 30;
// Nor does a page hold more values (writers cut pages at 20000 rows or so):
// a damaged count cannot make a page's levels take gigabytes.
constexpr int64_t kMaxPageValues = int64_t{1} << 24;

uint32_t load_u32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// --- the footer ----------------------------------------------------------------

struct SchemaElement {
  int32_t type = -1;
  int32_t repetition = 0;  // 0 required, 1 optional, 2 repeated
  std::string name;
  int32_t children = 0;
};

SchemaElement read_schema_element(ThriftReader& in) {
  SchemaElement e;
  in.begin_struct();
  int16_t id;
  ThriftType type;
  while (in.next_field(id, type)) {
    if (id == 1) e.type = in.read_i32(type);
    else if (id == 3) e.repetition = in.read_i32(type);
    else if (id == 4) e.name = in.read_string(type);
    else if (id == 5) e.children = in.read_i32(type);
    else in.skip(type);
  }
  return e;
}

// The schema's leaves, depth-first: element 0 is the root, a group's
// children follow it.
std::vector<ParquetColumnInfo> schema_columns(const std::vector<SchemaElement>& schema) {
  if (schema.empty()) throw ThriftError("the schema is empty");
  std::vector<ParquetColumnInfo> columns;
  struct Frame {
    int32_t children_left;
    std::string path;
    int32_t definition, repetition;
  };
  std::vector<Frame> stack{{schema[0].children, "", 0, 0}};
  for (size_t i = 1; i < schema.size(); ++i) {
    while (!stack.empty() && stack.back().children_left == 0) stack.pop_back();
    if (stack.empty()) throw ThriftError(str("schema element ", i, " belongs to no group"));
    Frame& parent = stack.back();
    --parent.children_left;
    const SchemaElement& e = schema[i];
    if (e.repetition < 0 || e.repetition > 2 || e.children < 0)
      throw ThriftError(str("schema element '", e.name, "' is malformed"));
    const std::string path = parent.path.empty() ? e.name : parent.path + "." + e.name;
    const int32_t definition = parent.definition + (e.repetition != 0);
    const int32_t repetition = parent.repetition + (e.repetition == 2);
    if (e.children > 0) {
      stack.push_back({e.children, path, definition, repetition});
    } else {
      columns.push_back({path, e.type, definition, repetition});
    }
  }
  return columns;
}

struct ChunkMeta {
  bool has_meta = false;
  bool external = false;  // file_path set: the chunk lives in another file
  int32_t codec = 0;
  int64_t values = 0, uncompressed = 0, compressed = 0;
  int64_t data_page = -1, dictionary_page = -1;
};

void read_column_meta(ThriftReader& in, ChunkMeta& m) {
  in.begin_struct();
  int16_t id;
  ThriftType type;
  m.has_meta = true;
  while (in.next_field(id, type)) {
    switch (id) {
      case 4: m.codec = in.read_i32(type); break;
      case 5: m.values = in.read_i64(type); break;
      case 6: m.uncompressed = in.read_i64(type); break;
      case 7: m.compressed = in.read_i64(type); break;
      case 9: m.data_page = in.read_i64(type); break;
      case 11: m.dictionary_page = in.read_i64(type); break;
      default: in.skip(type);
    }
  }
}

ChunkMeta read_column_chunk(ThriftReader& in) {
  ChunkMeta m;
  in.begin_struct();
  int16_t id;
  ThriftType type;
  while (in.next_field(id, type)) {
    if (id == 1) m.external = !in.read_string(type).empty();
    else if (id == 3) read_column_meta(in, m);
    else in.skip(type);
  }
  return m;
}

struct RowGroupMeta {
  int64_t rows = -1;
  std::vector<ChunkMeta> chunks;
};

RowGroupMeta read_row_group(ThriftReader& in) {
  RowGroupMeta g;
  in.begin_struct();
  int16_t id;
  ThriftType type;
  while (in.next_field(id, type)) {
    if (id == 1) {
      ThriftType element;
      const uint32_t size = in.begin_list(type, element);
      for (uint32_t i = 0; i < size; ++i) g.chunks.push_back(read_column_chunk(in));
    } else if (id == 3) {
      g.rows = in.read_i64(type);
    } else {
      in.skip(type);
    }
  }
  return g;
}

// A chunk's place in the file, checked against the data before the footer.
ParquetChunk checked_chunk(const ChunkMeta& m, uint64_t data_end, const std::string& where) {
  if (!m.has_meta || m.external)
    throw IoError(str(where, ": ", m.external ? "its data is in another file (file_path), which msd does not read"
                                              : "no column metadata"));
  // Some writers store dictionary_page_offset 0 for "none", or one past the
  // data pages; the chunk starts at the smaller valid one.
  int64_t start = m.data_page;
  if (m.dictionary_page > 0 && m.dictionary_page < start) start = m.dictionary_page;
  if (start < 4 || m.compressed < 0 || m.uncompressed < 0 || m.values < 0 ||
      static_cast<uint64_t>(start) > data_end || static_cast<uint64_t>(m.compressed) > data_end - start)
    throw IoError(str(where, ": its chunk (bytes ", start, " to ", start + m.compressed,
                      ") lies outside the file's data (bytes 4 to ", data_end, "): truncated or damaged"));
  ParquetChunk chunk;
  chunk.offset = static_cast<uint64_t>(start);
  chunk.compressed_bytes = static_cast<uint64_t>(m.compressed);
  chunk.uncompressed_bytes = static_cast<uint64_t>(m.uncompressed);
  chunk.values = static_cast<uint64_t>(m.values);
  chunk.codec = m.codec;
  return chunk;
}

// --- values ------------------------------------------------------------------------

bool fail(std::string& error, std::string why) {
  error = std::move(why);
  return false;
}

// Bits [bit, bit + width) of `data` (width <= 64), least significant first:
// the order of Parquet's bit packing. REQUIRES: the bits lie inside data.
uint64_t bits_at(const unsigned char* data, uint64_t bit, int width) {
  uint64_t value = 0;
  int got = 0;
  const unsigned char* p = data + (bit >> 3);
  int shift = static_cast<int>(bit & 7);
  while (got < width) {
    const int take = std::min(8 - shift, width - got);
    value |= static_cast<uint64_t>((*p >> shift) & ((1u << take) - 1)) << got;
    got += take;
    shift = 0;
    ++p;
  }
  return value;
}

bool read_uleb(std::span<const unsigned char> data, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && pos < data.size(); shift += 7) {
    const unsigned char b = data[pos++];
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// DELTA_BINARY_PACKED integers from data[pos]; pos ends after them.
bool decode_delta_binary(std::span<const unsigned char> data, size_t& pos, uint64_t max_values,
                         std::vector<int64_t>& out, std::string& error) {
  uint64_t block = 0, miniblocks = 0, total = 0, first = 0;
  if (!read_uleb(data, pos, block) || !read_uleb(data, pos, miniblocks) || !read_uleb(data, pos, total) ||
      !read_uleb(data, pos, first))
    return fail(error, "a DELTA_BINARY_PACKED header runs past the page");
  if (block == 0 || block % 128 != 0 || miniblocks == 0 || block % miniblocks != 0 || (block / miniblocks) % 32 != 0 ||
      total > max_values)
    return fail(error, str("a DELTA_BINARY_PACKED header is malformed (block ", block, ", miniblocks ", miniblocks,
                           ", values ", total, ")"));
  const uint64_t per_miniblock = block / miniblocks;
  out.clear();
  if (total == 0) return true;
  uint64_t value = (first >> 1) ^ (~(first & 1) + 1);  // zigzag
  out.push_back(static_cast<int64_t>(value));
  while (out.size() < total) {
    uint64_t min_delta = 0;
    if (!read_uleb(data, pos, min_delta) || data.size() - pos < miniblocks)
      return fail(error, "a DELTA_BINARY_PACKED block runs past the page");
    min_delta = (min_delta >> 1) ^ (~(min_delta & 1) + 1);
    const unsigned char* widths = data.data() + pos;
    pos += miniblocks;
    for (uint64_t m = 0; m < miniblocks && out.size() < total; ++m) {
      const int width = widths[m];
      if (width > 64) return fail(error, str("a DELTA_BINARY_PACKED miniblock of bit width ", width));
      const uint64_t bytes = per_miniblock * width / 8;
      if (data.size() - pos < bytes) return fail(error, "a DELTA_BINARY_PACKED miniblock runs past the page");
      for (uint64_t i = 0; i < per_miniblock && out.size() < total; ++i) {
        value += min_delta + (width == 0 ? 0 : bits_at(data.data() + pos, i * width, width));
        out.push_back(static_cast<int64_t>(value));
      }
      pos += bytes;
    }
  }
  return true;
}

// Appends one stored value; returns its number.
uint32_t add_value(ParquetValues& out, const unsigned char* data, size_t bytes) {
  out.bytes.append(reinterpret_cast<const char*>(data), bytes);
  out.ends.push_back(out.bytes.size());
  return static_cast<uint32_t>(out.ends.size() - 1);
}

// PLAIN byte arrays: `count` values, each a u32 length and its bytes.
bool decode_plain(std::span<const unsigned char> data, size_t count, ParquetValues& out, std::vector<uint32_t>& ids,
                  std::string& error) {
  size_t pos = 0;
  for (size_t i = 0; i < count; ++i) {
    if (data.size() - pos < 4) return fail(error, str("PLAIN value ", i, " of ", count, " runs past the page"));
    const uint32_t length = load_u32(data.data() + pos);
    pos += 4;
    if (data.size() - pos < length)
      return fail(error, str("PLAIN value ", i, " of ", count, " (", length, " bytes) runs past the page"));
    ids.push_back(add_value(out, data.data() + pos, length));
    pos += length;
  }
  return true;
}

bool decode_delta_strings(std::span<const unsigned char> data, size_t count, bool with_prefixes, ParquetValues& out,
                          std::vector<uint32_t>& ids, std::string& error) {
  size_t pos = 0;
  std::vector<int64_t> prefixes, lengths;
  if (with_prefixes && !decode_delta_binary(data, pos, count, prefixes, error)) return false;
  if (!decode_delta_binary(data, pos, count, lengths, error)) return false;
  if (lengths.size() < count || (with_prefixes && prefixes.size() < count))
    return fail(error, str("a DELTA page holds ", lengths.size(), " lengths for ", count, " values"));
  std::string previous, value;
  for (size_t i = 0; i < count; ++i) {
    const int64_t prefix = with_prefixes ? prefixes[i] : 0;
    const int64_t length = lengths[i];
    if (prefix < 0 || length < 0 || static_cast<uint64_t>(prefix) > previous.size() ||
        static_cast<uint64_t>(length) > data.size() - pos)
      return fail(error, str("DELTA value ", i, " of ", count, " (prefix ", prefix, ", ", length,
                             " bytes) does not fit its page"));
    if (out.bytes.size() + static_cast<uint64_t>(prefix) + static_cast<uint64_t>(length) > kMaxDecodedBytes)
      return fail(error, str("a DELTA page decodes to more than ", kMaxDecodedBytes >> 30, " GiB"));
    value.assign(previous, 0, static_cast<size_t>(prefix));
    value.append(reinterpret_cast<const char*>(data.data() + pos), static_cast<size_t>(length));
    pos += static_cast<size_t>(length);
    ids.push_back(add_value(out, reinterpret_cast<const unsigned char*>(value.data()), value.size()));
    if (with_prefixes) previous.swap(value);
  }
  return true;
}

// --- pages ---------------------------------------------------------------------------

struct PageHeader {
  int32_t type = -1;
  int64_t uncompressed = -1, compressed = -1;
  int32_t values = -1, encoding = -1, definition_encoding = -1;
  int32_t definition_bytes = -1, repetition_bytes = -1;  // v2
  bool v2_compressed = true;
};

void read_page_header(ThriftReader& in, PageHeader& h) {
  in.begin_struct();
  int16_t id;
  ThriftType type;
  while (in.next_field(id, type)) {
    if (id == 1) h.type = in.read_i32(type);
    else if (id == 2) h.uncompressed = in.read_i32(type);
    else if (id == 3) h.compressed = in.read_i32(type);
    else if (id == 5 || id == 7 || id == 8) {  // data page v1, dictionary page, data page v2
      in.begin_struct();
      int16_t sub;
      ThriftType sub_type;
      while (in.next_field(sub, sub_type)) {
        if (sub == 1) h.values = in.read_i32(sub_type);
        else if (id == 5 && sub == 2) h.encoding = in.read_i32(sub_type);
        else if (id == 5 && sub == 3) h.definition_encoding = in.read_i32(sub_type);
        else if (id == 7 && sub == 2) h.encoding = in.read_i32(sub_type);
        else if (id == 8 && sub == 4) h.encoding = in.read_i32(sub_type);
        else if (id == 8 && sub == 5) h.definition_bytes = in.read_i32(sub_type);
        else if (id == 8 && sub == 6) h.repetition_bytes = in.read_i32(sub_type);
        else if (id == 8 && sub == 7) h.v2_compressed = in.read_bool(sub_type);
        else in.skip(sub_type);
      }
    } else {
      in.skip(type);
    }
  }
}

int bit_width_of(uint64_t max_value) {
  int width = 0;
  while (max_value >> width) ++width;
  return width;
}

// The state of one chunk's decoding.
struct ChunkDecoder {
  ChunkDecoder(const ParquetChunk& c, const ParquetColumnInfo& col, ParquetValues& o, std::string& e)
      : chunk(c), column(col), out(o), error(e) {}
  const ParquetChunk& chunk;
  const ParquetColumnInfo& column;
  ParquetValues& out;
  std::string& error;
  bool has_dictionary = false;
  uint32_t dictionary_first = 0, dictionary_size = 0;
  std::vector<unsigned char> page;      // a decompressed page
  std::vector<uint32_t> levels, ids;    // scratch

  // The page's bytes decompressed (a view of `stored` when uncompressed).
  bool expand(std::span<const unsigned char> stored, int64_t bytes, bool compressed,
              std::span<const unsigned char>& view) {
    if (bytes < 0 || static_cast<uint64_t>(bytes) > kMaxPageBytes)
      return fail(error, str("a page claims ", bytes, " bytes decompressed"));
    if (!compressed || chunk.codec == static_cast<int32_t>(ParquetCodec::uncompressed)) {
      if (stored.size() != static_cast<uint64_t>(bytes))
        return fail(error, str("an uncompressed page of ", stored.size(), " bytes claims ", bytes));
      view = stored;
      return true;
    }
    page.resize(static_cast<size_t>(bytes));
    if (!decompress_parquet_page(chunk.codec, stored, page, error)) return false;
    view = page;
    return true;
  }

  bool dictionary_page(const PageHeader& h, std::span<const unsigned char> stored) {
    if (has_dictionary || !out.rows.empty()) return fail(error, "a dictionary page after the chunk's first page");
    if (h.encoding != static_cast<int32_t>(ParquetEncoding::plain) &&
        h.encoding != static_cast<int32_t>(ParquetEncoding::plain_dictionary))
      return fail(error, str("a dictionary page in encoding ", h.encoding, " (PLAIN expected)"));
    if (h.values < 0 || h.values > kMaxPageValues)
      return fail(error, str("a dictionary page of ", h.values, " values (msd reads at most ", kMaxPageValues, " a page)"));
    std::span<const unsigned char> data;
    if (!expand(stored, h.uncompressed, true, data)) return false;
    dictionary_first = static_cast<uint32_t>(out.ends.size());
    ids.clear();
    if (!decode_plain(data, static_cast<size_t>(h.values), out, ids, error)) return false;
    dictionary_size = static_cast<uint32_t>(h.values);
    has_dictionary = true;
    return true;
  }

  // The values of a data page (after its levels): `count` non-null ones.
  bool values(std::span<const unsigned char> data, int32_t encoding, size_t count) {
    ids.clear();
    ids.reserve(count);
    switch (static_cast<ParquetEncoding>(encoding)) {
      case ParquetEncoding::plain: return decode_plain(data, count, out, ids, error);
      case ParquetEncoding::delta_length_byte_array: return decode_delta_strings(data, count, false, out, ids, error);
      case ParquetEncoding::delta_byte_array: return decode_delta_strings(data, count, true, out, ids, error);
      case ParquetEncoding::plain_dictionary:
      case ParquetEncoding::rle_dictionary: {
        if (!has_dictionary) return fail(error, "dictionary indices without a dictionary page");
        if (count == 0) return true;
        if (data.empty() || data[0] > 32) return fail(error, "dictionary indices without a valid bit width");
        ids.resize(count);
        if (!decode_rle_hybrid(data.subspan(1), data[0], count, ids.data(), error)) return false;
        for (uint32_t& id : ids) {
          if (id >= dictionary_size)
            return fail(error, str("dictionary index ", id, " of a dictionary of ", dictionary_size));
          id += dictionary_first;
        }
        return true;
      }
      default: break;
    }
    return fail(error, str("values in encoding ", encoding,
                           ", which msd does not read (PLAIN, RLE_DICTIONARY, PLAIN_DICTIONARY, DELTA_BYTE_ARRAY "
                           "and DELTA_LENGTH_BYTE_ARRAY are read)"));
  }

  // Rows from the levels and the values' ids.
  bool place_rows(size_t count) {
    const int32_t max = column.max_definition_level;
    size_t next = 0;
    for (size_t i = 0; i < count; ++i) {
      const bool present = max == 0 || levels[i] == static_cast<uint32_t>(max);
      if (max > 0 && levels[i] > static_cast<uint32_t>(max))
        return fail(error, str("definition level ", levels[i], " above the column's maximum ", max));
      out.rows.push_back(present ? ids[next++] : ParquetValues::kNull);
    }
    return true;
  }

  bool data_page(const PageHeader& h, std::span<const unsigned char> stored) {
    if (h.values < 0 || h.values > kMaxPageValues)
      return fail(error, str("a data page of ", h.values, " values (msd reads at most ", kMaxPageValues, " a page)"));
    const size_t count = static_cast<size_t>(h.values);
    if (count > chunk.values - out.rows.size())
      return fail(error, str("a data page of ", count, " values after ", out.rows.size(), " of the chunk's ", chunk.values));
    const int width = bit_width_of(static_cast<uint64_t>(column.max_definition_level));
    levels.assign(count, 0);
    std::span<const unsigned char> data;
    if (h.type == kDataPage) {
      if (!expand(stored, h.uncompressed, true, data)) return false;
      if (width > 0) {
        if (h.definition_encoding != static_cast<int32_t>(ParquetEncoding::rle))
          return fail(error, str("definition levels in encoding ", h.definition_encoding, " (RLE expected)"));
        if (data.size() < 4 || load_u32(data.data()) > data.size() - 4)
          return fail(error, "the definition levels run past the page");
        const uint32_t bytes = load_u32(data.data());
        if (!decode_rle_hybrid(data.subspan(4, bytes), width, count, levels.data(), error)) return false;
        data = data.subspan(4 + size_t{bytes});
      }
    } else {
      const int64_t level_bytes = int64_t{h.definition_bytes} + h.repetition_bytes;
      if (h.definition_bytes < 0 || h.repetition_bytes != 0 || static_cast<uint64_t>(level_bytes) > stored.size())
        return fail(error, str("a v2 page's levels (", h.definition_bytes, " + ", h.repetition_bytes,
                               " bytes) do not fit it"));
      if (width > 0 &&
          !decode_rle_hybrid(stored.subspan(0, static_cast<size_t>(h.definition_bytes)), width, count, levels.data(), error))
        return false;
      if (!expand(stored.subspan(static_cast<size_t>(level_bytes)), h.uncompressed - level_bytes, h.v2_compressed, data))
        return false;
    }
    size_t present = 0;
    for (size_t i = 0; i < count; ++i) present += width == 0 || levels[i] == static_cast<uint32_t>(column.max_definition_level);
    return values(data, h.encoding, present) && place_rows(count);
  }
};

}  // namespace

const char* parquet_codec_name(int32_t codec) {
  static const char* const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? names[codec] : "unknown";
}

const char* parquet_type_name(int32_t type) {
  static const char* const names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                                      "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type < 8 ? names[type] : "a group";
}

bool parquet_codec_supported(int32_t codec) {
  switch (static_cast<ParquetCodec>(codec)) {
    case ParquetCodec::uncompressed:
    case ParquetCodec::snappy:
    case ParquetCodec::gzip:
    case ParquetCodec::zstd: return true;
    default: return false;
  }
}

int ParquetFooter::find(std::string_view path) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i].path == path) return static_cast<int>(i);
  return -1;
}

uint64_t parquet_footer_bytes(std::span<const unsigned char> tail, uint64_t file_bytes, const std::string& path) {
  if (file_bytes < 12 || tail.size() < kParquetTailBytes)
    throw IoError(str(path, ": ", file_bytes, " bytes, too short for a Parquet file (truncated?)"));
  const unsigned char* magic = tail.data() + tail.size() - 4;
  if (std::memcmp(magic, "PARE", 4) == 0)
    throw IoError(str(path, ": an encrypted Parquet footer (PARE), which msd does not read"));
  if (std::memcmp(magic, "PAR1", 4) != 0)
    throw IoError(str(path, ": does not end in PAR1: not a Parquet file, or truncated"));
  const uint64_t footer = load_u32(tail.data() + tail.size() - 8);
  if (footer > file_bytes - 12)
    throw IoError(str(path, ": the footer's length (", footer, " bytes) does not fit the file's ", file_bytes,
                      " bytes: truncated or damaged"));
  return footer;
}

ParquetFooter parse_parquet_footer(std::span<const unsigned char> metadata, uint64_t data_end, const std::string& path) {
  ParquetFooter footer;
  std::vector<RowGroupMeta> groups;
  try {
    ThriftReader in(metadata);
    std::vector<SchemaElement> schema;
    int64_t rows = -1;
    in.begin_struct();
    int16_t id;
    ThriftType type;
    while (in.next_field(id, type)) {
      ThriftType element;
      if (id == 2) {
        const uint32_t size = in.begin_list(type, element);
        for (uint32_t i = 0; i < size; ++i) schema.push_back(read_schema_element(in));
      } else if (id == 3) {
        rows = in.read_i64(type);
      } else if (id == 4) {
        const uint32_t size = in.begin_list(type, element);
        for (uint32_t i = 0; i < size; ++i) groups.push_back(read_row_group(in));
      } else if (id == 6) {
        footer.created_by = in.read_string(type);
      } else {
        in.skip(type);
      }
    }
    footer.columns = schema_columns(schema);
    if (rows < 0) throw ThriftError("no row count");
    footer.rows = static_cast<uint64_t>(rows);
  } catch (const ThriftError& e) {
    throw IoError(str(path, ": the footer is damaged: ", e.what()));
  }
  uint64_t rows = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].rows < 0 || groups[g].chunks.size() != footer.columns.size())
      throw IoError(str(path, ": row group ", g, " is malformed (", groups[g].rows, " rows, ", groups[g].chunks.size(),
                        " column chunks for ", footer.columns.size(), " columns)"));
    ParquetRowGroupInfo& info = footer.row_groups.emplace_back();
    info.rows = static_cast<uint64_t>(groups[g].rows);
    rows += info.rows;
    for (size_t c = 0; c < footer.columns.size(); ++c)
      info.chunks.push_back(
          checked_chunk(groups[g].chunks[c], data_end, str(path, ": row group ", g, ", column '", footer.columns[c].path, "'")));
  }
  if (rows != footer.rows)
    throw IoError(str(path, ": the row groups hold ", rows, " rows, the footer says ", footer.rows));
  return footer;
}

bool decode_rle_hybrid(std::span<const unsigned char> data, int bit_width, size_t count, uint32_t* out,
                       std::string& error) {
  if (bit_width < 0 || bit_width > 32) return fail(error, str("an RLE run of bit width ", bit_width));
  size_t pos = 0, done = 0;
  const size_t value_bytes = (static_cast<size_t>(bit_width) + 7) / 8;
  while (done < count) {
    uint64_t header = 0;
    if (!read_uleb(data, pos, header)) return fail(error, str("RLE data ends after ", done, " of ", count, " values"));
    if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values
      const uint64_t groups = header >> 1;
      if (groups == 0 || groups > data.size()) return fail(error, "a malformed bit-packed run");
      const size_t take = static_cast<size_t>(std::min<uint64_t>(groups * 8, count - done));
      const uint64_t available_bits = uint64_t{data.size() - pos} * 8;
      if (uint64_t{take} * bit_width > available_bits)
        return fail(error, str("a bit-packed run runs past its data after ", done, " of ", count, " values"));
      for (size_t i = 0; i < take; ++i)
        out[done + i] = bit_width == 0 ? 0 : static_cast<uint32_t>(bits_at(data.data() + pos, uint64_t{i} * bit_width, bit_width));
      done += take;
      pos += static_cast<size_t>(std::min<uint64_t>(groups * bit_width, data.size() - pos));
    } else {  // a run of one value
      const uint64_t run = header >> 1;
      if (data.size() - pos < value_bytes) return fail(error, "an RLE run's value runs past its data");
      uint32_t value = 0;
      for (size_t b = 0; b < value_bytes; ++b) value |= uint32_t{data[pos + b]} << (8 * b);
      pos += value_bytes;
      if (bit_width < 32 && (value >> bit_width) != 0) return fail(error, str("an RLE value ", value, " wider than ", bit_width, " bits"));
      const size_t take = static_cast<size_t>(std::min<uint64_t>(run, count - done));
      std::fill(out + done, out + done + take, value);
      done += take;
      if (run == 0) return fail(error, "an empty RLE run");
    }
  }
  return true;
}

bool decode_parquet_chunk(std::span<const unsigned char> bytes, const ParquetChunk& chunk,
                          const ParquetColumnInfo& column, ParquetValues& out, std::string& error) {
  out = ParquetValues{};
  if (column.max_repetition_level > 0) return fail(error, "a repeated column");
  if (!parquet_codec_supported(chunk.codec))
    return fail(error, str("codec ", parquet_codec_name(chunk.codec), ", which msd does not read"));
  out.rows.reserve(static_cast<size_t>(std::min<uint64_t>(chunk.values, bytes.size() * 8)));
  // The values take at most the pages' decompressed bytes (but for DELTA
  // prefixes): reserved once, so a cached row group holds no slack.
  out.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(chunk.uncompressed_bytes, kMaxDecodedBytes)));
  ChunkDecoder decoder(chunk, column, out, error);
  size_t pos = 0;
  while (out.rows.size() < chunk.values) {
    const uint64_t page_offset = chunk.offset + pos;
    auto failed = [&] {
      error = str(error, " (the page at byte ", page_offset, ")");
      return false;
    };
    if (pos >= bytes.size()) {
      error = str("the chunk ends after ", out.rows.size(), " of its ", chunk.values, " values");
      return failed();
    }
    PageHeader header;
    ThriftReader in(bytes.subspan(pos));
    try {
      read_page_header(in, header);
    } catch (const ThriftError& e) {
      error = str("a damaged page header: ", e.what());
      return failed();
    }
    pos += in.position();
    if (header.compressed < 0 || static_cast<uint64_t>(header.compressed) > bytes.size() - pos) {
      error = str("a page of ", header.compressed, " bytes runs past the chunk's end");
      return failed();
    }
    const auto stored = bytes.subspan(pos, static_cast<size_t>(header.compressed));
    pos += stored.size();
    bool ok = true;
    if (header.type == kDictionaryPage) ok = decoder.dictionary_page(header, stored);
    else if (header.type == kDataPage || header.type == kDataPageV2) ok = decoder.data_page(header, stored);
    else if (header.type != kIndexPage) ok = fail(error, str("a page of unknown type ", header.type));
    if (!ok) return failed();
  }
  if (out.bytes.capacity() > out.bytes.size() + out.bytes.size() / 4) out.bytes.shrink_to_fit();
  out.ends.shrink_to_fit();
  out.rows.shrink_to_fit();
  return true;
}

bool decompress_parquet_page(int32_t codec, std::span<const unsigned char> in, std::span<unsigned char> out,
                             std::string& error) {
  const char* input = reinterpret_cast<const char*>(in.data());
  switch (static_cast<ParquetCodec>(codec)) {
    case ParquetCodec::uncompressed:
      if (in.size() != out.size()) return fail(error, "an uncompressed page's sizes disagree");
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return true;
    case ParquetCodec::snappy: {
      size_t length = 0;
      if (snappy_uncompressed_length(input, in.size(), &length) != SNAPPY_OK || length != out.size())
        return fail(error, str("corrupt snappy data (decompressed size ", length, ", the header says ", out.size(), ")"));
      if (snappy_uncompress(input, in.size(), reinterpret_cast<char*>(out.data()), &length) != SNAPPY_OK ||
          length != out.size())
        return fail(error, "corrupt snappy data");
      return true;
    }
    case ParquetCodec::zstd: {
      thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
      if (!context) return fail(error, "cannot create a zstd context");
      const size_t got = ZSTD_decompressDCtx(context.get(), out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(got)) return fail(error, str("corrupt zstd data: ", ZSTD_getErrorName(got)));
      if (got != out.size()) return fail(error, str("zstd data of ", got, " bytes, the header says ", out.size()));
      return true;
    }
    case ParquetCodec::gzip: {
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) return fail(error, "cannot set up zlib's inflate");
      z.next_in = const_cast<unsigned char*>(in.data());
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      int rc = Z_OK;
      for (;;) {
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_STREAM_END) {
          if (rc != Z_OK) break;  // an error, or no progress left to make
          continue;
        }
        if (z.avail_in == 0 || z.avail_out == 0) break;
        inflateReset(&z);  // another member follows
      }
      const size_t produced = out.size() - z.avail_out;
      inflateEnd(&z);
      if (rc != Z_STREAM_END || produced != out.size())
        return fail(error, str("corrupt gzip data (", produced, " of ", out.size(), " bytes decoded)"));
      return true;
    }
    default: break;
  }
  return fail(error, str("codec ", parquet_codec_name(codec), ", which msd does not read"));
}

std::string compress_parquet_page(int32_t codec, std::string_view data, int level) {
  switch (static_cast<ParquetCodec>(codec)) {
    case ParquetCodec::uncompressed: return std::string(data);
    case ParquetCodec::gzip: return gzip_compress(data, level);
    case ParquetCodec::zstd: return zstd_compress_frames(data, 0, level);
    case ParquetCodec::snappy: {
      std::string out(snappy_max_compressed_length(data.size()), '\0');
      size_t length = out.size();
      if (snappy_compress(data.data(), data.size(), out.data(), &length) != SNAPPY_OK)
        throw IoError("snappy cannot compress a page");
      out.resize(length);
      return out;
    }
    default: break;
  }
  throw IoError(str("msd does not write codec ", parquet_codec_name(codec)));
}

}  // namespace msd
