#include "runtime/window_budget.h"

#include <algorithm>

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

void WindowBudget::placed(int loader, uint64_t offset, uint64_t bytes) {
  const uint64_t taken = slot_bytes(bytes);
  Loader& l = loaders_.try_emplace(loader, &pool_).first->second;
  l.slots[offset] = taken;
  l.used += taken;
}

void WindowBudget::released(int loader, uint64_t offset) {
  auto l = loaders_.find(loader);
  if (l == loaders_.end()) return;
  auto it = l->second.slots.find(offset);
  if (it == l->second.slots.end()) return;
  l->second.used -= it->second;
  l->second.slots.erase(it);
}

uint64_t WindowBudget::used(int loader) const {
  auto it = loaders_.find(loader);
  return it == loaders_.end() ? 0 : it->second.used;
}

}  // namespace msd
