// A bounded cache of decoded blocks, shared by the threads that read one
// source: a compressed file's restart interval decompressed, a Parquet row
// group's column chunks decoded. Under the locality order (permutation.h,
// source.NAME.shuffle = block) the records read one after another come from a
// few blocks, so each block is decoded about once per epoch instead of once
// per record. One cache per open source, not per thread: a loader's threads
// take a batch's records in any order, and per-thread caches would decode
// each block once per thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace msd {

// Block: any type with `uint64_t memory_bytes() const`. Thread-safe.
template <typename Block>
class BlockCache {
 public:
  using Handle = std::shared_ptr<const Block>;

  // capacity_bytes 0: nothing is kept (every get() makes its block).
  explicit BlockCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The block under `key`: the cached one, else what `make` returns (made on
  // this thread, outside the lock). A thread that asks for a key another is
  // making waits for it (at most kWaitBound, then makes it itself) instead of
  // decoding it twice. `make` returns null when the block cannot be made
  // (the caller's error): nothing is cached, and the waiters try themselves.
  // A block bigger than the capacity is returned but not kept.
  Handle get(uint64_t key, const std::function<Handle()>& make) {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + kWaitBound;
    for (;;) {
      if (auto it = entries_.find(key); it != entries_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.place);
        ++hits_;
        return it->second.block;
      }
      if (!making_.contains(key) || std::chrono::steady_clock::now() >= deadline) break;
      made_.wait_until(lock, deadline);
    }
    ++misses_;
    const bool mine = making_.insert(key).second;
    lock.unlock();
    Handle block;
    try {
      block = make();
    } catch (...) {
      finish(key, mine, nullptr);
      throw;
    }
    finish(key, mine, block);
    return block;
  }

  uint64_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
  }

  // How long a thread waits for another to make a block before making it too.
  static constexpr std::chrono::seconds kWaitBound{30};

 private:
  struct Entry {
    Handle block;
    uint64_t bytes = 0;
    typename std::list<uint64_t>::iterator place;  // in lru_
  };

  void finish(uint64_t key, bool mine, const Handle& block) {
    std::lock_guard lock(mutex_);
    if (mine) making_.erase(key);
    if (block && !entries_.contains(key)) {
      const uint64_t bytes = block->memory_bytes();
      if (bytes <= capacity_) {
        while (bytes_ + bytes > capacity_ && !lru_.empty()) evict(lru_.back());
        lru_.push_front(key);
        entries_.emplace(key, Entry{block, bytes, lru_.begin()});
        bytes_ += bytes;
      }
    }
    made_.notify_all();
  }

  void evict(uint64_t key) {
    auto it = entries_.find(key);
    bytes_ -= it->second.bytes;
    lru_.erase(it->second.place);
    entries_.erase(it);
  }

  const uint64_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable made_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // most recently used first
  std::unordered_set<uint64_t> making_;
  uint64_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace msd
