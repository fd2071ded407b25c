// Where a constructed batch is delivered (docs/gpu.md). A client builds each
// step's batch in host memory (build_batch) and hands it, finished, to a
// BatchSink (msd/batch_sink.h) before msd::Client::next() returns it: the
// host sink leaves it where it is (the default); a device sink
// (construct/cuda_sink.h, built with MSD_WITH_CUDA) copies its fields into
// GPU memory through pinned staging. The parts of a device sink that need no
// device live here, MPI- and CUDA-free, so that they are unit-tested
// anywhere: the field list and staging layout, the double-buffer state
// machine, and the plan for sharing a batch within a TP group.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "msd/batch.h"
#include "msd/batch_sink.h"

namespace msd {

// The default: the batch stays in the client's host buffers, where the
// trainer reads it (Batch's vectors); nothing is copied.
class HostSink final : public BatchSink {
 public:
  void deliver(const Batch& batch) override { delivered_ = batch.step + 1; }
  std::string name() const override { return "host"; }
  uint64_t steps_delivered() const { return delivered_; }  // the last step delivered + 1; 0 before any

 private:
  uint64_t delivered_ = 0;
};

// --- the fields a device receives --------------------------------------------
enum class BatchField : uint8_t { tokens, labels, positions, loss_mask, cu_seqlens, patch_positions, patches };
inline constexpr int kBatchFields = 7;
const char* field_name(BatchField field);

// The seven fields a device receives, in BatchField order: the one list that
// says which of a micro-batch's wire fields (construct/tp_share.h) are its
// payload; the others are its header.
inline auto staged_fields(MicroBatch& m) {
  return std::tie(m.tokens, m.labels, m.positions, m.loss_mask, m.cu_seqlens, m.patch_positions, m.patches);
}
static_assert(std::tuple_size_v<decltype(staged_fields(std::declval<MicroBatch&>()))> == kBatchFields);

// One field of one micro-batch, as host bytes.
struct FieldBytes {
  BatchField field = BatchField::tokens;
  const void* data = nullptr;
  uint64_t bytes = 0;
};
// The micro-batch's seven fields in BatchField order (empty ones included,
// with 0 bytes).
std::vector<FieldBytes> field_bytes(const MicroBatch& mb);

// Where each field of a batch lies in one contiguous staging buffer (pinned
// host memory, then the same offsets in device memory): fields in
// micro-batch order, then BatchField order, each starting at a multiple of
// kStagingAlign so that device pointers into it are aligned for any element
// type and for coalesced reads.
inline constexpr uint64_t kStagingAlign = 256;
struct StagedField {
  uint32_t micro_batch = 0;
  BatchField field = BatchField::tokens;
  uint64_t offset = 0;  // from the start of the buffer
  uint64_t bytes = 0;
};
struct StagingLayout {
  std::vector<StagedField> fields;  // micro_batches x kBatchFields entries
  uint64_t bytes = 0;               // the whole buffer: the end of the last field, aligned
  const StagedField& at(uint32_t micro_batch, BatchField field) const {
    return fields.at(size_t{micro_batch} * kBatchFields + static_cast<size_t>(field));
  }
};
StagingLayout staging_layout(const Batch& batch);
// The same from the fields' byte counts alone (staged_field_bytes), micro-batch
// then BatchField order: how a TP follower on the nccl path lays out the
// leader's buffer it receives from the batch's header. Throws ProtocolError
// when the count is not a whole number of micro-batches.
std::vector<uint64_t> staged_field_bytes(const Batch& batch);
StagingLayout staging_layout(std::span<const uint64_t> field_bytes);
// Writes every field of `batch` to `out` at `layout`'s offsets (REQUIRES:
// layout == staging_layout(batch) and out holds layout.bytes).
void stage_batch(const Batch& batch, const StagingLayout& layout, uint8_t* out);

// The capacity to allocate for a buffer that must hold `needed` bytes and
// holds `current`: `current` when it fits, else `needed` rounded up to
// kStagingGrain with headroom of a quarter, so that batches whose size
// varies step to step (variable micro-batches, images) reallocate a few times
// at the start and then never. Never shrinks.
inline constexpr uint64_t kStagingGrain = uint64_t{1} << 20;
uint64_t staging_capacity(uint64_t needed, uint64_t current);

// --- double buffering ---------------------------------------------------------
// Two buffer slots, used alternately, so that step t+1's copy to the device
// overlaps the trainer's compute of step t. A slot's life:
//   free -> copying (host bytes staged, copy issued; the trainer's stream
//   waits on its copy event) -> held (the trainer has it: its kernels read
//   it) -> released (the trainer asked for the next step; its compute
//   stream records a release event after the work enqueued on this slot) ->
//   copying again: the copy into it waits on that release event, and the
//   host writes its staging only after its previous copy completed.
// The plan says what the CUDA sink must do and in which order; it does no
// device work itself.
class DoubleBuffer {
 public:
  enum class State : uint8_t { free, copying, held, released };
  // What deliver(step) must do, in order: record a release event for
  // `release_slot` on the trainer's stream (when >= 0), wait for `slot`'s
  // previous copy before writing its staging (wait_previous_copy), make the
  // copy stream wait on `slot`'s release event (wait_release), then stage
  // and copy into `slot`.
  struct Plan {
    int slot = 0;
    int release_slot = -1;
    bool wait_previous_copy = false;
    bool wait_release = false;
  };

