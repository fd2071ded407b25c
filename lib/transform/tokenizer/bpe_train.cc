// Byte-level BPE training. The corpus is reduced to its unique pre-tokenized
// pieces with their counts; pair counts are kept incrementally (only the words
// that contain the merged pair are revisited), and a lazy max-heap finds the
// most frequent pair, so a merge costs time proportional to where it occurs.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/log.h"
#include "common/utf8.h"
#include "transform/tokenizer/pretokenize.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd {
namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }
uint32_t pair_left(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
uint32_t pair_right(uint64_t key) { return static_cast<uint32_t>(key); }

struct Word {
  std::vector<uint32_t> tokens;
  uint64_t count = 0;
};

struct Candidate {
  uint64_t count;
  uint64_t pair;
};

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

class Trainer {
 public:
  explicit Trainer(std::vector<Word> words) : words_(std::move(words)) {
    for (int byte = 0; byte < 256; ++byte) add_token(std::string(1, static_cast<char>(byte)));
    for (uint32_t w = 0; w < words_.size(); ++w) add_word_pairs(w);
    for (const auto& [pair, count] : pair_counts_) push(pair, count);
  }

  // Merges until `vocab_size` tokens exist or no pair occurs any more.
  void run(uint32_t vocab_size) {
    const auto started = std::chrono::steady_clock::now();
    auto last_report = started;
    while (tokens_.size() < vocab_size) {
      uint64_t pair = 0;
      uint64_t count = 0;
      if (!pop_best(pair, count)) break;
      merge(pair);
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report > std::chrono::seconds(2)) {
        last_report = now;
        log_info("bpe: ", tokens_.size(), "/", vocab_size, " tokens, last merge seen ", count, " times, ",
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - started).count(), " ms");
      }
    }
  }

  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  uint32_t add_token(std::string bytes) {
    const auto id = static_cast<uint32_t>(tokens_.size());
    ids_.emplace(bytes, id);
    tokens_.push_back(std::move(bytes));
    return id;
  }

  // Counts every adjacent pair of word `w` (at the start only).
  void add_word_pairs(uint32_t w) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.tokens.size(); ++i) {
      const uint64_t pair = pair_key(word.tokens[i], word.tokens[i + 1]);
      pair_counts_[pair] += word.count;
      where_[pair].push_back(w);
    }
  }

  void change(uint64_t pair, uint32_t w, uint64_t count, bool add) {
    uint64_t& total = pair_counts_[pair];
    if (add) {
      total += count;
      where_[pair].push_back(w);
    } else {
      MSD_CHECK_LE(count, total);
      total -= count;
    }
    touched_.push_back(pair);
  }

  // The heap's order: higher count first; on equal counts the pair whose
  // (left bytes, right bytes) sorts first, so the result never depends on
  // hash-table iteration order.
  bool before(const Candidate& a, const Candidate& b) const {
    if (a.count != b.count) return a.count > b.count;
    const int left = tokens_[pair_left(a.pair)].compare(tokens_[pair_left(b.pair)]);
    if (left != 0) return left < 0;
    return tokens_[pair_right(a.pair)] < tokens_[pair_right(b.pair)];
  }

  void push(uint64_t pair, uint64_t count) {
    if (count == 0) return;
    heap_.push_back({count, pair});
    std::push_heap(heap_.begin(), heap_.end(), [this](const Candidate& a, const Candidate& b) { return before(b, a); });
  }

  bool pop_best(uint64_t& pair, uint64_t& count) {
    const auto order = [this](const Candidate& a, const Candidate& b) { return before(b, a); };
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), order);
      const Candidate top = heap_.back();
      heap_.pop_back();
      const auto it = pair_counts_.find(top.pair);
      if (it == pair_counts_.end() || it->second != top.count) continue;  // stale entry
      pair = top.pair;
      count = top.count;
      return true;
    }
    return false;
  }

  void merge(uint64_t pair) {
    const uint32_t left = pair_left(pair);
    const uint32_t right = pair_right(pair);
    std::string bytes = tokens_[left] + tokens_[right];
    // Two different pairs can spell the same bytes ("ab"+"c", "a"+"bc"); the
    // tiktoken format keys tokens by bytes, so the second merge reuses the id.
    uint32_t merged;
    if (const auto it = ids_.find(bytes); it != ids_.end()) {
      merged = it->second;
    } else {
      merged = add_token(std::move(bytes));
    }
    std::vector<uint32_t> words = std::move(where_[pair]);
    where_.erase(pair);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    touched_.clear();
    for (const uint32_t w : words) {
      // Left to right, non-overlapping, in place. Only the pairs around each
      // occurrence change: (before, left) and (right, after) become
      // (before, merged) and (merged, after). `before` is the last token
      // written, so back-to-back occurrences ("a a a a") chain correctly.
      std::vector<uint32_t>& tokens = words_[w].tokens;
      const uint64_t count = words_[w].count;
      size_t out = 0;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i + 1 < tokens.size() && tokens[i] == left && tokens[i + 1] == right) {
          if (out > 0) {
            change(pair_key(tokens[out - 1], left), w, count, false);
            change(pair_key(tokens[out - 1], merged), w, count, true);
          }
          change(pair, w, count, false);
          if (i + 2 < tokens.size()) {
            change(pair_key(right, tokens[i + 2]), w, count, false);
            change(pair_key(merged, tokens[i + 2]), w, count, true);
          }
          tokens[out++] = merged;
          ++i;
        } else {
          tokens[out++] = tokens[i];
        }
      }
      tokens.resize(out);  // unchanged when the index listed a word merged away since
    }
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    for (const uint64_t changed : touched_) {
      const auto it = pair_counts_.find(changed);
      if (it->second == 0) {
        pair_counts_.erase(it);
        where_.erase(changed);
      } else {
        push(changed, it->second);
      }
    }
  }

  std::vector<Word> words_;
  std::vector<std::string> tokens_;  // by id: ranks 0..255 are the bytes
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> ids_;
  std::unordered_map<uint64_t, uint64_t> pair_counts_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where_;  // pair -> words (may be stale)
  std::vector<Candidate> heap_;
  std::vector<uint64_t> touched_;  // pairs whose count changed in this merge
};

}  // namespace

