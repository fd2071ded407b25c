#include "datagen/text_gen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_set>
#include <utility>

namespace msd::datagen {
namespace {

constexpr std::string_view onsets[] = {"",   "",   "",   "b",  "c",  "d",  "f",  "g",  "h",  "j",  "k",
                                       "l",  "m",  "n",  "p",  "r",  "s",  "t",  "v",  "w",  "z",  "br",
                                       "ch", "cl", "dr", "fr", "gr", "pl", "pr", "sh", "st", "th", "tr"};
constexpr std::string_view nuclei[] = {"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou", "io", "y"};
constexpr std::string_view codas[] = {"", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "x"};

// Words outside ASCII, by script; each appears as a whole word in the text.
constexpr std::string_view foreign_words[] = {
    "λόγος",  "δεδομένα", "μάθηση",  "κόσμος", "данные", "модель",  "обучение", "город", "数据",
    "模型",   "训练",     "東京",    "学习",   "世界",   "データ",  "言語",     "한국어", "사람",
    "🙂",     "🚀",       "📚",      "🔥",     "✨",     "👍🏽",    "مرحبا",    "שלום",   "नमस्ते",
    "Łódź",   "Ørsted",   "Zürich",  "São",    "façade", "naïve",   "señor",    "crème",  "Ångström"};

// Vowels and their accented forms, for pseudo-words with diacritics.
constexpr std::pair<char, std::string_view> accents[] = {
    {'a', "á"}, {'a', "à"}, {'a', "ä"}, {'e', "é"}, {'e', "è"}, {'e', "ê"}, {'i', "í"},
    {'i', "ï"}, {'o', "ö"}, {'o', "ó"}, {'o', "ø"}, {'u', "ü"}, {'u', "ú"}, {'y', "ÿ"}};

constexpr std::string_view months[] = {"January", "February", "March",     "April",   "May",      "June",
                                       "July",    "August",   "September", "October", "November", "December"};
constexpr std::string_view tlds[] = {"com", "org", "net", "io", "de", "fr", "co.uk", "edu", "info", "dev"};

template <typename T, size_t N>
const T& pick(Rng& rng, const T (&items)[N]) {
  return items[rng.below(N)];
}

void append_int(std::string& out, int64_t value) {
  char buffer[24];
  int length = std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
  out.append(buffer, static_cast<size_t>(length));
}

void append_padded(std::string& out, int64_t value, int width) {
  char buffer[24];
  int length = std::snprintf(buffer, sizeof buffer, "%0*lld", width, static_cast<long long>(value));
  out.append(buffer, static_cast<size_t>(length));
}

void capitalize_at(std::string& out, size_t position) {
  if (position < out.size() && out[position] >= 'a' && out[position] <= 'z') out[position] = static_cast<char>(out[position] - 'a' + 'A');
}

}  // namespace

TextGenerator::TextGenerator(uint64_t seed, size_t lexicon_words) {
  Rng rng(derive_seed(seed, {0x6c6578}));
  std::unordered_set<std::string> seen;
  struct Candidate {
    double rank_key;  // shorter words tend to be more frequent, as in real languages (Zipf's law of abbreviation)
    std::string word;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(lexicon_words);
  while (candidates.size() < lexicon_words) {
    const double roll = rng.unit();
    const int syllables = roll < 0.28 ? 1 : roll < 0.68 ? 2 : roll < 0.90 ? 3 : 4;
    std::string word;
    for (int s = 0; s < syllables; ++s) {
      word += pick(rng, onsets);
      word += pick(rng, nuclei);
      if (s + 1 == syllables || rng.chance(0.3)) word += pick(rng, codas);
    }
    if (word.size() < 2 && !rng.chance(0.2)) continue;
    if (!seen.insert(word).second) continue;
    const double key = 0.4 * static_cast<double>(word.size()) + 2.0 * rng.unit();
    candidates.push_back({key, std::move(word)});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank_key < b.rank_key; });
  lexicon_.reserve(candidates.size());
  cumulative_.reserve(candidates.size());
  double total = 0;
  for (size_t rank = 0; rank < candidates.size(); ++rank) {
    lexicon_.push_back(std::move(candidates[rank].word));
    total += 1.0 / std::pow(static_cast<double>(rank) + 2.7, 1.05);
    cumulative_.push_back(total);
  }
}

std::string_view TextGenerator::lexicon_word(Rng& rng) const {
  const double target = rng.unit() * cumulative_.back();
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), target);
  const size_t rank = std::min(static_cast<size_t>(it - cumulative_.begin()), lexicon_.size() - 1);
  return lexicon_[rank];
}

