// Byte-level BPE encoding with tiktoken's exact semantics (encode_ordinary and
// _byte_pair_merge), over a vocabulary stored once in a byte arena and indexed
// by an open-addressing hash table so that lookups take a string_view and
// never allocate. Frequent pieces skip the lookup and the merge through a
// small cache of their ids. The vocabulary is immutable and shared; each
// encoder (the Tokenizer's, and one per encode_batch worker) has its own
// scratch.
#include "transform/tokenizer/tokenizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>

#include "common/error.h"
#include "common/files.h"
#include "common/worker_pool.h"
#include "msd/source_config.h"
#include "transform/tokenizer/piece_cache.h"
#include "transform/tokenizer/pretokenize.h"
#include "transform/tokenizer/text_encoder.h"

namespace msd {
namespace {

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNoToken = std::numeric_limits<uint32_t>::max();

// Pieces longer than this are merged with a heap (O(n log n)) instead of
// tiktoken's linear rescan (O(n^2)); both pick the lowest rank, leftmost first.
constexpr size_t kHeapMergeMinBytes = 128;


uint64_t load_bytes(const char* p, size_t n) {
  uint64_t word = 0;
  std::memcpy(&word, p, n);
  return word;
}

uint64_t mix(uint64_t h) {
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  return h;
}

size_t two_byte_index(std::string_view key) {
  return (size_t{static_cast<unsigned char>(key[0])} << 8) | static_cast<unsigned char>(key[1]);
}

uint64_t hash_bytes(std::string_view key) {
  uint64_t h = 0x9E3779B97F4A7C15ULL * (key.size() + 1);
  const char* p = key.data();
  size_t n = key.size();
  while (n >= 8) {
    h = mix(h ^ load_bytes(p, 8));
    p += 8;
    n -= 8;
  }
  if (n > 0) h = mix(h ^ load_bytes(p, n) ^ (uint64_t{n} << 59));
  return mix(h);
}

// -1 for a character outside the standard base64 alphabet.
constexpr std::array<int8_t, 256> make_base64_table() {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < alphabet.size(); ++i) table[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr auto kBase64 = make_base64_table();

// Appends the decoded bytes of `text` (padded standard base64) to `out`.
bool decode_base64(std::string_view text, std::string& out) {
  if (text.empty() || text.size() % 4 != 0) return false;
  size_t padding = 0;
  if (text.back() == '=') {
    ++padding;
    if (text[text.size() - 2] == '=') ++padding;
  }
  const size_t data_chars = text.size() - padding;
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < data_chars; ++i) {
    const int value = kBase64[static_cast<unsigned char>(text[i])];
    if (value < 0) return false;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  // Leftover bits of the last group must be zero (canonical encoding).
  return (buffer & ((1u << bits) - 1)) == 0;
}

const icu::Normalizer2* normalizer_for(const std::string& name) {
  if (name == "none" || name.empty()) return nullptr;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  if (name == "nfc") {
    normalizer = icu::Normalizer2::getNFCInstance(status);
  } else if (name == "nfkc") {
    normalizer = icu::Normalizer2::getNFKCInstance(status);
  } else if (name == "nfd") {
    normalizer = icu::Normalizer2::getNFDInstance(status);
  } else if (name == "nfkd") {
    normalizer = icu::Normalizer2::getNFKDInstance(status);
  } else {
    throw ConfigError(str("tokenizer.normalize: unknown normalization '", name, "' (none, nfc, nfkc, nfd, nfkd)"));
  }
  if (U_FAILURE(status)) throw ConfigError(str("tokenizer.normalize: ICU has no '", name, "' data: ", u_errorName(status)));
  return normalizer;
}

struct Slot {
  uint32_t offset = 0;   // into the arena
  uint32_t length = 0;
  uint32_t rank = kNoRank;  // kNoRank: empty slot
  uint32_t hash_tag = 0;    // high bits of the hash, to skip most byte compares
};

// (start byte, rank of the pair that starts there), as in tiktoken.
struct Part {
  uint32_t start;
  uint32_t rank;
};


struct HeapEntry {
  uint32_t rank;
  uint32_t start;
  bool operator>(const HeapEntry& other) const {
    return rank != other.rank ? rank > other.rank : start > other.start;
  }
};

// The immutable part of a tokenizer: every token's bytes and the tables that
// find a token's rank, built once by load() and then only read, so any number
// of encoders on any threads share one through a shared_ptr<const Vocabulary>.
struct Vocabulary {
  void load(const std::string& path);
  void insert(std::string_view key, uint32_t rank, const std::string& path, size_t line);
  uint32_t rank_of(std::string_view key) const;
  uint32_t rank_of_hashed(std::string_view key, uint64_t hash) const;
  uint64_t bytes() const {
    return arena.capacity() + slots.capacity() * sizeof(Slot) + two_byte_ranks.capacity() * sizeof(uint32_t) +
           (token_offset.capacity() + token_length.capacity()) * sizeof(uint32_t);
  }

  std::string arena;                   // every token's bytes, back to back
  std::vector<uint32_t> token_offset;  // by rank
  std::vector<uint32_t> token_length;  // by rank; kNoToken for a gap
  std::vector<Slot> slots;             // open addressing, power-of-two size
  uint64_t slot_mask = 0;
  // Every merge starts by looking up all adjacent byte pairs: a direct table
  // for two-byte keys skips hashing for most lookups.
  std::vector<uint32_t> two_byte_ranks;  // 65536 entries, kNoRank when absent
  // Null: no normalization. Owned by ICU; Normalizer2 instances are immutable
  // and thread-safe.
  const icu::Normalizer2* normalizer = nullptr;
};

// The scratch state of encoding over a shared vocabulary: one per thread.
// Cache-line aligned, so that two encoders' hot members never share a line.
class alignas(64) Encoder final : public TextEncoder {
 public:
  // `splitter` holds the compiled pattern (shared between encoders) and this
  // encoder's own matcher.
  Encoder(std::shared_ptr<const Vocabulary> vocab, PreTokenizer splitter)
      : vocab_(std::move(vocab)), splitter_(std::move(splitter)) {}

  // Appends the ids of `text` to `out` (Tokenizer::encode's contract).
  void encode(std::string_view text, std::vector<int32_t>& out) override;
  // An encoder for another thread: the same vocabulary and compiled pattern,
  // fresh scratch.
  std::unique_ptr<TextEncoder> sibling() const override {
    return std::make_unique<Encoder>(vocab_, splitter_.sharing_pattern());
  }
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_->token_length.size()); }
  uint64_t model_bytes() const override { return vocab_->bytes(); }
  uint64_t scratch_bytes() const override { return PieceCache::bytes(); }

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out);
  void merge(std::string_view piece, std::vector<int32_t>& out);
  void merge_linear(std::string_view piece, std::vector<int32_t>& out);
  void merge_heap(std::string_view piece, std::vector<int32_t>& out);

