// The pre-tokenization split shared by encoding and BPE training: the text is
// cut into pieces by a regex run by ICU directly over the UTF-8 bytes, so the
// piece boundaries are byte offsets and no UTF-16 copy is made.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <unicode/regex.h>
#include <unicode/utext.h>

namespace msd {

// Move-only owner of a compiled pattern and its matcher. Not thread-safe: the
// matcher is scratch state reused by every split.
class PreTokenizer {
 public:
  // `option` names the setting the pattern came from, for the error message.
  // Throws ConfigError when the resolved regex does not compile.
  PreTokenizer(const std::string& name_or_regex, const std::string& option);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Calls on_piece(std::string_view piece) for each match, in order. Text not
  // covered by any match is skipped (tiktoken does the same; the named
  // patterns cover every byte). REQUIRES: valid UTF-8. Throws Error when ICU
  // gives up (backtracking stack exhausted).
  template <typename OnPiece>
  void split(std::string_view text, OnPiece&& on_piece) {
    begin(text);
    size_t start = 0, end = 0;
    while (next(start, end)) on_piece(text.substr(start, end - start));
  }

  const std::string& regex() const { return regex_; }

 private:
  void begin(std::string_view text);
  bool next(size_t& start_bytes, size_t& end_bytes);

  std::string regex_;
  std::unique_ptr<icu::RegexPattern> pattern_;
  std::unique_ptr<icu::RegexMatcher> matcher_;
  UText* text_ = nullptr;  // reopened over each input; owned
};

}  // namespace msd
