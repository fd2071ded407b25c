#include "construct/batch_sink.h"

#include <cstring>

#include "common/error.h"

namespace msd {

const char* field_name(BatchField field) {
  switch (field) {
    case BatchField::tokens: return "tokens";
    case BatchField::labels: return "labels";
    case BatchField::positions: return "positions";
    case BatchField::loss_mask: return "loss_mask";
    case BatchField::cu_seqlens: return "cu_seqlens";
    case BatchField::patch_positions: return "patch_positions";
    case BatchField::patches: return "patches";
  }
  return "?";
}

namespace {
template <typename T>
FieldBytes bytes_of(BatchField field, const std::vector<T>& values) {
  return {field, values.data(), values.size() * sizeof(T)};
}
uint64_t align_up(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }
}  // namespace

std::vector<FieldBytes> field_bytes(const MicroBatch& mb) {
  std::vector<FieldBytes> fields;
  fields.reserve(kBatchFields);
  std::apply([&](const auto&... values) { (fields.push_back(bytes_of(BatchField(fields.size()), values)), ...); },
             staged_fields(const_cast<MicroBatch&>(mb)));
  return fields;
}

std::vector<uint64_t> staged_field_bytes(const Batch& batch) {
  std::vector<uint64_t> bytes;
  bytes.reserve(batch.micro_batches.size() * kBatchFields);
  for (const MicroBatch& mb : batch.micro_batches)
    for (const FieldBytes& f : field_bytes(mb)) bytes.push_back(f.bytes);
  return bytes;
}

StagingLayout staging_layout(std::span<const uint64_t> field_bytes) {
  if (field_bytes.size() % kBatchFields != 0)
    throw ProtocolError("staging layout: " + std::to_string(field_bytes.size()) + " field sizes, not a multiple of " +
                        std::to_string(kBatchFields));
  StagingLayout layout;
  layout.fields.reserve(field_bytes.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < field_bytes.size(); ++i) {
    const auto micro_batch = static_cast<uint32_t>(i / kBatchFields);
    layout.fields.push_back({micro_batch, BatchField(i % kBatchFields), offset, field_bytes[i]});
    offset = align_up(offset + field_bytes[i], kStagingAlign);
  }
  layout.bytes = offset;
  return layout;
}

StagingLayout staging_layout(const Batch& batch) { return staging_layout(staged_field_bytes(batch)); }

void stage_batch(const Batch& batch, const StagingLayout& layout, uint8_t* out) {
  if (layout.fields.size() != batch.micro_batches.size() * kBatchFields)
    throw Error("staging step " + std::to_string(batch.step) + ": the layout has " +
                std::to_string(layout.fields.size()) + " fields, the batch " +
                std::to_string(batch.micro_batches.size() * kBatchFields));
  size_t i = 0;
  for (const MicroBatch& mb : batch.micro_batches) {
    for (const FieldBytes& f : field_bytes(mb)) {
      const StagedField& staged = layout.fields[i++];
      if (staged.field != f.field || staged.bytes != f.bytes)
        throw Error("staging step " + std::to_string(batch.step) + ": the layout gives " + field_name(f.field) +
                    " of micro-batch " + std::to_string(staged.micro_batch) + " " + std::to_string(staged.bytes) +
                    " bytes, the batch holds " + std::to_string(f.bytes));
      if (f.bytes != 0) std::memcpy(out + staged.offset, f.data, f.bytes);
    }
  }
}

uint64_t staging_capacity(uint64_t needed, uint64_t current) {
  if (needed <= current) return current;
  return align_up(needed + needed / 4, kStagingGrain);
}

// --- DoubleBuffer --------------------------------------------------------------

const char* state_name(DoubleBuffer::State state) {
  switch (state) {
    case DoubleBuffer::State::free: return "free";
    case DoubleBuffer::State::copying: return "copying";
    case DoubleBuffer::State::held: return "held";
    case DoubleBuffer::State::released: return "released";
  }
  return "?";
}

int DoubleBuffer::held_slot() const {
  for (int s = 0; s < 2; ++s)
    if (states_[s] == State::held) return s;
  return -1;
}

DoubleBuffer::Plan DoubleBuffer::deliver(uint64_t step) {
  if (deliveries_ > 0 && step <= last_step_)
    throw ProtocolError("batch sink: step " + std::to_string(step) + " delivered after step " +
                        std::to_string(last_step_));
  for (int s = 0; s < 2; ++s)
    if (states_[s] == State::copying)
      throw ProtocolError("batch sink: the copy into slot " + std::to_string(s) + " was never handed out before step " +
                          std::to_string(step));
  Plan plan;
  // The trainer asks for the next step: it is done enqueueing work on the
  // step it holds, whose slot is released once that work has run.
  plan.release_slot = held_slot();
  if (plan.release_slot >= 0) states_[plan.release_slot] = State::released;
  plan.slot = next_slot_;
  const State state = states_[plan.slot];  // free or released: the held slot is the other one
  plan.wait_previous_copy = copied_before_[plan.slot];
  plan.wait_release = state == State::released;
  states_[plan.slot] = State::copying;
  copied_before_[plan.slot] = true;
  next_slot_ = 1 - plan.slot;
  last_step_ = step;
  ++deliveries_;
  return plan;
}

void DoubleBuffer::hand_out(int slot) {
  MSD_CHECK(slot == 0 || slot == 1);
  if (states_[slot] != State::copying)
    throw ProtocolError(std::string("batch sink: slot ") + std::to_string(slot) + " handed out while " +
                        state_name(states_[slot]));
  states_[slot] = State::held;
}

std::vector<int> DoubleBuffer::finish() {
  std::vector<int> releases;
  for (int s = 0; s < 2; ++s) {
    if (states_[s] == State::held || states_[s] == State::copying) releases.push_back(s);
    states_[s] = State::free;
  }
  return releases;
}

// --- TP groups -------------------------------------------------------------------

const char* path_name(TpBroadcastPlan::Path path) {
  switch (path) {
    case TpBroadcastPlan::Path::single: return "single";
    case TpBroadcastPlan::Path::host: return "host";
    case TpBroadcastPlan::Path::nccl: return "nccl";
  }
  return "?";
}

TpBroadcastPlan plan_tp_broadcast(std::span<const int> devices_per_rank, bool allow_nccl) {
  TpBroadcastPlan plan;
  if (devices_per_rank.size() <= 1) {
    plan.reason = "a TP group of one rank";
    return plan;
  }
  plan.path = TpBroadcastPlan::Path::host;
  for (size_t r = 0; r < devices_per_rank.size(); ++r) {
    if (devices_per_rank[r] <= 0) {
      plan.reason = "tp rank " + std::to_string(r) + " has no CUDA device";
      return plan;
    }
  }
  if (!allow_nccl) {
    plan.reason = "NCCL is not available in this build";
    return plan;
  }
  plan.path = TpBroadcastPlan::Path::nccl;
  plan.reason = "every rank of the TP group sees a CUDA device";
  return plan;
}

TpBroadcastPlan plan_tp_broadcast(std::span<const TpRankDevice> ranks) {
  std::vector<int> devices;
  bool all_nccl = true;
  size_t first_without = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    devices.push_back(ranks[r].has_device);
    if (all_nccl && ranks[r].has_nccl == 0) first_without = r;
    all_nccl = all_nccl && ranks[r].has_nccl != 0;
  }
  TpBroadcastPlan plan = plan_tp_broadcast(devices, all_nccl);
  if (plan.path == TpBroadcastPlan::Path::host && !all_nccl && plan.reason.find("no CUDA device") == std::string::npos)
    plan.reason = "tp rank " + std::to_string(first_without) + "'s device sink was built without NCCL";
  if (plan.path == TpBroadcastPlan::Path::nccl) plan.reason = "every rank of the TP group has a device sink with NCCL";
  return plan;
}

}  // namespace msd
