#include "common/worker_pool.h"

#include <system_error>

#include "common/error.h"

namespace msd {

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::grow(size_t count) {
  while (threads_.size() < count) {
    // generation_ is written only by the owner's thread (in run), so reading
    // it unlocked is safe; the new worker waits for the next batch.
    const size_t slot = threads_.size() + 1;
    try {
      threads_.emplace_back([this, slot, seen = generation_] { work(slot, seen); });
    } catch (const std::system_error& e) {
      throw Error(str(name_, ": cannot start worker thread ", slot, ": ", e.what()));
    }
    worker_count_.store(threads_.size(), std::memory_order_relaxed);
  }
}

std::exception_ptr WorkerPool::drain(size_t slot) {
  try {
    for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
         i = next_.fetch_add(1, std::memory_order_relaxed)) {
      (*item_)(slot, i);
    }
  } catch (...) {
    next_.store(count_, std::memory_order_relaxed);  // the others stop at their next item
    return std::current_exception();
  }
  return nullptr;
}

void WorkerPool::work(size_t slot, uint64_t seen_generation) {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
    if (stopping_) return;
    seen_generation = generation_;
    if (slot > helpers_) continue;  // this batch asked for fewer threads
    lock.unlock();
    std::exception_ptr error = drain(slot);
    lock.lock();
    if (error != nullptr && error_ == nullptr) error_ = std::move(error);
    if (--pending_ == 0) done_.notify_one();
  }
}

void WorkerPool::run(size_t helpers, size_t count, const std::function<void(size_t, size_t)>& item) {
  MSD_CHECK(helpers <= threads_.size());
  {
    const std::lock_guard lock(mutex_);
    item_ = &item;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    helpers_ = helpers;
    pending_ = helpers;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr error = drain(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  if (error == nullptr) error = std::move(error_);
  error_ = nullptr;
  item_ = nullptr;
  count_ = 0;
  lock.unlock();
  if (error != nullptr) std::rethrow_exception(error);
}

}  // namespace msd
