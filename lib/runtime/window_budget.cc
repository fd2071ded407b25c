#include "runtime/window_budget.h"

#include <algorithm>

#include "common/error.h"
#include "transport/slot.h"

namespace msd {

namespace {
// What SlotAllocator::allocate takes for `bytes`.
uint64_t slot_bytes(uint64_t bytes) {
  return std::max<uint64_t>(kSlotAlign, (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign);
}
}  // namespace

WindowBudget::WindowBudget(uint64_t window_bytes, uint64_t max_sample_bytes)
    : capacity_(window_bytes / kSlotAlign * kSlotAlign), reserve_(slot_bytes(max_sample_bytes)) {}

bool WindowBudget::fits(int loader, size_t outstanding) const {
  return used(loader) + (outstanding + 1) * reserve_ <= capacity_;
}

void WindowBudget::placed(int loader, uint64_t bytes) { used_[loader] += slot_bytes(bytes); }

void WindowBudget::released(int loader, uint64_t bytes) {
  uint64_t& used = used_[loader];
  const uint64_t taken = slot_bytes(bytes);
  MSD_CHECK_LE(taken, used);
  used -= taken;
}

uint64_t WindowBudget::used(int loader) const {
  auto it = used_.find(loader);
  return it == used_.end() ? 0 : it->second;
}

}  // namespace msd
