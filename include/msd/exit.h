// Exit statuses of msd's programs (docs/errors.md). mpirun returns the status
// a rank passed to MPI_Abort, so they reach the scheduler.
#pragma once

#include <exception>

namespace msd {

inline constexpr int kExitOk = 0;       // every step delivered, summary written
inline constexpr int kExitConfig = 2;   // bad configuration; resuming would fail the same way
inline constexpr int kExitAborted = 3;  // a transient failure (a peer died, stalled, was lost): requeue and --resume
inline constexpr int kExitData = 4;     // the data itself failed (DataError); a restart would fail the same way
inline constexpr int kExitTrainer = 5;  // the trainer failed: its own exception, or a misuse of msd's API (TrainerError)

// kExitConfig for a ConfigError, kExitData for a DataError, kExitTrainer for
// a TrainerError (deterministic: never requeue), kExitAborted (transient:
// requeue) for anything else.
int exit_status(const std::exception& cause);

}  // namespace msd
