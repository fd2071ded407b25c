#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "common/error.h"
#include "construct/batch_builder.h"
#include "construct/batch_sink.h"

using namespace msd;

namespace {
// Two micro-batches of different shapes; the second has images.
Batch sample_batch() {
  Batch batch;
  batch.step = 7;
  batch.micro_batches.resize(2);
  MicroBatch& a = batch.micro_batches[0];
  a.sequences = 2;
  a.seq_len = 5;
  a.tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  a.labels = {2, 3, 4, 5, -100, 7, 8, 9, 10, -100};
  a.positions = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
  a.loss_mask = {1, 1, 1, 1, 0, 1, 1, 1, 1, 0};
  a.cu_seqlens = {0, 5, 10};
  MicroBatch& b = batch.micro_batches[1];
  b.sequences = 1;
  b.seq_len = 3;
  b.tokens = {9, 9, 1};
  b.labels = {-100, 1, -100};
  b.positions = {0, 1, 2};
  b.loss_mask = {0, 1, 0};
  b.cu_seqlens = {0, 3};
  b.patch_bytes = 12;
  b.patch_positions = {0, 1};
  b.patches.resize(24);
  std::iota(b.patches.begin(), b.patches.end(), uint8_t{1});
  batch.digest = batch_digest(batch);
  return batch;
}
}  // namespace

TEST_CASE("the host sink leaves the batch where it is") {
  Batch batch = sample_batch();
  const uint64_t digest = batch.digest;
  HostSink sink;
  CHECK(sink.steps_delivered() == 0);
  sink.deliver(batch);
  CHECK(sink.name() == "host");
  CHECK(sink.steps_delivered() == 8);
  CHECK(batch_digest(batch) == digest);
}

TEST_CASE("staging lays every field out aligned, in micro-batch then field order") {
  const Batch batch = sample_batch();
  const StagingLayout layout = staging_layout(batch);
  REQUIRE(layout.fields.size() == 2 * kBatchFields);
  uint64_t end = 0;
  for (const StagedField& f : layout.fields) {
    CHECK(f.offset % kStagingAlign == 0);
    CHECK(f.offset >= end);
    end = f.offset + f.bytes;
  }
  CHECK(layout.bytes >= end);
  CHECK(layout.bytes % kStagingAlign == 0);
  CHECK(layout.at(0, BatchField::tokens).bytes == 40);
  CHECK(layout.at(0, BatchField::loss_mask).bytes == 10);
  CHECK(layout.at(0, BatchField::patches).bytes == 0);
  CHECK(layout.at(1, BatchField::patches).bytes == 24);
  CHECK(layout.at(1, BatchField::cu_seqlens).bytes == 8);
  // Micro-batch 0 has 5 non-empty fields, micro-batch 1 has 7; each takes one grain.
  CHECK(layout.bytes == 12 * kStagingAlign);

  std::vector<uint8_t> staged(layout.bytes, 0xee);
  stage_batch(batch, layout, staged.data());
  const StagedField& labels = layout.at(0, BatchField::labels);
  CHECK(std::memcmp(staged.data() + labels.offset, batch.micro_batches[0].labels.data(), labels.bytes) == 0);
  const StagedField& patches = layout.at(1, BatchField::patches);
  CHECK(std::memcmp(staged.data() + patches.offset, batch.micro_batches[1].patches.data(), patches.bytes) == 0);
  // Reading the fields back from the staging gives the same digest.
  Batch back = batch;
  for (uint32_t m = 0; m < 2; ++m) {
    MicroBatch& mb = back.micro_batches[m];
    std::memcpy(mb.tokens.data(), staged.data() + layout.at(m, BatchField::tokens).offset, mb.tokens.size() * 4);
    std::memcpy(mb.positions.data(), staged.data() + layout.at(m, BatchField::positions).offset,
                mb.positions.size() * 4);
  }
  CHECK(batch_digest(back) == batch.digest);
}

TEST_CASE("staging refuses a layout of another batch") {
  const Batch batch = sample_batch();
  Batch other = batch;
  other.micro_batches[1].patches.resize(12);
  const StagingLayout layout = staging_layout(other);
  std::vector<uint8_t> staged(layout.bytes);
  CHECK_THROWS_AS(stage_batch(batch, layout, staged.data()), Error);
}

