// Encoding with a Hugging Face tokenizer.json (hf_model.h): added tokens split
// out, each stretch between them normalized, pre-tokenized into pieces, and
// each piece merged by the BPE model, with the post-processor's tokens around
// the document. The merge order is the Rust library's (and transformers.js's):
// the pair of adjacent symbols whose merge comes first in the merges list,
// leftmost on ties. Unlike tiktoken's merge (tokenizer.cc), which ranks a pair
// by the id of the token it makes, a tokenizer.json ranks merges by their
// position in the list, so the two loops stay apart.
#include <unicode/bytestream.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "transform/tokenizer/hf_model.h"
#include "transform/tokenizer/piece_cache.h"
#include "transform/tokenizer/text_encoder.h"

namespace msd {
namespace hf {
namespace {


struct Range {
  uint32_t begin, end;
};

// A stretch of a piece and whether the split's pattern delimits there.
struct Segment {
  uint32_t begin, end;
  bool delimiter;
};

struct Symbol {
  int32_t id;
  int32_t prev, next;  // indices; -1 at the ends
  bool merged_away;
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;  // the left symbol
  int32_t id;    // what the merge makes
  bool operator>(const Candidate& other) const { return rank != other.rank ? rank > other.rank : pos > other.pos; }
};

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;  // invalid input (REQUIRES valid UTF-8): one byte at a time
}

// Applies a split behavior to the segments of one piece, appending the kept
// ranges (offset by `base`, empty ones dropped) to `out`.
void apply_behavior(std::vector<Segment>& segments, Behavior behavior, uint32_t base, std::vector<Range>& out) {
  std::vector<Segment> kept;
  kept.reserve(segments.size());
  bool previous_delimiter = false;
  switch (behavior) {
    case Behavior::removed:
      for (const Segment& s : segments)
        if (!s.delimiter) kept.push_back(s);
      break;
    case Behavior::isolated:
      kept = segments;
      break;
    case Behavior::merged_with_previous:
      for (const Segment& s : segments) {
        if (s.delimiter && !previous_delimiter && !kept.empty()) kept.back().end = s.end;
        else kept.push_back(s);
        previous_delimiter = s.delimiter;
      }
      break;
    case Behavior::merged_with_next:
      for (auto s = segments.rbegin(); s != segments.rend(); ++s) {
        if (s->delimiter && !previous_delimiter && !kept.empty()) kept.back().begin = s->begin;
        else kept.push_back(*s);
        previous_delimiter = s->delimiter;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::contiguous:
      for (const Segment& s : segments) {
        if (s.delimiter == previous_delimiter && !kept.empty()) kept.back().end = s.end;
        else kept.push_back(s);
        previous_delimiter = s.delimiter;
      }
      break;
  }
  for (const Segment& s : kept) {
    if (s.end > s.begin) out.push_back({base + s.begin, base + s.end});
  }
}

// The segments between and of `matches` (sorted, non-overlapping ranges of a
// piece of `length` bytes); empty matches are ignored.
void segments_of(const std::vector<Range>& matches, uint32_t length, bool invert, std::vector<Segment>& out) {
  out.clear();
  uint32_t previous = 0;
  for (const Range& m : matches) {
    if (m.end == m.begin) continue;
    if (m.begin > previous) out.push_back({previous, m.begin, invert});
    out.push_back({m.begin, m.end, !invert});
    previous = m.end;
  }
  if (previous < length) out.push_back({previous, length, invert});
}

class HfEncoder final : public TextEncoder {
 public:
  explicit HfEncoder(std::shared_ptr<const Model> model) : model_(std::move(model)) {
    for (const PreTokenization& step : model_->pre_tokenizations) {
      if (step.regex) {
        if (splitters_.size() <= step.regex_slot) splitters_.resize(step.regex_slot + 1);
        splitters_[step.regex_slot] = std::make_unique<PreTokenizer>(step.regex->sharing_pattern());
      }
    }
  }

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::unique_ptr<TextEncoder> sibling() const override { return std::make_unique<HfEncoder>(model_); }
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(model_->has_token.size()); }
  uint64_t model_bytes() const override { return model_->table_bytes; }
  uint64_t scratch_bytes() const override { return PieceCache::bytes(); }

 private:
  void encode_section(std::string_view section, bool at_start, std::vector<int32_t>& out);
  void encode_normalized(std::string_view text, bool at_start, std::vector<int32_t>& out);
  std::string_view normalize(std::string_view text);
  void pre_tokenize(std::string_view text, bool at_start);
  void split_step(const PreTokenization& step);
  void rewrite_step(const PreTokenization& step, bool at_start);
  void find_matches(const PreTokenization& step, std::string_view piece);
  void encode_piece(std::string_view piece, std::vector<int32_t>& out);
  void merge(std::string_view piece, std::vector<int32_t>& out);

  std::shared_ptr<const Model> model_;
  std::vector<std::unique_ptr<PreTokenizer>> splitters_;  // by regex_slot: this encoder's matchers
  // Scratch, reused so that encoding does not allocate per piece.
  std::string normalized_, normalize_scratch_;
  std::string text_, rewritten_;  // the pre-tokenized text; pieces are ranges of it
  std::vector<Range> ranges_, next_ranges_, matches_;
  std::vector<Segment> segments_;
  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
  PieceCache cache_;
};

// Calls on_stretch(text, is_token, id) for the stretches of `text` between
// and of the added tokens in `tokens`.
template <typename OnStretch>
void split_added(const AddedTokens& tokens, std::string_view text, OnStretch&& on_stretch) {
  size_t start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (tokens.may_start(static_cast<unsigned char>(text[pos]))) {
      const auto [id, length] = tokens.match_at(text, pos);
      if (id != kNoId) {
        if (pos > start) on_stretch(text.substr(start, pos - start), start, kNoId);
        on_stretch(text.substr(pos, length), pos, id);
        pos += length;
        start = pos;
        continue;
      }
    }
    ++pos;
  }
  if (start < text.size()) on_stretch(text.substr(start), start, kNoId);
}

void HfEncoder::encode(std::string_view text, std::vector<int32_t>& out) {
  const Model& model = *model_;
  out.insert(out.end(), model.prefix_ids.begin(), model.prefix_ids.end());
  split_added(model.raw_added, text, [&](std::string_view stretch, size_t offset, int32_t id) {
    if (id != kNoId) {
      out.push_back(id);
    } else {
      encode_section(stretch, offset == 0, out);
    }
  });
  out.insert(out.end(), model.suffix_ids.begin(), model.suffix_ids.end());
  if (model.eod_id != kNoId) out.push_back(model.eod_id);
}

void HfEncoder::encode_section(std::string_view section, bool at_start, std::vector<int32_t>& out) {
  const std::string_view normalized = normalize(section);
  if (model_->normalized_added.empty()) {
    encode_normalized(normalized, at_start, out);
    return;
  }
  // pre_tokenize() reuses the normalization buffers: keep a copy of this text.
  const std::string own(normalized);
  split_added(model_->normalized_added, own, [&](std::string_view stretch, size_t offset, int32_t id) {
    if (id != kNoId) {
      out.push_back(id);
    } else {
      encode_normalized(stretch, at_start && offset == 0, out);
    }
  });
}

std::string_view HfEncoder::normalize(std::string_view text) {
  if (model_->normalizations.empty() || text.empty()) return text;
  normalized_.assign(text);
  for (const Normalization& step : model_->normalizations) {
    switch (step.kind) {
      case Normalization::Kind::unicode: {
        UErrorCode status = U_ZERO_ERROR;
        const icu::StringPiece input(normalized_.data(), static_cast<int32_t>(normalized_.size()));
        if (step.form->isNormalizedUTF8(input, status)) break;
        normalize_scratch_.clear();
        icu::StringByteSink<std::string> sink(&normalize_scratch_);
        step.form->normalizeUTF8(0, input, sink, nullptr, status);
        if (U_FAILURE(status)) throw Error(str("tokenizer: normalization failed: ", u_errorName(status)));
        normalized_.swap(normalize_scratch_);
        break;
      }
      case Normalization::Kind::prepend:
        if (!normalized_.empty()) normalized_.insert(0, step.text);
        break;
      case Normalization::Kind::replace: {
        if (normalized_.find(step.text) == std::string::npos) break;
        normalize_scratch_.clear();
        size_t start = 0;
        for (size_t at = normalized_.find(step.text); at != std::string::npos; at = normalized_.find(step.text, start)) {
          normalize_scratch_.append(normalized_, start, at - start).append(step.replacement);
          start = at + step.text.size();
        }
        normalize_scratch_.append(normalized_, start);
        normalized_.swap(normalize_scratch_);
        break;
      }
    }
  }
  return normalized_;
}

void HfEncoder::encode_normalized(std::string_view text, bool at_start, std::vector<int32_t>& out) {
  if (text.empty()) return;
  pre_tokenize(text, at_start);
  for (const Range& r : ranges_) encode_piece(std::string_view(text_).substr(r.begin, r.end - r.begin), out);
}

void HfEncoder::pre_tokenize(std::string_view text, bool at_start) {
  text_.assign(text);
  ranges_.assign(1, Range{0, static_cast<uint32_t>(text_.size())});
  for (const PreTokenization& step : model_->pre_tokenizations) {
    const bool rewrites = step.kind == PreTokenization::Kind::metaspace ||
                          (step.kind == PreTokenization::Kind::byte_level && step.add_prefix_space);
    if (rewrites) rewrite_step(step, at_start);
    if (step.kind != PreTokenization::Kind::byte_level || step.regex) split_step(step);
  }
}

// The steps that change the text: ByteLevel's prefix space, Metaspace's
// replacement (and its prefix). The pieces keep their boundaries.
void HfEncoder::rewrite_step(const PreTokenization& step, bool at_start) {
  rewritten_.clear();
  next_ranges_.clear();
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const std::string_view piece = std::string_view(text_).substr(ranges_[i].begin, ranges_[i].end - ranges_[i].begin);
    const auto begin = static_cast<uint32_t>(rewritten_.size());
    if (step.kind == PreTokenization::Kind::byte_level) {
      if (piece.empty() || piece[0] != ' ') rewritten_ += ' ';
      rewritten_.append(piece);
    } else {
      const bool first = at_start && i == 0 && ranges_[i].begin == 0;
      const bool prepend = step.prepend == PreTokenization::Prepend::always ||
                           (step.prepend == PreTokenization::Prepend::first && first);
      const bool starts_with_space = !piece.empty() && piece[0] == ' ';
      const bool starts_with_replacement = piece.substr(0, step.literal.size()) == step.literal;
      if (prepend && !starts_with_space && !starts_with_replacement) rewritten_ += step.literal;
      for (const char c : piece) {
        if (c == ' ') rewritten_ += step.literal;
        else rewritten_ += c;
      }
    }
    next_ranges_.push_back({begin, static_cast<uint32_t>(rewritten_.size())});
  }
  text_.swap(rewritten_);
  ranges_.swap(next_ranges_);
}

