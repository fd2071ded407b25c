#include "construct/tp_nccl.h"

#include <nccl.h>

#include "common/error.h"
#include "construct/cuda_sink.h"
#include "transport/mpi.h"

namespace msd {
namespace {
void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) throw Error(std::string("NCCL: ") + what + ": " + ncclGetErrorString(status));
}
}  // namespace

namespace {
void check_device(int device) {
  if (device >= cuda_device_count())
    throw Error("NCCL TP broadcast: device " + std::to_string(device) + " given, and this process sees " +
                std::to_string(cuda_device_count()));
}
// A rank of the standalone broadcast: NCCL is built; a device when given one.
TpRankDevice rank_device(int device) {
  check_device(device);
  return {device >= 0 ? 1 : 0, 1};
}
}  // namespace

NcclTpBroadcast::NcclTpBroadcast(MPI_Comm tp_comm, int device)
    : NcclTpBroadcast(tp_comm, device, agree_tp_broadcast(tp_comm, rank_device(device))) {}

NcclTpBroadcast::NcclTpBroadcast(MPI_Comm tp_comm, int device, const TpBroadcastPlan& plan) : plan_(plan) {
  if (plan_.path != TpBroadcastPlan::Path::nccl) return;
  check_device(device);
  int rank = 0, size = 1;
  MSD_MPI(MPI_Comm_rank(tp_comm, &rank), "reading the TP rank");
  MSD_MPI(MPI_Comm_size(tp_comm, &size), "reading the TP group's size");
  check_cuda(cudaSetDevice(device), "selecting the TP broadcast's device");
  ncclUniqueId id;
  if (rank == plan_.root) check_nccl(ncclGetUniqueId(&id), "making the TP group's id");
  MPI_Request request;
  MSD_MPI(MPI_Ibcast(&id, sizeof id, MPI_BYTE, plan_.root, tp_comm, &request), "sending the NCCL id over tp_comm");
  wait(request, "sending the NCCL id over tp_comm");
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, size, id, rank), "joining the TP group's communicator");
  comm_ = comm;
}

NcclTpBroadcast::~NcclTpBroadcast() {
  if (comm_ != nullptr) (void)ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

void NcclTpBroadcast::broadcast(void* buffer, uint64_t bytes, cudaStream_t stream) {
  if (comm_ == nullptr)
    throw Error(std::string("NCCL TP broadcast on the ") + path_name(plan_.path) + " path (" + plan_.reason + ")");
  check_nccl(ncclBroadcast(buffer, buffer, bytes, ncclUint8, plan_.root, static_cast<ncclComm_t>(comm_), stream),
             "broadcasting the batch over the TP group");
}

}  // namespace msd
