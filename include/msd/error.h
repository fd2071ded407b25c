// msd/error.h — the exceptions msd throws (docs/errors.md). A trainer may
// catch them by type; msd::exit_status (msd/exit.h) maps each to the job's
// exit status.
#pragma once

#include <stdexcept>

namespace msd {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad configuration: an option, a value, a path that a user must fix.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Storage failed or a file is not in the format it claims (not one bad sample:
// the file as a whole).
class IoError : public Error {
 public:
  using Error::Error;
};

// A failure of the data itself, found at run time, that a restart would meet
// the same way (every sample of a source is bad): the job must not be
// requeued (exit status kExitData, docs/errors.md).
class DataError : public Error {
 public:
  using Error::Error;
};

// The trainer's own failure: an exception in its code (Python or C++), or a
// misuse of msd's API (one client finishing while the others go on). A
// restart would fail the same way: never requeued (exit status kExitTrainer).
class TrainerError : public Error {
 public:
  using Error::Error;
};

// An MPI call failed (transport/mpi.h builds the message).
class MpiError : public Error {
 public:
  using Error::Error;
};

// A peer broke the wire protocol.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

}  // namespace msd
