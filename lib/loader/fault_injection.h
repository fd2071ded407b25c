// The faults a loader can be told to have ([fault] in the configuration,
// docs/fault-tolerance.md), kept out of the loader's code: the tests of
// failover drive a real loader into a stall, a hang, a crash or failing
// storage, and LoaderRole only calls this at a few named points.
//
// `fault.kind = fail` is a storage fault: the named loader's process reads
// through a FaultyStorage (common/faulty_storage.h), installed as its
// default storage before it opens its sources, whose reads fail with EIO
// from the fault's step on; the readers report them as they would a failing
// disk (read_error samples). The others are behaviours of the process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "common/faulty_storage.h"
#include "runtime/context.h"
#include "transport/wire.h"

namespace msd {

class FaultInjector {
 public:
  // For this rank of `job` (a loader or shadow). When [fault] names it with
  // kind fail, installs the failing storage; construct it before anything
  // is opened. Not thread-safe: the loader's serving thread calls it.
  explicit FaultInjector(const JobContext& job);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // Before the sources open: startup_stall holds the hello here, as a file
  // system that hangs on open would.
  void before_opening_sources() const;
  // The planner's kTagFault at fault.step: crash throws, stall sleeps here,
  // hang, fail and checkpoint_stall take effect.
  void inject(const FaultMessage& fault);
  // Hung: the loader serves nothing and only notices the end of the job.
  bool hung() const { return hung_; }
  // Inside the next loader checkpoint part write: checkpoint_stall sleeps
  // there once.
  void inside_checkpoint_write();

 private:
  const FaultConfig& config_;
  const int loader_index_;
  std::unique_ptr<FaultyStorage> storage_;  // fault.kind = fail on this rank
  std::optional<ScopedDefaultStorage> installed_;
  bool hung_ = false;
  uint64_t checkpoint_stall_ms_ = 0;
};

}  // namespace msd