void TextGenerator::append_number(Rng& rng, std::string& out) const {
  switch (rng.below(9)) {
    case 0:
    case 1:
      append_int(out, rng.between(0, 100));
      break;
    case 2: {  // thousands separators
      append_int(out, rng.between(1, 999));
      out += ',';
      append_padded(out, rng.between(0, 999), 3);
      break;
    }
    case 3:
      append_int(out, rng.between(0, 999));
      out += '.';
      append_padded(out, rng.between(0, 99), 2);
      break;
    case 4:
      append_int(out, rng.between(1850, 2030));
      break;
    case 5:  // ISO date
      append_int(out, rng.between(1950, 2030));
      out += '-';
      append_padded(out, rng.between(1, 12), 2);
      out += '-';
      append_padded(out, rng.between(1, 28), 2);
      break;
    case 6:  // "14 March 2021": three words counted as one
      append_int(out, rng.between(1, 28));
      out += ' ';
      out += pick(rng, months);
      out += ' ';
      append_int(out, rng.between(1900, 2030));
      break;
    case 7:
      append_int(out, rng.between(0, 100));
      out += '%';
      break;
    default:
      if (rng.chance(0.5)) {
        append_padded(out, rng.between(0, 23), 2);
        out += ':';
        append_padded(out, rng.between(0, 59), 2);
      } else {
        out += '$';
        append_int(out, rng.between(1, 999));
        out += '.';
        append_padded(out, rng.between(0, 99), 2);
      }
      break;
  }
}

void TextGenerator::append_non_ascii(Rng& rng, std::string& out) const {
  if (rng.chance(0.5)) {
    out += pick(rng, foreign_words);
    return;
  }
  // A lexicon word with one vowel accented (the first that has an accent).
  const std::string_view word = lexicon_word(rng);
  const auto& [vowel, accented] = pick(rng, accents);
  const size_t at = word.find(vowel);
  if (at == std::string_view::npos) {
    out += word;
    out += accented;
    return;
  }
  out += word.substr(0, at);
  out += accented;
  out += word.substr(at + 1);
}

void TextGenerator::append_web_token(Rng& rng, std::string& out) const {
  switch (rng.below(8)) {
    case 0:
    case 1:
      out += url(rng);
      break;
    case 2:  // e-mail address
      out += lexicon_word(rng);
      out += '.';
      out += lexicon_word(rng);
      out += '@';
      out += lexicon_word(rng);
      out += '.';
      out += pick(rng, tlds);
      break;
    case 3:  // a call
      out += lexicon_word(rng);
      out += '_';
      out += lexicon_word(rng);
      out += '(';
      if (rng.chance(0.5)) {
        out += lexicon_word(rng);
        out += ", ";
        append_int(out, rng.between(0, 64));
      }
      out += ')';
      break;
    case 4: {  // a qualified name
      std::string_view first = lexicon_word(rng);
      const size_t at = out.size();
      out += first;
      capitalize_at(out, at);
      out += "::";
      out += lexicon_word(rng);
      break;
    }
    case 5:  // hashtag or handle
      out += rng.chance(0.5) ? '#' : '@';
      out += lexicon_word(rng);
      break;
    case 6:  // hex or a quoted string with a backslash escape inside
      if (rng.chance(0.7)) {
        char buffer[16];
        int length = std::snprintf(buffer, sizeof buffer, "0x%04llx", static_cast<unsigned long long>(rng.below(65536)));
        out.append(buffer, static_cast<size_t>(length));
      } else {
        out += "\"";
        out += lexicon_word(rng);
        out += "\\n\"";
      }
      break;
    default:  // a command-line flag
      out += "--";
      out += lexicon_word(rng);
      out += '-';
      out += lexicon_word(rng);
      if (rng.chance(0.4)) {
        out += '=';
        append_int(out, rng.between(0, 4096));
      }
      break;
  }
}

