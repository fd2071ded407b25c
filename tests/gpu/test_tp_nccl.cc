// The batch within a TP group over NCCL (label gpu, 2 ranks): every rank
// reaches the same plan; with a device per rank, the leader's device bytes
// arrive in every follower's device buffer. Exits 77 (skipped) on every
// rank when some rank of the group sees no device, after checking that the
// plan then takes the host path.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "construct/cuda_sink.h"
#include "construct/tp_nccl.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    int devices = msd::cuda_device_count();
    // One device per rank: rank r uses device r, so a node needs as many as ranks.
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    msd::NcclTpBroadcast group(MPI_COMM_WORLD, devices >= size ? rank : -1);
    const msd::TpBroadcastPlan& plan = group.plan();
    if (plan.path != msd::TpBroadcastPlan::Path::nccl) {
      if (plan.path != msd::TpBroadcastPlan::Path::host || plan.reason.find("no CUDA device") == std::string::npos) {
        std::fprintf(stderr, "rank %d: plan %s (%s)\n", rank, msd::path_name(plan.path), plan.reason.c_str());
        status = 1;
      } else {
        if (rank == 0) std::printf("test_tp_nccl: skipped: %s\n", plan.reason.c_str());
        status = 77;
      }
    } else {
      const size_t bytes = size_t{3} << 20;
      std::vector<uint8_t> host(bytes);
      for (size_t i = 0; i < bytes; ++i) host[i] = rank == 0 ? static_cast<uint8_t>(i * 7 + 1) : 0;
      void* device = nullptr;
      msd::check_cuda(cudaMalloc(&device, bytes), "allocating");
      msd::check_cuda(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice), "copying up");
      group.broadcast(device, bytes, nullptr);
      msd::check_cuda(cudaDeviceSynchronize(), "waiting for the broadcast");
      msd::check_cuda(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), "copying down");
      for (size_t i = 0; i < bytes && status == 0; ++i)
        if (host[i] != static_cast<uint8_t>(i * 7 + 1)) status = 1;
      if (status) std::fprintf(stderr, "rank %d: broadcast bytes differ\n", rank);
      (void)cudaFree(device);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
