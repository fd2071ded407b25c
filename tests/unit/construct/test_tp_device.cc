// The nccl path's host side (construct/tp_device.h, docs/gpu.md "Within a TP
// group"): the group's plan, and the split of a batch into the header a
// follower receives through the host path and the staged buffer it receives
// on the device.
#include <catch2/catch.hpp>

#include <numeric>

#include "common/error.h"
#include "construct/batch_builder.h"
#include "construct/batch_sink.h"
#include "construct/tp_share.h"

using namespace msd;

namespace {
Batch two_micro_batches() {
  Batch batch;
  batch.step = 11;
  batch.global_loss_tokens = 9;
  batch.micro_batches.resize(2);
  MicroBatch& a = batch.micro_batches[0];
  a.sequences = 1;
  a.seq_len = 6;
  a.tokens = {5, 6, 7, 8, 9, 0};
  a.labels = {6, 7, 8, 9, -100, -100};
  a.positions = {0, 1, 2, 3, 4, 0};
  a.loss_mask = {1, 1, 1, 1, 0, 0};
  a.cu_seqlens = {0, 5, 6};
  a.docs = {DocSpan{0, 42, 0, 5, 0, 0, 0}};
  MicroBatch& b = batch.micro_batches[1];
  b.sequences = 1;
  b.seq_len = 4;
  b.tokens = {3, 3, 3, 1};
  b.labels = {-100, -100, 1, -100};
  b.positions = {0, 1, 2, 3};
  b.loss_mask = {0, 0, 1, 0};
  b.cu_seqlens = {0, 4};
  b.patch_bytes = 5;
  b.patch_positions = {0, 1, 2};
  b.patches.resize(15);
  std::iota(b.patches.begin(), b.patches.end(), uint8_t{7});
  b.docs = {DocSpan{1, 3, 0, 4, 0, 0, 3}};
  batch.digest = batch_digest(batch);
  return batch;
}

uint64_t staged_bytes(const Batch& batch) {
  uint64_t sum = 0;
  for (uint64_t bytes : staged_field_bytes(batch)) sum += bytes;
  return sum;
}
}  // namespace

TEST_CASE("TP plan over gathered ranks: nccl needs a device sink with NCCL on every rank") {
  const TpRankDevice ready{1, 1}, host{0, 0}, no_nccl{1, 0};
  const TpRankDevice two[] = {ready, ready};
  const TpBroadcastPlan nccl = plan_tp_broadcast(std::span<const TpRankDevice>(two));
  CHECK(nccl.path == TpBroadcastPlan::Path::nccl);
  CHECK(nccl.root == 0);
  CHECK(nccl.reason == "every rank of the TP group has a device sink with NCCL");
  const TpRankDevice follower_on_host[] = {ready, host};
  const TpBroadcastPlan a = plan_tp_broadcast(std::span<const TpRankDevice>(follower_on_host));
  CHECK(a.path == TpBroadcastPlan::Path::host);
  CHECK(a.reason == "tp rank 1 has no CUDA device");
  const TpRankDevice leader_without_nccl[] = {no_nccl, ready, ready};
  const TpBroadcastPlan b = plan_tp_broadcast(std::span<const TpRankDevice>(leader_without_nccl));
  CHECK(b.path == TpBroadcastPlan::Path::host);
  CHECK(b.reason == "tp rank 0's device sink was built without NCCL");
  // A missing device is named before a missing NCCL.
  const TpRankDevice both[] = {no_nccl, host};
  CHECK(plan_tp_broadcast(std::span<const TpRankDevice>(both)).reason == "tp rank 1 has no CUDA device");
  const TpRankDevice one[] = {ready};
  CHECK(plan_tp_broadcast(std::span<const TpRankDevice>(one)).path == TpBroadcastPlan::Path::single);
}

