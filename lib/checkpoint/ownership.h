// Who owns a checkpoint directory, and what a start does with what it holds
// (docs/checkpoint.md "One owner per directory").
//
// A job's planner takes DIR/msd.lock and TRACE.lock (its trace's, DIR/trace.h5
// by default, which another job's checkpoint.trace may name) atomically at
// start-up, before it opens, creates or truncates
// any file there, and holds it until the job ends. A second job on the same
// directory is refused (ConfigError, exit status 2) naming the owner, unless
// that owner is gone; then the lock is taken over with a warning. A start
// that is not a resume refuses a directory holding an earlier run's
// checkpoints: they would be overwritten and mixed with this run's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "msd/config.h"

namespace msd {

// What the lock file holds (one "key = value" line each).
struct LockOwner {
  std::string job;          // "slurm 1234.0", "mpirun <PMIx namespace>", or "process PID on HOST"
  std::string host;         // gethostname()
  long pid = 0;
  unsigned long long process_start = 0;  // /proc/PID/stat's starttime: a reused pid is another process
  long long started_unix = 0;            // when the lock was taken
};

// The lock at `path`, held while the object lives: created with O_EXCL and
// refreshed (its mtime) every kRefresh by a thread, removed by the
// destructor if it is still this process's.
class OwnerLock {
 public:
  static constexpr std::chrono::seconds kRefresh{30};
  // A lock not refreshed for this long belongs to a job that is gone (its
  // host, where the pid cannot be checked from here, died or lost its disk).
  static constexpr std::chrono::seconds kStale{600};

  // Takes the lock. An existing lock is taken over, with a warning naming
  // its owner, when that owner is gone: on this host its pid is absent (or
  // is another process), it is this Slurm job step started again (a
  // requeue), or it was not refreshed for kStale. Otherwise throws
  // ConfigError: "`option`: PATH is in use by another job (...)".
  OwnerLock(std::string path, std::string option);
  ~OwnerLock();
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

 private:
  void refresh_loop();

  std::string path_;
  LockOwner mine_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread refresher_;
};

// This process as a lock owner.
LockOwner this_lock_owner();

// Reads a lock file; throws IoError when it cannot be read or parsed.
LockOwner read_lock_owner(const std::string& path);

// Why the owner in a lock file is gone (text for the warning), or empty when
// it may still run. `age` is how long ago the lock was last refreshed.
std::string why_owner_is_gone(const LockOwner& owner, const LockOwner& me, std::chrono::seconds age);

// The lock files this configuration's planner takes: DIR/msd.lock with
// checkpoint.dir, and TRACE.lock for its trace.
std::vector<std::pair<std::string, std::string>> owner_lock_paths(const Config& config);  // (path, option)

// Before a start at step 0 (no checkpoint to resume from): a checkpoint.dir
// holding planner or loader checkpoints is refused (ConfigError naming
// checkpoint.dir and the steps), unless checkpoint.start_over, which moves
// them and the trace to DIR/replaced-<unix time>/ first.
void prepare_fresh_start(const Config& config);

}  // namespace msd