  std::shared_ptr<const Vocabulary> vocab_;
  PreTokenizer splitter_;
  // Reused across calls so encoding does not allocate per piece.
  std::string normalized_;
  std::vector<Part> parts_;
  std::vector<uint32_t> next_, prev_, pair_rank_;
  std::vector<HeapEntry> heap_;
  PieceCache cache_;
};

// encode_batch's threads: the calling thread with the Tokenizer's encoder,
// and pool workers, each with an encoder of its own (indexed by slot - 1).
// Encoders are created before their worker starts, so a worker never sees a
// missing one. Used from one thread at a time.
struct EncodePool {
  WorkerPool threads{"tokenizer"};
  std::vector<std::unique_ptr<TextEncoder>> encoders;  // encoders[k]: worker slot k + 1's

  void grow(size_t count, const TextEncoder& prototype) {
    while (encoders.size() < count) encoders.push_back(prototype.sibling());
    threads.grow(count);
  }
  void run(TextEncoder& caller, size_t helpers, std::span<const std::string_view> texts,
           std::vector<std::vector<int32_t>>& out);
};

}  // namespace

struct Tokenizer::Impl {
  explicit Impl(std::unique_ptr<TextEncoder> own) : encoder(std::move(own)) {}

  std::unique_ptr<TextEncoder> encoder;  // encode()'s, and the calling thread's in encode_batch
  std::atomic<bool> has_pool{false};  // for state_bytes() on another thread
  // Declared last: destroyed (threads joined) before anything they use.
  std::unique_ptr<EncodePool> pool;
};

