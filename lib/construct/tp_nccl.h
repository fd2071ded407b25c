// The batch within a TP group over NCCL (built with MSD_WITH_CUDA and NCCL;
// docs/gpu.md): when every rank of the group sees a CUDA device
// (plan_tp_broadcast, construct/batch_sink.h), the leader's device batch is
// broadcast into the followers' device buffers with one ncclBroadcast,
// instead of each rank copying its own host copy. The NCCL communicator is
// made once, from an ncclUniqueId that tp rank 0 sends over tp_comm by MPI.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdint>

#include "construct/batch_sink.h"
#include "construct/tp_device.h"

namespace msd {

class NcclTpBroadcast {
 public:
  // Collective over `tp_comm` (which the caller keeps alive): gathers which
  // ranks have a CUDA device for the batch (`device`: this rank's, -1 for
  // none), plans, and on the nccl path makes the NCCL communicator on
  // `device`. Every rank reaches the same plan. Throws msd::Error when
  // `device` is not one this process sees.
  NcclTpBroadcast(MPI_Comm tp_comm, int device);
  // Collective over `tp_comm` with `plan`, the one every rank agreed on
  // (agree_tp_broadcast): makes the communicator on the nccl path, else
  // nothing.
  NcclTpBroadcast(MPI_Comm tp_comm, int device, const TpBroadcastPlan& plan);
  ~NcclTpBroadcast();
  NcclTpBroadcast(const NcclTpBroadcast&) = delete;
  NcclTpBroadcast& operator=(const NcclTpBroadcast&) = delete;

  const TpBroadcastPlan& plan() const { return plan_; }

  // Collective over the group, on the nccl path only: `bytes` at `buffer`
  // (device memory) on the leader land at `buffer` on every rank, ordered on
  // `stream`. Returns without waiting for the transfer.
  void broadcast(void* buffer, uint64_t bytes, cudaStream_t stream);

 private:
  TpBroadcastPlan plan_;
  void* comm_ = nullptr;  // ncclComm_t, kept opaque so that nccl.h stays in the .cc
};

}  // namespace msd