void HfEncoder::find_matches(const PreTokenization& step, std::string_view piece) {
  matches_.clear();
  switch (step.kind) {
    case PreTokenization::Kind::split_regex:
    case PreTokenization::Kind::byte_level:
      splitters_[step.regex_slot]->split(piece, [&](std::string_view m) {
        const auto begin = static_cast<uint32_t>(m.data() - piece.data());
        matches_.push_back({begin, begin + static_cast<uint32_t>(m.size())});
      });
      break;
    case PreTokenization::Kind::split_string:
    case PreTokenization::Kind::metaspace:
      for (size_t at = piece.find(step.literal); at != std::string_view::npos;
           at = piece.find(step.literal, at + step.literal.size())) {
        matches_.push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(at + step.literal.size())});
      }
      break;
    case PreTokenization::Kind::digits:
      for (int32_t i = 0, n = static_cast<int32_t>(piece.size()); i < n;) {
        const int32_t begin = i;
        UChar32 c = 0;
        U8_NEXT(piece.data(), i, n, c);
        if (c >= 0 && (U_GET_GC_MASK(c) & U_GC_N_MASK) != 0) {
          matches_.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(i)});
        }
      }
      break;
  }
}

void HfEncoder::split_step(const PreTokenization& step) {
  if (step.kind == PreTokenization::Kind::metaspace && !step.split) return;
  Behavior behavior = step.behavior;
  bool invert = step.invert;
  if (step.kind == PreTokenization::Kind::byte_level) behavior = Behavior::isolated, invert = false;
  if (step.kind == PreTokenization::Kind::metaspace) behavior = Behavior::merged_with_next, invert = false;
  if (step.kind == PreTokenization::Kind::digits) {
    behavior = step.individual_digits ? Behavior::isolated : Behavior::contiguous;
    invert = false;
  }
  next_ranges_.clear();
  for (const Range& r : ranges_) {
    const std::string_view piece = std::string_view(text_).substr(r.begin, r.end - r.begin);
    find_matches(step, piece);
    segments_of(matches_, r.end - r.begin, invert, segments_);
    apply_behavior(segments_, behavior, r.begin, next_ranges_);
  }
  ranges_.swap(next_ranges_);
}

void HfEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
  if (piece.empty()) return;
  const Model& model = *model_;
  if (model.ignore_merges) {
    if (const auto it = model.vocab.find(piece); it != model.vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const uint64_t hash = std::hash<std::string_view>{}(piece);
  cache_.encode(piece, hash, hash >> 20, out, [this](std::string_view p, std::vector<int32_t>& ids) { merge(p, ids); });
}

// The Rust library's Word::merge_all over the piece's initial symbols: single
// bytes (byte-level), or characters with byte fallback and the unknown token.
void HfEncoder::merge(std::string_view piece, std::vector<int32_t>& out) {
  const Model& model = *model_;
  symbols_.clear();
  auto add = [&](int32_t id) {
    const auto index = static_cast<int32_t>(symbols_.size());
    symbols_.push_back({id, index - 1, -1, false});
  };
  for (size_t i = 0; i < piece.size();) {
    if (model.byte_level) {
      add(model.byte_ids[static_cast<unsigned char>(piece[i++])]);
      continue;
    }
    const size_t length = std::min(utf8_length(static_cast<unsigned char>(piece[i])), piece.size() - i);
    const std::string_view character = piece.substr(i, length);
    i += length;
    if (const auto it = model.vocab.find(character); it != model.vocab.end()) {
      add(it->second);
    } else if (model.byte_fallback && std::all_of(character.begin(), character.end(), [&](char c) {
                 return model.byte_ids[static_cast<unsigned char>(c)] != kNoId;
               })) {
      for (const char c : character) add(model.byte_ids[static_cast<unsigned char>(c)]);
    } else if (model.unk_id != kNoId && !(model.fuse_unk && !symbols_.empty() && symbols_.back().id == model.unk_id)) {
      add(model.unk_id);
    }
  }
  if (symbols_.empty()) return;
  symbols_.back().next = -1;
  for (size_t i = 0; i + 1 < symbols_.size(); ++i) symbols_[i].next = static_cast<int32_t>(i + 1);

  heap_.clear();
  const std::greater<Candidate> order;
  auto consider = [&](int32_t left) {
    const int32_t right = symbols_[left].next;
    if (right < 0) return;
    if (const MergeTable::Merge* m = model.merges.find(symbols_[left].id, symbols_[right].id); m != nullptr) {
      heap_.push_back({m->rank, static_cast<uint32_t>(left), m->id});
      std::push_heap(heap_.begin(), heap_.end(), order);
    }
  };
  for (size_t i = 0; i + 1 < symbols_.size(); ++i) consider(static_cast<int32_t>(i));
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), order);
    const Candidate top = heap_.back();
    heap_.pop_back();
    Symbol& left = symbols_[top.pos];
    if (left.merged_away || left.next < 0) continue;
    Symbol& right = symbols_[left.next];
    const MergeTable::Merge* still = model.merges.find(left.id, right.id);
    if (still == nullptr || still->id != top.id) continue;  // stale
    left.id = top.id;
    right.merged_away = true;
    left.next = right.next;
    if (left.next >= 0) symbols_[left.next].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0) consider(left.prev);
    consider(static_cast<int32_t>(top.pos));
  }
  for (int32_t i = 0; i >= 0; i = symbols_[i].next) out.push_back(symbols_[i].id);
}

std::string HfEncoder::decode(std::span<const int32_t> ids) const {
  const Model& model = *model_;
  std::string text;
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= model.has_token.size() || !model.has_token[id]) {
      throw Error(str("tokenizer: id ", id, " is not in the vocabulary (size ", vocab_size(), ")"));
    }
    text += model.token_bytes[id];
  }
  return text;
}

}  // namespace
}  // namespace hf

std::unique_ptr<TextEncoder> open_hf_encoder(const std::string& json_path, const HfTokenizerOptions& options) {
  return std::make_unique<hf::HfEncoder>(std::make_shared<const hf::Model>(hf::load(json_path, options)));
}

}  // namespace msd
