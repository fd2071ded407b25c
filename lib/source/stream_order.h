// A source's sample stream across resumes that changed its data
// (docs/checkpoint.md, "Resume with a changed mixture"). Without a change the
// stream is epoch after epoch of the source's seeded order of [0, N)
// (SourceOrder under its ShuffleOrder, permutation.h): cursor c is document
// order_e(c mod N) of epoch e = c / N, as stream_position gives it.
//
// A resume that adds or removes files of the source at stream cursor C
// starts an era. Its documents are the new data's file-order indexes. The
// epoch in progress at C is finished first, by a tail: the documents of that
// epoch not yet consumed (positions p..L-1 of its order, mapped into the new
// data; those whose file was removed are dropped) and the documents of the
// added files, in a seeded permutation of their own; then whole epochs over
// the new N follow, numbered on from the interrupted one. Whole epochs and
// the interrupted epoch's positions take the source's shuffle order (the
// block order keeps its locality across a change); the tail's own
// permutation is uniform: it mixes the survivors with the added documents,
// which have no blocks in common with them, for one partial epoch. Every document
// consumed before C stays consumed (none comes again in that epoch), none of
// the epoch's others is skipped, and the order is a pure function of the
// eras (what a planner checkpoint records), the seed and the source's key.
//
// An era is stored as a few numbers and the runs of its index map: O(files
// changed), not O(documents). Opening one costs one pass over the interrupted
// epoch's remaining positions, to find the dropped ones.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "source/permutation.h"

namespace msd {

// Marks an index whose document's file is gone (IndexRun::to, StreamOrder::index).
inline constexpr uint64_t kRemovedIndex = UINT64_MAX;

// Consecutive file-order indexes of one version of a source's data and where
// they are in the next version: [first, first + count) -> [to, to + count),
// or removed (to = kRemovedIndex).
struct IndexRun {
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t to = kRemovedIndex;
  bool operator==(const IndexRun&) const = default;
};

// One version of a source's data in its stream. Era 0 is the run's own
// (begin 0, no tail, first epoch 0, no map); each later one a resume that
// changed the data.
struct StreamEra {
  uint64_t begin = 0;        // the stream cursor the era starts at
  uint64_t tail = 0;         // cursors [begin, begin + tail) finish the interrupted epoch
  uint64_t first_epoch = 0;  // the epoch of cursor begin + tail, the first whole one
  uint64_t samples = 0;      // N of this version of the data
  // The previous version's indexes onto this one's, sorted by `first`,
  // covering [0, previous samples) (empty in era 0).
  std::vector<IndexRun> map;
  bool operator==(const StreamEra&) const = default;
};

class StreamOrder {
 public:
  // The stream of a source of `samples` documents, without changes; `key`
  // is the source's stream key (its index in the run that started it),
  // `shuffle` its order in every era (shuffle_order, source.h).
  StreamOrder(uint64_t seed, uint32_t key, uint64_t samples, const ShuffleOrder& shuffle = {});
  // The stream with its eras (oldest first, eras[0] the run's own; an era
  // with first_epoch 0 past the first has its tail and first epoch derived
  // from the data, as changed() does). Throws
  // Error when they are inconsistent (a map that does not cover the previous
  // data or leaves the new data's range, a tail of the wrong length, eras out
  // of order).
  StreamOrder(uint64_t seed, uint32_t key, std::vector<StreamEra> eras, const ShuffleOrder& shuffle = {});

  // Continues the stream from cursor `begin` (every cursor before it
  // consumed, begin at or after the last era's) over data of `samples`
  // documents, the newest data's indexes mapped by `map` (IndexRun, sorted,
  // covering [0, samples())). `dropped` receives the newest data's indexes
  // of the interrupted epoch's documents not yet consumed whose file is gone.
  StreamOrder changed(uint64_t begin, uint64_t samples, std::vector<IndexRun> map,
                      std::vector<uint64_t>* dropped = nullptr) const;

  uint64_t samples() const { return eras_.back().samples; }
  uint32_t key() const { return key_; }
  const ShuffleOrder& shuffle() const { return shuffle_; }
  const std::vector<StreamEra>& eras() const { return eras_; }
  bool plain() const { return eras_.size() == 1; }

  // The newest data's file-order index of the document at `cursor`, or
  // kRemovedIndex when it is a document of an earlier version whose file is
  // gone (only cursors before the last era's begin can be).
  uint64_t index(uint64_t cursor) const;
  // The epoch `cursor` belongs to (a tail's: the epoch it finishes).
  uint64_t epoch(uint64_t cursor) const;

 private:
  // What one era derives from its numbers when opened.
  struct Derived {
    uint64_t from = 0;        // the interrupted epoch's first position not consumed
    uint64_t remaining = 0;   // its positions from there on that survive
    uint64_t epoch_start = 0;  // the interrupted epoch's first cursor
    std::vector<uint64_t> holes;  // its positions from `from` on that were dropped, relative to `from`, sorted
    std::vector<IndexRun> added;  // this data's indexes no earlier document maps to (first, count)
    std::optional<Permutation> tail_order;
  };
  void open_era(size_t era);
  size_t era_of(uint64_t cursor) const;
  uint64_t epoch_in_era(size_t era, uint64_t cursor) const;
  // Era `era`'s data index of `cursor` (in [begin of era, begin of next)).
  uint64_t index_in_era(size_t era, uint64_t cursor) const;
  // Position `position` of the epoch of era `era` in progress at the next
  // era's begin, in era `era`'s data.
  uint64_t interrupted_document(size_t era, uint64_t position) const;
  uint64_t tail_document(size_t era, uint64_t position) const;
  uint64_t whole_epoch_document(size_t era, uint64_t epoch, uint64_t position) const;
  // Era `era`'s data index through the maps of the eras after it: the newest data's.
  uint64_t to_newest(size_t era, uint64_t index) const;
  // The length of the epoch in progress at cursor `cursor` of era `era`, and its first cursor.
  std::pair<uint64_t, uint64_t> epoch_extent(size_t era, uint64_t cursor) const;

  uint64_t seed_;
  uint32_t key_;
  ShuffleOrder shuffle_;
  std::vector<StreamEra> eras_;
  std::vector<Derived> derived_;
  // The order of the whole epoch last asked for (the planner walks cursors
  // in order). Not thread-safe: one caller.
  mutable std::optional<SourceOrder> epoch_order_;
  mutable uint64_t epoch_order_epoch_ = 0;
  mutable size_t epoch_order_era_ = 0;
};

// Maps an index through runs sorted by `first`: kRemovedIndex for a removed
// one. REQUIRES the runs cover `index`.
uint64_t map_index(const std::vector<IndexRun>& runs, uint64_t index);

}  // namespace msd
