#include "construct/tp_share.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/error.h"
#include "transport/mpi.h"

namespace msd {

namespace {

int checked_count(uint64_t bytes) {
  if (bytes > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    throw Error(str("a batch of ", bytes, " bytes is too large to broadcast in one message"));
  return static_cast<int>(bytes);
}

}  // namespace

uint64_t encoded_batch_bytes(const Batch& batch) { return 1 + wire_bytes(batch); }

void encode_batch(const Batch& batch, std::span<uint8_t> out) {
  WireWriter w(out);
  write_wire(w, batch);
}

void decode_batch(std::span<const uint8_t> bytes, Batch& out) { decode_fields(bytes, "shared batch", out); }

namespace {
// Moves the staged fields of `batch` into `aside` and back (swaps: no copy).
void swap_staged(Batch& batch, std::vector<MicroBatch>& aside) {
  aside.resize(batch.micro_batches.size());
  for (size_t m = 0; m < aside.size(); ++m) {
    auto mine = staged_fields(batch.micro_batches[m]);
    auto other = staged_fields(aside[m]);
    [&]<size_t... I>(std::index_sequence<I...>) {
      (std::get<I>(mine).swap(std::get<I>(other)), ...);
    }(std::make_index_sequence<kBatchFields>{});
  }
}

// Runs `f` on `batch` with its staged fields set aside, restoring them even
// when `f` throws.
template <typename F>
auto without_staged(Batch& batch, F&& f) {
  const std::vector<uint64_t> sizes = staged_field_bytes(batch);
  std::vector<MicroBatch> aside;
  swap_staged(batch, aside);
  struct Restore {
    Batch& batch;
    std::vector<MicroBatch>& aside;
    ~Restore() { swap_staged(batch, aside); }
  } restore{batch, aside};
  return f(sizes);
}
}  // namespace

uint64_t encoded_header_bytes(Batch& batch) {
  return without_staged(batch, [&](const std::vector<uint64_t>& sizes) {
    return uint64_t{1} + wire_bytes(batch) + wire_bytes(sizes);
  });
}

void encode_header(Batch& batch, std::span<uint8_t> out) {
  without_staged(batch, [&](const std::vector<uint64_t>& sizes) {
    WireWriter w(out);
    write_wire(w, batch);
    write_wire(w, sizes);
  });
}

StagingLayout decode_header(std::span<const uint8_t> bytes, Batch& out) {
  std::vector<uint64_t> sizes;
  decode_fields(bytes, "shared batch header", out, sizes);
  if (sizes.size() != out.micro_batches.size() * kBatchFields)
    throw ProtocolError(str("shared batch header of step ", out.step, ": ", sizes.size(), " field sizes for ",
                            out.micro_batches.size(), " micro-batches of ", kBatchFields, " fields"));
  return staging_layout(sizes);
}

uint64_t TpShare::encoded_bytes(Batch& batch) const {
  return header_only_ ? encoded_header_bytes(batch) : encoded_batch_bytes(batch);
}

void TpShare::encode(Batch& batch, std::span<uint8_t> out) const {
  if (header_only_)
    encode_header(batch, out);
  else
    encode_batch(batch, out);
}

void TpShare::decode(std::span<const uint8_t> bytes, Batch& batch) {
  if (header_only_)
    payload_layout_ = decode_header(bytes, batch);
  else
    decode_batch(bytes, batch);
}

TpShare::TpShare(MPI_Comm tp_comm, std::optional<Transport> transport, uint64_t initial_bytes) : comm_(tp_comm) {
  MSD_MPI(MPI_Comm_rank(comm_, &rank_), "querying the TP rank");
  const bool node_local = on_one_node(comm_, "finding the TP ranks that share a node");
  transport_ = transport.value_or(node_local ? Transport::shared_memory : Transport::broadcast);
  if (transport_ == Transport::shared_memory && !node_local)
    throw Error("TP sharing through shared memory needs every rank of the TP group on one node");
  if (transport_ == Transport::shared_memory) allocate(std::max<uint64_t>(initial_bytes, 4096));
}

// The leader's segment holds the two buffers; the others hold none.
void TpShare::allocate(uint64_t buffer_bytes) {
  buffer_bytes_ = (buffer_bytes + 63) / 64 * 64;
  window_ = Window();  // collectively, before the larger one
  window_ = Window(comm_, rank_ == 0 ? 2 * buffer_bytes_ : 0, "allocating the TP shared window");
  if (!window_.direct())
    throw Error("TP sharing through shared memory: the MPI library gave no node-shared window (osc sm)");
}

void TpShare::share(Batch& batch) {
  MPI_Request request;
  if (transport_ == Transport::broadcast) {
    uint64_t bytes = 0;
    if (is_leader()) {
      bytes = encoded_bytes(batch);
      scratch_.resize(bytes);
      encode(batch, scratch_);
    }
    MSD_MPI(MPI_Ibcast(&bytes, 1, MPI_UINT64_T, 0, comm_, &request), "broadcasting a batch's size over TP");
    wait(request, "broadcasting a batch's size over TP");
    scratch_.resize(bytes);
    MSD_MPI(MPI_Ibcast(scratch_.data(), checked_count(bytes), MPI_BYTE, 0, comm_, &request),
            "broadcasting a batch over TP");
    wait(request, "broadcasting a batch over TP");
    if (!is_leader()) decode(scratch_, batch);
    return;
  }
  // Shared memory, two buffers used alternately: a peer reads buffer b at
  // share t only after the leader wrote it, and finishes before it enters
  // share t + 1, which the leader must complete before share t + 2 writes b
  // again. The size travels in an allreduce that also orders those steps.
  const uint64_t buffer = shares_++ % 2;
  uint64_t need = 0, written = 0;
  if (is_leader()) {
    need = encoded_bytes(batch);
    if (need <= buffer_bytes_) {
      encode(batch, {window_.base() + buffer * buffer_bytes_, need});
      window_.sync_local();
      written = 1;
    }
  }
  uint64_t local[2] = {need, written}, global[2] = {0, 0};
  MSD_MPI(MPI_Iallreduce(local, global, 2, MPI_UINT64_T, MPI_MAX, comm_, &request), "sizing a shared batch");
  wait(request, "sizing a shared batch");
  if (global[1] == 0) {
    // Too large: everyone reallocates (collective), then the leader writes
    // and a barrier publishes it.
    MSD_MPI(MPI_Ibarrier(comm_, &request), "growing the TP shared window");
    wait(request, "growing the TP shared window");
    allocate(std::max(2 * buffer_bytes_, global[0] + global[0] / 4));
    ++grows_;
    if (is_leader()) {
      encode(batch, {window_.base() + buffer * buffer_bytes_, need});
      window_.sync_local();
    }
    MSD_MPI(MPI_Ibarrier(comm_, &request), "publishing a shared batch");
    wait(request, "publishing a shared batch");
  }
  if (!is_leader()) {
    window_.sync_local();
    decode({window_.segment(0) + buffer * buffer_bytes_, global[0]}, batch);
  }
}

}  // namespace msd
