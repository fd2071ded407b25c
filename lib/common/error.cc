#include "common/error.h"

#include <cstdio>
#include <cstdlib>

#include "msd/exit.h"

namespace msd {

void check_failed(const char* expr, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "msd: invariant failed at %s:%d: %s %s\n", file, line, expr, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

int exit_status(const std::exception& cause) {
  if (dynamic_cast<const ConfigError*>(&cause)) return kExitConfig;
  if (dynamic_cast<const DataError*>(&cause)) return kExitData;
  if (dynamic_cast<const TrainerError*>(&cause)) return kExitTrainer;
  return kExitAborted;
}

}  // namespace msd
