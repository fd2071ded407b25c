// A Hugging Face tokenizer.json of the BPE family, loaded (hf_load.cc) into
// tables an encoder (hf_encoder.cc) reads. What is supported, with the
// semantics of the Rust `tokenizers` library that wrote the file:
//   model          BPE: vocab, merges ("a b" strings or [a, b] pairs; a later
//                  duplicate wins), byte_fallback, ignore_merges, unk_token,
//                  fuse_unk. Not dropout, continuing_subword_prefix or
//                  end_of_word_suffix.
//   added_tokens   split out of the text, leftmost-longest, before anything
//                  else; those with "normalized": true are matched in the
//                  normalized text. Not single_word, lstrip or rstrip.
//   normalizer     NFC, NFD, NFKC, NFKD (ICU), Prepend, Replace (a String
//                  pattern), Sequence.
//   pre_tokenizer  Split (Regex run by ICU, or String; every behavior, invert),
//                  ByteLevel (add_prefix_space, use_regex), Metaspace,
//                  Digits, Sequence.
//   post_processor TemplateProcessing (its single template: the special
//                  tokens before and after the text), ByteLevel (offsets only:
//                  no ids), Sequence.
// The decoder, truncation and padding play no part in encoding and are
// ignored. A ByteLevel pre-tokenizer makes the vocabulary byte-level: its
// token strings are GPT-2's byte-to-character mapping of the token's bytes,
// decoded once at load, so the encoder works on raw bytes and never maps them.
#pragma once

#include <unicode/normalizer2.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "transform/tokenizer/pretokenize.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::hf {

constexpr int32_t kNoId = -1;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// (left id, right id) -> (rank, merged id), open addressing.
class MergeTable {
 public:
  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  void reserve(size_t merges);
  void set(int32_t left, int32_t right, Merge merge);  // replaces an earlier one
  const Merge* find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (uint64_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.merge;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  uint64_t slot_of(uint64_t key) const { return ((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask_; }
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

// Added tokens as a byte trie: at each position the longest token starting
// there, scanning left to right (leftmost-longest, what both the Rust
// library's Aho-Corasick and transformers.js do).
class AddedTokens {
 public:
  void add(std::string_view content, int32_t id);
  bool empty() const { return nodes_.size() <= 1; }
  // The id and length of the longest token at `text[pos..]`; kNoId if none.
  std::pair<int32_t, size_t> match_at(std::string_view text, size_t pos) const;
  bool may_start(unsigned char byte) const { return first_bytes_[byte]; }

 private:
  struct Node {
    uint32_t first_child = 0;  // 0: none (the root is never a child)
    uint32_t next_sibling = 0;
    unsigned char byte = 0;
    int32_t id = kNoId;
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
  std::array<bool, 256> first_bytes_{};
};

struct Normalization {
  enum class Kind { unicode, prepend, replace } kind;
  const icu::Normalizer2* form = nullptr;  // unicode; owned by ICU, thread-safe
  std::string text;                        // prepend: the prefix; replace: the pattern
  std::string replacement;                 // replace
};

// How a Split keeps what its pattern matches (the Rust library's
// SplitDelimiterBehavior).
enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

struct PreTokenization {
  enum class Kind { split_regex, split_string, byte_level, metaspace, digits } kind;
  // split_regex, byte_level with use_regex: the compiled pattern each encoder
  // shares (sharing_pattern()); regex_slot is that encoder's splitter index.
  std::shared_ptr<PreTokenizer> regex;
  size_t regex_slot = 0;
  std::string literal;  // split_string: the pattern; metaspace: the replacement
  Behavior behavior = Behavior::isolated;
  bool invert = false;
  bool add_prefix_space = false;   // byte_level
  bool individual_digits = false;  // digits
  enum class Prepend { always, first, never } prepend = Prepend::always;  // metaspace
  bool split = true;                                                      // metaspace
};

struct Model {
  std::string path;  // for messages
  // The model: token bytes (byte-level tokens decoded) -> id.
  TokenIds vocab;
  MergeTable merges;
  // Byte-level: each byte's token; byte fallback: its <0xXX> token; else kNoId.
  std::array<int32_t, 256> byte_ids{};
  bool byte_level = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  int32_t unk_id = kNoId;
  // Added tokens matched in the raw text, and those matched after normalization.
  AddedTokens raw_added, normalized_added;
  std::vector<Normalization> normalizations;
  std::vector<PreTokenization> pre_tokenizations;
  size_t regex_count = 0;
  // Post-processing: ids before and after a document's own.
  std::vector<int32_t> prefix_ids, suffix_ids;
  int32_t eod_id = kNoId;  // appended last when set
  // decode(): every id's bytes.
  std::vector<std::string> token_bytes;
  std::vector<bool> has_token;
  uint64_t table_bytes = 0;  // memory accounting, estimated at load
};

// Reads `path`. Throws IoError (unreadable, not JSON, a malformed part) or
// ConfigError (an unsupported part, named; append_eod without an EOD token).
Model load(const std::string& path, const HfTokenizerOptions& options);

}  // namespace msd::hf
