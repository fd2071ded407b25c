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

int train(const msd::Config& config) {
  msd::Job job(config, MPI_COMM_WORLD);
  msd::TrainerStats stats;
  int failures = 0;
  if (job.role() == msd::Role::client) {
    int tp_rank = 0;
    MPI_Comm_rank(job.tp_comm(), &tp_rank);
    msd::CudaSink::Options options;
    options.device = tp_rank;
    msd::CudaSink sink(options);
    job.client().set_sink(&sink);
    while (const msd::Batch* batch = job.client().next()) {
      const auto want = tp_rank == 0 ? msd::CudaSink::TpRole::leader : msd::CudaSink::TpRole::follower;
      if (sink.tp_role() != want) {
        std::fprintf(stderr, "tp rank %d: not on the nccl path\n", tp_rank);
        ++failures;
        break;
      }
      const bool header_only = batch->micro_batches.empty() || batch->micro_batches[0].tokens.empty();
      if (header_only != (tp_rank != 0)) {
        std::fprintf(stderr, "tp rank %d: step %llu's host batch %s its tokens\n", tp_rank,
                     static_cast<unsigned long long>(batch->step), header_only ? "lacks" : "holds");
        ++failures;
      }
      const uint64_t digest = msd::batch_digest(read_back(*batch, sink));
      if (digest != batch->digest) {
        std::fprintf(stderr, "tp rank %d: step %llu on the device has digest %llx, the leader's is %llx\n", tp_rank,
                     static_cast<unsigned long long>(batch->step), static_cast<unsigned long long>(digest),
                     static_cast<unsigned long long>(batch->digest));
        ++failures;
      }
      ++stats.steps;
    }
    sink.finish();
    if (failures == 0) std::printf("tp_nccl_trainer: tp rank %d: %llu steps on the device, digests match\n", tp_rank,
                                   static_cast<unsigned long long>(stats.steps));
  } else {
    job.serve();
  }
  const msd::Summary summary = job.finish(stats);
  if (job.world_rank() == 0) std::printf("%s\n", summary.json.c_str());
  const int status = job.shutdown();
  return failures > 0 ? 1 : status;
}

}  // namespace

int main(int argc, char** argv) {
  const msd::Invocation invocation = msd::parse_command_line(argc, argv);
  MPI_Init(&argc, &argv);
  int devices = msd::cuda_device_count(), fewest = 0;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int status = 0;
  if (fewest < static_cast<int>(invocation.config.topology.tp)) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::printf("tp_nccl_trainer: skipped: a rank sees %d CUDA device(s), the TP group has %u ranks\n", fewest,
                  static_cast<unsigned>(invocation.config.topology.tp));
    status = 77;
  } else {
    try {
      status = train(invocation.config);
    } catch (const std::exception& e) {
      msd::abort_job(e);
    }
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
