// How a rank that holds an RMA window waits between passes of its loop.
//
// Over a network (UCX on TCP, no RDMA), every MPI_Get a client issues is
// answered by the target's own MPI progress engine: a loader that sleeps
// 2 ms between passes (Backoff) holds each read for that long. ServePoll
// keeps the loader's reads moving while clients may be reading its window
// (bytes placed there and not yet released): it polls MPI at a short fixed
// interval with the thread's timer slack cut to 1 us, so a read waits for a
// few microseconds while the loader's CPU stays bounded (a wake-up and one
// pass of MPI's progress engine per interval, docs/multi-node.md). With a
// node-shared window, or nothing in the window, it is the plain Backoff.
//
// The pass is an MPI_Test of a receive that never matches (on a duplicate of
// MPI_COMM_SELF): with pml ucx, MPI_Iprobe enters the whole progress engine
// (opal_progress, which runs osc ucx's worker, where reads are answered) only
// one call in 100, and progresses only the messaging worker otherwise. Not
// thread-safe; one per serving thread.
#pragma once

#include <cstdint>

#include "transport/mpi.h"

namespace msd {

class ServePoll {
 public:
  enum class Mode {
    backoff,  // always Backoff (50 us .. 2 ms), as before the network path had its own poll
    sleep,    // while readers may be reading: sleep `interval_us`, timer slack 1 us
    yield,    // while readers may be reading: sched_yield only (a busy core)
  };
  static constexpr uint32_t kIntervalUs = 10;

  // `network`: the window is read by MPI_Get (Window::direct() is false).
  explicit ServePoll(bool network, Mode mode = Mode::sleep, uint32_t interval_us = kIntervalUs);
  ~ServePoll();
  ServePoll(const ServePoll&) = delete;
  ServePoll& operator=(const ServePoll&) = delete;

  // One pass of the whole progress engine (network only; else nothing).
  void progress();
  // Nothing happened this pass; `readers`: the window holds bytes that
  // clients may be reading now. The caller then polls MPI again (any call
  // that enters the progress engine: MPI_Iprobe, MPI_Test).
  void idle(bool readers);
  // A pass that did work: the backoff starts over, and reads waiting on
  // this rank are answered.
  void reset() {
    backoff_.reset();
    progress();
  }

  static Mode parse_mode(const char* name);  // backoff | sleep | yield; throws ConfigError

 private:
  bool network_;
  Mode mode_;
  uint32_t interval_us_;
  long saved_slack_ns_ = -1;
  MPI_Comm self_ = MPI_COMM_NULL;  // network: the never-matched receive's communicator
  MPI_Request never_ = MPI_REQUEST_NULL;
  int byte_ = 0;  // the thread's timer slack before, restored on destruction
  Backoff backoff_;
};

}  // namespace msd
