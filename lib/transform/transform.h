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

class SampleTransform {
 public:
  // `tokenizer` may be null when every source is pre-tokenized.
  SampleTransform(Tokenizer* tokenizer, const ImageOptions& image);

  // Returns BadKind::none on success; else the kind, with `reason` filled.
  BadKind apply(const RawSample& raw, TransformedSample& out, std::string& reason);

 private:
  Tokenizer* tokenizer_;
  ImageTransform image_;
};

}  // namespace msd
