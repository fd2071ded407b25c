// Two kinds of tokenizer behind one class. The tiktoken kind: byte-level BPE
// over the tiktoken vocabulary format: one line per token,
// "<base64 bytes> <rank>". Encoding follows tiktoken's encode_ordinary: the
// text is split by the pre-tokenization regex (ICU, run over the UTF-8 bytes),
// each piece is looked up whole, else merged pairwise, lowest rank first and
// leftmost on ties (tiktoken's _byte_pair_merge). For a given vocabulary and
// pattern the ids equal tiktoken's on any valid UTF-8 text whose characters
// were assigned by Unicode 15.0 (ICU 72's tables; tools/reference/ checks
// this against the tiktoken npm package). Special tokens are not recognized:
// "<|endoftext|>" in the text is encoded as ordinary text.
// The Hugging Face kind (Tokenizer::hugging_face): a tokenizer.json of the BPE
// family, its added tokens, normalizers, pre-tokenizers and post-processor
// (hf_tokenizer.h lists what is supported), with the ids transformers.js gives
// (tools/reference/hf_encode.mjs; the tests compare Llama 3, Qwen 3, Gemma 3
// and Llama 2).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

struct TokenizerOptions {
  // Default "cl100k". A name (cl100k, o200k, gpt2 = r50k, p50k) or a regex in
  // ICU syntax; text no match covers is dropped, as tiktoken does.
  std::string pattern = "cl100k";
  // Default "none". none | nfc | nfkc | nfd | nfkd: applied before splitting.
  std::string normalize = "none";
};

// The regex of a named pattern (cl100k, o200k, gpt2 = r50k, p50k; the
// "_base" spellings too), or `name_or_regex` itself when it is not a name. The
// named regexes are tiktoken's pat_str strings verbatim. Throws ConfigError for
// an empty string and for one made only of letters, digits and '_' that is not
// a known name (as a regex it would match only itself: a mistyped name).
std::string resolve_pattern(const std::string& name_or_regex);

struct HfTokenizerOptions {
  // Default false. Ends every document with the end-of-document token, after
  // what the tokenizer's post-processor adds (Megatron's --append-eod).
  bool append_eod = false;
  // Default "": the eos_token of the tokenizer_config.json beside the
  // tokenizer.json. Otherwise the content of the added token to append.
  std::string eod_token;
};

class TextEncoder;
struct TokenizerConfig;  // msd/source_config.h

// A vocabulary plus the scratch state of encoding. The vocabulary (rank
// tables, token bytes, the compiled pattern) is immutable after construction
// and shared, never copied, by every thread that encodes with it; the scratch
// state (the regex matcher, merge buffers, a 256 KiB cache of frequent pieces'
// ids) is per encoder: the Tokenizer's own, used by encode(), and one per
// worker of encode_batch's pool.
// Thread-safety: encode() and encode_batch() are not thread-safe on one
// object; call them from one thread at a time (encode_batch's workers each
// use their own scratch, so they never share it). decode(), vocab_size() and
// state_bytes() are const and may run concurrently with each other and with
// encode() and encode_batch().
class Tokenizer {
 public:
  // Reads a tiktoken-format vocabulary. Blank lines and "\r\n" endings are
  // accepted. Throws ConfigError (bad pattern or normalization name, a regex
  // ICU does not compile; the message names the option) or IoError
  // (unreadable file; a malformed line, invalid base64, a rank outside
  // 0..2^31-2, a rank or token bytes given twice: the message names the file
  // and line; a missing single-byte token: every byte must have a rank).
  Tokenizer(const std::string& vocab_path, const TokenizerOptions& options);
  // Reads a Hugging Face tokenizer.json. Each encode() is one document: the
  // ids of its text with the boundary tokens the post-processor adds (a BOS
  // for Llama 2 and Gemma) and, with append_eod, the end-of-document token.
  // Throws IoError (unreadable file, not JSON, a malformed part: the message
  // names the file and the part) or ConfigError (a part this loader does not
  // implement, named: `tokenizer.json: normalizer type "BertNormalizer" is not
  // supported`; append_eod without an end-of-document token).
  static Tokenizer hugging_face(const std::string& json_path, const HfTokenizerOptions& options = {});
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Appends the ids of `text` to `out`; no allocation per piece.
  // REQUIRES: is_valid_utf8(text) (common/utf8.h); the readers check it, and
  // a line that fails is a bad sample. Invalid input is not detected here:
  // its ids are unspecified (tiktoken cannot take it) but every byte is still
  // encoded, so decode() returns it. Throws Error only when ICU gives up on
  // the regex (backtracking beyond 256 MiB of stack).
  void encode(std::string_view text, std::vector<int32_t>& out);
  std::vector<int32_t> encode(std::string_view text);

