#include "transform/transform.h"

#include "common/error.h"
#include "common/utf8.h"

namespace msd {
namespace {

// Invalid UTF-8 is a bad sample, with where it starts so the record can be
// found and inspected.
bool check_utf8(std::string_view text, const char* what, std::string& reason) {
  const size_t offset = first_invalid_utf8(text);
  if (offset == text.size()) return true;
  reason = str("invalid UTF-8 in the ", what, " at byte ", offset, " of ", text.size());
  return false;
}

}  // namespace

void TransformedSample::clear() {
  kind = SampleKind::text;
  tokens.clear();
  // Field by field: the pixel buffer keeps its capacity for the next sample.
  image.width = image.height = 0;
  image.source_width = image.source_height = 0;
  image.patches = 0;
  image.decode_scale_num = image.decode_scale_denom = 1;
  image.decoded_width = image.decoded_height = 0;
  image.pixels.clear();
}

SampleTransform::SampleTransform(Tokenizer* tokenizer, const ImageOptions& image)
    : tokenizer_(tokenizer), image_(image) {}

BadKind SampleTransform::apply(const RawSample& raw, TransformedSample& out, std::string& reason) {
  out.clear();
  out.kind = raw.kind;
  if (raw.bad != BadKind::none) {  // the reader already rejected it
    reason = raw.reason;
    return raw.bad;
  }
  switch (raw.kind) {
    case SampleKind::text:
      if (tokenizer_ == nullptr) throw ConfigError("text samples need a tokenizer: this source needs tokenizer.vocab");
      if (!check_utf8(raw.text, "text", reason)) return BadKind::invalid_utf8;
      tokenizer_->encode(raw.text, out.tokens);
      break;
    case SampleKind::image_text:
      if (tokenizer_ == nullptr) {
        throw ConfigError("image-text captions need a tokenizer: this source needs tokenizer.vocab");
      }
      // The cheap check first: a bad caption costs no decode.
      if (!check_utf8(raw.text, "caption", reason)) return BadKind::invalid_utf8;
      if (!image_.apply(raw.image, out.image, reason)) {
        out.image.patches = 0;
        return BadKind::corrupt_jpeg;
      }
      tokenizer_->encode(raw.text, out.tokens);
      break;
    case SampleKind::tokens:
      out.tokens.assign(raw.tokens.begin(), raw.tokens.end());
      break;
    default:
      MSD_CHECK(false && "unknown SampleKind");
  }
  if (out.positions() == 0) {
    reason = "no positions after the transform (empty text and no image)";
    return BadKind::empty;
  }
  return BadKind::none;
}

uint64_t SampleTransform::state_bytes() const { return sizeof(*this) + image_.state_bytes(); }

}  // namespace msd
