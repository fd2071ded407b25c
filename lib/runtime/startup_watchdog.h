// The start-up watchdog: a thread armed before MPI_Init that ends the
// process, with one line naming its rank and the phase it was waiting in,
// when the job has not finished starting within a bound. MPI_Init itself and
// the waits inside the Job's construction cannot be bounded from inside: a
// rank stopped in MPI_Init holds every other rank there. The planner's own
// bound on the loaders' hello (job.startup_timeout_s) names the loader that
// did not arrive; this one, set longer, catches what nothing else can.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace msd {

class StartupWatchdog {
 public:
  // seconds == 0: never fires. `program` prefixes the line.
  StartupWatchdog(std::string program, uint64_t seconds);
  ~StartupWatchdog();  // disarms
  StartupWatchdog(const StartupWatchdog&) = delete;
  StartupWatchdog& operator=(const StartupWatchdog&) = delete;

  // What the process waits in now (e.g. "MPI_Init"), named if it fires.
  void phase(std::string what);
  void disarm();

 private:
  void watch(uint64_t seconds);

  std::string program_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_ = "start-up";
  bool armed_ = true;
  std::thread thread_;
};

// This process's rank from the launcher's environment (Open MPI, PMIx,
// Slurm, MPICH), before MPI is up; -1 when none says.
int launcher_rank();

}  // namespace msd