  // Encodes texts[i] into out[i] (cleared first, capacity kept), with the same
  // ids as encode(), using up to `threads` threads: the calling thread and
  // threads - 1 workers of a pool this Tokenizer owns, started on the first
  // call that needs them and kept until destruction. Texts are handed out one
  // at a time as threads become free. threads <= 1 (or fewer than two texts)
  // runs inline, starting no thread. `out` is resized to texts.size().
  // REQUIRES: every text is valid UTF-8 (as encode()). Throws what encode()
  // throws, after every thread has stopped; out's contents are then
  // unspecified. Throws Error when a worker thread cannot be started.
  void encode_batch(std::span<const std::string_view> texts, std::vector<std::vector<int32_t>>& out,
                    unsigned threads);
  // Concatenated bytes of the tokens; throws Error for an id outside the
  // vocabulary (negative, >= vocab_size(), or a gap in the ranks). A Hugging
  // Face token's bytes are its text: byte-level tokens mapped back to bytes,
  // <0xXX> byte-fallback tokens as the byte, SentencePiece's U+2581 kept.
  std::string decode(std::span<const int32_t> ids) const;

  // One more than the largest rank (id, added tokens included) in the vocabulary.
  int32_t vocab_size() const;
  // Bytes held for memory accounting: the shared vocabulary tables once, plus
  // each encoder's fixed scratch (its piece cache), the Tokenizer's own and
  // one per pool worker started so far. Merge buffers, which grow with the
  // longest piece seen, and ICU's matcher internals are not counted.
  uint64_t state_bytes() const;

 private:
  explicit Tokenizer(std::unique_ptr<TextEncoder> encoder);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The tokenizer a configuration names: tokenizer.hf (with append_eod and
// eod_token) when set, else tokenizer.vocab with its pattern and
// normalization. Throws what the constructors throw.
std::unique_ptr<Tokenizer> open_tokenizer(const TokenizerConfig& config);

struct BpeTrainOptions {
  uint32_t vocab_size = 4096;  // including the 256 byte tokens; at least 256
  std::string pattern = "cl100k";  // as TokenizerOptions::pattern
  uint64_t max_corpus_bytes = 64ull << 20;  // read at most this much of the corpus
};

// Learns byte-level BPE merges from UTF-8 text (pieces split by the pattern,
// counted, then the most frequent adjacent pair merged until vocab_size) and
// writes them in tiktoken format, atomically: ranks 0..255 are the single
// bytes, then one rank per merge in the order learned. Deterministic: ties
// break by the pair's bytes (left token's bytes, then the right's, in byte
// order). A merge whose bytes already form a token (two pairs can spell the
// same bytes) reuses that token. Documents that are not valid UTF-8 are
// skipped (counted in a warning). Returns the number of tokens written: fewer
// than vocab_size when the corpus runs out of pairs. Throws ConfigError
// (vocab_size < 256, bad pattern) or IoError (cannot write out_path).
uint32_t train_bpe(std::span<const std::string> documents, const BpeTrainOptions& options,
                   const std::string& out_path);

}  // namespace msd
