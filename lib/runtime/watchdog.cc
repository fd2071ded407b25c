#include "runtime/watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "msd/client.h"

namespace msd {

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_RANK"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return -1;
}

Watchdog::Watchdog(std::string program, std::string stretch, uint64_t seconds)
    : program_(std::move(program)), stretch_(std::move(stretch)), phase_(stretch_), seconds_(seconds) {
  if (seconds == 0) {
    armed_ = false;
    return;
  }
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  disarm();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::phase(std::string what) {
  std::lock_guard lock(mutex_);
  phase_ = std::move(what);
}

void Watchdog::kick() {
  {
    std::lock_guard lock(mutex_);
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  {
    std::lock_guard lock(mutex_);
    armed_ = false;
  }
  wake_.notify_all();
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (armed_) {
    const auto deadline = deadline_;
    if (wake_.wait_until(lock, deadline, [&] { return !armed_ || deadline_ != deadline; })) continue;
    std::fprintf(stderr, "%s: fatal on world rank %d: %s did not finish within %llu s (waiting in %s); ending "
                 "this process (exit status %d)\n", program_.c_str(), launcher_rank(), stretch_.c_str(),
                 static_cast<unsigned long long>(seconds_), phase_.c_str(), kExitAborted);
    std::fflush(stderr);
    std::_Exit(kExitAborted);
  }
}

}  // namespace msd
