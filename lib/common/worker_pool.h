// Threads that share the items of a batch with the calling thread: the
// mechanism behind the tokenizer's encode_batch and a loader's parallel image
// decoding. Each thread has a fixed slot (0 is the caller, 1..n the workers),
// so callers can keep per-thread scratch state (an encoder, a JPEG decoder)
// indexed by slot; items are handed out one at a time through an atomic index,
// so long and short items balance.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace msd {

// Thread-safety: grow() and run() are called from one thread at a time (the
// owner's); workers() may be read from any thread.
class WorkerPool {
 public:
  // `name` appears in the error when a thread cannot be started.
  explicit WorkerPool(std::string name) : name_(std::move(name)) {}
  ~WorkerPool();  // joins the workers
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts workers until there are `count`. Throws Error when a thread cannot
  // be started (the workers started so far stay).
  void grow(size_t count);
  size_t workers() const { return worker_count_.load(std::memory_order_relaxed); }

  // Calls item(slot, i) for every i in [0, count) exactly once, on the calling
  // thread (slot 0) and the first `helpers` workers (slots 1..helpers); returns
  // when all are done. The first exception thrown stops the hand-out (items
  // not yet started are skipped) and is rethrown here after every thread has
  // stopped. REQUIRES: helpers <= workers().
  void run(size_t helpers, size_t count, const std::function<void(size_t slot, size_t index)>& item);

 private:
  void work(size_t slot, uint64_t seen_generation);
  // Runs items until none is left; returns the exception that stopped it.
  std::exception_ptr drain(size_t slot);

  std::string name_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> worker_count_{0};

  std::mutex mutex_;
  std::condition_variable wake_;  // a new batch, or stopping
  std::condition_variable done_;  // pending_ reached 0
  uint64_t generation_ = 0;       // batches started; guarded by mutex_
  bool stopping_ = false;         // guarded by mutex_
  size_t helpers_ = 0;            // workers taking part in this batch; guarded by mutex_
  size_t pending_ = 0;            // of those, still working; guarded by mutex_
  std::exception_ptr error_;      // the first a worker threw; guarded by mutex_
  // The batch: written before generation_ advances, read by workers after.
  const std::function<void(size_t, size_t)>* item_ = nullptr;
  size_t count_ = 0;
  alignas(64) std::atomic<size_t> next_{0};  // its own cache line: written per item
};

}  // namespace msd