namespace {

void Vocabulary::insert(std::string_view key, uint32_t rank, const std::string& path, size_t line) {
  const uint64_t h = hash_bytes(key);
  for (uint64_t i = h & slot_mask;; i = (i + 1) & slot_mask) {
    Slot& slot = slots[i];
    if (slot.rank == kNoRank) {
      slot.offset = token_offset[rank];
      slot.length = checked_cast<uint32_t>(key.size());
      slot.rank = rank;
      slot.hash_tag = static_cast<uint32_t>(h >> 32);
      return;
    }
    if (slot.length == key.size() && std::memcmp(arena.data() + slot.offset, key.data(), key.size()) == 0) {
      throw IoError(str(path, ":", line, ": token bytes repeated (first given rank ", slot.rank, ")"));
    }
  }
}

uint32_t Vocabulary::rank_of(std::string_view key) const {
  if (key.size() == 2) return two_byte_ranks[two_byte_index(key)];
  return rank_of_hashed(key, hash_bytes(key));
}

// REQUIRES: h == hash_bytes(key).
uint32_t Vocabulary::rank_of_hashed(std::string_view key, uint64_t h) const {
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t i = h & slot_mask;; i = (i + 1) & slot_mask) {
    const Slot& slot = slots[i];
    if (slot.rank == kNoRank) return kNoRank;
    if (slot.hash_tag == tag && slot.length == key.size() &&
        std::memcmp(arena.data() + slot.offset, key.data(), key.size()) == 0) {
      return slot.rank;
    }
  }
}

void Vocabulary::load(const std::string& path) {
  const MappedFile file(path);
  const std::string_view content(reinterpret_cast<const char*>(file.bytes().data()), file.size());

  struct Entry {
    uint32_t offset, length, rank;
    size_t line;
  };
  std::vector<Entry> entries;
  size_t line_number = 0;
  uint32_t max_rank = 0;
  for (size_t pos = 0; pos < content.size();) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;  // tiktoken skips blank lines too
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      throw IoError(str(path, ":", line_number, ": expected '<base64 bytes> <rank>'"));
    }
    const std::string_view encoded = line.substr(0, space);
    const std::string_view rank_text = line.substr(space + 1);
    const size_t offset = arena.size();
    if (!decode_base64(encoded, arena)) {
      throw IoError(str(path, ":", line_number, ": '", encoded, "' is not valid base64"));
    }
    uint64_t rank = 0;
    if (rank_text.empty() || rank_text.size() > 10) {
      throw IoError(str(path, ":", line_number, ": rank '", rank_text, "' is not an integer in 0..2^31-1"));
    }
    for (char c : rank_text) {
      if (c < '0' || c > '9') {
        throw IoError(str(path, ":", line_number, ": rank '", rank_text, "' is not an integer in 0..2^31-1"));
      }
      rank = rank * 10 + static_cast<uint64_t>(c - '0');
    }
    if (rank > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) - 1) {
      throw IoError(str(path, ":", line_number, ": rank '", rank_text, "' is not an integer in 0..2^31-1"));
    }
    if (arena.size() - offset > std::numeric_limits<uint32_t>::max() || arena.size() > std::numeric_limits<uint32_t>::max()) {
      throw IoError(str(path, ":", line_number, ": vocabulary too large"));
    }
    entries.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(arena.size() - offset),
                       static_cast<uint32_t>(rank), line_number});
    max_rank = std::max(max_rank, static_cast<uint32_t>(rank));
  }
  if (entries.empty()) throw IoError(str(path, ": the vocabulary file has no tokens"));

  token_offset.assign(size_t{max_rank} + 1, 0);
  token_length.assign(size_t{max_rank} + 1, kNoToken);
  const size_t slot_count = std::bit_ceil(entries.size() * 2);
  slots.assign(slot_count, Slot{});
  slot_mask = slot_count - 1;
  two_byte_ranks.assign(size_t{1} << 16, kNoRank);
  for (const Entry& entry : entries) {
    if (token_length[entry.rank] != kNoToken) {
      throw IoError(str(path, ":", entry.line, ": rank ", entry.rank, " given twice"));
    }
    if (entry.length == 0) throw IoError(str(path, ":", entry.line, ": a token has no bytes"));
    token_offset[entry.rank] = entry.offset;
    token_length[entry.rank] = entry.length;
    const std::string_view bytes = std::string_view(arena).substr(entry.offset, entry.length);
    insert(bytes, entry.rank, path, entry.line);
    if (bytes.size() == 2) two_byte_ranks[two_byte_index(bytes)] = entry.rank;
  }
  // Byte-level BPE must be able to fall back to single bytes for any input.
  for (int byte = 0; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    if (rank_of(std::string_view(&c, 1)) == kNoRank) {
      throw IoError(str(path, ": the vocabulary has no token for the single byte ", byte,
                        " (a byte-level vocabulary needs all 256)"));
    }
  }
  arena.shrink_to_fit();
}

