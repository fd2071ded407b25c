// The jsonl format's entry in the registry (source/format.h).
#include <algorithm>

#include "source/format.h"
#include "source/jsonl/jsonl_source.h"

namespace msd {

extern const FormatSpec kJsonlFormat;
const FormatSpec kJsonlFormat{
    .format = SourceFormat::jsonl,
    .name = "jsonl",
    // A compressed file reads whole restart intervals: the block order reads each once.
    .blocks_by_default =
        [](const std::vector<std::string>& files) {
          return std::any_of(files.begin(), files.end(),
                             [](const std::string& f) { return compression_of_path(f) != Compression::none; });
        },
    // The restart intervals are cached only under the block order: under the
    // uniform one a record's neighbours in the stream are anywhere.
    .caches_blocks = [](const ShuffleOrder& order) { return order.blocks; },
    .open = [](const SourceConfig& config, std::vector<std::string> files, const SourceOptions& options,
               uint64_t cache_bytes) -> std::unique_ptr<Source> {
      return std::make_unique<JsonlSource>(
          std::move(files),
          JsonlOptions{.text_field = config.text_field, .cache_dir = options.cache_dir, .cache_bytes = cache_bytes});
    }};

}  // namespace msd
