#include "pipeline/pipeline.h"

#include <cstring>

#include "source/format.h"
#include "transport/slot.h"

namespace msd {

SamplePipeline::SamplePipeline(PipelineOptions options)
    : options_(std::move(options)),
      sources_(options_.sources.size()),
      orders_(options_.sources.size()),
      transform_(std::make_unique<SampleTransform>(nullptr, options_.image)) {}

SamplePipeline::~SamplePipeline() = default;

Source& SamplePipeline::open(uint32_t s, std::vector<std::string> files, size_t index_shares) {
  const SourceConfig& config = options_.sources.at(s);
  SourceOptions source_options;
  source_options.cache_dir = options_.cache_dir;
  source_options.index_shares = index_shares;
  orders_[s] = shuffle_order(config, files);
  sources_[s] = open_source(config, std::move(files), source_options);
  if (needs_tokenizer(config)) open_tokenizer_if_needed();
  return *sources_[s];
}

void SamplePipeline::open_tokenizer_if_needed() {
  if (tokenizer_ || !needs_tokenizer(options_.sources)) return;
  tokenizer_ = open_tokenizer(options_.tokenizer);
  transform_ = std::make_unique<SampleTransform>(tokenizer_.get(), options_.image);
}

Source& SamplePipeline::open(uint32_t s) { return open(s, source_files(options_.sources.at(s))); }

void SamplePipeline::open_all() {
  for (uint32_t s = 0; s < sources_.size(); ++s) open(s);
}

void SamplePipeline::close(uint32_t s) { sources_.at(s).reset(); }

uint64_t slot_bytes(const TransformedSample& sample, uint32_t patch_bytes) {
  return SlotLayout::bytes(static_cast<uint32_t>(sample.tokens.size()), sample.image.patches, patch_bytes);
}

void write_slot(uint8_t* slot, const TransformedSample& sample, uint32_t source, uint64_t index, uint32_t patch_bytes) {
  SlotHeader header;
  header.kind = static_cast<uint8_t>(sample.kind);
  header.source = source;
  header.text_tokens = static_cast<uint32_t>(sample.tokens.size());
  header.patches = sample.image.patches;
  header.patch_bytes = patch_bytes;
  header.index = index;
  std::memcpy(slot, &header, sizeof header);
  std::memcpy(slot + SlotLayout::tokens_offset(), sample.tokens.data(), sample.tokens.size() * sizeof(int32_t));
  if (sample.image.patches > 0)
    std::memcpy(slot + SlotLayout::patches_offset(header.text_tokens), sample.image.pixels.data(),
                sample.image.pixels.size());
}

}  // namespace msd
