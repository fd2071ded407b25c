// The pre-tokenization split shared by encoding and BPE training: the text is
// cut into pieces by a regex run by ICU directly over the UTF-8 bytes, so the
// piece boundaries are byte offsets and no UTF-16 copy is made. The named
// cl100k and o200k regexes, and the Qwen 2/3 tokenizer.json Split, run as
// hand-written code (named_split.h) that gives the same pieces several times
// faster, and are then not compiled.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <unicode/regex.h>
#include <unicode/utext.h>

#include "transform/tokenizer/named_split.h"

namespace msd {

// automatic: the hand-written splitter when the regex is exactly a named one
// it covers, else ICU's regex engine. regex: always ICU (the tests compare).
enum class SplitEngine { automatic, regex };

// A compiled pattern and its matcher. Not thread-safe: the matcher is scratch
// state reused by every split. The compiled pattern is immutable and may be
// shared (sharing_pattern()): ICU lets matchers of one RegexPattern run on
// several threads at once. Move-only.
class PreTokenizer {
 public:
  // `option` names the setting the pattern came from, for the error message.
  // Throws ConfigError when the resolved regex does not compile (a regex a
  // hand-written splitter runs is known to, and is not compiled).
  PreTokenizer(const std::string& name_or_regex, const std::string& option,
               SplitEngine engine = SplitEngine::automatic);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // A splitter over the same compiled pattern (shared, not recompiled) with a
  // matcher of its own, for another thread. Throws ConfigError when ICU cannot
  // build the matcher.
  PreTokenizer sharing_pattern() const;

  // Calls on_piece(std::string_view piece) for each match, in order. Text not
  // covered by any match is skipped (tiktoken does the same; the named
  // patterns cover every byte). REQUIRES: valid UTF-8. Throws Error when ICU
  // gives up (backtracking stack exhausted).
  template <typename OnPiece>
  void split(std::string_view text, OnPiece&& on_piece) {
    if (named_ != NamedSplit::none) {
      const auto piece_end = named_ == NamedSplit::cl100k  ? cl100k_piece_end
                             : named_ == NamedSplit::o200k ? o200k_piece_end
                                                           : qwen2_piece_end;
      for (size_t start = 0, end = 0; start < text.size(); start = end) {
        end = piece_end(text, start);
        on_piece(text.substr(start, end - start));
      }
      return;
    }
    begin(text);
    size_t start = 0, end = 0;
    while (next(start, end)) on_piece(text.substr(start, end - start));
  }

  const std::string& regex() const { return regex_; }
  // Which hand-written splitter runs; none: ICU's regex engine.
  NamedSplit named() const { return named_; }

 private:
  PreTokenizer(std::string regex, NamedSplit named, std::shared_ptr<const icu::RegexPattern> pattern,
               const std::string& option);
  void make_matcher(const std::string& option);
  void begin(std::string_view text);
  bool next(size_t& start_bytes, size_t& end_bytes);

  std::string regex_;
  NamedSplit named_ = NamedSplit::none;
  std::shared_ptr<const icu::RegexPattern> pattern_;  // null (and no matcher) for a hand-written splitter
  std::unique_ptr<icu::RegexMatcher> matcher_;
  UText* text_ = nullptr;  // reopened over each input; owned
};

}  // namespace msd
