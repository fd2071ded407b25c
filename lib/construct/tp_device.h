// The batch within a TP group on the device (docs/gpu.md "Within a TP
// group"): what a device sink offers its group, and the group's agreement on
// the path, made once at the stream's start. On the nccl path the leader
// builds the batch, copies it to its device as every device sink does, and
// broadcasts that buffer over NCCL into each follower's; a follower gets
// only the batch's header through the host path (TpShare, header only) and
// its payload on the device. MPI, no CUDA: the device side is CudaSink
// (construct/cuda_sink.h), the only implementation.
#pragma once

#include <mpi.h>

#include "construct/batch_sink.h"

namespace msd {

// What a BatchSink (msd/batch_sink.h) that can take part in the nccl path
// implements besides it (CudaSink). Called from the client's thread, like
// the sink.
class TpDeviceSink {
 public:
  virtual ~TpDeviceSink() = default;
  // Whether the sink broadcasts over NCCL (built with it); the sink is on a
  // device by construction.
  virtual bool has_nccl() const = 0;
  // Collective over `tp_comm` (which the caller keeps alive), on the nccl
  // path only, once: makes the group's NCCL communicator on the sink's
  // device. From then on the leader's deliver() broadcasts each step's
  // buffer after its copy, and a follower receives by deliver_broadcast().
  virtual void join_tp_group(MPI_Comm tp_comm, const TpBroadcastPlan& plan) = 0;
  // A follower's step: `header` is the batch without its staged fields
  // (empty), `layout` the leader's buffer (staging_layout of the header's
  // field sizes). Collective with the leader's deliver() of the same step;
  // returns without waiting for the transfer, ordered like deliver()'s copy.
  virtual void deliver_broadcast(const Batch& header, const StagingLayout& layout) = 0;
};

// `sink` as a device sink that can take part in the nccl path; nullptr for
// any other (the host sink, a trainer's own), which receives whole batches.
inline TpDeviceSink* tp_device_of(BatchSink& sink) { return dynamic_cast<TpDeviceSink*>(&sink); }

// This rank's part of the plan: whether `sink` (nullptr: a host sink) is a
// device sink, and whether it has NCCL.
TpRankDevice tp_rank_device(TpDeviceSink* sink);
// Collective over `tp_comm`: gathers every rank's TpRankDevice and plans
// (plan_tp_broadcast); every rank reaches the same plan.
TpBroadcastPlan agree_tp_broadcast(MPI_Comm tp_comm, TpRankDevice mine);

}  // namespace msd