uint32_t train_bpe(std::span<const std::string> documents, const BpeTrainOptions& options,
                   const std::string& out_path) {
  if (options.vocab_size < 256) {
    throw ConfigError(str("bpe vocab_size: ", options.vocab_size, " is below the 256 single-byte tokens"));
  }
  PreTokenizer splitter(options.pattern, "bpe pattern");

  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> piece_counts;
  uint64_t bytes_read = 0;
  uint64_t invalid_documents = 0;
  for (const std::string& document : documents) {
    if (bytes_read >= options.max_corpus_bytes) break;
    if (!is_valid_utf8(document)) {
      ++invalid_documents;
      continue;
    }
    bytes_read += document.size();
    splitter.split(document, [&](std::string_view piece) {
      if (piece.empty()) return;
      if (auto it = piece_counts.find(piece); it != piece_counts.end()) {
        ++it->second;
      } else {
        piece_counts.emplace(std::string(piece), 1);
      }
    });
  }
  if (invalid_documents > 0) log_warn("bpe: skipped ", invalid_documents, " documents that are not valid UTF-8");

  // Sorted so that word indices (and so the where-index) are deterministic.
  std::vector<std::pair<std::string, uint64_t>> pieces(piece_counts.begin(), piece_counts.end());
  piece_counts.clear();
  std::sort(pieces.begin(), pieces.end());
  std::vector<Word> words;
  words.reserve(pieces.size());
  for (const auto& [piece, count] : pieces) {
    Word word;
    word.count = count;
    word.tokens.reserve(piece.size());
    for (const char c : piece) word.tokens.push_back(static_cast<unsigned char>(c));
    words.push_back(std::move(word));
  }
  log_info("bpe: ", bytes_read, " bytes, ", words.size(), " unique pieces");

  Trainer trainer(std::move(words));
  trainer.run(options.vocab_size);

  std::string out;
  const auto& tokens = trainer.tokens();
  for (size_t rank = 0; rank < tokens.size(); ++rank) {
    out += base64(tokens[rank]);
    out += ' ';
    out += std::to_string(rank);
    out += '\n';
  }
  write_file_atomic(out_path, std::span(reinterpret_cast<const unsigned char*>(out.data()), out.size()));
  return static_cast<uint32_t>(tokens.size());
}

}  // namespace msd
