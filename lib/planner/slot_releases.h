// The slots the planner gives back to loaders (a step acknowledged by every
// client, samples of later steps given back, late answers), gathered and
// sent as ranges of adjacent slots (kTagRelease, docs/wire.md): a step's
// samples on a loader were placed one after another, so most of a step's
// slots there make one range, and a release costs a few ranges per loader,
// not one offset per sample. No MPI: the planner sends what drain() hands it.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/wire.h"

namespace msd {

class SlotReleases {
 public:
  // A slot to free: its loader (world rank), offset and the bytes of the
  // sample in it (SampleMeta::slot_bytes; the slot takes slot_extent of them).
  void add(int loader, uint64_t offset, uint64_t sample_bytes);
  bool empty() const { return loaders_.empty(); }
  // Whether a slot of `loader` was added since the last drain.
  bool holds(int loader) const {
    for (const Loader& l : loaders_)
      if (l.rank == loader) return true;
    return false;
  }

  // fn(loader, ranges, bytes) for every loader with slots added, in the order
  // they were first added: its slots as ranges, a slot that begins where the
  // previous one added ends extending that range, and the window bytes they
  // free (for WindowBudget::released). Then forgets them.
  template <typename Fn>
  void drain(Fn&& fn) {
    for (Loader& loader : loaders_) fn(loader.rank, loader.ranges, loader.bytes);
    loaders_.clear();
  }

 private:
  struct Loader {
    int rank = -1;
    std::vector<SlotRange> ranges;
    uint64_t bytes = 0;
  };
  std::vector<Loader> loaders_;  // a few: the loaders of the step's sources
};

}  // namespace msd
