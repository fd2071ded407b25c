// The layout of one transformed sample in a loader's RMA window
// (docs/window-slot.md), and the allocator loaders use to place slots.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace msd {

inline constexpr uint32_t kSlotMagic = 0x5344534d;  // "MSDS"
inline constexpr uint64_t kSlotAlign = 64;

// The bytes a slot of a sample of `bytes` takes in the window: whole
// alignment units, at least one.
inline uint64_t slot_extent(uint64_t bytes) {
  return bytes <= kSlotAlign ? kSlotAlign : (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
}

// At the start of every slot; clients do not need it (the plan carries the
// sizes) but it makes a window self-describing for checks and debugging.
struct SlotHeader {
  uint32_t magic = kSlotMagic;
  uint16_t version = 1;
  uint8_t kind = 0;  // SampleKind
  uint8_t reserved = 0;
  uint32_t source = 0;
  uint32_t text_tokens = 0;
  uint32_t patches = 0;
  uint32_t patch_bytes = 0;
  uint64_t index = 0;
};
static_assert(sizeof(SlotHeader) == 32);

// Offsets inside a slot: header, then text tokens (int32), then patch pixels.
struct SlotLayout {
  static uint64_t tokens_offset() { return sizeof(SlotHeader); }
  static uint64_t patches_offset(uint32_t text_tokens) { return tokens_offset() + uint64_t{text_tokens} * 4; }
  static uint64_t bytes(uint32_t text_tokens, uint32_t patches, uint32_t patch_bytes) {
    return patches_offset(text_tokens) + uint64_t{patches} * patch_bytes;
  }
};

// First-fit allocation of aligned ranges in [0, capacity), coalescing on free.
// Not thread-safe.
class SlotAllocator {
 public:
  explicit SlotAllocator(uint64_t capacity_bytes);
  std::optional<uint64_t> allocate(uint64_t bytes);  // nullopt: no room now
  void release(uint64_t offset);                     // REQUIRES: allocated
  // Frees every slot in [offset, offset + bytes) at once: one free range
  // however many slots it held. REQUIRES: the range is exactly a run of
  // adjacent allocated slots (the planner releases a step's slots so).
  void release_range(uint64_t offset, uint64_t bytes);
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint64_t peak_used() const { return peak_used_; }
  size_t live() const { return allocated_.size(); }

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t peak_used_ = 0;
  void free_range(uint64_t offset, uint64_t bytes);  // into free_, merged with its neighbours
  std::map<uint64_t, uint64_t> free_;       // offset -> bytes
  std::map<uint64_t, uint64_t> allocated_;  // offset -> bytes
};

}  // namespace msd
