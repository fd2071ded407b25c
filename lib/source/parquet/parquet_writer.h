// A small Parquet writer for msd's own files (msd-datagen --format parquet,
// msd-bench compressed, the tests): optional byte-array columns, data pages
// v1 with RLE definition levels, values PLAIN or dictionary-encoded (a PLAIN
// dictionary page per column chunk, RLE_DICTIONARY indices bit-packed), one
// codec for every page. What it writes reads back with hyparquet
// (tests/scripts/parquet_reference.sh) as well as with msd's reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "source/parquet/parquet_file.h"

namespace msd {

struct ParquetWriteOptions {
  int32_t codec = static_cast<int32_t>(ParquetCodec::zstd);  // uncompressed, snappy, gzip or zstd
  int level = 3;                // zstd and gzip compression level
  bool dictionary = false;      // RLE_DICTIONARY values, else PLAIN
  uint64_t row_group_rows = 1024;
  uint64_t page_bytes = 1 << 20;  // a data page's values, before compression (at least one value a page)
};

// One column: its name and a value per row (nullopt: null). `utf8` marks
// it a string column (converted type UTF8), else binary.
struct ParquetWriteColumn {
  std::string name;
  std::vector<std::optional<std::string>> values;
  bool utf8 = true;
};

// The bytes of a Parquet file holding `columns` (all with the same number of
// rows). Throws Error for columns of unequal length or an unknown codec.
std::string write_parquet(const std::vector<ParquetWriteColumn>& columns, const ParquetWriteOptions& options);

}  // namespace msd
