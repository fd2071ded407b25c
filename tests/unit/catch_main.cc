// The main of every unit test binary: Catch2's session plus two honesty rules.
// A run in which no test case ran fails (a filter that matches nothing is a
// test that cannot fail), and a run in which a case skipped (MSD_SKIP) and
// none failed exits with kSkipExitCode, so ctest reports it as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>

#include "unit/skip.h"

namespace msd::test {
int& skip_count() {
  static int count = 0;
  return count;
}
}  // namespace msd::test

namespace {

int cases_run = 0;

struct CaseCounter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    ++cases_run;
    TestEventListenerBase::testCaseEnded(stats);
  }
};

// Listing or help runs no test case, and that is fine.
bool runs_tests(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    for (const char* flag : {"-l", "-t", "-h", "-?", "--help", "--list-tests", "--list-tags",
                             "--list-test-names-only", "--list-reporters"}) {
      if (std::strcmp(argv[i], flag) == 0) return false;
    }
  }
  return true;
}

}  // namespace

CATCH_REGISTER_LISTENER(CaseCounter)

int main(int argc, char** argv) {
  const int status = Catch::Session().run(argc, argv);
  if (status != 0 || !runs_tests(argc, argv)) return status;
  if (cases_run == 0) {
    std::cerr << "no test case ran: a test that runs nothing cannot fail\n";
    return 1;
  }
  if (msd::test::skip_count() > 0) {
    std::cerr << msd::test::skip_count() << " test case(s) skipped\n";
    return msd::test::kSkipExitCode;
  }
  return 0;
}
