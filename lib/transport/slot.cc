#include "transport/slot.h"

#include <algorithm>

#include "common/error.h"

namespace msd {

SlotAllocator::SlotAllocator(uint64_t capacity_bytes) : capacity_(capacity_bytes / kSlotAlign * kSlotAlign) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<uint64_t> SlotAllocator::allocate(uint64_t bytes) {
  bytes = slot_extent(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    uint64_t offset = it->first;
    uint64_t remaining = it->second - bytes;
    free_.erase(it);
    if (remaining > 0) free_[offset + bytes] = remaining;
    allocated_[offset] = bytes;
    used_ += bytes;
    peak_used_ = std::max(peak_used_, used_);
    return offset;
  }
  return std::nullopt;
}

void SlotAllocator::release(uint64_t offset) {
  auto it = allocated_.find(offset);
  MSD_CHECK(it != allocated_.end());
  release_range(offset, it->second);
}

void SlotAllocator::release_range(uint64_t offset, uint64_t bytes) {
  const uint64_t end = offset + bytes;
  auto first = allocated_.find(offset);
  MSD_CHECK(first != allocated_.end());
  auto last = first;
  uint64_t at = offset;  // the slots must tile the range: no gap, no overhang
  for (; last != allocated_.end() && last->first < end; ++last) {
    MSD_CHECK_EQ(last->first, at);
    at += last->second;
  }
  MSD_CHECK_EQ(at, end);
  allocated_.erase(first, last);
  used_ -= bytes;
  free_range(offset, bytes);
}

void SlotAllocator::free_range(uint64_t offset, uint64_t bytes) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + bytes) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_[offset] = bytes;
}

}  // namespace msd