// tiktoken's _byte_pair_merge: parts[i] holds the start of a part and the rank
// of merging it with its successor; merge the lowest rank (leftmost on ties),
// refresh the two neighbouring ranks, rescan.
void Encoder::merge_linear(std::string_view piece, std::vector<int32_t>& out) {
  const size_t n = piece.size();
  parts_.clear();
  uint32_t min_rank = kNoRank;
  size_t min_index = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint32_t rank = vocab_->rank_of(piece.substr(i, 2));
    if (rank < min_rank) {
      min_rank = rank;
      min_index = i;
    }
    parts_.push_back({static_cast<uint32_t>(i), rank});
  }
  parts_.push_back({static_cast<uint32_t>(n - 1), kNoRank});
  parts_.push_back({static_cast<uint32_t>(n), kNoRank});

  // The rank of merging parts i and i+1 while parts[i+1] (the one being
  // removed) is still in the vector: the span runs to parts[i+3].
  auto rank_after_merge = [&](size_t i) {
    if (i + 3 < parts_.size()) return vocab_->rank_of(piece.substr(parts_[i].start, parts_[i + 3].start - parts_[i].start));
    return kNoRank;
  };
  while (min_rank != kNoRank) {
    const size_t i = min_index;
    if (i > 0) parts_[i - 1].rank = rank_after_merge(i - 1);
    parts_[i].rank = rank_after_merge(i);
    parts_.erase(parts_.begin() + static_cast<ptrdiff_t>(i) + 1);
    min_rank = kNoRank;
    for (size_t k = 0; k + 1 < parts_.size(); ++k) {
      if (parts_[k].rank < min_rank) {
        min_rank = parts_[k].rank;
        min_index = k;
      }
    }
  }
  for (size_t k = 0; k + 1 < parts_.size(); ++k) {
    const uint32_t rank = vocab_->rank_of(piece.substr(parts_[k].start, parts_[k + 1].start - parts_[k].start));
    MSD_CHECK(rank != kNoRank);
    out.push_back(static_cast<int32_t>(rank));
  }
}

