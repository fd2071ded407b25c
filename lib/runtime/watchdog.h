// A watchdog: a thread that ends the process, with one line naming its rank
// and the phase it was waiting in, when a stretch of the job (start-up, the
// end of the job) has not finished within a bound. Waits inside MPI cannot
// be bounded from inside: a rank stopped in MPI_Init holds every other rank
// there, a rank stopped before a collective holds the others in it. The
// planner's own bounds (the loaders' hello, the ranks' arrival at the end)
// name the rank that did not come; this one, set longer, catches what
// nothing else can. msd-run arms one before MPI_Init; Job::finish one for
// the end of the job.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace msd {

class Watchdog {
 public:
  // seconds == 0: never fires. `program` prefixes the line, `stretch`
  // names what did not finish ("start-up").
  Watchdog(std::string program, std::string stretch, uint64_t seconds);
  ~Watchdog();  // disarms
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What the process waits in now (e.g. "MPI_Init"), named if it fires.
  void phase(std::string what);
  // Starts the bound over (a step came: the next has as long again).
  void kick();
  void disarm();

 private:
  void watch();

  std::string program_, stretch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  uint64_t seconds_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  bool armed_ = true;
  std::thread thread_;
};

// This process's rank from the launcher's environment (Open MPI, PMIx,
// Slurm, MPICH), before MPI is up; -1 when none says.
int launcher_rank();

}  // namespace msd
