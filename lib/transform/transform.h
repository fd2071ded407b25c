// The per-sample transform a loader applies: text is validated as UTF-8 and
// tokenized; an image-text record is decoded into patches and its caption
// tokenized; a pre-tokenized record passes through.
#pragma once

#include <cstdint>
#include <string>
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
// decoder and buffers across calls; not thread-safe (one per thread, like the
// Tokenizer it borrows).
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

  // Bytes held by the image decoder and its buffers (the tokenizer is
  // borrowed and counted by its owner).
  uint64_t state_bytes() const;

 private:
  Tokenizer* tokenizer_;
  ImageTransform image_;
};

}  // namespace msd
