#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include "construct/batch_builder.h"
#include "transport/slot.h"

using namespace msd;

namespace {
// Loader windows in memory: rank -> bytes.
class MemoryFetcher : public ByteFetcher {
 public:
  std::map<int, std::vector<uint8_t>> windows;
  uint64_t completed = 0, queued = 0;
  void get(int rank, uint64_t offset, void* out, uint64_t bytes) override {
    const auto& w = windows.at(rank);
    REQUIRE(offset + bytes <= w.size());
    std::memcpy(out, w.data() + offset, bytes);
    ++queued;
  }
  void complete() override { completed = queued; }
};

// Writes a sample into a window the way a loader does; returns its metadata.
SampleMeta put_sample(MemoryFetcher& f, int rank, uint32_t source, uint64_t index, const std::vector<int32_t>& tokens,
                      uint32_t patches, uint32_t patch_bytes) {
  auto& w = f.windows[rank];
  uint64_t offset = (w.size() + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  uint64_t bytes = SlotLayout::bytes(static_cast<uint32_t>(tokens.size()), patches, patch_bytes);
  w.resize(offset + bytes);
  std::memcpy(w.data() + offset + SlotLayout::tokens_offset(), tokens.data(), tokens.size() * 4);
  for (uint32_t p = 0; p < patches * patch_bytes; ++p)
    w[offset + SlotLayout::patches_offset(static_cast<uint32_t>(tokens.size())) + p] = static_cast<uint8_t>(p / patch_bytes + 1);
  SampleMeta m;
  m.source = source;
  m.index = index;
  m.loader_rank = rank;
  m.slot_offset = offset;
  m.slot_bytes = static_cast<uint32_t>(bytes);
  m.text_tokens = static_cast<uint32_t>(tokens.size());
  m.patches = patches;
  m.patch_bytes = patches ? patch_bytes : 0;
  return m;
}
}  // namespace

TEST_CASE("a packed micro-batch has tokens, labels, positions and cu_seqlens per document") {
  MemoryFetcher f;
  StepPlan plan;
  plan.step = 3;
  plan.seq_len = 8;
  plan.samples.push_back(put_sample(f, 1, 0, 10, {11, 12, 13}, 0, 0));
  plan.samples.push_back(put_sample(f, 2, 1, 20, {21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, 0, 0));
  plan.micro_batches.resize(1);
  // Sequence 0: doc 0 then the first 5 positions of doc 1; sequence 1: the rest of doc 1.
  plan.micro_batches[0].sequences.push_back({{{0, 0, 3}, {1, 0, 5}}});
  plan.micro_batches[0].sequences.push_back({{{1, 5, 5}}});
  Batch batch;
  BuildStats stats = build_batch(plan, f, {}, batch);
  REQUIRE(f.completed == f.queued);
  REQUIRE(stats.bytes_fetched == 13 * 4);
  const MicroBatch& mb = batch.micro_batches.at(0);
  REQUIRE(mb.sequences == 2);
  REQUIRE(mb.tokens == std::vector<int32_t>{11, 12, 13, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 0, 0, 0});
  REQUIRE(mb.positions == std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 0, 0});
  REQUIRE(mb.labels == std::vector<int32_t>{12, 13, -100, 22, 23, 24, 25, -100, 27, 28, 29, 30, -100, -100, -100, -100});
  REQUIRE(mb.cu_seqlens == std::vector<int32_t>{0, 3, 8, 13, 16});
  for (size_t i = 0; i < mb.labels.size(); ++i) REQUIRE(mb.loss_mask[i] == (mb.labels[i] != kIgnoreLabel));
  REQUIRE(mb.docs.size() == 3);
  REQUIRE(mb.docs[2].index == 20);
  REQUIRE(mb.docs[2].begin == 5);
  REQUIRE(mb.tokens_used() == 13);
  REQUIRE(batch.digest == batch_digest(batch));
}

TEST_CASE("image patches land where the plan puts them and only needed bytes are fetched") {
  MemoryFetcher f;
  StepPlan plan;
  plan.seq_len = 16;
  const uint32_t patch_bytes = 12;  // 2x2 RGB
  plan.samples.push_back(put_sample(f, 1, 2, 7, {101, 102, 103}, 4, patch_bytes));
  plan.micro_batches.resize(1);
  plan.micro_batches[0].sequences.push_back({{{0, 0, 7}}});
  Batch batch;
  BuildStats stats = build_batch(plan, f, BuildOptions{99}, batch);
  REQUIRE(stats.bytes_fetched == 4 * patch_bytes + 3 * 4);
  const MicroBatch& mb = batch.micro_batches[0];
  REQUIRE(mb.patch_bytes == patch_bytes);
  REQUIRE(mb.patch_positions == std::vector<int32_t>{0, 1, 2, 3});
  REQUIRE(mb.patches.size() == 4 * patch_bytes);
  REQUIRE(mb.patches[0] == 1);
  REQUIRE(mb.patches[3 * patch_bytes] == 4);
  REQUIRE(std::vector<int32_t>(mb.tokens.begin(), mb.tokens.begin() + 8) ==
          std::vector<int32_t>{99, 99, 99, 99, 101, 102, 103, 0});
  // No loss on patches, none from the last patch into the caption.
  REQUIRE(mb.labels[3] == kIgnoreLabel);
  REQUIRE(mb.labels[4] == 102);
  REQUIRE(mb.labels[5] == 103);
  REQUIRE(mb.labels[6] == kIgnoreLabel);
  REQUIRE(mb.cu_seqlens == std::vector<int32_t>{0, 7, 16});
}

TEST_CASE("inconsistent plans are protocol errors") {
  MemoryFetcher f;
  StepPlan plan;
  plan.seq_len = 4;
  plan.samples.push_back(put_sample(f, 1, 0, 0, {1, 2, 3}, 0, 0));
  plan.micro_batches.resize(1);
  plan.micro_batches[0].sequences.push_back({{{0, 1, 3}}});  // beyond the document
  Batch batch;
  REQUIRE_THROWS_AS(build_batch(plan, f, {}, batch), ProtocolError);
  plan.micro_batches[0].sequences[0].pieces = {{0, 0, 3}, {0, 0, 3}};  // overflows seq_len
  REQUIRE_THROWS_AS(build_batch(plan, f, {}, batch), ProtocolError);
}

TEST_CASE("the digest changes with any token") {
  MemoryFetcher f;
  StepPlan plan;
  plan.seq_len = 4;
  plan.samples.push_back(put_sample(f, 1, 0, 0, {1, 2, 3}, 0, 0));
  plan.micro_batches.resize(1);
  plan.micro_batches[0].sequences.push_back({{{0, 0, 3}}});
  Batch a, b;
  build_batch(plan, f, {}, a);
  f.windows[1][SlotLayout::tokens_offset()] ^= 1;
  build_batch(plan, f, {}, b);
  REQUIRE(a.digest != b.digest);
}
