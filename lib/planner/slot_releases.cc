#include "planner/slot_releases.h"

#include "transport/slot.h"

namespace msd {

void SlotReleases::add(int loader, uint64_t offset, uint64_t sample_bytes) {
  Loader* at = nullptr;
  for (Loader& l : loaders_)
    if (l.rank == loader) at = &l;
  if (at == nullptr) {
    at = &loaders_.emplace_back();
    at->rank = loader;
  }
  const uint64_t bytes = slot_extent(sample_bytes);
  at->bytes += bytes;
  if (!at->ranges.empty() && at->ranges.back().offset + at->ranges.back().bytes == offset)
    at->ranges.back().bytes += bytes;
  else
    at->ranges.push_back({offset, bytes});
}

}  // namespace msd
