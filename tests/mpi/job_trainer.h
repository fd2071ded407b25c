// The frame of a small C++ test trainer over msd::Job (tests/mpi/
// tp_device_trainer.cc, tests/gpu/tp_nccl_trainer.cc): parses msd-run's
// options, starts MPI, runs `precheck(config)` (collective: 0 to go on, or
// the status every rank exits with, e.g. 77 to skip), then the job: client
// ranks run `client_loop(job, stats)` (it returns its failures), the others
// serve; world rank 0 prints the summary JSON. Every rank exits with the
// worst status.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>

#include "msd/client.h"

namespace test {

// 0 when `rebuilt` (the batch as the trainer read it from its sink) has the
// leader's digest; else 1, with a line naming the rank and step.
inline int digest_failures(int tp_rank, const msd::Batch& batch, uint64_t rebuilt, const char* where) {
  if (rebuilt == batch.digest) return 0;
  std::fprintf(stderr, "tp rank %d: step %llu %s has digest %llx, the leader's is %llx\n", tp_rank,
               static_cast<unsigned long long>(batch.step), where, static_cast<unsigned long long>(rebuilt),
               static_cast<unsigned long long>(batch.digest));
  return 1;
}

template <typename Precheck, typename ClientLoop>
int job_trainer_main(int argc, char** argv, Precheck precheck, ClientLoop client_loop) {
  const msd::Invocation invocation = msd::parse_command_line(argc, argv);
  MPI_Init(&argc, &argv);
  int status = precheck(invocation.config);
  if (status == 0) {
    try {
      msd::Job job(invocation.config, MPI_COMM_WORLD);
      msd::TrainerStats stats;
      int failures = 0;
      if (job.role() == msd::Role::client)
        failures = client_loop(job, stats);
      else
        job.serve();
      const msd::Summary summary = job.finish(stats);
      if (job.world_rank() == 0) std::printf("%s\n", summary.json.c_str());
      const int shutdown = job.shutdown();
      status = failures > 0 ? 1 : shutdown;
    } catch (const std::exception& e) {
      msd::abort_job(e);
    }
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace test