TEST_CASE("staging capacity grows with headroom and never shrinks") {
  CHECK(staging_capacity(0, 0) == 0);
  CHECK(staging_capacity(100, 0) == kStagingGrain);
  CHECK(staging_capacity(100, kStagingGrain) == kStagingGrain);
  const uint64_t eight = 8 * kStagingGrain;
  CHECK(staging_capacity(eight, 0) == 10 * kStagingGrain);
  CHECK(staging_capacity(eight + 1, 10 * kStagingGrain) == 10 * kStagingGrain);
  CHECK(staging_capacity(1, 10 * kStagingGrain) == 10 * kStagingGrain);
  const uint64_t grown = staging_capacity(11 * kStagingGrain, 10 * kStagingGrain);
  CHECK(grown >= 11 * kStagingGrain + 11 * kStagingGrain / 4);
  CHECK(grown % kStagingGrain == 0);
}

TEST_CASE("double buffering: step t+1 copies into the other slot while the trainer holds step t") {
  DoubleBuffer buffers;
  DoubleBuffer::Plan p = buffers.deliver(0);
  CHECK(p.slot == 0);
  CHECK(p.release_slot == -1);
  CHECK_FALSE(p.wait_previous_copy);
  CHECK_FALSE(p.wait_release);
  CHECK(buffers.state(0) == DoubleBuffer::State::copying);
  buffers.hand_out(0);
  CHECK(buffers.held_slot() == 0);

  p = buffers.deliver(1);
  CHECK(p.slot == 1);          // the trainer's step 0 keeps slot 0
  CHECK(p.release_slot == 0);  // released after the work enqueued on it
  CHECK_FALSE(p.wait_previous_copy);
  CHECK_FALSE(p.wait_release);  // slot 1 was never used
  CHECK(buffers.state(0) == DoubleBuffer::State::released);
  buffers.hand_out(1);

  for (uint64_t step = 2; step < 6; ++step) {
    p = buffers.deliver(step);
    CHECK(p.slot == static_cast<int>(step % 2));
    CHECK(p.release_slot == 1 - p.slot);
    CHECK(p.wait_previous_copy);  // the staging's previous copy must be done before it is rewritten
    CHECK(p.wait_release);        // and the trainer's kernels on step - 2 before the device copy
    CHECK(buffers.state(1 - p.slot) == DoubleBuffer::State::released);
    buffers.hand_out(p.slot);
  }
  CHECK(buffers.deliveries() == 6);
  const std::vector<int> releases = buffers.finish();
  CHECK(releases == std::vector<int>{1});
  CHECK(buffers.state(0) == DoubleBuffer::State::free);
  CHECK(buffers.state(1) == DoubleBuffer::State::free);
  CHECK(buffers.finish().empty());
}

TEST_CASE("double buffering refuses steps out of order and copies never handed out") {
  DoubleBuffer buffers;
  buffers.deliver(4);
  CHECK_THROWS_AS(buffers.hand_out(1), ProtocolError);  // slot 1 is free
  buffers.hand_out(0);
  CHECK_THROWS_AS(buffers.deliver(4), ProtocolError);
  CHECK_THROWS_AS(buffers.deliver(3), ProtocolError);
  buffers.deliver(9);  // a resumed or skipping stream is fine as long as it moves forward
  // Slot 1 was never handed out: the next delivery would overwrite bytes in flight.
  CHECK_THROWS_AS(buffers.deliver(10), ProtocolError);
}

TEST_CASE("TP broadcast plan: NCCL only when every rank of a group has a device") {
  const int one[] = {1};
  CHECK(plan_tp_broadcast(one, true).path == TpBroadcastPlan::Path::single);
  const int all[] = {1, 8, 2, 1};
  const TpBroadcastPlan nccl = plan_tp_broadcast(all, true);
  CHECK(nccl.path == TpBroadcastPlan::Path::nccl);
  CHECK(nccl.root == 0);
  CHECK(plan_tp_broadcast(all, false).path == TpBroadcastPlan::Path::host);
  const int missing[] = {1, 1, 0, 1};
  const TpBroadcastPlan host = plan_tp_broadcast(missing, true);
  CHECK(host.path == TpBroadcastPlan::Path::host);
  CHECK(host.reason.find("tp rank 2") != std::string::npos);
  const int none[] = {0, 0};
  CHECK(plan_tp_broadcast(none, true).path == TpBroadcastPlan::Path::host);
  CHECK(std::string(path_name(TpBroadcastPlan::Path::nccl)) == "nccl");
}
