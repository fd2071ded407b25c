// UTF-8 validation, shared by the readers (a record with invalid UTF-8 is a bad
// sample) and the tokenizer (which requires valid input).
#pragma once

#include <cstddef>
#include <string_view>

namespace msd {

// True when `text` is well-formed UTF-8: no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing beyond U+10FFFF, no truncated sequence.
bool is_valid_utf8(std::string_view text);

// Byte offset of the first ill-formed sequence, or text.size() when valid.
size_t first_invalid_utf8(std::string_view text);

}  // namespace msd
