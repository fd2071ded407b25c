// SIGTERM and SIGINT (fatal.h): one line naming the rank, its role, the
// signal and the step, then _exit(128 + signal). Everything the handler
// touches is rendered beforehand or atomic; it formats with its own digits.
//
// One line per node and job, not one per rank: a launcher passes a signal
// on to every rank at once. The first rank of the node to create a marker
// file in the job's session directory (PMIX_SERVER_TMPDIR, which the
// launcher removes at the end) writes it; a loader, which knows no step,
// lets the others go first. abort_job creates the marker too: the SIGTERM
// the launcher then sends every rank is the abort's consequence, not news.
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/fatal.h"

namespace msd {

namespace {

constexpr uint64_t kNoStep = UINT64_MAX;
constexpr uint64_t kServing = UINT64_MAX - 1;  // a loader: it serves requests, steps are the planner's
std::atomic<uint64_t> current_step{kNoStep};
std::atomic<bool> ending{false};
char who[192] = "[msd] error: this rank";
char marker[512] = "";  // empty: no session directory, every rank logs

class Line {
 public:
  void add(const char* text) {
    while (*text != '\0' && used_ + 1 < sizeof bytes_) bytes_[used_++] = *text++;
  }
  void add(uint64_t value) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value > 0);
    while (n > 0 && used_ + 1 < sizeof bytes_) bytes_[used_++] = digits[--n];
  }
  void write_out() const { (void)!::write(STDERR_FILENO, bytes_, used_); }

 private:
  char bytes_[384];
  size_t used_ = 0;
};

void on_signal(int signal) { end_by_signal(signal); }

// Whether this rank is the first of its node and job to claim the line.
bool first_on_node() {
  if (marker[0] == '\0') return true;
  const int fd = ::open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno != EEXIST;
  ::close(fd);
  return true;
}

}  // namespace

void end_by_signal(int signal) {
  if (ending.exchange(true)) {
    for (;;) pause();  // another thread is writing the line and ending the process
  }
  const uint64_t step = current_step.load();
  if (step == kServing) {
    const timespec wait{0, 100'000'000};
    nanosleep(&wait, nullptr);
  }
  if (!first_on_node()) _exit(128 + signal);
  Line line;
  line.add(who);
  line.add(signal == SIGTERM ? " terminated by SIGTERM" : signal == SIGINT ? " terminated by SIGINT" : " terminated by signal ");
  if (signal != SIGTERM && signal != SIGINT) line.add(static_cast<uint64_t>(signal));
  if (step == kNoStep) {
    line.add(" before its first step");
  } else if (step == kServing) {
    line.add(" while serving the planner's requests");
  } else {
    line.add(" at step ");
    line.add(step);
  }
  line.add("; ending this process (exit status ");
  line.add(static_cast<uint64_t>(128 + signal));
  line.add(")\n");
  line.write_out();
  _exit(128 + signal);
}

void claim_signal_line() { (void)first_on_node(); }

void install_signal_handlers(const std::string& role, int world_rank) {
  std::snprintf(who, sizeof who, "[%s] error: world rank %d", role.c_str(), world_rank);
  if (const char* dir = std::getenv("PMIX_SERVER_TMPDIR"); dir != nullptr && *dir != '\0')
    std::snprintf(marker, sizeof marker, "%s/msd-signal-line", dir);
  for (int signal : {SIGTERM, SIGINT}) {
    struct sigaction old {};
    sigaction(signal, nullptr, &old);
    // A process with a handler of its own (a trainer's, Python's SIGINT)
    // keeps it.
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) continue;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
}

void note_step(uint64_t step) { current_step.store(step, std::memory_order_relaxed); }
void note_serving() { current_step.store(kServing, std::memory_order_relaxed); }

}  // namespace msd
