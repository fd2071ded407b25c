// The sample pipeline every reader of samples goes through (loaders,
// colocated ranks, msd-plan profile, msd-bench): a job's sources opened, the
// tokenizer opened when a source's format needs one (source/format.h), the
// transform over it, and a transformed sample written into a slot laid out
// as SlotLayout says (transport/slot.h). MPI-free.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msd/source_config.h"
#include "source/permutation.h"
#include "source/source.h"
#include "transform/transform.h"

namespace msd {

// What the pipeline needs of a job: its sources, tokenizer and image
// settings, and where index caches go.
struct PipelineOptions {
  std::vector<SourceConfig> sources;
  TokenizerConfig tokenizer;
  ImageOptions image;
  std::string cache_dir;  // SourceOptions::cache_dir
};

// Owns the open sources (by source id), the tokenizer and the transform. Not
// thread-safe, but for what Source promises of reads beside each other.
class SamplePipeline {
 public:
  // Opens nothing yet: the transform has no tokenizer until a source that
  // needs one opens.
  explicit SamplePipeline(PipelineOptions options);
  ~SamplePipeline();

  // Opens source `s` over `files` (source_files(), as this process listed
  // them; index_shares: SourceOptions::index_shares), and the tokenizer the
  // first time a source whose format needs one opens (the transform is then
  // rebuilt over it). Throws what open_source and open_tokenizer throw.
  Source& open(uint32_t s, std::vector<std::string> files, size_t index_shares = 1);
  Source& open(uint32_t s);  // over source_files()
  void open_all();           // every source, in order
  void close(uint32_t s);    // its state goes; a closed source may open again
  // Opens the tokenizer now when any of the sources needs one, as open()
  // would at the first of them.
  void open_tokenizer_if_needed();

  // Null when `s` is not open.
  Source* source(uint32_t s) const { return s < sources_.size() ? sources_[s].get() : nullptr; }
  // The order of source `s`'s stream (shuffle_order over the files it opened with).
  const ShuffleOrder& order(uint32_t s) const { return orders_[s]; }
  size_t source_count() const { return sources_.size(); }
  const SourceConfig& config(uint32_t s) const { return options_.sources[s]; }
  Tokenizer* tokenizer() const { return tokenizer_.get(); }
  SampleTransform& transform() { return *transform_; }
  // Bytes of a patch's pixels (RGB), as slots carry them.
  uint32_t patch_bytes() const { return options_.image.patch * options_.image.patch * 3; }

 private:
  PipelineOptions options_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<ShuffleOrder> orders_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<SampleTransform> transform_;
};

// The bytes `sample`'s slot takes (SlotLayout::bytes).
uint64_t slot_bytes(const TransformedSample& sample, uint32_t patch_bytes);
// Writes `sample` (record `index` of source `source`) into `slot`, which
// holds slot_bytes(sample, patch_bytes): its header, its ids, its patches.
void write_slot(uint8_t* slot, const TransformedSample& sample, uint32_t source, uint64_t index, uint32_t patch_bytes);

}  // namespace msd
