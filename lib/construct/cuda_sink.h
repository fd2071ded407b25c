// The CUDA sink (built with MSD_WITH_CUDA; docs/gpu.md): each step's batch
// goes from the client's host buffers into pinned staging
// (cudaHostAlloc), then by cudaMemcpyAsync on a copy stream of its own into
// device memory. Two slots, used alternately (DoubleBuffer,
// construct/batch_sink.h), so that step t+1's copy runs while the trainer's
// kernels still read step t; the trainer's stream waits on the copy's event,
// never the host. Within a TP group on the nccl path (construct/tp_device.h)
// the leader's sink also broadcasts each copied buffer over NCCL, and a
// follower's receives it instead of copying.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "construct/batch_sink.h"
#include "construct/tp_device.h"

namespace msd {

// Throws msd::Error naming `what` when `status` is not cudaSuccess.
void check_cuda(cudaError_t status, const char* what);
// The CUDA devices this process sees; 0 when there is no driver or device.
int cuda_device_count();

class CudaSink final : public BatchSink, public TpDeviceSink {
 public:
  struct Options {
    int device = -1;                       // the CUDA device; default: the current one
    cudaStream_t compute_stream = nullptr;  // the trainer's stream; default: the legacy default stream
    bool timing = false;                   // time each copy (copy_ms); default: no timing events
    uint64_t wait_timeout_ms = 60000;      // bound on waiting for a copy or the trainer's release
  };

  // Throws msd::Error when there is no CUDA device (the message says so).
  explicit CudaSink(const Options& options);
  ~CudaSink() override;  // waits for what is in flight, then frees
  CudaSink(const CudaSink&) = delete;
  CudaSink& operator=(const CudaSink&) = delete;

  // Stages `batch` into the free slot and issues its copy on the copy
  // stream, after the trainer's release of that slot (its kernels on step
  // t-2); the compute stream then waits on the copy. Returns without
  // waiting for the copy.
  void deliver(const Batch& batch) override;
  void finish() override;  // waits for every copy and release in flight
  std::string name() const override { return "cuda"; }

  // The nccl path (construct/tp_device.h). After join_tp_group(), the
  // leader's deliver() broadcasts the copied buffer into the followers'
  // (on the copy stream, before the copy event the trainer waits on), and a
  // follower takes its steps by deliver_broadcast() (deliver() throws): its
  // slots hold device buffers only, no staging. Events, slots and the
  // accessors below are the same on every role.
  bool has_nccl() const override;
  void join_tp_group(MPI_Comm tp_comm, const TpBroadcastPlan& plan) override;
  void deliver_broadcast(const Batch& header, const StagingLayout& layout) override;
  enum class TpRole : uint8_t { none, leader, follower };
  TpRole tp_role() const { return tp_role_; }

  // The delivered step's buffers in device memory: valid for work on the
  // compute stream (or a stream made to wait(): the copy is ordered before
  // it) until the next deliver(). REQUIRES: a step was delivered.
  const void* device_field(uint32_t micro_batch, BatchField field) const;
  uint64_t field_bytes(uint32_t micro_batch, BatchField field) const;
  const StagingLayout& layout() const;
  // Makes `stream` wait for the delivered step's copy.
  void wait(cudaStream_t stream) const;
  cudaEvent_t ready_event() const;  // recorded on the copy stream after the delivered step's copy
  cudaStream_t copy_stream() const { return copy_stream_; }

  // With Options::timing: the milliseconds the delivered step's copy took
  // on the copy stream (waits for it).
  double copy_ms();
  // With Options::timing: when the delivered step's copy started and ended
  // on the copy stream, in milliseconds after `reference` (an event recorded
  // earlier on this device; waits for the copy).
  struct Interval {
    double start_ms = 0;
    double end_ms = 0;
  };
  Interval copy_interval(cudaEvent_t reference);
  uint64_t bytes_copied() const { return bytes_copied_; }
  uint64_t reallocations() const { return reallocations_; }
  const DoubleBuffer& buffers() const { return buffers_; }

 private:
  struct Slot {
    uint8_t* host = nullptr;    // pinned staging
    uint8_t* device = nullptr;  // what the trainer reads
    uint64_t capacity = 0;
    cudaEvent_t copy_started = nullptr;  // with timing
    cudaEvent_t copied = nullptr;
    cudaEvent_t released = nullptr;  // on the compute stream, after the trainer's work on this slot
    StagingLayout layout;
  };
  void wait_event(cudaEvent_t event, const char* what) const;
  void reserve(Slot& slot, uint64_t bytes);
  void free_slot(Slot& slot);
  // A step's delivery: the next slot readied for `layout`, then (after
  // staging and the copy, or the broadcast) made the trainer's.
  DoubleBuffer::Plan open_slot(uint64_t step, StagingLayout layout);
  void close_slot(const DoubleBuffer::Plan& plan);
  struct TpGroup;  // the group's NCCL communicator (cuda_sink.cc)

  Options options_;
  cudaStream_t copy_stream_ = nullptr;
  std::array<Slot, 2> slots_;
  DoubleBuffer buffers_;
  int current_ = -1;
  uint64_t bytes_copied_ = 0;
  uint64_t reallocations_ = 0;
  TpRole tp_role_ = TpRole::none;
  std::unique_ptr<TpGroup> tp_group_;
};

}  // namespace msd
