// Byte-level BPE over the tiktoken vocabulary format: one line per token,
// "<base64 bytes> <rank>". Encoding follows tiktoken's encode_ordinary: the
// text is split by the pre-tokenization regex (ICU), each piece is looked up
// whole, else merged pairwise by lowest rank. For a given vocabulary and
// pattern the ids equal tiktoken's on any valid UTF-8 text.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

struct TokenizerOptions {
  std::string pattern = "cl100k";  // cl100k | o200k | gpt2 | r50k | p50k | a regex (ICU syntax)
  std::string normalize = "none";  // none | nfc | nfkc | nfd | nfkd: applied before splitting
};

// The regex of a named pattern, or `name_or_regex` itself when it is not a name.
std::string resolve_pattern(const std::string& name_or_regex);

// The vocabulary is immutable after construction, but encode() uses scratch
// state (the regex matcher): not thread-safe on one object; use one Tokenizer
// per thread.
class Tokenizer {
 public:
  // Reads a tiktoken-format vocabulary. Throws ConfigError (bad pattern or
  // normalization name) or IoError (unreadable file, malformed line: names the
  // file and line).
  Tokenizer(const std::string& vocab_path, const TokenizerOptions& options);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Appends the ids of `text` to `out`. REQUIRES: is_valid_utf8(text) (common/utf8.h).
  void encode(std::string_view text, std::vector<int32_t>& out);
  std::vector<int32_t> encode(std::string_view text);
  // Concatenated bytes of the tokens; throws Error for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids) const;

  // One more than the largest rank in the vocabulary.
  int32_t vocab_size() const;
  // Bytes held by the vocabulary tables (for memory accounting).
  uint64_t state_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct BpeTrainOptions {
  uint32_t vocab_size = 4096;  // including the 256 byte tokens
  std::string pattern = "cl100k";
  uint64_t max_corpus_bytes = 64ull << 20;  // read at most this much of the corpus
};

// Learns byte-level BPE merges from UTF-8 text (pieces split by the pattern,
// counted, then the most frequent adjacent pair merged until vocab_size) and
// writes them in tiktoken format: ranks 0..255 are the single bytes, then one
// rank per merge in the order learned. Deterministic: ties break by the pair's
// bytes. Returns the number of tokens written.
uint32_t train_bpe(std::span<const std::string> documents, const BpeTrainOptions& options,
                   const std::string& out_path);

}  // namespace msd
