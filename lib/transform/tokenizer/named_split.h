// Hand-written equivalents of the cl100k and o200k pre-tokenization regexes,
// and of the Qwen 2 / Qwen 3 tokenizer.json Split (cl100k's with one digit a
// piece).
// ICU's backtracking matcher dominates the cost of encoding; these functions
// walk the text once, classifying each code point with the same ICU property
// data the regex engine uses (\p{L}, \p{N}, \p{M} by general category, \s as
// White_Space), and give the same piece boundaries as the ICU regex on any
// valid UTF-8 (tests/unit/test_tokenizer.cc compares them over every code
// point and random multilingual text). On invalid UTF-8 every byte is still
// covered by exactly one piece.
#pragma once

#include <cstddef>
#include <string_view>

namespace msd {

// Which hand-written splitter a resolved regex has; none: use the regex.
enum class NamedSplit { none, cl100k, o200k, qwen2 };

// The Split regex of the Qwen 2 and Qwen 3 tokenizer.json files: cl100k's
// with \p{N} where cl100k has \p{N}{1,3}.
inline constexpr std::string_view kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The splitter for `regex` when it is exactly one of the named regexes.
NamedSplit named_split_for(std::string_view regex);

// The end (exclusive byte offset) of the piece that starts at `start`.
// REQUIRES: start < text.size(). The result is greater than `start`: both
// patterns match at every position, so pieces tile the text.
size_t cl100k_piece_end(std::string_view text, size_t start);
size_t o200k_piece_end(std::string_view text, size_t start);
size_t qwen2_piece_end(std::string_view text, size_t start);

}  // namespace msd
