// The per-sample transform a loader applies: text is validated as UTF-8 and
// tokenized; an image-text record is decoded into patches and its caption
// tokenized; a pre-tokenized record passes through.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "source/source.h"
#include "transform/image/image.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd {

struct TransformedSample {
  SampleKind kind = SampleKind::text;
  std::vector<int32_t> tokens;  // text tokens (the caption, for image-text)
  PatchedImage image;           // image-text only (patches == 0 otherwise)

  // Length in sequence positions: one per patch, one per text token.
  uint32_t positions() const { return image.patches + static_cast<uint32_t>(tokens.size()); }
  void clear();
};

// Turns raw records into what a loader stores in its window slot. Reuses its
// decoder and buffers across calls; not thread-safe: call it from one thread
// (apply_batch spreads tokenization over the Tokenizer's own workers).
class SampleTransform {
 public:
  // `tokenizer` may be null when every source is pre-tokenized; it is
  // borrowed and must outlive this object. Throws ConfigError for bad image
  // options (ImageTransform).
  SampleTransform(Tokenizer* tokenizer, const ImageOptions& image);

  // Returns BadKind::none on success; else the kind, with `reason` filled:
  // the reader's own verdict when raw.bad is set; invalid_utf8 (with the byte
  // offset) for text or a caption that is not UTF-8; corrupt_jpeg for an image
  // ImageTransform rejects; empty when the result has zero positions. `out` is
  // cleared first and holds the result on success. Throws ConfigError when a
  // text or image-text sample arrives without a tokenizer.
  BadKind apply(const RawSample& raw, TransformedSample& out, std::string& reason);

  // apply() over a batch: verdicts[i], reasons[i] and *outs[i] are exactly
  // what apply(*raws[i], *outs[i], reasons[i]) would give (reasons[i] is left
  // alone for a good sample, as apply leaves `reason`). Text and captions are
  // tokenized together through Tokenizer::encode_batch on up to `threads`
  // threads; UTF-8 checks and image decoding run on the calling thread.
  // REQUIRES: the four spans have the same size; outs[i] distinct. Throws what
  // apply() throws (a text or caption without a tokenizer: ConfigError);
  // the outputs are then unspecified.
  void apply_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                   std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads);

  // Bytes held by the image decoder and its buffers (the tokenizer is
  // borrowed and counted by its owner).
  uint64_t state_bytes() const;

 private:
  // apply() up to tokenization; `encode` is set when the sample is good so
  // far and raw.text is still to be tokenized into out.tokens.
  BadKind prepare(const RawSample& raw, TransformedSample& out, std::string& reason, bool& encode);
  // apply() after tokenization: the empty check.
  static BadKind finish(const TransformedSample& out, std::string& reason);

  Tokenizer* tokenizer_;
  ImageTransform image_;
  // apply_batch's scratch: the texts to tokenize, whose samples they are, and
  // their ids (out.tokens' own buffers, swapped in and back).
  std::vector<std::string_view> batch_texts_;
  std::vector<size_t> batch_samples_;
  std::vector<std::vector<int32_t>> batch_ids_;
};

}  // namespace msd
