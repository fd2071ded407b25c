// A TP group's batches over the nccl path, end to end (label gpu;
// tests/scripts/tp_nccl_job.sh): a C++ trainer over msd::Job whose clients
// deliver into a CudaSink on device = tp rank, so the group agrees on the
// nccl path. Every step, each client reads its device buffer back, puts the
// staged fields into its host header (a follower's host batch has none) and
// checks that the result's digest is the leader's. Exits 77 (skipped) on
// every rank, before the job, when some rank sees fewer CUDA devices than
// the TP group has ranks.
//
//   tp_nccl_trainer [msd-run options...]   (with topology.tp = 2, one node)
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "construct/batch_builder.h"
#include "construct/cuda_sink.h"
#include "mpi/job_trainer.h"
#include "msd/client.h"

namespace {

// The batch as the trainer sees it on the device: `header`'s host fields and
// the staged fields read back from the sink.
msd::Batch read_back(const msd::Batch& header, const msd::CudaSink& sink) {
  msd::check_cuda(cudaStreamSynchronize(nullptr), "waiting for the batch on the trainer's stream");
  msd::Batch batch = header;
  for (uint32_t m = 0; m < batch.micro_batches.size(); ++m) {
    std::apply(
        [&](auto&... fields) {
          int f = 0;
          auto fill = [&](auto& values) {
            const auto field = static_cast<msd::BatchField>(f++);
            values.resize(sink.field_bytes(m, field) / sizeof(values[0]));
            if (!values.empty())
              msd::check_cuda(cudaMemcpy(values.data(), sink.device_field(m, field), sink.field_bytes(m, field),
                                         cudaMemcpyDeviceToHost),
                              "reading a field back");
          };
          (fill(fields), ...);
        },
        msd::staged_fields(batch.micro_batches[m]));
  }
  return batch;
}

int check_batches(msd::Job& job, msd::TrainerStats& stats) {
  int failures = 0;
  int tp_rank = 0;
  MPI_Comm_rank(job.tp_comm(), &tp_rank);
  msd::CudaSink::Options options;
  options.device = tp_rank;
  msd::CudaSink sink(options);
  job.client().set_sink(&sink);
  while (const msd::Batch* batch = job.client().next()) {
    const auto want = tp_rank == 0 ? msd::CudaSink::TpRole::leader : msd::CudaSink::TpRole::follower;
    const bool header_only = batch->micro_batches.empty() || batch->micro_batches[0].tokens.empty();
    if (sink.tp_role() != want || header_only != (tp_rank != 0)) {
      std::fprintf(stderr, "tp rank %d: step %llu: not on the nccl path, or host tokens %s\n", tp_rank,
                   static_cast<unsigned long long>(batch->step), header_only ? "absent" : "present");
      ++failures;
    }
    failures += test::digest_failures(tp_rank, *batch, msd::batch_digest(read_back(*batch, sink)), "on the device");
    ++stats.steps;
  }
  sink.finish();
  if (failures == 0)
    std::printf("tp_nccl_trainer: tp rank %d: %llu steps on the device, digests match\n", tp_rank,
                static_cast<unsigned long long>(stats.steps));
  return failures;
}

// Every rank needs a device per TP rank (rank r of a group uses device r).
int devices_for_tp(const msd::Config& config) {
  int devices = msd::cuda_device_count(), fewest = 0;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest >= config.topology.tp) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("tp_nccl_trainer: skipped: a rank sees %d CUDA device(s), the TP group has %d ranks\n", fewest,
                config.topology.tp);
  return 77;
}

}  // namespace

int main(int argc, char** argv) { return test::job_trainer_main(argc, argv, devices_for_tp, check_batches); }
