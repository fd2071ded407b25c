#include "transport/progress.h"

#include <sched.h>
#include <sys/prctl.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace msd {

ServePoll::ServePoll(bool network, Mode mode, uint32_t interval_us)
    : network_(network && mode != Mode::backoff), mode_(mode), interval_us_(interval_us) {
  // The default slack (50 us) would stretch every short sleep to ~60 us.
  if (network_ && mode_ == Mode::sleep) {
    saved_slack_ns_ = ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  }
  if (network_) {
    MSD_MPI(MPI_Comm_dup(MPI_COMM_SELF, &self_), "creating the serve poll's communicator");
    MSD_MPI(MPI_Comm_set_errhandler(self_, MPI_ERRORS_RETURN), "setting the error handler");
    MSD_MPI(MPI_Irecv(&byte_, 1, MPI_INT, 0, 0, self_, &never_), "posting the serve poll's receive");
  }
}

ServePoll::~ServePoll() {
  if (saved_slack_ns_ > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(saved_slack_ns_), 0, 0, 0);
  if (never_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&never_);
    MPI_Wait(&never_, MPI_STATUS_IGNORE);  // a cancelled local receive completes at once
  }
  if (self_ != MPI_COMM_NULL) MPI_Comm_free(&self_);
}

void ServePoll::progress() {
  if (never_ == MPI_REQUEST_NULL) return;
  int done = 0;
  MSD_MPI(MPI_Test(&never_, &done, MPI_STATUS_IGNORE), "driving MPI progress for window reads");
}

void ServePoll::idle(bool readers) {
  if (!network_ || !readers) {
    backoff_.idle();
    return;
  }
  backoff_.reset();  // readers gone later: the backoff starts short again
  progress();
  if (mode_ == Mode::yield) ::sched_yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(interval_us_));
}

ServePoll::Mode ServePoll::parse_mode(const char* name) {
  if (std::strcmp(name, "backoff") == 0) return Mode::backoff;
  if (std::strcmp(name, "sleep") == 0) return Mode::sleep;
  if (std::strcmp(name, "yield") == 0) return Mode::yield;
  throw ConfigError(str("unknown serve poll '", name, "' (backoff, sleep or yield)"));
}

}  // namespace msd
