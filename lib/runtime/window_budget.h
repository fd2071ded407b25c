// What the planner knows of each loader's RMA window (docs/window-slot.md):
// the bytes of the slots it holds, and its unanswered requests, each of which
// may take up to job.max_sample_bytes. The planner sends a request only when
// it fits for sure, so a loader never waits for room: a full window is the
// planner holding back (back-pressure), never a loader that went silent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <unordered_map>

namespace msd {

class WindowBudget {
 public:
  // `window_bytes`: each loader's window; `max_sample_bytes`: job.max_sample_bytes.
  WindowBudget(uint64_t window_bytes, uint64_t max_sample_bytes);

  // Whether `loader`, with `outstanding` requests unanswered, can take one more.
  bool fits(int loader, size_t outstanding) const;
  void placed(int loader, uint64_t offset, uint64_t bytes);  // a slot the planner took into a step or keeps
  void released(int loader, uint64_t offset);                // that slot freed (no-op when unknown)
  uint64_t used(int loader) const;
  uint64_t capacity() const { return capacity_; }
  uint64_t reserve() const { return reserve_; }

 private:
  uint64_t capacity_;  // as SlotAllocator sees the window (whole alignment units)
  uint64_t reserve_;   // job.max_sample_bytes, rounded up as a slot
  // A slot is placed and released once per sample: its table entries come
  // from a pool, not from malloc.
  std::pmr::unsynchronized_pool_resource pool_;
  struct Loader {
    explicit Loader(std::pmr::memory_resource* pool) : slots(pool) {}
    std::pmr::unordered_map<uint64_t, uint64_t> slots;  // offset -> slot bytes
    uint64_t used = 0;
  };
  std::map<int, Loader> loaders_;  // by world rank (a few)
};

}  // namespace msd
