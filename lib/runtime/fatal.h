// The fail-fast path's process-wide parts (docs/errors.md, docs/fault-tolerance.md
// "The trainer's own faults"): whatever ends a rank mid-job ends the whole job
// at once, with one line naming the rank, its role and the cause, and never
// enters a collective first (a peer that is training, or waiting for this rank,
// would never join it).
//
// - An uncaught C++ exception (std::terminate) is named with its type and
//   message, then MPI_Abort: kExitTrainer for the trainer's own, exit_status()
//   for msd's.
// - SIGTERM and SIGINT, where the process has no handler of its own, end the
//   rank with one line, "terminated by SIGTERM at step N", and the status
//   128 + signal (transient: requeued).
// - A Job destroyed mid-stream (an exception unwinding through it, or dropped
//   before finish()) ends the job instead of freeing its windows.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace msd {

// abort_job (msd/client.h) with the status given: one line, then MPI_Abort.
[[noreturn]] void abort_job(const std::string& cause, int status);

// Installs the terminate and signal handlers (once per process; later calls
// only update who this rank is). `role` is the log prefix ("client 1").
void install_fail_fast(const std::string& role, int world_rank);

// The signal part of install_fail_fast (signals.cc).
void install_signal_handlers(const std::string& role, int world_rank);

// What a signal's line names: the step this rank works on (a client: the
// step last handed out; the planner: the oldest step not yet acknowledged).
void note_step(uint64_t step);
void note_serving();  // a loader: "while serving the planner's requests"

// Remembers an exception msd threw out of a Job method, so that a Job that
// an exception unwinds through names it (abort_abandoned_job).
void note_failure(std::exception_ptr failure);

// Ends the whole job for a Job destroyed before its orderly end: with the
// failure msd noted, if any, else a TrainerError saying how the Job was left.
[[noreturn]] void abort_abandoned_job(bool unwinding);

// Silences the signal lines of this node and job (abort_job calls it before
// MPI_Abort: the launcher's SIGTERM to the other ranks is its consequence).
void claim_signal_line();

// What the signal handler does, also for a signal Python turned into an
// exception (KeyboardInterrupt): one line, then _exit(128 + signal).
// Async-signal-safe.
[[noreturn]] void end_by_signal(int signal);

}  // namespace msd