void TextGenerator::append_word(Rng& rng, TextStyle style, bool capitalize, std::string& out) const {
  const double roll = rng.unit();
  const size_t at = out.size();
  if (roll < 0.012) {
    append_non_ascii(rng, out);
  } else if (roll < 0.035) {
    append_number(rng, out);
  } else if (style == TextStyle::web && roll < 0.047) {
    append_web_token(rng, out);
    return;  // URLs and code keep their case
  } else {
    out += lexicon_word(rng);
    // Proper nouns: a few words capitalized anywhere.
    if (rng.chance(0.03)) capitalize = true;
  }
  if (capitalize) capitalize_at(out, at);
}

void TextGenerator::append_sentence(Rng& rng, TextStyle style, uint64_t words, std::string& out) const {
  const bool quoted = style == TextStyle::book && words >= 4 && rng.chance(0.12);
  if (quoted) out += "\"";
  const uint64_t parenthesis_at = words >= 8 && rng.chance(0.06) ? rng.below(words - 4) + 1 : words;
  for (uint64_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    if (i == parenthesis_at) out += '(';
    append_word(rng, style, i == 0, out);
    if (i == parenthesis_at + 2) out += ')';
    if (i + 1 < words) {
      const double roll = rng.unit();
      if (roll < 0.07) {
        out += ',';
      } else if (roll < 0.075) {
        out += ';';
      } else if (roll < 0.08) {
        out += ':';
      } else if (roll < 0.083) {
        out += " -";
      }
    }
  }
  const double roll = rng.unit();
  out += roll < 0.86 ? "." : roll < 0.93 ? "?" : roll < 0.98 ? "!" : "...";
  if (quoted) out += "\"";
}

void TextGenerator::document(Rng& rng, TextStyle style, uint64_t words, std::string& out) const {
  const LengthDistribution sentence_words{.median = 13, .sigma = 0.45, .tail_share = 0.01, .tail_start = 30,
                                          .tail_alpha = 2.0, .minimum = 2, .maximum = 80};
  const bool book = style == TextStyle::book;
  uint64_t written = 0;
  uint64_t chapter = 1;
  uint64_t next_chapter_at = 0;
  bool list = false;
  while (written < words) {
    if (book && written >= next_chapter_at && words - written > 200) {
      if (written > 0) out += "\n\n";
      out += "Chapter ";
      append_int(out, static_cast<int64_t>(chapter++));
      out += "\n\n";
      next_chapter_at = written + 1000 + rng.below(3000);
    } else if (written > 0) {
      out += book ? "\n\n" : "\n";
    }
    // Web pages have the occasional bulleted list: one short sentence per line.
    list = !book && written > 0 && !list && rng.chance(0.12);
    const uint64_t sentences = list ? static_cast<uint64_t>(rng.between(2, 5))
                                    : static_cast<uint64_t>(book ? rng.between(2, 9) : rng.between(1, 5));
    for (uint64_t s = 0; s < sentences && written < words; ++s) {
      if (s > 0) out += list ? "\n" : " ";
      if (list) out += "- ";
      uint64_t length = list ? static_cast<uint64_t>(rng.between(2, 8)) : sentence_words.draw(rng);
      length = std::min(length, words - written);
      append_sentence(rng, style, length, out);
      written += length;
    }
  }
}

std::string TextGenerator::url(Rng& rng) const {
  std::string out = rng.chance(0.8) ? "https://" : "http://";
  if (rng.chance(0.5)) out += "www.";
  out += lexicon_word(rng);
  out += '.';
  out += pick(rng, tlds);
  for (int64_t depth = rng.between(0, 3); depth > 0; --depth) {
    out += '/';
    out += lexicon_word(rng);
    if (rng.chance(0.3)) {
      out += '-';
      out += lexicon_word(rng);
    }
  }
  if (rng.chance(0.25)) {
    out += "?id=";
    append_int(out, rng.between(1, 99999));
  }
  return out;
}

std::string TextGenerator::caption(Rng& rng) const {
  std::string out;
  const uint64_t words = static_cast<uint64_t>(rng.between(3, 16));
  for (uint64_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    append_word(rng, TextStyle::book, i == 0, out);
  }
  if (rng.chance(0.6)) out += '.';
  return out;
}

}  // namespace msd::datagen
