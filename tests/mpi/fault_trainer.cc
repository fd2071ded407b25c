// A tiny C++ trainer over msd::Job, for the trainer's own faults
// (tests/scripts/trainer_faults.sh):
//
//   fault_trainer MODE RANK STEP [msd-run options...]
//
// MODE throw:     world rank RANK throws std::runtime_error out of its training
//                 loop at step STEP, uncaught (std::terminate); its DP peers
//                 wait for it in their gradient all-reduce.
//      unwind:    the same, but main catches it outside the Job's scope: the
//                 Job is destroyed while the exception unwinds through it.
//      early:     every client finishes after step STEP (RANK unused).
//      early_one: client world rank RANK finishes after step STEP; the
//                 others go on.
// Before throwing (finishing early) a rank prints "fault_trainer: fault at
// UNIX_SECONDS" ("finish at") on stderr; world rank 0 prints the summary JSON
// on stdout after finish().
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "msd/client.h"

namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Mode {
  std::string name;
  int rank = -1;
  uint64_t step = 0;
};

int train(const Mode& mode, const msd::Config& config) {
  msd::Job job(config, MPI_COMM_WORLD);
  msd::TrainerStats stats;
  const bool throws = mode.name == "throw" || mode.name == "unwind";
  if (job.role() == msd::Role::client) {
    float gradient = 1.0f, sum = 0.0f;
    while (const msd::Batch* batch = job.client().next()) {
      if (throws && job.world_rank() == mode.rank && batch->step == mode.step) {
        std::fprintf(stderr, "fault_trainer: fault at %.3f\n", now_unix());
        throw std::runtime_error("the loss is NaN at step " + std::to_string(batch->step));
      }
      if (throws) MPI_Allreduce(&gradient, &sum, 1, MPI_FLOAT, MPI_SUM, job.dp_comm());
      ++stats.steps;
      const bool stops = mode.name == "early" || (mode.name == "early_one" && job.world_rank() == mode.rank);
      if (stops && batch->step == mode.step) {
        std::fprintf(stderr, "fault_trainer: finish at %.3f\n", now_unix());
        break;
      }
    }
  } else {
    job.serve();
  }
  const msd::Summary summary = job.finish(stats);
  if (job.world_rank() == 0) std::printf("%s\n", summary.json.c_str());
  return job.shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: fault_trainer throw|unwind|early|early_one RANK STEP [msd-run options...]\n");
    return 2;
  }
  const Mode mode{argv[1], std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10)};
  std::vector<const char*> args{"fault_trainer"};
  for (int i = 4; i < argc; ++i) args.push_back(argv[i]);
  const msd::Invocation invocation = msd::parse_command_line(static_cast<int>(args.size()), args.data());
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (mode.name == "unwind") {
    try {
      rc = train(mode, invocation.config);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fault_trainer: caught outside the Job: %s\n", e.what());
      rc = 1;
    }
  } else {
    rc = train(mode, invocation.config);
  }
  MPI_Finalize();
  return rc;
}