// The same merge order as merge_linear, with the minimum found through a heap
// of (rank, start) entries: a part's start is its byte offset, so ordering by
// start is ordering by position, and stale entries are skipped on pop.
void Encoder::merge_heap(std::string_view piece, std::vector<int32_t>& out) {
  const auto n = static_cast<uint32_t>(piece.size());
  // Parts are identified by their start byte; next[s] is the start of the
  // following part (n for the last), prev[s] the start of the preceding one.
  next_.resize(n);
  prev_.resize(n);
  pair_rank_.resize(n);
  heap_.clear();
  const std::greater<HeapEntry> heap_order;
  auto pair_rank_at = [&](uint32_t start) {
    const uint32_t second = next_[start];
    if (second >= n) return kNoRank;
    return vocab_->rank_of(piece.substr(start, next_[second] - start));
  };
  for (uint32_t i = 0; i < n; ++i) {
    next_[i] = i + 1;
    prev_[i] = i == 0 ? kNoRank : i - 1;
  }
  for (uint32_t i = 0; i < n; ++i) {
    pair_rank_[i] = pair_rank_at(i);
    if (pair_rank_[i] != kNoRank) heap_.push_back({pair_rank_[i], i});
  }
  std::make_heap(heap_.begin(), heap_.end(), heap_order);
  constexpr uint32_t kMerged = kNoRank - 1;  // pair_rank of a part absorbed by its predecessor
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_order);
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    if (pair_rank_[top.start] != top.rank) continue;  // stale
    const uint32_t start = top.start;
    const uint32_t absorbed = next_[start];
    next_[start] = next_[absorbed];
    if (next_[absorbed] < n) prev_[next_[absorbed]] = start;
    pair_rank_[absorbed] = kMerged;
    pair_rank_[start] = pair_rank_at(start);
    if (pair_rank_[start] != kNoRank) {
      heap_.push_back({pair_rank_[start], start});
      std::push_heap(heap_.begin(), heap_.end(), heap_order);
    }
    const uint32_t before = prev_[start];
    if (before != kNoRank) {
      pair_rank_[before] = pair_rank_at(before);
      if (pair_rank_[before] != kNoRank) {
        heap_.push_back({pair_rank_[before], before});
        std::push_heap(heap_.begin(), heap_.end(), heap_order);
      }
    }
  }
  for (uint32_t start = 0; start < n; start = next_[start]) {
    const uint32_t rank = vocab_->rank_of(piece.substr(start, next_[start] - start));
    MSD_CHECK(rank != kNoRank);
    out.push_back(static_cast<int32_t>(rank));
  }
}

void Encoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
  if (piece.empty()) return;  // a user regex may match the empty string
  if (piece.size() <= 2) {  // direct tables
    const uint32_t whole = vocab_->rank_of(piece);
    if (whole != kNoRank) {
      out.push_back(static_cast<int32_t>(whole));
    } else {
      for (const char byte : piece) out.push_back(static_cast<int32_t>(vocab_->rank_of(std::string_view(&byte, 1))));
    }
    return;
  }
  const uint64_t hash = hash_bytes(piece);
  const uint32_t whole = vocab_->rank_of_hashed(piece, hash);
  if (whole != kNoRank) {
    out.push_back(static_cast<int32_t>(whole));
    return;
  }
  // Only pieces that need merging are cached: a whole token costs one probe
  // of the vocabulary table, no more than a cache probe. The vocabulary
  // table is indexed by the hash's low bits; the cache by others.
  cache_.encode(piece, hash, hash >> 40, out, [this](std::string_view p, std::vector<int32_t>& ids) { merge(p, ids); });
}

void Encoder::merge(std::string_view piece, std::vector<int32_t>& out) {
  if (piece.size() < kHeapMergeMinBytes) {
    merge_linear(piece, out);
  } else {
    merge_heap(piece, out);
  }
}

void Encoder::encode(std::string_view text, std::vector<int32_t>& out) {
  if (vocab_->normalizer != nullptr) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece input(text.data(), static_cast<int32_t>(text.size()));
    if (!vocab_->normalizer->isNormalizedUTF8(input, status)) {
      normalized_.clear();
      icu::StringByteSink<std::string> sink(&normalized_);
      vocab_->normalizer->normalizeUTF8(0, input, sink, nullptr, status);
      text = normalized_;
    }
    if (U_FAILURE(status)) throw Error(str("tokenizer: normalization failed: ", u_errorName(status)));
  }
  splitter_.split(text, [&](std::string_view piece) { encode_piece(piece, out); });
}

