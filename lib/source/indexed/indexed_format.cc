// The indexed (Megatron .bin/.idx pairs) format's entry in the registry (source/format.h).
#include "common/files.h"
#include "source/format.h"
#include "source/indexed/indexed_source.h"

namespace msd {

extern const FormatSpec kIndexedFormat;
const FormatSpec kIndexedFormat{
    .format = SourceFormat::indexed,
    .name = "indexed",
    .needs_tokenizer = false,  // its records are token ids already
    .index_caches = false,     // the .idx files are their own index
    .files = [](const SourceConfig& config,
                const std::string& path_option) { return expand_globs(indexed_idx_patterns(config.path), path_option); },
    .data_files = [](const std::string& idx) { return std::vector<std::string>{idx, indexed_bin_path(idx)}; },
    .open = [](const SourceConfig&, std::vector<std::string> files, const SourceOptions&,
               uint64_t) -> std::unique_ptr<Source> { return std::make_unique<IndexedSource>(std::move(files)); }};

}  // namespace msd
