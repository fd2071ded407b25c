// What a Tokenizer runs: one encoder per thread over an immutable model that
// every encoder of the Tokenizer shares. Two kinds implement it: the tiktoken
// vocabulary's byte-level BPE (tokenizer.cc) and a Hugging Face tokenizer.json
// of the BPE family (hf_tokenizer.cc). Tokenizer owns the threads; an encoder
// only encodes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

// Not thread-safe: encode() uses the encoder's own scratch. The const calls
// read only the shared model and may run concurrently with anything.
class TextEncoder {
 public:
  virtual ~TextEncoder() = default;

  // Appends the ids of one document's `text` to `out` (Tokenizer::encode).
  virtual void encode(std::string_view text, std::vector<int32_t>& out) = 0;
  // An encoder for another thread: the same shared model, fresh scratch.
  virtual std::unique_ptr<TextEncoder> sibling() const = 0;
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  virtual int32_t vocab_size() const = 0;
  // The shared model's bytes, counted once per Tokenizer.
  virtual uint64_t model_bytes() const = 0;
  // This encoder's fixed scratch (its piece cache): constant after
  // construction, so another thread may read it while this one encodes.
  virtual uint64_t scratch_bytes() const = 0;

  // Where encode_batch's threads build one document's ids.
  std::vector<int32_t>& batch_ids() { return batch_ids_; }

 private:
  std::vector<int32_t> batch_ids_;
};

struct HfTokenizerOptions;

// Reads a Hugging Face tokenizer.json (hf_tokenizer.cc; Tokenizer's contract).
std::unique_ptr<TextEncoder> open_hf_encoder(const std::string& json_path, const HfTokenizerOptions& options);

}  // namespace msd
