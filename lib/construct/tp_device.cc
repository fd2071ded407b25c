#include "construct/tp_device.h"

#include <vector>

#include "transport/mpi.h"

namespace msd {

TpRankDevice tp_rank_device(TpDeviceSink* sink) {
  if (sink == nullptr) return {};
  return {1, sink->has_nccl() ? 1 : 0};
}

TpBroadcastPlan agree_tp_broadcast(MPI_Comm tp_comm, TpRankDevice mine) {
  int size = 1;
  MSD_MPI(MPI_Comm_size(tp_comm, &size), "reading the TP group's size");
  std::vector<TpRankDevice> ranks(static_cast<size_t>(size));
  static_assert(sizeof(TpRankDevice) == 2 * sizeof(int32_t));
  MPI_Request request;
  MSD_MPI(MPI_Iallgather(&mine, 2, MPI_INT32_T, ranks.data(), 2, MPI_INT32_T, tp_comm, &request),
          "gathering the TP group's CUDA devices");
  wait(request, "gathering the TP group's CUDA devices");
  return plan_tp_broadcast(ranks);
}

}  // namespace msd
