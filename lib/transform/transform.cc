#include "transform/transform.h"

#include <algorithm>

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
    : tokenizer_(tokenizer), image_options_(image), image_(image) {}

BadKind SampleTransform::prepare(const RawSample& raw, TransformedSample& out, std::string& reason, bool& encode,
                                 bool& decode) {
  encode = false;
  decode = false;
  out.clear();
  out.kind = raw.kind;
  if (raw.bad != BadKind::none) {  // the reader already rejected it
    reason = raw.reason;
    return raw.bad;
  }
  switch (raw.kind) {
    case SampleKind::text:
      if (tokenizer_ == nullptr) {
        throw ConfigError("text samples need a tokenizer: this source needs tokenizer.vocab or tokenizer.hf");
      }
      if (!check_utf8(raw.text, "text", reason)) return BadKind::invalid_utf8;
      encode = true;
      break;
    case SampleKind::image_text:
      if (tokenizer_ == nullptr) {
        throw ConfigError("image-text captions need a tokenizer: this source needs tokenizer.vocab or tokenizer.hf");
      }
      // The cheap check first: a bad caption costs no decode.
      if (!check_utf8(raw.text, "caption", reason)) return BadKind::invalid_utf8;
      decode = true;
      encode = true;
      break;
    case SampleKind::tokens:
      out.tokens.assign(raw.tokens.begin(), raw.tokens.end());
      break;
    default:
      MSD_CHECK(false && "unknown SampleKind");
  }
  return BadKind::none;
}

BadKind SampleTransform::finish(const TransformedSample& out, std::string& reason) {
  if (out.positions() == 0) {
    reason = "no positions after the transform (empty text and no image)";
    return BadKind::empty;
  }
  return BadKind::none;
}

// The image of an image-text sample that prepare() passed: a failed decode
// makes it corrupt_jpeg (and leaves the caption untokenized).
BadKind SampleTransform::decode(ImageTransform& image, const RawSample& raw, TransformedSample& out,
                                std::string& reason) {
  if (image.apply(raw.image, out.image, reason)) return BadKind::none;
  out.image.patches = 0;
  return BadKind::corrupt_jpeg;
}

BadKind SampleTransform::apply(const RawSample& raw, TransformedSample& out, std::string& reason) {
  bool encode = false;
  bool decode_image = false;
  BadKind verdict = prepare(raw, out, reason, encode, decode_image);
  if (verdict == BadKind::none && decode_image) verdict = decode(image_, raw, out, reason);
  if (verdict != BadKind::none) return verdict;
  if (encode) tokenizer_->encode(raw.text, out.tokens);
  return finish(out, reason);
}

void SampleTransform::apply_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                                  std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads) {
  MSD_CHECK(outs.size() == raws.size());
  MSD_CHECK(verdicts.size() == raws.size());
  MSD_CHECK(reasons.size() == raws.size());
  batch_samples_.clear();
  batch_images_.clear();
  for (size_t i = 0; i < raws.size(); ++i) {
    bool encode = false;
    bool decode_image = false;
    verdicts[i] = prepare(*raws[i], *outs[i], reasons[i], encode, decode_image);
    if (decode_image) batch_images_.push_back(i);
    if (encode) {
      batch_samples_.push_back(i);
    } else if (verdicts[i] == BadKind::none) {
      verdicts[i] = finish(*outs[i], reasons[i]);
    }
  }
  decode_batch(raws, outs, verdicts, reasons, threads);
  encode_batch(raws, outs, verdicts, reasons, threads);
}

// Decodes the images batch_images_ names, over up to `threads` threads, each
// with its own decoder (slot 0: image_).
void SampleTransform::decode_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                                   std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads) {
  const size_t helpers = std::min<size_t>(std::max(threads, 1u), batch_images_.size()) -
                         (batch_images_.empty() ? 0 : 1);
  if (helpers == 0) {
    for (const size_t i : batch_images_) verdicts[i] = decode(image_, *raws[i], *outs[i], reasons[i]);
    return;
  }
  while (image_workers_.size() < helpers) image_workers_.push_back(std::make_unique<ImageTransform>(image_options_));
  image_pool_.grow(helpers);
  image_pool_.run(helpers, batch_images_.size(), [&](size_t slot, size_t k) {
    const size_t i = batch_images_[k];
    verdicts[i] = decode(slot == 0 ? image_ : *image_workers_[slot - 1], *raws[i], *outs[i], reasons[i]);
  });
}

// Tokenizes the texts and captions of the samples batch_samples_ names that
// are still good, through Tokenizer::encode_batch.
void SampleTransform::encode_batch(std::span<const RawSample* const> raws, std::span<TransformedSample* const> outs,
                                   std::span<BadKind> verdicts, std::span<std::string> reasons, unsigned threads) {
  batch_texts_.clear();
  std::erase_if(batch_samples_, [&](size_t i) { return verdicts[i] != BadKind::none; });
  for (const size_t i : batch_samples_) batch_texts_.push_back(raws[i]->text);
  if (batch_texts_.empty()) return;
  // Encoding straight into each sample's token buffer: swapped in here (empty,
  // its capacity kept), back after.
  batch_ids_.resize(batch_texts_.size());
  for (size_t k = 0; k < batch_samples_.size(); ++k) batch_ids_[k].swap(outs[batch_samples_[k]]->tokens);
  tokenizer_->encode_batch(batch_texts_, batch_ids_, threads);
  for (size_t k = 0; k < batch_samples_.size(); ++k) {
    const size_t i = batch_samples_[k];
    outs[i]->tokens.swap(batch_ids_[k]);
    verdicts[i] = finish(*outs[i], reasons[i]);
  }
}

uint64_t SampleTransform::state_bytes() const {
  uint64_t bytes = sizeof(*this) + image_.state_bytes() + batch_texts_.capacity() * sizeof(std::string_view) +
                   (batch_samples_.capacity() + batch_images_.capacity()) * sizeof(size_t) +
                   batch_ids_.capacity() * sizeof(batch_ids_[0]);
  for (const auto& image : image_workers_) bytes += sizeof(ImageTransform) + image->state_bytes();
  for (const std::vector<int32_t>& ids : batch_ids_) bytes += ids.capacity() * sizeof(int32_t);
  return bytes;
}

}  // namespace msd
