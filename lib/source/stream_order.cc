#include "source/stream_order.h"

#include <algorithm>

#include "common/digest.h"
#include "common/error.h"

namespace msd {

namespace {

// The key of era `era`'s tail, which finishes epoch `epoch`: apart from every
// whole epoch's key and from another era's tail in the same epoch.
uint64_t tail_key(uint64_t seed, uint32_t key, uint64_t epoch, size_t era) {
  return mix64(permutation_key(seed, key, epoch) ^ mix64(0x7a11ULL + era));
}

// The runs' images, checked: inside [0, samples), not overlapping. Returns
// the gaps between them (the added indexes) as runs whose `first` counts
// added documents and `to` is the index.
std::vector<IndexRun> added_indexes(const std::vector<IndexRun>& map, uint64_t previous, uint64_t samples) {
  uint64_t covered = 0;
  std::vector<std::pair<uint64_t, uint64_t>> images;
  for (const IndexRun& run : map) {
    if (run.first != covered || run.count == 0)
      throw Error(str("stream order: an index map run starts at ", run.first, " (", run.count, " indexes), expected ",
                      covered));
    covered += run.count;
    if (run.to == kRemovedIndex) continue;
    if (run.to > samples || samples - run.to < run.count)
      throw Error(str("stream order: an index map run leads to [", run.to, ", ", run.to + run.count,
                      ") outside the new data's ", samples, " documents"));
    images.emplace_back(run.to, run.count);
  }
  if (covered != previous)
    throw Error(str("stream order: the index map covers ", covered, " of the previous data's ", previous, " documents"));
  std::sort(images.begin(), images.end());
  std::vector<IndexRun> added;
  uint64_t next = 0, counted = 0;
  images.emplace_back(samples, 0);
  for (const auto& [to, count] : images) {
    if (to < next) throw Error(str("stream order: two index map runs lead to index ", to));
    if (to > next) {
      added.push_back({counted, to - next, next});
      counted += to - next;
    }
    next = to + count;
  }
  return added;
}

}  // namespace

uint64_t map_index(const std::vector<IndexRun>& runs, uint64_t index) {
  auto it = std::upper_bound(runs.begin(), runs.end(), index, [](uint64_t i, const IndexRun& r) { return i < r.first; });
  MSD_CHECK(it != runs.begin());
  --it;
  MSD_CHECK_LT(index - it->first, it->count);
  return it->to == kRemovedIndex ? kRemovedIndex : it->to + (index - it->first);
}

StreamOrder::StreamOrder(uint64_t seed, uint32_t key, uint64_t samples, const ShuffleOrder& shuffle)
    : StreamOrder(seed, key, std::vector<StreamEra>{StreamEra{0, 0, 0, samples, {}}}, shuffle) {}

StreamOrder::StreamOrder(uint64_t seed, uint32_t key, std::vector<StreamEra> eras, const ShuffleOrder& shuffle)
    : seed_(seed), key_(key), shuffle_(shuffle), eras_(std::move(eras)) {
  if (eras_.empty() || eras_[0].begin != 0 || eras_[0].tail != 0 || eras_[0].first_epoch != 0 || !eras_[0].map.empty())
    throw Error("stream order: the first era must be the run's own (begin 0, no tail, epoch 0, no map)");
  derived_.resize(eras_.size());
  for (size_t era = 0; era < eras_.size(); ++era) {
    if (eras_[era].samples == 0) throw Error(str("stream order: era ", era, " has no documents"));
    if (era > 0) open_era(era);
  }
}

StreamOrder StreamOrder::changed(uint64_t begin, uint64_t samples, std::vector<IndexRun> map,
                                 std::vector<uint64_t>* dropped) const {
  if (begin < eras_.back().begin)
    throw Error(str("stream order: a change at cursor ", begin, " before the last one's, ", eras_.back().begin));
  StreamOrder next(seed_, key_, eras_, shuffle_);
  const size_t era = next.eras_.size();
  next.eras_.push_back({begin, 0, 0, samples, std::move(map)});
  next.derived_.emplace_back();
  next.open_era(era);  // derives the era's tail and first epoch
  if (dropped) {
    const Derived& d = next.derived_[era];
    dropped->clear();
    for (uint64_t hole : d.holes) dropped->push_back(next.interrupted_document(era, d.from + hole));
  }
  return next;
}

// The numbers era `era` derives from the one before: where the interrupted
// epoch stood, which of its remaining positions were dropped, the added
// indexes; checks the stored tail length and first epoch against them.
void StreamOrder::open_era(size_t era) {
  const StreamEra& e = eras_[era];
  const StreamEra& before = eras_[era - 1];
  if (e.begin < before.begin) throw Error(str("stream order: era ", era, " begins before era ", era - 1));
  Derived& d = derived_[era];
  const auto [length, start] = epoch_extent(era - 1, e.begin);
  d.epoch_start = start;
  d.from = e.begin - start;
  const bool derive = e.tail == 0 && e.first_epoch == 0;  // changed() fills them in after
  d.added = added_indexes(e.map, before.samples, e.samples);
  d.holes.clear();
  for (uint64_t q = d.from; q < length; ++q)
    if (map_index(e.map, interrupted_document(era, q)) == kRemovedIndex) d.holes.push_back(q - d.from);
  d.remaining = length - d.from - d.holes.size();
  uint64_t added = 0;
  for (const IndexRun& run : d.added) added += run.count;
  const uint64_t tail = d.remaining + added;
  const uint64_t interrupted_epoch = epoch_in_era(era - 1, start);
  if (derive) {
    eras_[era].tail = tail;
    eras_[era].first_epoch = interrupted_epoch + 1;
  } else if (e.tail != tail || e.first_epoch != interrupted_epoch + 1) {
    throw Error(str("stream order: era ", era, " records a tail of ", e.tail, " documents finishing epoch ",
                    e.first_epoch - 1, "; its data give ", tail, " finishing epoch ", interrupted_epoch));
  }
  d.tail_order.reset();
  if (tail > 0) d.tail_order.emplace(tail, tail_key(seed_, key_, interrupted_epoch, era));
}

size_t StreamOrder::era_of(uint64_t cursor) const {
  size_t era = eras_.size() - 1;
  while (era > 0 && eras_[era].begin > cursor) --era;
  return era;
}

std::pair<uint64_t, uint64_t> StreamOrder::epoch_extent(size_t era, uint64_t cursor) const {
  const StreamEra& e = eras_[era];
  if (cursor < e.begin + e.tail) return {e.tail, e.begin};
  const uint64_t whole = e.begin + e.tail;
  return {e.samples, whole + (cursor - whole) / e.samples * e.samples};
}

uint64_t StreamOrder::epoch(uint64_t cursor) const { return epoch_in_era(era_of(cursor), cursor); }

uint64_t StreamOrder::epoch_in_era(size_t era, uint64_t cursor) const {
  const StreamEra& e = eras_[era];
  if (cursor < e.begin + e.tail) return e.first_epoch - 1;
  return e.first_epoch + (cursor - e.begin - e.tail) / e.samples;
}

uint64_t StreamOrder::index(uint64_t cursor) const {
  const size_t era = era_of(cursor);
  return to_newest(era, index_in_era(era, cursor));
}

uint64_t StreamOrder::index_in_era(size_t era, uint64_t cursor) const {
  const StreamEra& e = eras_[era];
  if (cursor < e.begin + e.tail) return tail_document(era, cursor - e.begin);
  const uint64_t offset = cursor - e.begin - e.tail;
  return whole_epoch_document(era, e.first_epoch + offset / e.samples, offset % e.samples);
}

uint64_t StreamOrder::whole_epoch_document(size_t era, uint64_t epoch, uint64_t position) const {
  if (!epoch_order_ || epoch_order_era_ != era || epoch_order_epoch_ != epoch) {
    epoch_order_.emplace(eras_[era].samples, permutation_key(seed_, key_, epoch), shuffle_);
    epoch_order_era_ = era;
    epoch_order_epoch_ = epoch;
  }
  return (*epoch_order_)(position);
}

uint64_t StreamOrder::interrupted_document(size_t era, uint64_t position) const {
  const Derived& d = derived_[era];
  const size_t before = era - 1;
  const StreamEra& b = eras_[before];
  if (d.epoch_start < b.begin + b.tail) return tail_document(before, position);
  return whole_epoch_document(before, b.first_epoch + (d.epoch_start - b.begin - b.tail) / b.samples, position);
}

uint64_t StreamOrder::tail_document(size_t era, uint64_t position) const {
  const Derived& d = derived_[era];
  const uint64_t u = (*d.tail_order)(position);
  if (u >= d.remaining) {
    const uint64_t a = u - d.remaining;
    auto it = std::upper_bound(d.added.begin(), d.added.end(), a, [](uint64_t i, const IndexRun& r) { return i < r.first; });
    --it;
    return it->to + (a - it->first);
  }
  // The u-th surviving position: u plus the holes at or before it. holes[i]
  // - i (the survivors before hole i) does not decrease, so the holes before
  // the answer are those with holes[i] - i <= u.
  size_t lo = 0, hi = d.holes.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (d.holes[mid] - mid <= u) lo = mid + 1;
    else hi = mid;
  }
  const uint64_t document = interrupted_document(era, d.from + u + lo);
  return map_index(eras_[era].map, document);
}

uint64_t StreamOrder::to_newest(size_t era, uint64_t index) const {
  for (size_t next = era + 1; next < eras_.size() && index != kRemovedIndex; ++next)
    index = map_index(eras_[next].map, index);
  return index;
}

}  // namespace msd
