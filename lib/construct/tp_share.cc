#include "construct/tp_share.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/error.h"
#include "transport/mpi.h"

namespace msd {

namespace {

class Writer {
 public:
  explicit Writer(uint8_t* out) : out_(out) {}
  template <typename T>
  void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(&v, sizeof v);
  }
  template <typename T>
  void array(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    value<uint64_t>(v.size());
    put(v.data(), v.size() * sizeof(T));
  }
  uint64_t bytes() const { return bytes_; }

 private:
  void put(const void* p, size_t n) {
    if (out_ && n) std::memcpy(out_ + bytes_, p, n);
    bytes_ += n;
  }
  uint8_t* out_;  // nullptr: only count
  uint64_t bytes_ = 0;
};

class Reader {
 public:
  Reader(const uint8_t* in, uint64_t size) : in_(in), size_(size) {}
  template <typename T>
  T value() {
    T v;
    take(&v, sizeof v);
    return v;
  }
  template <typename T>
  void array(std::vector<T>& v) {
    const uint64_t n = value<uint64_t>();
    if (n > (size_ - at_) / std::max<size_t>(1, sizeof(T)))
      throw ProtocolError(str("a shared batch holds an array of ", n, " items in ", size_ - at_, " bytes"));
    v.resize(n);
    take(v.data(), n * sizeof(T));
  }
  void finish() const {
    if (at_ != size_) throw ProtocolError(str("a shared batch has ", size_ - at_, " trailing bytes"));
  }

 private:
  void take(void* p, uint64_t n) {
    if (n > size_ - at_) throw ProtocolError(str("a shared batch ends after ", size_, " bytes"));
    if (n) std::memcpy(p, in_ + at_, n);
    at_ += n;
  }
  const uint8_t* in_;
  uint64_t size_, at_ = 0;
};

void encode_to(const Batch& batch, Writer& w) {
  w.value(batch.step);
  w.value(batch.digest);
  w.value(batch.global_loss_tokens);
  w.value<uint64_t>(batch.micro_batches.size());
  for (const MicroBatch& mb : batch.micro_batches) {
    w.value(mb.sequences);
    w.value(mb.seq_len);
    w.value(mb.cp_rank);
    w.value(mb.cp_size);
    w.value<uint8_t>((mb.has_inputs ? 1 : 0) | (mb.has_targets ? 2 : 0) | (mb.cp_by_segment ? 4 : 0));
    w.value(mb.patch_bytes);
    w.array(mb.tokens);
    w.array(mb.labels);
    w.array(mb.positions);
    w.array(mb.loss_mask);
    w.array(mb.cu_seqlens);
    w.array(mb.patch_positions);
    w.array(mb.patches);
    // Field by field: the struct's padding is not data.
    w.value<uint64_t>(mb.docs.size());
    for (const DocSpan& d : mb.docs) {
      w.value(d.source);
      w.value(d.index);
      w.value(d.begin);
      w.value(d.length);
      w.value(d.sequence);
      w.value(d.offset);
      w.value(d.patches);
    }
  }
}

int checked_count(uint64_t bytes) {
  if (bytes > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    throw Error(str("a batch of ", bytes, " bytes is too large to broadcast in one message"));
  return static_cast<int>(bytes);
}

}  // namespace

uint64_t encoded_batch_bytes(const Batch& batch) {
  Writer w(nullptr);
  encode_to(batch, w);
  return w.bytes();
}

void encode_batch(const Batch& batch, uint8_t* out) {
  Writer w(out);
  encode_to(batch, w);
}

void decode_batch(const uint8_t* bytes, uint64_t size, Batch& out) {
  Reader r(bytes, size);
  out.step = r.value<uint64_t>();
  out.digest = r.value<uint64_t>();
  out.global_loss_tokens = r.value<uint64_t>();
  const uint64_t count = r.value<uint64_t>();
  if (count > size) throw ProtocolError(str("a shared batch claims ", count, " micro-batches in ", size, " bytes"));
  out.micro_batches.resize(count);
  for (MicroBatch& mb : out.micro_batches) {
    mb.sequences = r.value<uint32_t>();
    mb.seq_len = r.value<uint32_t>();
    mb.cp_rank = r.value<uint32_t>();
    mb.cp_size = r.value<uint32_t>();
    const uint8_t stage = r.value<uint8_t>();
    mb.has_inputs = stage & 1;
    mb.has_targets = stage & 2;
    mb.cp_by_segment = stage & 4;
    mb.patch_bytes = r.value<uint32_t>();
    r.array(mb.tokens);
    r.array(mb.labels);
    r.array(mb.positions);
    r.array(mb.loss_mask);
    r.array(mb.cu_seqlens);
    r.array(mb.patch_positions);
    r.array(mb.patches);
    const uint64_t docs = r.value<uint64_t>();
    if (docs > size) throw ProtocolError(str("a shared batch claims ", docs, " document spans in ", size, " bytes"));
    mb.docs.resize(docs);
    for (DocSpan& d : mb.docs) {
      d.source = r.value<uint32_t>();
      d.index = r.value<uint64_t>();
      d.begin = r.value<uint32_t>();
      d.length = r.value<uint32_t>();
      d.sequence = r.value<uint32_t>();
      d.offset = r.value<uint32_t>();
      d.patches = r.value<uint32_t>();
    }
  }
  r.finish();
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
      bytes = encoded_batch_bytes(batch);
      scratch_.resize(bytes);
      encode_batch(batch, scratch_.data());
    }
    MSD_MPI(MPI_Ibcast(&bytes, 1, MPI_UINT64_T, 0, comm_, &request), "broadcasting a batch's size over TP");
    wait(request, "broadcasting a batch's size over TP");
    scratch_.resize(bytes);
    MSD_MPI(MPI_Ibcast(scratch_.data(), checked_count(bytes), MPI_BYTE, 0, comm_, &request),
            "broadcasting a batch over TP");
    wait(request, "broadcasting a batch over TP");
    if (!is_leader()) decode_batch(scratch_.data(), bytes, batch);
    return;
  }
  // Shared memory, two buffers used alternately: a peer reads buffer b at
  // share t only after the leader wrote it, and finishes before it enters
  // share t + 1, which the leader must complete before share t + 2 writes b
  // again. The size travels in an allreduce that also orders those steps.
  const uint64_t buffer = shares_++ % 2;
  uint64_t need = 0, written = 0;
  if (is_leader()) {
    need = encoded_batch_bytes(batch);
    if (need <= buffer_bytes_) {
      encode_batch(batch, window_.base() + buffer * buffer_bytes_);
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
      encode_batch(batch, window_.base() + buffer * buffer_bytes_);
      window_.sync_local();
    }
    MSD_MPI(MPI_Ibarrier(comm_, &request), "publishing a shared batch");
    wait(request, "publishing a shared batch");
  }
  if (!is_leader()) {
    window_.sync_local();
    decode_batch(window_.segment(0) + buffer * buffer_bytes_, global[0], batch);
  }
}

}  // namespace msd
