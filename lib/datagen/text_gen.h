// A synthetic language that looks like text to a tokenizer: a Zipf-distributed
// lexicon of pseudo-words built from syllables, sentences with capitals and
// punctuation, paragraphs, numbers and dates, URLs and code-ish tokens in web
// text, and a small share of non-ASCII words (accented Latin, Greek, Cyrillic,
// CJK, emoji) so that UTF-8 handling is exercised end to end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datagen/random.h"

namespace msd::datagen {

enum class TextStyle {
  web,   // short paragraphs, URLs, e-mail addresses, code-ish tokens, lists
  book,  // chapters, long paragraphs, dialogue
};

// Immutable after construction: one generator may be shared by many threads,
// each drawing from its own Rng.
class TextGenerator {
 public:
  // The lexicon (`lexicon_words` distinct pseudo-words) is a function of `seed`.
  explicit TextGenerator(uint64_t seed, size_t lexicon_words = 4000);

  // Appends a document of exactly `words` words (numbers, URLs and code tokens
  // count as words) to `out`.
  void document(Rng& rng, TextStyle style, uint64_t words, std::string& out) const;
  // One short sentence-like line of 3..16 words, for image captions.
  std::string caption(Rng& rng) const;
  // A plausible web address made of lexicon words.
  std::string url(Rng& rng) const;

  size_t lexicon_size() const { return lexicon_.size(); }

 private:
  std::string_view lexicon_word(Rng& rng) const;
  void append_word(Rng& rng, TextStyle style, bool capitalize, std::string& out) const;
  void append_sentence(Rng& rng, TextStyle style, uint64_t words, std::string& out) const;
  void append_number(Rng& rng, std::string& out) const;
  void append_non_ascii(Rng& rng, std::string& out) const;
  void append_web_token(Rng& rng, std::string& out) const;

  std::vector<std::string> lexicon_;  // most frequent first
  std::vector<double> cumulative_;    // Zipf-Mandelbrot weights, summed
};

}  // namespace msd::datagen
