#include "planner/window_budget.h"

#include <algorithm>

#include "common/error.h"
#include "transport/slot.h"

namespace msd {

WindowBudget::WindowBudget(uint64_t window_bytes, uint64_t max_sample_bytes)
    : capacity_(window_bytes / kSlotAlign * kSlotAlign), reserve_(slot_extent(max_sample_bytes)) {}

bool WindowBudget::fits(int loader, size_t outstanding) const {
  return used(loader) + (outstanding + 1) * reserve_ <= capacity_;
}

void WindowBudget::placed(int loader, uint64_t bytes) {
  MSD_CHECK_LE(0, loader);
  if (static_cast<size_t>(loader) >= used_.size()) used_.resize(static_cast<size_t>(loader) + 1, 0);
  used_[static_cast<size_t>(loader)] += slot_extent(bytes);
}

void WindowBudget::released(int loader, uint64_t bytes) {
  const uint64_t taken = slot_extent(bytes);
  MSD_CHECK_LE(taken, used(loader));
  used_[static_cast<size_t>(loader)] -= taken;
}

uint64_t WindowBudget::used(int loader) const {
  return loader >= 0 && static_cast<size_t>(loader) < used_.size() ? used_[static_cast<size_t>(loader)] : 0;
}

}  // namespace msd
