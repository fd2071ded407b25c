// TP sharing (docs/design.md, "The trainer's mesh"): the ranks of a tensor-parallel
// group need identical batches, so only the group's leader (tp rank 0) builds
// one from the loader windows and the others receive a copy from it, through
// a node-local MPI shared-memory window when the whole group shares a node,
// or a broadcast over tp_comm otherwise. docs/batch.md "TP sharing".
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "construct/batch_sink.h"
#include "msd/batch.h"
#include "transport/mpi.h"
#include "transport/wire.h"

namespace msd {

// The fields the leader's batch hands its TP peers, once each, in the order
// they are copied (a wire message, transport/wire.h): everything it built,
// not the receiver's own figures (wait_seconds, the byte counts, read_ahead).
inline auto wire_fields(DocSpan& d) {
  return std::tie(d.source, d.index, d.begin, d.length, d.sequence, d.offset, d.patches);
}
inline auto wire_fields(MicroBatch& m) {
  return std::tie(m.sequences, m.seq_len, m.cp_rank, m.cp_size, m.cp_by_segment, m.has_inputs, m.has_targets,
                  m.tokens, m.labels, m.positions, m.loss_mask, m.cu_seqlens, m.patch_positions, m.patches,
                  m.patch_bytes, m.docs);
}
inline auto wire_fields(Batch& b) { return std::tie(b.step, b.digest, b.global_loss_tokens, b.micro_batches); }

// A batch as bytes, for copying it between processes.
uint64_t encoded_batch_bytes(const Batch& batch);
// Writes encoded_batch_bytes(batch) bytes into `out` (at least that large).
void encode_batch(const Batch& batch, std::span<uint8_t> out);
// Throws ProtocolError when `bytes` is not a whole encoded batch. Replaces
// the fields wire_fields lists, and keeps the others.
void decode_batch(std::span<const uint8_t> bytes, Batch& out);

// A batch's header, for the nccl path (construct/tp_device.h): its wire
// fields with the staged fields (staged_fields, construct/batch_sink.h)
// empty, then their byte counts (staged_field_bytes). The leader's `batch`
// is unchanged on return (its staged fields are set aside while encoding,
// not copied).
uint64_t encoded_header_bytes(Batch& batch);
void encode_header(Batch& batch, std::span<uint8_t> out);
// Replaces the wire fields of `out`, its staged fields emptied, and returns
// the layout of the leader's staged buffer. Throws ProtocolError when
// `bytes` is not a whole header or its sizes do not fit its micro-batches.
StagingLayout decode_header(std::span<const uint8_t> bytes, Batch& out);

class TpShare {
 public:
  enum class Transport { shared_memory, broadcast };

  // Collective over `tp_comm` (which the caller keeps alive). Picks shared
  // memory when every rank of tp_comm is on one node (MPI_Comm_split_type),
  // unless `transport` forces one; a forced shared_memory on a group that
  // spans nodes is an Error. The shared window starts at `initial_bytes` per
  // buffer and grows (collectively) when a batch does not fit.
  explicit TpShare(MPI_Comm tp_comm, std::optional<Transport> transport = std::nullopt,
                   uint64_t initial_bytes = uint64_t{4} << 20);
  TpShare(const TpShare&) = delete;
  TpShare& operator=(const TpShare&) = delete;

  // Collective over tp_comm, once per step: on the leader (rank 0) `batch` is
  // the input, on the others it is replaced by a copy of the leader's, byte
  // for byte (wait_seconds and the byte counts stay the receiver's own).
  // Waits back off instead of spinning.
  void share(Batch& batch);

  // From the next share() on, collectively: only the batch's header travels
  // (encode_header); each follower's staged fields arrive on its device
  // instead (the nccl path, construct/tp_device.h), and its Batch keeps them
  // empty. payload_layout(): the last header's staged buffer.
  void share_header_only() { header_only_ = true; }
  bool header_only() const { return header_only_; }
  const StagingLayout& payload_layout() const { return payload_layout_; }

  bool is_leader() const { return rank_ == 0; }
  Transport transport() const { return transport_; }
  uint64_t buffer_bytes() const { return buffer_bytes_; }  // current capacity of each of the two buffers
  uint64_t grows() const { return grows_; }                // times the shared window was reallocated

 private:
  void allocate(uint64_t buffer_bytes);
  uint64_t encoded_bytes(Batch& batch) const;
  void encode(Batch& batch, std::span<uint8_t> out) const;
  void decode(std::span<const uint8_t> bytes, Batch& batch);

  MPI_Comm comm_;
  int rank_ = 0;
  Transport transport_ = Transport::broadcast;
  Window window_;  // shared memory: the leader's segment holds two buffers, used alternately
  uint64_t buffer_bytes_ = 0;
  uint64_t shares_ = 0;
  uint64_t grows_ = 0;
  std::vector<uint8_t> scratch_;  // broadcast: the encoded batch
  bool header_only_ = false;
  StagingLayout payload_layout_;  // followers, header only
};

}  // namespace msd
