#include "job/resume_step.h"

#include <climits>

#include "common/error.h"
#include "transport/mpi.h"

namespace msd {

void apply_resume_step(MPI_Comm world, std::optional<uint64_t> resume_step, Config& config) {
  // One MAX reduction gives both the largest and (negated) the smallest step
  // given; ranks without one give values that lose.
  const int64_t step = resume_step ? static_cast<int64_t>(*resume_step) : 0;
  int64_t local[2] = {resume_step ? step : -1, resume_step ? -step : LLONG_MIN};
  int64_t global[2] = {0, 0};
  MPI_Request request;
  MSD_MPI(MPI_Iallreduce(local, global, 2, MPI_INT64_T, MPI_MAX, world, &request), "agreeing on the resume step");
  wait(request, "agreeing on the resume step");
  if (global[0] < 0) return;  // nobody asked
  if (global[0] != -global[1])
    throw ConfigError(str("ranks disagree on the step to resume at (", -global[1], " to ", global[0],
                          "): load the same checkpoint on every client rank"));
  if (global[0] == 0) return;  // the stream's beginning: nothing to resume
  // The planner starts from its newest checkpoint at or before the step and
  // fast-forwards to it; validate() names what the configuration lacks.
  config.checkpoint.resume_step = static_cast<uint64_t>(global[0]);
  validate(config);
}

}  // namespace msd
