#include <catch2/catch.hpp>

#include <random>

#include "common/error.h"
#include "planner/window_budget.h"
#include "transport/slot.h"
#include "transport/wire.h"

using namespace msd;

TEST_CASE("step plans survive encoding") {
  StepPlan plan;
  plan.step = 42;
  plan.seq_len = 4096;
  for (uint32_t i = 0; i < 5; ++i) {
    SampleMeta m;
    m.source = i % 3;
    m.cursor = 1000 + i;
    m.index = 77 * i;
    m.loader_rank = 1 + static_cast<int32_t>(i % 2);
    m.slot_offset = 64 * i;
    m.slot_bytes = 100 + i;
    m.text_tokens = 10 * i;
    m.patches = i;
    m.patch_bytes = 768;
    plan.samples.push_back(m);
  }
  plan.micro_batches.resize(2);
  plan.micro_batches[1].sequences.push_back({{{0, 0, 10}, {4, 3, 7}}});
  auto bytes = encode(plan);
  StepPlan back = decode_plan(bytes);
  REQUIRE(back.step == 42);
  REQUIRE(back.seq_len == 4096);
  REQUIRE(back.samples.size() == 5);
  REQUIRE(back.samples[4].cursor == 1004);
  REQUIRE(back.samples[3].loader_rank == 2);
  REQUIRE(back.micro_batches.size() == 2);
  REQUIRE(back.micro_batches[0].sequences.empty());
  REQUIRE(back.micro_batches[1].sequences[0].pieces[1].begin == 3);
}

TEST_CASE("truncated and corrupt messages are protocol errors") {
  auto bytes = encode_load({{1, 2, 3}, {4, 5, 6}});
  REQUIRE(decode_load(bytes).size() == 2);
  auto cut = bytes;
  cut.pop_back();
  REQUIRE_THROWS_AS(decode_load(cut), ProtocolError);
  auto longer = bytes;
  longer.push_back(0);
  REQUIRE_THROWS_AS(decode_load(longer), ProtocolError);
  auto wrong_version = bytes;
  wrong_version[0] = 99;
  REQUIRE_THROWS_AS(decode_load(wrong_version), ProtocolError);
  StepPlan plan;
  plan.samples.resize(1);
  plan.micro_batches.resize(1);
  plan.micro_batches[0].sequences.push_back({{{3, 0, 1}}});  // sample 3 does not exist
  REQUIRE_THROWS_AS(decode_plan(encode(plan)), ProtocolError);
}

TEST_CASE("hello, release and ack round trips") {
  HelloMessage hello{"", {{0, 10, 1000, {}, {}},
                          {2, 20, 2000, {{"/data/a.jsonl", 7, 3}, {"/data/b.jsonl", 9, 17}}, {{1, "/data/b.jsonl", 9, 0xabc}}}}};
  auto back = decode_hello(encode(hello));
  REQUIRE(back.sources.size() == 2);
  REQUIRE(back.sources[1].samples == 20);
  REQUIRE(back.sources[1].files == hello.sources[1].files);
  REQUIRE(back.sources[1].fingerprints == hello.sources[1].fingerprints);
  REQUIRE(decode_hello(encode(HelloMessage{"cannot open x", {}})).error == "cannot open x");
  const std::vector<SlotRange> ranges = {{64, 128}, {1024, 64}};
  REQUIRE(decode_release(encode_release(ranges)) == ranges);
  REQUIRE(decode_ack(encode(AckMessage{9})).step == 9);
  REQUIRE(decode_ack(encode(AckMessage{9, 0.5, 123456789})).rss_bytes == 123456789);
  const ReassignMessage move = decode_reassign(encode(ReassignMessage{{0}, {2, 3}}));
  REQUIRE(move.close == std::vector<uint32_t>{0});
  REQUIRE(move.open == std::vector<uint32_t>{2, 3});
  auto bytes = encode(ReassignMessage{{0}, {1}});
  bytes.pop_back();
  REQUIRE_THROWS_AS(decode_reassign(bytes), msd::ProtocolError);
}

TEST_CASE("sample metadata carries the loader's status") {
  SampleMeta m;
  m.source = 3;
  m.cursor = 77;
  const LoaderStatus status{1u << 30, 1.25, 4.5};
  LoaderStatus back;
  const auto items = decode_meta(encode_meta({m, m}, status), &back);
  REQUIRE(items.size() == 2);
  CHECK(items[1].cursor == 77);
  CHECK(back.rss_bytes == status.rss_bytes);
  CHECK(back.busy_seconds == status.busy_seconds);
  CHECK(back.wall_seconds == status.wall_seconds);
  CHECK(decode_meta(encode_meta({})).empty());  // without metrics: zeros
}

