// The piece cache both BPE encoders keep (tiktoken's, tokenizer.cc, and
// tokenizer.json's, hf_encoder.cc): direct-mapped, one 64-byte entry per
// slot, 256 KiB per encoder. Words recur (Zipf), so most pieces of real text
// hit; a piece longer than kPieceBytes or merging to more than kIds ids is
// not cached. Not thread-safe: one per encoder, as the encoders are.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace msd {

class PieceCache {
 public:
  static constexpr size_t kEntries = 4096;
  static constexpr size_t kPieceBytes = 30;
  static constexpr size_t kIds = 6;

  static constexpr uint64_t bytes() { return sizeof(Entry) * kEntries; }

  // Appends the ids of `piece` to `out`: the cached ones, or those
  // merge(piece, out) appends, kept when they fit. `hash` is the piece's
  // hash; `slot` picks the entry (bits of it the caller uses for nothing
  // else).
  template <class Merge>
  void encode(std::string_view piece, uint64_t hash, uint64_t slot, std::vector<int32_t>& out, Merge&& merge) {
    if (piece.size() > kPieceBytes) return merge(piece, out);
    const uint64_t tag = hash | 1;
    Entry& entry = entries_[slot & (kEntries - 1)];
    if (entry.tag == tag && entry.piece_bytes == piece.size() &&
        std::memcmp(entry.piece, piece.data(), piece.size()) == 0) {
      out.insert(out.end(), entry.ids, entry.ids + entry.id_count);
      return;
    }
    const size_t before = out.size();
    merge(piece, out);
    const size_t ids = out.size() - before;
    if (ids > kIds) return;
    entry.tag = tag;
    entry.piece_bytes = static_cast<uint8_t>(piece.size());
    entry.id_count = static_cast<uint8_t>(ids);
    std::memcpy(entry.piece, piece.data(), piece.size());
    std::copy(out.end() - static_cast<ptrdiff_t>(ids), out.end(), entry.ids);
  }

 private:
  struct alignas(64) Entry {
    uint64_t tag = 0;  // the piece's hash with the low bit set; 0: empty
    uint8_t piece_bytes = 0;
    uint8_t id_count = 0;
    char piece[kPieceBytes];
    int32_t ids[kIds];
  };
  static_assert(sizeof(Entry) == 64);

  std::vector<Entry> entries_ = std::vector<Entry>(kEntries);
};

}  // namespace msd
