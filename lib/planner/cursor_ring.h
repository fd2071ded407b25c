// The planner's per-sample bookkeeping: a sparse map from stream cursors to
// values over a sliding range of cursors. The planner requests a source's
// cursors in order, hears back about them roughly in order and consumes them
// in order, so the cursors it tracks at any time lie in a short range above
// the consumed one. A ring of slots indexed by cursor - first makes every
// lookup, insert and erase O(1) (amortized: the range grows and shrinks at its
// ends), with no allocation per sample, where a std::map paid a tree node and
// O(log n) pointer chasing for each. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "transport/wire.h"

namespace msd {

template <typename T>
class CursorRing {
 public:
  // The value at `cursor`, or null.
  T* find(uint64_t cursor) {
    if (cursor < first_ || cursor - first_ >= slots_.size()) return nullptr;
    auto& slot = slots_[static_cast<size_t>(cursor - first_)];
    return slot ? &*slot : nullptr;
  }
  const T* find(uint64_t cursor) const { return const_cast<CursorRing*>(this)->find(cursor); }
  bool contains(uint64_t cursor) const { return find(cursor) != nullptr; }

  // Sets the value at `cursor` (replacing one there).
  void insert(uint64_t cursor, T value) {
    if (slots_.empty()) first_ = cursor;
    while (cursor < first_) {
      slots_.emplace_front();
      --first_;
    }
    while (cursor - first_ >= slots_.size()) slots_.emplace_back();
    auto& slot = slots_[static_cast<size_t>(cursor - first_)];
    if (!slot) ++count_;
    slot = std::move(value);
  }

  // Removes the value at `cursor`; false when there was none.
  bool erase(uint64_t cursor) {
    if (cursor < first_ || cursor - first_ >= slots_.size()) return false;
    auto& slot = slots_[static_cast<size_t>(cursor - first_)];
    if (!slot) return false;
    slot.reset();
    --count_;
    trim();
    return true;
  }

  // Calls fn(cursor, value) for every value at `from` or above, in cursor
  // order, and removes them.
  template <typename Fn>
  void erase_from(uint64_t from, Fn&& fn) {
    if (from < first_) from = first_;
    for (uint64_t c = from; c - first_ < slots_.size(); ++c) {
      auto& slot = slots_[static_cast<size_t>(c - first_)];
      if (!slot) continue;
      fn(c, *slot);
      --count_;
    }
    if (from - first_ < slots_.size()) slots_.resize(static_cast<size_t>(from - first_));
    trim();
  }

  // Whether some value lies at `from` or above.
  bool any_from(uint64_t from) const {
    if (from < first_) from = first_;
    for (uint64_t c = from; c - first_ < slots_.size(); ++c)
      if (slots_[static_cast<size_t>(c - first_)]) return true;
    return false;
  }

  // fn(cursor, value) for every value, in cursor order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i]) fn(first_ + i, *slots_[i]);
  }

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear() {
    slots_.clear();
    count_ = 0;
  }

 private:
  // Drops empty slots at both ends, so the range spans first to last value.
  void trim() {
    while (!slots_.empty() && !slots_.front()) {
      slots_.pop_front();
      ++first_;
    }
    while (!slots_.empty() && !slots_.back()) slots_.pop_back();
  }

  uint64_t first_ = 0;  // the cursor of slots_[0]
  std::deque<std::optional<T>> slots_;
  size_t count_ = 0;
};

// A loader's unanswered load requests, per source by cursor: what the
// planner asked of it and has not heard back about.
class PendingRequests {
 public:
  void add(const LoadItem& item) {
    if (item.source >= by_source_.size()) by_source_.resize(item.source + 1);
    CursorRing<uint64_t>& ring = by_source_[item.source];
    const size_t before = ring.size();
    ring.insert(item.cursor, item.index);
    total_ += ring.size() - before;
  }
  // Takes the request off; false when it was not pending here.
  bool answer(uint32_t source, uint64_t cursor) {
    if (source >= by_source_.size() || !by_source_[source].erase(cursor)) return false;
    --total_;
    return true;
  }
  size_t size() const { return total_; }
  bool empty() const { return total_ == 0; }
  size_t of_source(uint32_t source) const { return source < by_source_.size() ? by_source_[source].size() : 0; }
  // Whether a request of `source` at `cursor` or above is pending.
  bool any_from(uint32_t source, uint64_t cursor) const {
    return source < by_source_.size() && by_source_[source].any_from(cursor);
  }
  // Every pending request, by source then cursor.
  std::vector<LoadItem> items() const {
    std::vector<LoadItem> out;
    out.reserve(total_);
    for (uint32_t s = 0; s < by_source_.size(); ++s)
      by_source_[s].for_each([&](uint64_t cursor, uint64_t index) { out.push_back({s, cursor, index}); });
    return out;
  }
  void clear() {
    by_source_.clear();
    total_ = 0;
  }

 private:
  std::vector<CursorRing<uint64_t>> by_source_;
  size_t total_ = 0;
};

}  // namespace msd
