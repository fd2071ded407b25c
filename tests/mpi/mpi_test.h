// Shared by the MPI test programs: failures are counted per rank and printed
// as they happen, and every rank agrees on the exit code before finalizing.
#pragma once

#include <mpi.h>

#include <cstdio>

#include "common/error.h"

namespace msd::test {

inline int failures = 0;

template <typename... Parts>
void fail(const Parts&... parts) {
  ++failures;
  if (failures <= 20) std::fprintf(stderr, "FAIL: %s\n", str(parts...).c_str());
}

// Collective: sums the failures of every rank, prints "NAME: passed" or
// "NAME: N failures" on rank 0, finalizes MPI and returns the exit code.
inline int finish(const char* name) {
  int rank = 0, total = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total == 0) std::printf("%s: passed\n", name);
    else std::printf("%s: %d failures\n", name, total);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

}  // namespace msd::test
