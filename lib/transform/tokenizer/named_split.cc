// The cl100k and o200k splits without a regex engine. Each function below
// follows one alternative of the regex (patterns.cc), in the regex's order,
// resolving its backtracking by hand; the comments quote the alternative.
#include "transform/tokenizer/named_split.h"

#include <unicode/uchar.h>

#include <array>
#include <cstdint>
#include <string>

#include "transform/tokenizer/tokenizer.h"

namespace msd {
namespace {

// The classes the two regexes distinguish. \p{L} is upper | lower | letter;
// o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] is upper | letter | mark and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] is lower | letter | mark.
enum class Kind : uint8_t {
  upper,   // Lu, Lt
  lower,   // Ll
  letter,  // Lm, Lo
  mark,    // Mn, Mc, Me (not \p{L})
  number,  // Nd, Nl, No
  space,   // White_Space: ICU's \s
  other,
};

Kind classify(UChar32 cp) {
  const uint32_t category = U_MASK(u_charType(cp));
  if ((category & (U_GC_LU_MASK | U_GC_LT_MASK)) != 0) return Kind::upper;
  if ((category & U_GC_LL_MASK) != 0) return Kind::lower;
  if ((category & (U_GC_LM_MASK | U_GC_LO_MASK)) != 0) return Kind::letter;
  if ((category & U_GC_M_MASK) != 0) return Kind::mark;
  if ((category & U_GC_N_MASK) != 0) return Kind::number;
  if (u_isUWhiteSpace(cp)) return Kind::space;
  return Kind::other;
}

// Built from ICU too, so the ASCII fast path cannot disagree with it.
std::array<Kind, 128> make_ascii_kinds() {
  std::array<Kind, 128> kinds{};
  for (UChar32 cp = 0; cp < 128; ++cp) kinds[cp] = classify(cp);
  return kinds;
}
const std::array<Kind, 128> kAsciiKinds = make_ascii_kinds();

struct Char {
  uint32_t bytes;
  Kind kind;
};

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// A byte that starts no well-formed sequence is one character of class
// other, as ICU reads it (U+FFFD), so invalid input still advances.
Char decode_non_ascii(const unsigned char* s, size_t size, size_t i) {
  const unsigned lead = s[i];
  const size_t left = size - i;
  UChar32 cp = -1;
  uint32_t bytes = 1;
  if (lead >= 0xC2 && lead < 0xE0) {
    if (left >= 2 && is_continuation(s[i + 1])) {
      cp = static_cast<UChar32>(((lead & 0x1F) << 6) | (s[i + 1] & 0x3F));
      bytes = 2;
    }
  } else if (lead >= 0xE0 && lead < 0xF0) {
    if (left >= 3 && is_continuation(s[i + 1]) && is_continuation(s[i + 2])) {
      cp = static_cast<UChar32>(((lead & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F));
      bytes = 3;
    }
  } else if (lead >= 0xF0 && lead < 0xF5) {
    if (left >= 4 && is_continuation(s[i + 1]) && is_continuation(s[i + 2]) && is_continuation(s[i + 3])) {
      cp = static_cast<UChar32>(((lead & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) |
                                (s[i + 3] & 0x3F));
      bytes = cp <= 0x10FFFF ? 4 : 1;
    }
  }
  if (bytes == 1) return {1, Kind::other};
  return {bytes, classify(cp)};
}

inline Char char_at(const unsigned char* s, size_t size, size_t i) {
  if (s[i] < 0x80) return {1, kAsciiKinds[s[i]]};
  return decode_non_ascii(s, size, i);
}

inline bool is_letter(Kind kind) { return kind == Kind::upper || kind == Kind::lower || kind == Kind::letter; }
// [^\s\p{L}\p{N}]
inline bool is_punctuation(Kind kind) { return kind == Kind::other || kind == Kind::mark; }
inline bool is_newline(unsigned char byte) { return byte == '\r' || byte == '\n'; }

struct Text {
  const unsigned char* s;
  size_t size;
  Char at(size_t i) const { return char_at(s, size, i); }
};

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at `i`: the end of the match, or 0. Under
// case folding only 'ſ' (U+017F, C5 BF) joins the ASCII letters (it folds to
// 's'); a character whose folding is several letters ('ß', 'ﬆ') cannot
// match part of its folding.
size_t contraction_end(const Text& t, size_t i) {
  if (i + 1 >= t.size || t.s[i] != '\'') return 0;
  const unsigned char first = t.s[i + 1];
  const auto lower_at = [&](size_t k) { return k < t.size ? static_cast<unsigned char>(t.s[k] | 0x20) : 0; };
  switch (first | 0x20) {
    case 's':
    case 't':
    case 'm':
    case 'd':
      return i + 2;
    case 'r':
    case 'v':
      return lower_at(i + 2) == 'e' ? i + 3 : 0;
    case 'l':
      return lower_at(i + 2) == 'l' ? i + 3 : 0;
    default:
      break;
  }
  if (first == 0xC5 && i + 2 < t.size && t.s[i + 2] == 0xBF) return i + 3;  // 'ſ
  return 0;
}

// \p{N}{1,max_digits} after the first digit, which ends at `i`.
size_t numbers_end(const Text& t, size_t i, int max_digits) {
  for (int count = 1; count < max_digits && i < t.size; ++count) {
    const Char c = t.at(i);
    if (c.kind != Kind::number) break;
    i += c.bytes;
  }
  return i;
}

// [^\s\p{L}\p{N}]+ continued from `i`, then the tail: [\r\n]* (cl100k) or
// [\r\n/]* (o200k).
size_t punctuation_end(const Text& t, size_t i, bool slash_in_tail) {
  while (i < t.size) {
    const Char c = t.at(i);
    if (!is_punctuation(c.kind)) break;
    i += c.bytes;
  }
  while (i < t.size && (is_newline(t.s[i]) || (slash_in_tail && t.s[i] == '/'))) ++i;
  return i;
}

// The whitespace alternatives, for a run that starts at `start`:
//   \s*[\r\n]+   up to and including the run's last \r or \n;
//   \s+(?!\S)    else the run without its last character, when the run has
//                more than one and text follows (that character then starts
//                the next piece, e.g. " word");
//   \s+          else the whole run.
size_t whitespace_end(const Text& t, size_t start) {
  constexpr size_t kNone = ~size_t{0};
  size_t i = start, last_newline = kNone, last_start = start, count = 0;
  while (i < t.size) {
    const Char c = t.at(i);
    if (c.kind != Kind::space) break;
    if (is_newline(t.s[i])) last_newline = i;
    last_start = i;
    i += c.bytes;
    ++count;
  }
  if (last_newline != kNone) return last_newline + 1;
  if (i == t.size || count == 1) return i;
  return last_start;
}

}  // namespace

NamedSplit named_split_for(std::string_view regex) {
  if (regex == resolve_pattern("cl100k")) return NamedSplit::cl100k;
  if (regex == resolve_pattern("o200k")) return NamedSplit::o200k;
  if (regex == kQwen2SplitRegex) return NamedSplit::qwen2;
  return NamedSplit::none;
}

namespace {

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}
// | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t cl100k_like_end(std::string_view text, size_t start, int max_digits) {
  const Text t{reinterpret_cast<const unsigned char*>(text.data()), text.size()};
  const auto letters_end = [&](size_t i) {
    while (i < t.size) {
      const Char c = t.at(i);
      if (!is_letter(c.kind)) break;
      i += c.bytes;
    }
    return i;
  };
  const Char c = t.at(start);
  const size_t after = start + c.bytes;
  if (is_letter(c.kind)) return letters_end(after);
  if (c.kind == Kind::number) return numbers_end(t, after, max_digits);
  if (t.s[start] == '\'') {
    if (const size_t end = contraction_end(t, start)) return end;
  }
  // [^\r\n\p{L}\p{N}]\p{L}+: any other single character before letters.
  const Char next = after < t.size ? t.at(after) : Char{0, Kind::other};
  const bool has_next = after < t.size;
  if (has_next && is_letter(next.kind) && !is_newline(t.s[start])) return letters_end(after + next.bytes);
  if (is_punctuation(c.kind)) return punctuation_end(t, after, false);
  if (t.s[start] == ' ' && has_next && is_punctuation(next.kind)) return punctuation_end(t, after + next.bytes, false);
  return whitespace_end(t, start);
}

}  // namespace

size_t cl100k_piece_end(std::string_view text, size_t start) { return cl100k_like_end(text, start, 3); }
size_t qwen2_piece_end(std::string_view text, size_t start) { return cl100k_like_end(text, start, 1); }

// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t o200k_piece_end(std::string_view text, size_t start) {
  const Text t{reinterpret_cast<const unsigned char*>(text.data()), text.size()};
  // Call X the first class (upper | letter | mark), Y the second (lower |
  // letter | mark). From `s`, X* takes the whole X run [s, a); Y+ then needs
  // a Y at a (a lower, as it is not X), else X* gives back characters until
  // one of them is in Y too (the run's last letter or mark), and Y+ ends
  // right after it. X+Y* needs a non-empty X run and takes the Y run after
  // it. Either way the optional contraction follows.
  struct Words {
    size_t first = 0;   // end of the first alternative from s, 0: no match
    size_t second = 0;  // end of the second, 0: no match
  };
  const auto with_contraction = [&](size_t end) {
    const size_t contraction = contraction_end(t, end);
    return contraction != 0 ? contraction : end;
  };
  const auto words_from = [&](size_t s) {
    Words words;
    size_t i = s, last_both_end = 0;
    Char c{0, Kind::other};
    while (i < t.size) {
      c = t.at(i);
      if (c.kind == Kind::upper) {
        i += c.bytes;
      } else if (c.kind == Kind::letter || c.kind == Kind::mark) {
        i += c.bytes;
        last_both_end = i;
      } else {
        break;
      }
    }
    const size_t x_end = i;
    if (i < t.size && c.kind == Kind::lower) {
      while (i < t.size) {
        c = t.at(i);
        if (c.kind != Kind::lower && c.kind != Kind::letter && c.kind != Kind::mark) break;
        i += c.bytes;
      }
      words.first = words.second = with_contraction(i);
      return words;
    }
    if (last_both_end != 0) words.first = with_contraction(last_both_end);
    if (x_end > s) words.second = with_contraction(x_end);  // no Y follows the X run
    return words;
  };

  const Char c = t.at(start);
  const size_t after = start + c.bytes;
  const bool prefix = (c.kind == Kind::other || c.kind == Kind::mark || c.kind == Kind::space) && !is_newline(t.s[start]);
  const bool word_start = c.kind == Kind::upper || c.kind == Kind::lower || c.kind == Kind::letter || c.kind == Kind::mark;
  Words with_prefix, without_prefix;
  if (prefix && after < t.size) {
    with_prefix = words_from(after);
    if (with_prefix.first != 0) return with_prefix.first;
  }
  if (word_start) {
    without_prefix = words_from(start);
    if (without_prefix.first != 0) return without_prefix.first;
  }
  if (with_prefix.second != 0) return with_prefix.second;
  if (without_prefix.second != 0) return without_prefix.second;
  if (c.kind == Kind::number) return numbers_end(t, after, 3);
  if (is_punctuation(c.kind)) return punctuation_end(t, after, true);
  if (t.s[start] == ' ' && after < t.size) {
    const Char next = t.at(after);
    if (is_punctuation(next.kind)) return punctuation_end(t, after + next.bytes, true);
  }
  return whitespace_end(t, start);
}

}  // namespace msd