  // Throws ProtocolError when `step` is not after the last step delivered.
  Plan deliver(uint64_t step);
  // The copy into `slot` completed and the trainer has it.
  void hand_out(int slot);
  // The stream ended: every slot's release is due (record events for those
  // returned, then synchronize).
  std::vector<int> finish();

  State state(int slot) const { return states_.at(static_cast<size_t>(slot)); }
  int held_slot() const;  // -1 when none
  uint64_t deliveries() const { return deliveries_; }

 private:
  std::array<State, 2> states_ = {State::free, State::free};
  bool copied_before_[2] = {false, false};  // a copy was ever issued from the slot's staging
  int next_slot_ = 0;
  uint64_t deliveries_ = 0;
  uint64_t last_step_ = 0;
};
const char* state_name(DoubleBuffer::State state);

// --- TP groups ------------------------------------------------------------------
// How a TP group's ranks get the leader's batch into device memory. host:
// every rank copies its own host batch (the followers' came from the leader
// through TpShare); nccl: the leader copies, then one ncclBroadcast over the
// group's NCCL communicator from its device buffer into each follower's
// (the NCCL id travels from tp rank 0 over tp_comm by MPI).
struct TpBroadcastPlan {
  enum class Path : uint8_t { single, host, nccl };
  Path path = Path::single;  // single: tp = 1, nothing to share
  int root = 0;              // the group's leader (tp rank 0)
  std::string reason;        // why this path, for logs and docs
};
// `devices_per_rank`: whether (> 0) each rank of the TP group has a CUDA device for the batch (by tp
// rank, gathered over tp_comm). NCCL when every rank has one and the group
// has more than one rank and `allow_nccl`; else the host path.
TpBroadcastPlan plan_tp_broadcast(std::span<const int> devices_per_rank, bool allow_nccl);
// What one rank brings to its group's plan (gathered over tp_comm,
// construct/tp_device.h): whether its sink is on a CUDA device, and whether
// that sink can broadcast over NCCL (built with it). The nccl path needs
// both on every rank; the reason names the first rank that lacks one.
struct TpRankDevice {
  int32_t has_device = 0;
  int32_t has_nccl = 0;
};
TpBroadcastPlan plan_tp_broadcast(std::span<const TpRankDevice> ranks);
const char* path_name(TpBroadcastPlan::Path path);

}  // namespace msd
