// What the planner knows of each loader's RMA window (docs/window-slot.md):
// the bytes of the slots it holds, and its unanswered requests, each of which
// may take up to job.max_sample_bytes. The planner sends a request only when
// it fits for sure, so a loader never waits for room: a full window is the
// planner holding back (back-pressure), never a loader that went silent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace msd {

class WindowBudget {
 public:
  // `window_bytes`: each loader's window; `max_sample_bytes`: job.max_sample_bytes.
  WindowBudget(uint64_t window_bytes, uint64_t max_sample_bytes);

  // Whether `loader`, with `outstanding` requests unanswered, can take one more.
  bool fits(int loader, size_t outstanding) const;
  // A slot of a sample of `bytes` that the planner took into a step or keeps,
  // and, once, that slot freed. The planner knows each slot's sample, so
  // the budget keeps only the sums: no table per slot.
  void placed(int loader, uint64_t bytes);
  // REQUIRES: placed before with these bytes, or `bytes` the whole slots of
  // a range of them (SlotReleases: the sum of their slot_extent).
  void released(int loader, uint64_t bytes);
  uint64_t used(int loader) const;
  uint64_t capacity() const { return capacity_; }
  uint64_t reserve() const { return reserve_; }

 private:
  uint64_t capacity_;  // as SlotAllocator sees the window (whole alignment units)
  uint64_t reserve_;   // job.max_sample_bytes, rounded up as a slot
  // By loader world rank, grown to the highest one seen: the bytes of its
  // slots placed. Indexed, not a map: the planner asks once per sample.
  std::vector<uint64_t> used_;
};

}  // namespace msd
