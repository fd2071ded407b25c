#include "common/error.h"

#include <cstdio>
#include <cstdlib>

namespace msd {

void check_failed(const char* expr, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "msd: invariant failed at %s:%d: %s %s\n", file, line, expr, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace msd
