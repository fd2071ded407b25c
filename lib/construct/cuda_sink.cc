#include "construct/cuda_sink.h"

#include <chrono>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "transport/mpi.h"
#ifdef MSD_WITH_NCCL
#include "construct/tp_nccl.h"
#endif

namespace msd {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                ")");
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not sticky, nothing to report
    return 0;
  }
  return count;
}

struct CudaSink::TpGroup {
#ifdef MSD_WITH_NCCL
  NcclTpBroadcast nccl;
#endif
};

CudaSink::CudaSink(const Options& options) : options_(options) {
  const int devices = cuda_device_count();
  if (devices == 0) throw Error("the CUDA sink needs a CUDA device, and this process sees none");
  if (options_.device >= 0) {
    if (options_.device >= devices)
      throw Error("the CUDA sink was given device " + std::to_string(options_.device) + ", and this process sees " +
                  std::to_string(devices));
    check_cuda(cudaSetDevice(options_.device), "selecting the sink's device");
  } else {
    check_cuda(cudaGetDevice(&options_.device), "reading the current device");
  }
  // Non-blocking: the copy stream never waits on the legacy default stream,
  // so copies overlap a trainer that computes there.
  check_cuda(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "creating the copy stream");
  const unsigned flags = options_.timing ? cudaEventDefault : cudaEventDisableTiming;
  for (Slot& slot : slots_) {
    check_cuda(cudaEventCreateWithFlags(&slot.copied, flags), "creating a copy event");
    check_cuda(cudaEventCreateWithFlags(&slot.released, cudaEventDisableTiming), "creating a release event");
    if (options_.timing) check_cuda(cudaEventCreate(&slot.copy_started), "creating a timing event");
  }
}

CudaSink::~CudaSink() {
  try {
    finish();
  } catch (const std::exception& e) {
    log_warn("CUDA sink: ", e.what());
  }
  tp_group_.reset();  // after finish(): no broadcast in flight
  for (Slot& slot : slots_) {
    free_slot(slot);
    for (cudaEvent_t event : {slot.copied, slot.released, slot.copy_started})
      if (event != nullptr) (void)cudaEventDestroy(event);
  }
  if (copy_stream_ != nullptr) (void)cudaStreamDestroy(copy_stream_);
}

// Polls with a growing sleep up to the bound: every wait has one.
void CudaSink::wait_event(cudaEvent_t event, const char* what) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.wait_timeout_ms);
  auto pause = std::chrono::microseconds(2);
  for (;;) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) check_cuda(status, what);
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(std::string("CUDA sink: ") + what + " did not complete within " +
                  std::to_string(options_.wait_timeout_ms) + " ms");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

void CudaSink::free_slot(Slot& slot) {
  if (slot.host != nullptr) (void)cudaFreeHost(slot.host);
  if (slot.device != nullptr) (void)cudaFree(slot.device);
  slot.host = nullptr;
  slot.device = nullptr;
  slot.capacity = 0;
}

// REQUIRES: nothing in flight on `slot` (its copy done, the trainer's work
// on it done).
void CudaSink::reserve(Slot& slot, uint64_t bytes) {
  const uint64_t capacity = staging_capacity(bytes, slot.capacity);
  if (capacity == slot.capacity) return;
  free_slot(slot);
  if (tp_role_ != TpRole::follower)  // a follower's batch arrives on the device
    check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&slot.host), capacity, cudaHostAllocDefault),
               "allocating pinned staging");
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&slot.device), capacity), "allocating the device batch");
  slot.capacity = capacity;
  ++reallocations_;
}

DoubleBuffer::Plan CudaSink::open_slot(uint64_t step, StagingLayout layout) {
  const DoubleBuffer::Plan plan = buffers_.deliver(step);
  if (plan.release_slot >= 0)
    check_cuda(cudaEventRecord(slots_[plan.release_slot].released, options_.compute_stream),
               "recording the trainer's release of a batch");
  Slot& slot = slots_[plan.slot];
  if (plan.wait_previous_copy) wait_event(slot.copied, "the previous copy from this staging buffer");
  slot.layout = std::move(layout);
  if (slot.layout.bytes > slot.capacity) {
    // Growing frees the device buffer: the trainer's work on it must be done.
    if (plan.wait_release) wait_event(slot.released, "the trainer's work on the buffer being grown");
    reserve(slot, slot.layout.bytes);
  }
  // Device-side: what the copy stream does next waits for the trainer's
  // work on this slot (issued before the host stages, which it does not order).
  if (plan.wait_release)
    check_cuda(cudaStreamWaitEvent(copy_stream_, slot.released, 0), "ordering the copy after the trainer's release");
  return plan;
}

// The copy or broadcast into the slot was issued on the copy stream after
// the slot's release; the trainer's stream now waits for it.
void CudaSink::close_slot(const DoubleBuffer::Plan& plan) {
  Slot& slot = slots_[plan.slot];
  check_cuda(cudaEventRecord(slot.copied, copy_stream_), "recording a copy event");
  check_cuda(cudaStreamWaitEvent(options_.compute_stream, slot.copied, 0), "ordering the trainer after the copy");
  buffers_.hand_out(plan.slot);
  current_ = plan.slot;
  bytes_copied_ += slot.layout.bytes;
}

