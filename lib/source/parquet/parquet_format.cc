// The parquet format's entry in the registry (source/format.h).
#include "common/error.h"
#include "source/format.h"
#include "source/parquet/parquet_source.h"

namespace msd {

namespace {

// How a parquet source of `config` reads its files (`cache_bytes`: its cache of decoded row groups).
ParquetOptions parquet_options(const SourceConfig& config, const SourceOptions& options, uint64_t cache_bytes) {
  const bool images = !config.image_field.empty();
  const std::string prefix = str("source.", config.name, ".");
  return ParquetOptions{.text_column = images ? config.caption_field : config.text_field,
                        .image_column = config.image_field,
                        .cache_dir = options.cache_dir,
                        .cache_bytes = cache_bytes,
                        .text_option = prefix + (images ? "caption_field" : "text_field"),
                        .image_option = prefix + "image_field"};
}

}  // namespace

extern const FormatSpec kParquetFormat;
const FormatSpec kParquetFormat{
    .format = SourceFormat::parquet,
    .name = "parquet",
    .reads_image_field = true,
    // Records are read a row group at a time.
    .blocks_by_default = [](const std::vector<std::string>&) { return true; },
    .caches_blocks = [](const ShuffleOrder&) { return true; },
    .open = [](const SourceConfig& config, std::vector<std::string> files, const SourceOptions& options,
               uint64_t cache_bytes) -> std::unique_ptr<Source> {
      return std::make_unique<ParquetSource>(std::move(files), parquet_options(config, options, cache_bytes));
    }};

}  // namespace msd
