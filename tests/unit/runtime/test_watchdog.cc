// Watchdog: a bound that other threads move (kick) and relabel (phase) while
// its own thread waits on it; it fires only when nobody kicked for a whole
// bound, with one line naming the stretch, the bound and the phase, and
// status kExitAborted. Firing ends the process, so those cases run in a
// forked child whose status and stderr the test reads.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "msd/exit.h"
#include "runtime/watchdog.h"

namespace {

struct ChildEnd {
  int status = -1;  // the exit status, -1 if it did not exit normally
  std::string err;  // what it wrote to stderr
};

// Runs `body` in a forked child with stderr into a pipe; the child exits 0
// if `body` returns.
template <typename Body>
ChildEnd run_in_child(Body body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    body();
    _exit(0);
  }
  close(fds[1]);
  ChildEnd end;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) end.err.append(buffer, n);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status)) end.status = WEXITSTATUS(status);
  return end;
}

}  // namespace

TEST_CASE("a watchdog kicked and relabelled from several threads never fires", "[runtime][watchdog]") {
  msd::Watchdog dog("test", "the test", 1);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 300; ++i) {
        dog.phase("phase " + std::to_string(t) + "." + std::to_string(i));
        dog.kick();
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  dog.disarm();
  // Disarmed: a wait past the bound ends nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  SUCCEED("the process outlived its disarmed watchdog");
}

TEST_CASE("a watchdog of 0 seconds never fires and starts no thread", "[runtime][watchdog]") {
  msd::Watchdog dog("test", "the test", 0);
  dog.phase("anything");
  dog.kick();
  SUCCEED();
}

TEST_CASE("a watchdog fires once a whole bound passes without a kick", "[runtime][watchdog]") {
  const auto start = std::chrono::steady_clock::now();
  const ChildEnd end = run_in_child([] {
    msd::Watchdog dog("prog", "start-up", 1);
    // Kicked for 1.5 s from another thread: it must not fire meanwhile.
    std::thread kicker([&] {
      for (int i = 0; i < 6; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        dog.kick();
      }
      dog.phase("MPI_Init");
    });
    kicker.join();
    std::fprintf(stderr, "kicks done\n");
    std::this_thread::sleep_for(std::chrono::seconds(10));  // the watchdog ends the process within 1 s
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(end.err);
  CHECK(end.status == msd::kExitAborted);
  CHECK(end.err.find("kicks done") != std::string::npos);  // it did not fire while kicked
  CHECK(end.err.find("prog: fatal on world rank") != std::string::npos);
  CHECK(end.err.find("start-up did not finish within 1 s (waiting in MPI_Init)") != std::string::npos);
  CHECK(seconds < 9.0);
}
