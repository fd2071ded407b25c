// The fail-fast path (docs/errors.md): one line, then MPI_Abort. Nothing here
// may wait for another rank, so no collective and no destructor runs first.
#include <mpi.h>

#include <cstdlib>

#include "common/log.h"
#include "msd/client.h"

namespace msd {

void abort_job(const std::exception& cause) {
  const int status = exit_status(cause);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  log_error("fatal on world rank ", rank, ": ", cause.what(), "; ending the whole job (exit status ", status, ")");
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; this is for MPI libraries that would
}

}  // namespace msd
