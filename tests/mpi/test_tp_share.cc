// TP sharing over real MPI ranks: for both transports (a node-local shared
// window and a broadcast), every TP follower receives a batch byte-identical
// to its leader's, also when a batch outgrows the shared window and it grows;
// from step 3 on, header only (the nccl path): a follower's batch has the
// leader's header, no staged fields, and their layout. The group's path is
// agreed the same on every rank (agree_tp_broadcast).
//
// Usage: test_tp_share, under mpiexec with 2 or more ranks: the world is one
// TP group, and also pairs of ranks. All ranks agree on the exit code.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "mpi/mpi_test.h"
#include "construct/batch_builder.h"
#include "construct/tp_device.h"
#include "construct/tp_share.h"

using namespace msd;
using test::fail;

namespace {

// A batch that is a function of (step, group): the leader's input and what
// every follower must end up with. Step 3 is far larger than the others.
Batch synthetic_batch(uint64_t step, int group) {
  Batch batch;
  batch.step = step;
  const uint32_t sequences = step == 3 ? 64 : 1 + static_cast<uint32_t>(step % 3);
  batch.micro_batches.resize(2);
  for (size_t m = 0; m < batch.micro_batches.size(); ++m) {
    MicroBatch& mb = batch.micro_batches[m];
    mb.sequences = sequences;
    mb.seq_len = 2048;
    mb.cp_size = 2;
    mb.cp_rank = static_cast<uint32_t>(group % 2);
    mb.has_targets = m == 0;
    const size_t held = size_t{sequences} * mb.local_len();
    for (size_t i = 0; i < held; ++i) {
      mb.tokens.push_back(static_cast<int32_t>(step * 7919 + i * 31 + m + static_cast<size_t>(group)));
      mb.positions.push_back(static_cast<int32_t>(i % 97));
      if (mb.has_targets) {
        mb.labels.push_back(static_cast<int32_t>(i % 5 == 0 ? kIgnoreLabel : i));
        mb.loss_mask.push_back(i % 5 == 0 ? 0 : 1);
      }
    }
    mb.cu_seqlens = {0, 100, static_cast<int32_t>(sequences * mb.seq_len)};
    mb.patch_bytes = 12;
    mb.patch_positions = {1, 2};
    mb.patches.assign(24, static_cast<uint8_t>(step));
    mb.docs.push_back({1, step, 0, 100, 0, 0, 0});
  }
  batch.digest = batch_digest(batch);
  return batch;
}

std::vector<uint8_t> encoded(const Batch& batch) {
  std::vector<uint8_t> bytes(encoded_batch_bytes(batch));
  encode_batch(batch, bytes);
  return bytes;
}

// What a follower holds on the nccl path: the batch without its staged fields.
Batch header_of(Batch batch) {
  for (MicroBatch& mb : batch.micro_batches)
    std::apply([](auto&... fields) { (fields.clear(), ...); }, staged_fields(mb));
  return batch;
}

void check_header(const TpShare& share, const Batch& batch, const Batch& want, const char* what, uint64_t step) {
  if (share.is_leader()) {
    if (encoded(batch) != encoded(want)) fail(what, ": step ", step, ": the leader's batch changed by sharing");
    return;
  }
  if (encoded(batch) != encoded(header_of(want)) || batch.digest != want.digest)
    fail(what, ": step ", step, "'s header differs from the leader's batch less its staged fields");
  const StagingLayout sent = staging_layout(want);
  const StagingLayout& got = share.payload_layout();
  bool same = got.bytes == sent.bytes && got.fields.size() == sent.fields.size();
  for (size_t i = 0; same && i < sent.fields.size(); ++i)
    same = got.fields[i].offset == sent.fields[i].offset && got.fields[i].bytes == sent.fields[i].bytes;
  if (!same) fail(what, ": step ", step, "'s payload layout differs from the leader's staging");
}

void run(MPI_Comm group_comm, int group, TpShare::Transport transport, const char* what) {
  TpShare share(group_comm, transport, 8192);
  for (uint64_t step = 0; step < 8; ++step) {
    if (step == 4) share.share_header_only();
    const Batch want = synthetic_batch(step % 4, group);  // step 3 grows the window again in header-only mode
    Batch batch;
    if (share.is_leader()) batch = want;
    else batch = synthetic_batch(step + 100, group);  // stale contents the copy must replace
    share.share(batch);
    if (share.header_only())
      check_header(share, batch, want, what, step);
    else if (encoded(batch) != encoded(want) || batch.digest != batch_digest(batch))
      fail(what, ": step ", step, " differs from the leader's batch");
  }
  if (transport == TpShare::Transport::shared_memory && share.grows() == 0)
    fail(what, ": the large batch did not grow the shared window");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    // Truncated batches are protocol errors.
    const Batch sample = synthetic_batch(1, 0);
    const std::vector<uint8_t> bytes = encoded(sample);
    Batch out;
    bool threw = false;
    try {
      decode_batch(std::span(bytes).first(bytes.size() - 3), out);
    } catch (const ProtocolError&) {
      threw = true;
    }
    if (!threw) fail("a truncated batch decoded");

    MPI_Comm pairs = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pairs);
    for (auto transport : {TpShare::Transport::shared_memory, TpShare::Transport::broadcast}) {
      const char* name = transport == TpShare::Transport::shared_memory ? "shared memory" : "broadcast";
      run(MPI_COMM_WORLD, 0, transport, name);
      run(pairs, rank / 2, transport, name);
    }
    // Host sinks everywhere: the host path, naming tp rank 0; device sinks
    // with NCCL on every rank: nccl; one rank without: host, naming it.
    const TpBroadcastPlan host = agree_tp_broadcast(MPI_COMM_WORLD, tp_rank_device(nullptr));
    if (host.path != TpBroadcastPlan::Path::host || host.reason != "tp rank 0 has no CUDA device")
      fail("host sinks: plan ", path_name(host.path), " (", host.reason, ")");
    const TpBroadcastPlan nccl = agree_tp_broadcast(MPI_COMM_WORLD, {1, 1});
    if (nccl.path != TpBroadcastPlan::Path::nccl) fail("device sinks with NCCL: plan ", path_name(nccl.path));
    const TpBroadcastPlan mixed = agree_tp_broadcast(MPI_COMM_WORLD, {rank == world - 1 ? 0 : 1, 1});
    if (mixed.reason != "tp rank " + std::to_string(world - 1) + " has no CUDA device")
      fail("a rank without a device: plan ", path_name(mixed.path), " (", mixed.reason, ")");
    TpShare automatic(MPI_COMM_WORLD);
    if (automatic.transport() != TpShare::Transport::shared_memory)
      fail("a TP group on one node did not pick shared memory");
    MPI_Comm_free(&pairs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return test::finish("tp_share");
}