void CudaSink::deliver(const Batch& batch) {
  if (tp_role_ == TpRole::follower)
    throw Error("CUDA sink: a TP follower on the nccl path receives its batch by broadcast (deliver_broadcast)");
  const DoubleBuffer::Plan plan = open_slot(batch.step, staging_layout(batch));
  Slot& slot = slots_[plan.slot];
  stage_batch(batch, slot.layout, slot.host);
  if (options_.timing) check_cuda(cudaEventRecord(slot.copy_started, copy_stream_), "recording a timing event");
  if (slot.layout.bytes > 0)
    check_cuda(cudaMemcpyAsync(slot.device, slot.host, slot.layout.bytes, cudaMemcpyHostToDevice, copy_stream_),
               "copying a batch to the device");
#ifdef MSD_WITH_NCCL
  // The followers' deliver_broadcast() of this step; a size of 0 is skipped
  // on every rank alike (all know it from the header).
  if (tp_role_ == TpRole::leader && slot.layout.bytes > 0)
    tp_group_->nccl.broadcast(slot.device, slot.layout.bytes, copy_stream_);
#endif
  close_slot(plan);
}

bool CudaSink::has_nccl() const {
#ifdef MSD_WITH_NCCL
  return true;
#else
  return false;
#endif
}

void CudaSink::join_tp_group(MPI_Comm tp_comm, const TpBroadcastPlan& plan) {
  if (plan.path != TpBroadcastPlan::Path::nccl) return;
  if (tp_group_) throw Error("CUDA sink: joined a TP group twice");
  if (buffers_.deliveries() > 0)
    throw Error("CUDA sink: a TP group is joined before the first batch is delivered, not after");
#ifdef MSD_WITH_NCCL
  int rank = 0;
  MSD_MPI(MPI_Comm_rank(tp_comm, &rank), "reading the TP rank");
  tp_group_.reset(new TpGroup{NcclTpBroadcast(tp_comm, options_.device, plan)});
  tp_role_ = rank == plan.root ? TpRole::leader : TpRole::follower;
#else
  (void)tp_comm;
  throw Error("CUDA sink: the TP group chose the nccl path, and this build has no NCCL");
#endif
}

void CudaSink::deliver_broadcast(const Batch& header, const StagingLayout& layout) {
  if (tp_role_ != TpRole::follower)
    throw Error(std::string("CUDA sink: deliver_broadcast on a sink that is not a TP follower on the nccl path"));
  const DoubleBuffer::Plan plan = open_slot(header.step, layout);
  Slot& slot = slots_[plan.slot];
  if (options_.timing) check_cuda(cudaEventRecord(slot.copy_started, copy_stream_), "recording a timing event");
#ifdef MSD_WITH_NCCL
  if (slot.layout.bytes > 0) tp_group_->nccl.broadcast(slot.device, slot.layout.bytes, copy_stream_);
#endif
  close_slot(plan);
}

void CudaSink::finish() {
  for (int s : buffers_.finish())
    check_cuda(cudaEventRecord(slots_[s].released, options_.compute_stream), "recording the last release");
  for (Slot& slot : slots_) {
    if (slot.capacity == 0) continue;
    wait_event(slot.copied, "a copy in flight at the stream's end");
    wait_event(slot.released, "the trainer's work at the stream's end");
  }
  current_ = -1;
}

const StagingLayout& CudaSink::layout() const {
  if (current_ < 0) throw Error("CUDA sink: no step delivered");
  return slots_[current_].layout;
}

const void* CudaSink::device_field(uint32_t micro_batch, BatchField field) const {
  const StagingLayout& staged = layout();
  return slots_[current_].device + staged.at(micro_batch, field).offset;
}

uint64_t CudaSink::field_bytes(uint32_t micro_batch, BatchField field) const {
  return layout().at(micro_batch, field).bytes;
}

cudaEvent_t CudaSink::ready_event() const {
  (void)layout();
  return slots_[current_].copied;
}

void CudaSink::wait(cudaStream_t stream) const {
  check_cuda(cudaStreamWaitEvent(stream, ready_event(), 0), "ordering a stream after the copy");
}

CudaSink::Interval CudaSink::copy_interval(cudaEvent_t reference) {
  if (!options_.timing) throw Error("CUDA sink: copy timing needs Options::timing");
  (void)layout();
  const Slot& slot = slots_[current_];
  wait_event(slot.copied, "the copy being timed");
  float start = 0, end = 0;
  check_cuda(cudaEventElapsedTime(&start, reference, slot.copy_started), "reading a copy's start");
  check_cuda(cudaEventElapsedTime(&end, reference, slot.copied), "reading a copy's end");
  return {start, end};
}

double CudaSink::copy_ms() {
  if (!options_.timing) throw Error("CUDA sink: copy timing needs Options::timing");
  (void)layout();
  const Slot& slot = slots_[current_];
  wait_event(slot.copied, "the copy being timed");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, slot.copy_started, slot.copied), "reading a copy's time");
  return ms;
}

}  // namespace msd