TEST_CASE("the staged layout from field sizes alone matches the batch's") {
  const Batch batch = two_micro_batches();
  const std::vector<uint64_t> sizes = staged_field_bytes(batch);
  REQUIRE(sizes.size() == 2 * kBatchFields);
  CHECK(sizes[0] == 6 * sizeof(int32_t));               // micro-batch 0's tokens
  CHECK(sizes[kBatchFields + 6] == 15);                  // micro-batch 1's patches
  CHECK(sizes[static_cast<size_t>(BatchField::patches)] == 0);
  const StagingLayout from_batch = staging_layout(batch);
  const StagingLayout from_sizes = staging_layout(sizes);
  CHECK(from_sizes.bytes == from_batch.bytes);
  REQUIRE(from_sizes.fields.size() == from_batch.fields.size());
  for (size_t i = 0; i < from_batch.fields.size(); ++i) {
    CHECK(from_sizes.fields[i].micro_batch == from_batch.fields[i].micro_batch);
    CHECK(from_sizes.fields[i].field == from_batch.fields[i].field);
    CHECK(from_sizes.fields[i].offset == from_batch.fields[i].offset);
    CHECK(from_sizes.fields[i].bytes == from_batch.fields[i].bytes);
  }
  // Micro-batch 0: 5 non-empty fields, micro-batch 1: 7, one grain each.
  CHECK(from_sizes.at(1, BatchField::tokens).offset == 5 * kStagingAlign);
  CHECK(from_sizes.at(1, BatchField::patches).offset == 11 * kStagingAlign);
  CHECK(from_sizes.bytes == 12 * kStagingAlign);
  const uint64_t partial[] = {1, 2, 3};
  CHECK_THROWS_AS(staging_layout(std::span<const uint64_t>(partial)), ProtocolError);
}

TEST_CASE("a follower's header carries everything but the staged fields, and their layout") {
  Batch leader = two_micro_batches();
  const uint64_t digest = leader.digest;
  const StagingLayout sent = staging_layout(leader);

  const uint64_t header_bytes = encoded_header_bytes(leader);
  std::vector<uint8_t> header(header_bytes);
  encode_header(leader, header);
  // The leader's batch is whole again after encoding.
  CHECK(batch_digest(leader) == digest);
  CHECK(leader.micro_batches[1].patches.size() == 15);
  // The header is the whole batch less its staged bytes (and the vectors'
  // counts stay), plus the sizes: 4 bytes of count and 8 per field.
  CHECK(header_bytes == encoded_batch_bytes(leader) - staged_bytes(leader) + 4 + 8 * 2 * kBatchFields);

  Batch follower;
  follower.micro_batches.resize(3);
  follower.micro_batches[0].tokens = {1, 2, 3};  // last step's, replaced
  const StagingLayout received = decode_header(header, follower);
  CHECK(follower.step == 11);
  CHECK(follower.digest == digest);
  CHECK(follower.global_loss_tokens == 9);
  REQUIRE(follower.micro_batches.size() == 2);
  for (size_t m = 0; m < 2; ++m) {
    const MicroBatch& got = follower.micro_batches[m];
    const MicroBatch& want = leader.micro_batches[m];
    CHECK(got.sequences == want.sequences);
    CHECK(got.seq_len == want.seq_len);
    CHECK(got.patch_bytes == want.patch_bytes);
    REQUIRE(got.docs.size() == 1);
    CHECK(got.docs[0].index == want.docs[0].index);
    CHECK(got.docs[0].patches == want.docs[0].patches);
    for (const FieldBytes& f : field_bytes(got)) CHECK(f.bytes == 0);  // they arrive on the device
  }
  CHECK(received.bytes == sent.bytes);
  REQUIRE(received.fields.size() == sent.fields.size());
  for (size_t i = 0; i < sent.fields.size(); ++i) {
    CHECK(received.fields[i].offset == sent.fields[i].offset);
    CHECK(received.fields[i].bytes == sent.fields[i].bytes);
  }
  // The whole batch's encoding is not a header, nor is a truncated one.
  std::vector<uint8_t> whole(encoded_batch_bytes(leader));
  encode_batch(leader, whole);
  Batch other;
  CHECK_THROWS_AS(decode_header(whole, other), ProtocolError);
  header.pop_back();
  CHECK_THROWS_AS(decode_header(header, other), ProtocolError);
}
