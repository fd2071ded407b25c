// The wds (WebDataset tar shards) format's entry in the registry (source/format.h).
#include "source/format.h"
#include "source/wds/wds_source.h"

namespace msd {

extern const FormatSpec kWdsFormat;
const FormatSpec kWdsFormat{
    .format = SourceFormat::wds,
    .name = "wds",
    .always_images = true,
    .open = [](const SourceConfig& config, std::vector<std::string> files, const SourceOptions& options,
               uint64_t) -> std::unique_ptr<Source> {
      return std::make_unique<WdsSource>(std::move(files), WdsOptions{config.caption_field, options.cache_dir});
    }};

}  // namespace msd
