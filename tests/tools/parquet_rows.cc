// Test helper: prints a Parquet file's rows as msd's reader reads them, one
// line per row in tools/reference/parquet_write.mjs's format: each column's
// value as hex bytes, or "null"; with an image column, the caption's and the
// image's separated by a space. The values come from the file's footer and
// its column chunks decoded (parquet_file.h); every row is also read through
// ParquetSource, whose sample must agree (a good sample holding those bytes,
// a missing_field one where a value is null, an invalid_utf8 one where the
// text is not UTF-8): a row where it does not
// prints "source disagrees: ..." instead, which no reference line equals.
//
// Usage: parquet_rows FILE TEXT_COLUMN [IMAGE_COLUMN]
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/utf8.h"
#include "source/parquet/parquet_source.h"

namespace {

using Rows = std::vector<std::optional<std::string>>;

std::string hex(const std::optional<std::string>& value) {
  if (!value) return "null";
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : *value) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// Every row of `column`, its chunks decoded one by one; nullopt for a null.
Rows column_rows(const std::string& path, const std::string& column) {
  const std::vector<unsigned char> file = msd::read_file(path);
  const std::span<const unsigned char> bytes(file);
  const uint64_t footer = msd::parquet_footer_bytes(bytes.last(std::min(bytes.size(), msd::kParquetTailBytes)),
                                                    bytes.size(), path);
  const uint64_t data_end = bytes.size() - msd::kParquetTailBytes - footer;
  const msd::ParquetFooter meta = msd::parse_parquet_footer(bytes.subspan(data_end, footer), data_end, path);
  const int c = meta.find(column);
  if (c < 0) throw msd::Error(path + ": no column " + column);
  Rows rows;
  for (size_t g = 0; g < meta.row_groups.size(); ++g) {
    const msd::ParquetChunk& chunk = meta.row_groups[g].chunks[static_cast<size_t>(c)];
    msd::ParquetValues values;
    std::string error;
    if (!msd::decode_parquet_chunk(bytes.subspan(chunk.offset, chunk.compressed_bytes), chunk,
                                   meta.columns[static_cast<size_t>(c)], values, error))
      throw msd::Error(msd::str(path, ": row group ", g, ": ", error));
    for (size_t r = 0; r < values.rows.size(); ++r)
      rows.push_back(values.is_null(r) ? std::nullopt : std::optional<std::string>(values.value(r)));
  }
  return rows;
}

// Whether the source's sample is what the decoded values make of the row.
bool agrees(const msd::RawSample& sample, const std::optional<std::string>& text,
            const std::optional<std::optional<std::string>>& image) {
  const bool null = !text || (image && !*image);
  if (null) return sample.bad == msd::BadKind::missing_field;
  if (!msd::is_valid_utf8(*text)) return sample.bad == msd::BadKind::invalid_utf8;
  return sample.bad == msd::BadKind::none && sample.text == *text && (!image || sample.image == **image);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: parquet_rows FILE TEXT_COLUMN [IMAGE_COLUMN]\n");
    return 2;
  }
  try {
    const std::string path = argv[1];
    const Rows texts = column_rows(path, argv[2]);
    const Rows images = argc == 4 ? column_rows(path, argv[3]) : Rows(texts.size());
    msd::ParquetOptions options;
    options.text_column = argv[2];
    if (argc == 4) options.image_column = argv[3];
    const char* tmp = std::getenv("TMPDIR");
    options.cache_dir = tmp != nullptr ? tmp : "/tmp";
    msd::ParquetSource source({path}, options);
    if (source.size() != texts.size() || images.size() != texts.size())
      throw msd::Error(msd::str("the source holds ", source.size(), " rows, the chunks ", texts.size()));
    msd::RawSample sample;
    for (uint64_t i = 0; i < source.size(); ++i) {
      source.read(i, sample);
      std::optional<std::optional<std::string>> image;  // text only: none
      if (argc == 4) image.emplace(images[i]);
      if (!agrees(sample, texts[i], image)) {
        std::printf("source disagrees: row %llu: %s %s\n", static_cast<unsigned long long>(i),
                    msd::bad_kind_name(sample.bad), sample.reason.c_str());
        continue;
      }
      std::printf("%s%s\n", hex(texts[i]).c_str(), argc == 4 ? (" " + hex(images[i])).c_str() : "");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parquet_rows: %s\n", e.what());
    return 1;
  }
  return 0;
}
