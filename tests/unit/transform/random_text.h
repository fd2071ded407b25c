// Random text for the tokenizer tests: scalar values anywhere in Unicode, and
// the fragments the pre-tokenizers find hard.
#pragma once

#include <iterator>
#include <random>
#include <string>
#include <string_view>

namespace msd_test {

inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A random scalar value: ASCII and white space often (the split cares most
// about them), otherwise anywhere in the 17 planes except the surrogates.
inline char32_t random_code_point(std::mt19937& rng) {
  static constexpr char32_t kSpecial[] = {' ', '\t', '\r', '\n', '\'', 0xA0, 0x85, 0x2028, 0x3000, 0x200D, 0xFE0F};
  switch (rng() % 4) {
    case 0:
      return 0x20 + rng() % 0x5F;
    case 1:
      return kSpecial[rng() % std::size(kSpecial)];
    case 2:
      return 0x80 + rng() % (0xD800 - 0x80);  // the rest of the BMP below the surrogates
    default: {
      char32_t cp = 0xE000 + rng() % (0x110000 - 0xE000);
      return cp;
    }
  }
}

// Text the pre-tokenizers find hard: runs of white space with \r\n,
// contractions in mixed case (and 'ſ', which folds to 's'), digits of many
// scripts, upper, lower, title-case and modifier letters, combining marks,
// emoji sequences, and any scalar value now and then.
inline std::string random_split_text(std::mt19937& rng, size_t code_points) {
  static constexpr std::string_view kFragments[] = {
      "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'Ve", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D",
      "'\u017F", "'x", "''", "n't", "N'T", "\r\n", "\n\n", "\r", " \r\n ", "  ", "   ", "\t", " /", "//", "/\n",
      "\u00DF", "\uFB06", "\u0149"};
  static constexpr char32_t kChars[] = {
      '0', '7', 0x0660, 0x0669, 0x06F5, 0x0966, 0x0E51, 0xFF10, 0xFF19, 0x2160, 0x216B, 0x00B2, 0x00BD, 0x2460,
      0x1D7CE, 0x10107,                                          // digits, letter and other numbers
      'A', 'z', 0x00C0, 0x00E9, 0x0391, 0x03C9, 0x0410, 0x044F, 0x10A0, 0x1C90, 0x10D0, 0x0130, 0x0131,
      0x01C5, 0x1F88, 0x02B0, 0x02C6, 0x3005, 0x4E16, 0x3042, 0x30AB, 0xAC00, 0x05D0, 0x0627, 0x0915, 0x1E900,
      0x1E922, 0x017F, 0x212A,                                   // letters of every case class
      0x0300, 0x0301, 0x0308, 0x0903, 0x093F, 0x20DD, 0x20E3, 0xFE0F, 0x200D, 0x1F3FB,  // marks, joiners
      0x1F600, 0x1F44D, 0x1F1FA, 0x2764, 0x00A9,                 // emoji
      ' ', ' ', ' ', '\t', '\n', '\r', 0x0B, 0x0C, 0x1C, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x200B, 0x2028,
      0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,                    // white space and near misses
      '.', ',', '!', '-', '_', '@', '#', '\'', '"', 0x00A1, 0x2014, 0x3002, 0xE000, 0xFFFD, 0x10FFFF};
  std::string text;
  for (size_t k = 0; k < code_points; ++k) {
    switch (rng() % 5) {
      case 0:
        text += kFragments[rng() % std::size(kFragments)];
        break;
      case 1:
        append_utf8(text, random_code_point(rng));
        break;
      default:
        append_utf8(text, kChars[rng() % std::size(kChars)]);
    }
  }
  return text;
}

}  // namespace msd_test
