// The fail-fast path (docs/errors.md): one line, then MPI_Abort. Nothing here
// may wait for another rank, so no collective and no destructor runs first.
#include "runtime/fatal.h"

#include <cxxabi.h>
#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "common/log.h"
#include "msd/client.h"

namespace msd {

namespace {

std::mutex failure_mutex;
std::exception_ptr noted_failure;
std::terminate_handler previous_terminate = nullptr;

bool mpi_usable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// The type of the exception being handled, demangled ("std::runtime_error").
std::string current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "an unknown type";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type->name();
}

// std::terminate: an exception nobody caught (a C++ trainer's, or msd's out
// of a trainer's loop). GCC calls this before unwinding, so the Job is still
// whole and its destructor never runs.
[[noreturn]] void on_terminate() {
  const std::exception_ptr current = std::current_exception();
  if (current && mpi_usable()) {
    try {
      std::rethrow_exception(current);
    } catch (const Error& e) {
      abort_job(e);  // msd's own: its status says whether to requeue
    } catch (const std::exception& e) {
      abort_job(TrainerError(str("uncaught exception ", current_exception_type(), ": ", e.what())));
    } catch (...) {
      abort_job(TrainerError(str("uncaught exception of type ", current_exception_type())));
    }
  }
  if (previous_terminate != nullptr) previous_terminate();
  std::abort();
}

}  // namespace

void abort_job(const std::exception& cause) { abort_job(cause.what(), exit_status(cause)); }

void abort_job(const std::string& cause, int status) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  log_error("fatal on world rank ", rank, ": ", cause, "; ending the whole job (exit status ", status, ")");
  claim_signal_line();
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; this is for MPI libraries that would
}

void install_fail_fast(const std::string& role, int world_rank) {
  static std::once_flag once;
  std::call_once(once, [] { previous_terminate = std::set_terminate(on_terminate); });
  install_signal_handlers(role, world_rank);
}

void note_failure(std::exception_ptr failure) {
  std::lock_guard lock(failure_mutex);
  noted_failure = std::move(failure);
}

void abort_abandoned_job(bool unwinding) {
  std::exception_ptr failure;
  {
    std::lock_guard lock(failure_mutex);
    failure = noted_failure;
  }
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      abort_job(e);
    } catch (...) {
    }
  }
  abort_job(TrainerError(
      unwinding ? "an exception unwound through msd::Job before finish() (catch it inside the Job's scope and pass it "
                  "to msd::abort_job to have it named here)"
                : "msd::Job was destroyed before finish() while the stream still ran (every rank must call finish())"));
}

}  // namespace msd