TEST_CASE("the wire is little-endian on every host (docs/wire.md)") {
  AckMessage ack;
  ack.step = 0x0102030405060708ULL;
  ack.wait_seconds = -2.0;  // IEEE 754: 0xC000000000000000
  ack.rss_bytes = 0x1122;
  const std::vector<uint8_t> bytes = encode(ack);
  const std::vector<uint8_t> expected = {kWireVersion, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                                         0x00,         0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0,
                                         0x22,         0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  CHECK(bytes == expected);
  const AckMessage back = decode_ack(bytes);
  CHECK(back.step == ack.step);
  CHECK(back.wait_seconds == ack.wait_seconds);
  CHECK(back.rss_bytes == ack.rss_bytes);
}

TEST_CASE("slot allocator places, frees and coalesces") {
  SlotAllocator alloc(64 * 10);
  auto a = alloc.allocate(100);  // two blocks
  auto b = alloc.allocate(64);
  auto c = alloc.allocate(64 * 7);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  REQUIRE_FALSE(alloc.allocate(1));
  alloc.release(*b);
  REQUIRE_FALSE(alloc.allocate(128));
  alloc.release(*a);
  auto d = alloc.allocate(64 * 3);  // a and b coalesced
  REQUIRE(d);
  REQUIRE(*d == 0);
  alloc.release(*d);
  alloc.release(*c);
  REQUIRE(alloc.used() == 0);
  REQUIRE(alloc.allocate(64 * 10));
}

TEST_CASE("slot allocator frees a run of adjacent slots at once") {
  SlotAllocator alloc(64 * 10);
  auto a = alloc.allocate(100);  // [0, 128)
  auto b = alloc.allocate(64);   // [128, 192)
  auto c = alloc.allocate(1);    // [192, 256)
  REQUIRE((a && b && c && *b == 128 && *c == 192));
  CHECK(slot_extent(0) == 64);
  CHECK(slot_extent(100) == 128);
  alloc.release_range(*a, 192);  // a and b, not c
  CHECK(alloc.used() == 64);
  CHECK(alloc.live() == 1);
  auto d = alloc.allocate(192);  // the freed range is one piece
  REQUIRE(d);
  CHECK(*d == 0);
  alloc.release_range(0, 256);
  CHECK(alloc.used() == 0);
  CHECK(alloc.allocate(64 * 10));
}

TEST_CASE("slot allocator never hands out overlapping ranges") {
  SlotAllocator alloc(1 << 16);
  std::mt19937 rng(7);
  std::map<uint64_t, uint64_t> live;
  for (int i = 0; i < 5000; ++i) {
    if (!live.empty() && rng() % 2) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      alloc.release(it->first);
      live.erase(it);
    } else {
      uint64_t bytes = 1 + rng() % 3000;
      if (auto offset = alloc.allocate(bytes)) {
        auto next = live.lower_bound(*offset);
        if (next != live.end()) REQUIRE(*offset + bytes <= next->first);
        if (next != live.begin()) {
          auto prev = std::prev(next);
          REQUIRE(prev->first + prev->second <= *offset);
        }
        REQUIRE(*offset + bytes <= alloc.capacity());
        live[*offset] = bytes;
      }
    }
  }
}

TEST_CASE("window budget: a request goes out only when it fits for sure", "[slot]") {
  // 1024 bytes of window, samples of at most 300 bytes (a 320-byte slot).
  msd::WindowBudget budget(1024, 300);
  CHECK(budget.reserve() == 320);
  CHECK(budget.fits(1, 2));    // 3 x 320 <= 1024
  CHECK(!budget.fits(1, 3));   // 4 x 320 > 1024
  budget.placed(1, 100);       // a 128-byte slot
  CHECK(budget.used(1) == 128);
  CHECK(budget.fits(1, 1));    // 128 + 2 x 320 <= 1024
  CHECK(!budget.fits(1, 2));   // 128 + 3 x 320 > 1024
  CHECK(budget.fits(2, 2));    // each loader has its own window
  budget.placed(1, 300);       // a 320-byte slot
  CHECK(budget.used(1) == 448);
  budget.released(1, 100);
  CHECK(budget.used(1) == 320);
  budget.released(1, 300);
  CHECK(budget.used(1) == 0);
}

TEST_CASE("each message's size on the wire is the one docs/wire.md gives") {
  // One field list per struct serves encoding and decoding: these sizes pin
  // its order and widths to the documented layout (version byte included).
  CHECK(encode_load({{1, 2, 3}}).size() == 1 + 4 + 20);
  CHECK(encode_meta({SampleMeta{}}).size() == 1 + 24 + 4 + 49);
  CHECK(encode_release({{0, 64}}).size() == 1 + 4 + 16);
  CHECK(encode(AckMessage{}).size() == 1 + 24);
  CHECK(encode(FaultMessage{"stall", 5}).size() == 1 + 4 + 5 + 8);
  CHECK(encode(RanksMessage{7, {1, 2}}).size() == 1 + 8 + 4 + 8);
  CHECK(encode(ReassignMessage{{1}, {2, 3}}).size() == 1 + 4 + 4 + 4 + 8);
  CHECK(encode(HelloMessage{"", {SourceInfo{1, 2, 3, {{"ab", 4, 5}}, {}}}}).size() == 1 + 4 + 4 + 24 + 4 + 2 + 16 + 4);
  const RanksMessage ranks = decode_ranks(encode(RanksMessage{7, {1, 2}}));
  CHECK(ranks.step == 7);
  CHECK(ranks.ranks == std::vector<int32_t>{1, 2});
  const FaultMessage fault = decode_fault(encode(FaultMessage{"stall", 5}));
  CHECK(fault.kind == "stall");
  CHECK(fault.stall_ms == 5);
  std::vector<uint8_t> cut = encode(RanksMessage{7, {1, 2}});
  cut.pop_back();
  CHECK_THROWS_AS(decode_ranks(cut), ProtocolError);
}
