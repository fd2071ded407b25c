// The Parquet file format, as much as reading byte-array columns needs
// (https://github.com/apache/parquet-format, docs/formats.md "Parquet"):
//
//   file     "PAR1", column chunks, the footer (FileMetaData, Thrift compact),
//            the footer's length (u32 little-endian), "PAR1"
//   footer   the schema (a tree flattened depth-first; leaves are columns) and
//            the row groups, each with one column chunk per leaf
//   chunk    an optional dictionary page, then data pages (v1 or v2), each a
//            PageHeader (Thrift compact) and its bytes, compressed by the
//            chunk's codec
//   page     definition levels (RLE/bit-packed hybrid; a row whose level is
//            below the column's maximum is null), then the non-null values:
//            PLAIN (u32 length + bytes), dictionary indices (RLE_DICTIONARY or
//            PLAIN_DICTIONARY: a bit width byte + the hybrid), or
//            DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY (lengths and prefix
//            lengths as DELTA_BINARY_PACKED integers)
//
// Codecs: uncompressed, snappy (libsnappy), gzip (zlib) and zstd (libzstd).
// Columns must be flat: a leaf under optional or required groups (a struct's
// field, "image.bytes") reads; a repeated one does not. No Parquet library
// is in this project's reach (no Arrow C++ in Debian; npm's are JavaScript
// or WebAssembly), so this is the subset, checked against parquet-wasm's
// writer and hyparquet's reader (tests/scripts/parquet_reference.sh).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

// parquet.thrift's enums, as stored.
enum class ParquetType : int32_t {
  boolean = 0, int32 = 1, int64 = 2, int96 = 3, float32 = 4, float64 = 5, byte_array = 6, fixed_len_byte_array = 7,
};
enum class ParquetCodec : int32_t {
  uncompressed = 0, snappy = 1, gzip = 2, lzo = 3, brotli = 4, lz4 = 5, zstd = 6, lz4_raw = 7,
};
enum class ParquetEncoding : int32_t {
  plain = 0, plain_dictionary = 2, rle = 3, bit_packed = 4, delta_binary_packed = 5, delta_length_byte_array = 6,
  delta_byte_array = 7, rle_dictionary = 8, byte_stream_split = 9,
};
const char* parquet_codec_name(int32_t codec);
const char* parquet_type_name(int32_t type);
bool parquet_codec_supported(int32_t codec);

// A leaf of the schema: one column.
struct ParquetColumnInfo {
  std::string path;  // names from the root's child down, joined by '.'
  int32_t type = -1;                    // ParquetType; -1 when the schema gives none
  int32_t max_definition_level = 0;     // optional ancestors and itself
  int32_t max_repetition_level = 0;     // repeated ancestors and itself
};

// One column chunk of a row group, as the footer describes it. Trivially
// copyable, no padding: stored as-is in index caches.
struct ParquetChunk {
  uint64_t offset = 0;              // its first page (the dictionary page when there is one)
  uint64_t compressed_bytes = 0;    // all its pages, headers included
  uint64_t uncompressed_bytes = 0;  // the same decompressed
  uint64_t values = 0;              // levels stored (rows, for a flat column)
  int32_t codec = 0;                // ParquetCodec
  int32_t reserved = 0;
};
static_assert(sizeof(ParquetChunk) == 40);

struct ParquetRowGroupInfo {
  uint64_t rows = 0;
  std::vector<ParquetChunk> chunks;  // one per column, in ParquetFooter::columns' order
};

struct ParquetFooter {
  std::vector<ParquetColumnInfo> columns;
  std::vector<ParquetRowGroupInfo> row_groups;
  uint64_t rows = 0;
  std::string created_by;
  // The column whose path is `path`, or -1.
  int find(std::string_view path) const;
};

// Bytes at the end of a Parquet file besides the footer: its length and "PAR1".
inline constexpr size_t kParquetTailBytes = 8;

// The footer's length from the file's last 8 bytes; throws IoError naming
// `path` when they are not a Parquet file's end (no "PAR1"; "PARE", an
// encrypted footer, is named as such) or the length does not fit the file.
uint64_t parquet_footer_bytes(std::span<const unsigned char> tail, uint64_t file_bytes, const std::string& path);
// Parses FileMetaData. Throws IoError naming `path` (and the row group and
// column where one is at fault) when it is malformed or describes chunks
// outside [4, data_end), the bytes before the footer.
ParquetFooter parse_parquet_footer(std::span<const unsigned char> metadata, uint64_t data_end, const std::string& path);

// A column chunk's rows, decoded. Values are stored once each (a dictionary's
// entries, or each plain value) and rows refer to them, so a dictionary
// column takes its dictionary plus 4 bytes a row, whatever its values' sizes.
struct ParquetValues {
  static constexpr uint32_t kNull = UINT32_MAX;
  std::string bytes;            // the stored values, concatenated
  std::vector<uint64_t> ends;   // value v is bytes [ends[v - 1] (0 for v = 0), ends[v])
  std::vector<uint32_t> rows;   // per row: a value, or kNull

  bool is_null(size_t row) const { return rows[row] == kNull; }
  std::string_view value(size_t row) const {
    const uint32_t v = rows[row];
    const uint64_t begin = v == 0 ? 0 : ends[v - 1];
    return std::string_view(bytes).substr(begin, ends[v] - begin);
  }
  uint64_t memory_bytes() const {
    return bytes.capacity() + ends.capacity() * sizeof(uint64_t) + rows.capacity() * sizeof(uint32_t);
  }
};

// Decodes every page of one column chunk (its `chunk.compressed_bytes` bytes
// from `chunk.offset`, in `bytes`) of column `column` into `out`, which ends
// with chunk.values rows. Returns false with `error` set (what, and the
// page's offset in the file) when the data is malformed, truncated, or uses
// an encoding or codec this reader lacks; never throws for bad data.
bool decode_parquet_chunk(std::span<const unsigned char> bytes, const ParquetChunk& chunk,
                          const ParquetColumnInfo& column, ParquetValues& out, std::string& error);

// The RLE/bit-packed hybrid (levels, dictionary indices): decodes `count`
// values of `bit_width` bits from `data` into `out`. False with `error` set
// when the data ends early or a header is malformed.
bool decode_rle_hybrid(std::span<const unsigned char> data, int bit_width, size_t count, uint32_t* out,
                       std::string& error);

// Decompresses one page. False with `error` set when the data is corrupt,
// does not decompress to exactly out.size() bytes, or the codec is not one
// this reader has.
bool decompress_parquet_page(int32_t codec, std::span<const unsigned char> in, std::span<unsigned char> out,
                             std::string& error);
// Compresses one page (the writer's side). Throws IoError when the library fails.
std::string compress_parquet_page(int32_t codec, std::string_view data, int level);

}  // namespace msd