std::string Encoder::decode(std::span<const int32_t> ids) const {
  const Vocabulary& vocab = *vocab_;
  std::string text;
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= vocab.token_length.size() || vocab.token_length[id] == kNoToken) {
      throw Error(str("tokenizer: id ", id, " is not in the vocabulary (size ", vocab_size(), ")"));
    }
    text.append(vocab.arena, vocab.token_offset[id], vocab.token_length[id]);
  }
  return text;
}

void EncodePool::run(TextEncoder& caller, size_t helpers, std::span<const std::string_view> texts,
                     std::vector<std::vector<int32_t>>& out) {
  MSD_CHECK(out.size() == texts.size());
  threads.run(helpers, texts.size(), [&](size_t slot, size_t i) {
    TextEncoder& encoder = slot == 0 ? caller : *encoders[slot - 1];
    // Encoding into out[i] directly would write its end pointer per token,
    // on a cache line it shares with its neighbours, which other threads
    // are filling: swap the buffer into the encoder's own vector instead.
    std::vector<int32_t>& ids = encoder.batch_ids();
    ids.swap(out[i]);
    ids.clear();
    encoder.encode(texts[i], ids);
    ids.swap(out[i]);
  });
}

}  // namespace

Tokenizer::Tokenizer(const std::string& vocab_path, const TokenizerOptions& options) {
  // The splitter first: a bad pattern is reported before the file is read.
  PreTokenizer splitter(options.pattern, "tokenizer.pattern");
  auto vocab = std::make_shared<Vocabulary>();
  vocab->normalizer = normalizer_for(options.normalize);
  vocab->load(vocab_path);
  impl_ = std::make_unique<Impl>(std::make_unique<Encoder>(std::move(vocab), std::move(splitter)));
}

Tokenizer::Tokenizer(std::unique_ptr<TextEncoder> encoder) : impl_(std::make_unique<Impl>(std::move(encoder))) {}

Tokenizer Tokenizer::hugging_face(const std::string& json_path, const HfTokenizerOptions& options) {
  return Tokenizer(open_hf_encoder(json_path, options));
}

std::unique_ptr<Tokenizer> open_tokenizer(const TokenizerConfig& config) {
  if (!config.hf.empty()) {
    return std::make_unique<Tokenizer>(Tokenizer::hugging_face(config.hf, {config.append_eod, config.eod_token}));
  }
  return std::make_unique<Tokenizer>(config.vocab, TokenizerOptions{config.pattern, config.normalize});
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) { impl_->encoder->encode(text, out); }

std::vector<int32_t> Tokenizer::encode(std::string_view text) {
  std::vector<int32_t> out;
  encode(text, out);
  return out;
}

void Tokenizer::encode_batch(std::span<const std::string_view> texts, std::vector<std::vector<int32_t>>& out,
                             unsigned threads) {
  out.resize(texts.size());
  const size_t helpers = std::min<size_t>(threads, texts.size()) - (threads > 0 && !texts.empty() ? 1 : 0);
  if (helpers == 0) {
    for (size_t i = 0; i < texts.size(); ++i) {
      out[i].clear();
      impl_->encoder->encode(texts[i], out[i]);
    }
    return;
  }
  if (impl_->pool == nullptr) {
    impl_->pool = std::make_unique<EncodePool>();
    impl_->has_pool.store(true, std::memory_order_release);
  }
  impl_->pool->grow(helpers, *impl_->encoder);
  impl_->pool->run(*impl_->encoder, helpers, texts, out);
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const { return impl_->encoder->decode(ids); }

int32_t Tokenizer::vocab_size() const { return impl_->encoder->vocab_size(); }

uint64_t Tokenizer::state_bytes() const {
  const size_t workers = impl_->has_pool.load(std::memory_order_acquire) ? impl_->pool->threads.workers() : 0;
  return impl_->encoder->model_bytes() + (1 + workers) * impl_->encoder->scratch_bytes();
}

}  // namespace msd
