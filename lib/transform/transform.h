// The per-sample transform a loader applies: text is validated as UTF-8 and
// tokenized; an image-text record is decoded into patches and its caption
// tokenized; a pre-tokenized record passes through.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/worker_pool.h"
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
// decoders and buffers across calls; not thread-safe: call it from one thread
// (apply_batch spreads decoding over its own workers and tokenization over
// the Tokenizer's).
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
  // threads, and images are decoded on up to `threads` threads (the calling
  // thread and workers this object owns, each with its own decoder); UTF-8
  // checks run on the calling thread.
  // REQUIRES: the four spans have the same size; outs[i] distinct. Throws what
  // apply() throws (a text or caption without a tokenizer: ConfigError);
  // the outputs are then unspecified.
  void apply_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                   std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads);

  // Bytes held by the image decoder and its buffers (the tokenizer is
  // borrowed and counted by its owner).
  uint64_t state_bytes() const;

 private:
  // apply() up to image decoding and tokenization; when the sample is good so
  // far, `decode` is set if raw.image is still to be decoded (decode()) and
  // `encode` if raw.text is still to be tokenized into out.tokens.
  BadKind prepare(const RawSample& raw, TransformedSample& out, std::string& reason, bool& encode, bool& decode);
  static BadKind decode(ImageTransform& image, const RawSample& raw, TransformedSample& out, std::string& reason);
  // apply_batch's two parallel phases, over batch_images_ and batch_samples_.
  void decode_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                    std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads);
  void encode_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                    std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads);
  // apply() after tokenization: the empty check.
  static BadKind finish(const TransformedSample& out, std::string& reason);

  Tokenizer* tokenizer_;
  ImageOptions image_options_;
  ImageTransform image_;  // apply()'s, and slot 0's in apply_batch
  // apply_batch's scratch: the images to decode, the texts to tokenize, whose
  // samples they are, and their ids (out.tokens' own buffers, swapped in and
  // back).
  std::vector<size_t> batch_images_;
  std::vector<std::string_view> batch_texts_;
  std::vector<size_t> batch_samples_;
  std::vector<std::vector<int32_t>> batch_ids_;
  // Declared last: the pool's threads are joined before the decoders they use
  // are destroyed. image_workers_[k] is worker slot k + 1's decoder.
  std::vector<std::unique_ptr<ImageTransform>> image_workers_;
  WorkerPool image_pool_{"image decoding"};
};

}  // namespace msd
