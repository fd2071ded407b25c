#include <catch2/catch.hpp>

#include <algorithm>
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
// Step 3, seq_len 8: a 3-token and a 10-token document in micro-batch 0,
// sequence 0 holding doc 0 and the first 5 positions of doc 1, sequence 1
// the rest of doc 1; `micro_batches` - 1 empty micro-batches after it.
StepPlan two_documents(MemoryFetcher& f, size_t micro_batches) {
  StepPlan plan;
  plan.step = 3;
  plan.seq_len = 8;
  plan.samples.push_back(put_sample(f, 1, 0, 10, {11, 12, 13}, 0, 0));
  plan.samples.push_back(put_sample(f, 2, 1, 20, {21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, 0, 0));
  plan.micro_batches.resize(micro_batches);
  plan.micro_batches[0].sequences.push_back({{{0, 0, 3}, {1, 0, 5}}});
  plan.micro_batches[0].sequences.push_back({{{1, 5, 5}}});
  return plan;
}
}  // namespace

TEST_CASE("a packed micro-batch has tokens, labels, positions and cu_seqlens per document") {
  MemoryFetcher f;
  const StepPlan plan = two_documents(f, 1);
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

namespace {
// A plan over two loaders: text documents (one split over two sequences),
// an image-text document, padding, two micro-batches; seq_len 24.
StepPlan mixed_plan(MemoryFetcher& f) {
  StepPlan plan;
  plan.step = 5;
  plan.seq_len = 24;
  const uint32_t patch_bytes = 12;
  auto text = [](int32_t first, int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(first + i);
    return t;
  };
  plan.samples.push_back(put_sample(f, 1, 0, 10, text(100, 7), 0, 0));           // 0: 7 positions
  plan.samples.push_back(put_sample(f, 2, 1, 20, text(200, 30), 0, 0));          // 1: 30, split
  plan.samples.push_back(put_sample(f, 1, 2, 30, text(300, 5), 6, patch_bytes)); // 2: 6 patches + 5
  plan.samples.push_back(put_sample(f, 2, 0, 40, text(400, 3), 0, 0));           // 3: 3 positions
  plan.samples.push_back(put_sample(f, 2, 0, 50, text(500, 2), 0, 0));           // 4: 2 positions
  plan.micro_batches.resize(2);
  plan.micro_batches[0].sequences.push_back({{{0, 0, 7}, {1, 0, 17}}});  // full
  plan.micro_batches[0].sequences.push_back({{{1, 17, 13}, {3, 0, 3}}}); // 16 + padding
  plan.micro_batches[1].sequences.push_back({{{2, 0, 11}, {4, 0, 2}}});  // image doc, padding
  return plan;
}

// Patch p of a CP slice is the whole batch's patch at held position `at`.
void check_patch(const MicroBatch& part, size_t p, const MicroBatch& whole, int32_t at) {
  const auto found = std::find(whole.patch_positions.begin(), whole.patch_positions.end(), at);
  REQUIRE(found != whole.patch_positions.end());
  const size_t q = static_cast<size_t>(found - whole.patch_positions.begin());
  REQUIRE(std::equal(part.patches.begin() + static_cast<ptrdiff_t>(p * part.patch_bytes),
                     part.patches.begin() + static_cast<ptrdiff_t>((p + 1) * part.patch_bytes),
                     whole.patches.begin() + static_cast<ptrdiff_t>(q * whole.patch_bytes)));
}

uint64_t fetch_redundancy_check(const BuildStats& stats) {
  REQUIRE(stats.bytes_fetched == stats.bytes_needed);
  return stats.bytes_fetched;
}
}  // namespace

TEST_CASE("CP slices from every CP rank reassemble exactly into the whole sequences") {
  MemoryFetcher f;
  const StepPlan plan = mixed_plan(f);
  Batch full;
  const uint64_t full_bytes = fetch_redundancy_check(build_batch(plan, f, BuildOptions{77}, full));
  for (uint32_t cp : {2u, 3u, 4u}) {
    std::vector<std::vector<int>> seen(full.micro_batches.size());
    for (size_t m = 0; m < full.micro_batches.size(); ++m) seen[m].assign(full.micro_batches[m].tokens.size(), 0);
    uint64_t token_bytes = 0;
    for (uint32_t rank = 0; rank < cp; ++rank) {
      Batch slice;
      BuildOptions options{77, rank, cp};
      const BuildStats stats = build_batch(plan, f, options, slice);
      token_bytes += fetch_redundancy_check(stats);
      REQUIRE(stats.bytes_fetched < full_bytes);
      for (size_t m = 0; m < full.micro_batches.size(); ++m) {
        const MicroBatch& whole = full.micro_batches[m];
        const MicroBatch& part = slice.micro_batches[m];
        REQUIRE(part.local_len() == 24 / cp);
        REQUIRE(part.tokens.size() == whole.sequences * part.local_len());
        REQUIRE(part.cu_seqlens == whole.cu_seqlens);
        for (uint64_t k = 0; k < part.tokens.size(); ++k) {
          const uint64_t g = part.global_position(k);
          seen[m].at(g)++;
          REQUIRE(part.tokens[k] == whole.tokens[g]);
          REQUIRE(part.positions[k] == whole.positions[g]);
          REQUIRE(part.labels[k] == whole.labels[g]);
          REQUIRE(part.loss_mask[k] == whole.loss_mask[g]);
        }
        for (size_t p = 0; p < part.patch_positions.size(); ++p) {
          const uint64_t g = part.global_position(static_cast<uint64_t>(part.patch_positions[p]));
          check_patch(part, p, whole, static_cast<int32_t>(g));
        }
      }
    }
    for (const auto& counts : seen)
      for (int c : counts) REQUIRE(c == 1);
    // Every rank reads its positions, plus one token past a chunk that ends
    // inside a piece (the label of the chunk's last position).
    REQUIRE(token_bytes >= full_bytes);
    REQUIRE(token_bytes <= full_bytes + 2 * cp * 3 * sizeof(int32_t));
  }
}

TEST_CASE("pipeline stages get exactly their fields; middle stages fetch nothing") {
  MemoryFetcher f;
  const StepPlan plan = mixed_plan(f);
  Batch full, first, last, middle;
  build_batch(plan, f, BuildOptions{77}, full);
  const BuildStats first_stats = build_batch(plan, f, BuildOptions{77, 0, 1, true, false}, first);
  const BuildStats last_stats = build_batch(plan, f, BuildOptions{77, 0, 1, false, true}, last);
  const BuildStats middle_stats = build_batch(plan, f, BuildOptions{77, 0, 1, false, false}, middle);
  fetch_redundancy_check(first_stats);
  fetch_redundancy_check(last_stats);
  REQUIRE(middle_stats.bytes_fetched == 0);
  REQUIRE(middle_stats.gets == 0);
  REQUIRE(middle_stats.bytes_needed == 0);
  // Inputs: every token and patch; targets: the tokens that are labels.
  REQUIRE(first_stats.bytes_fetched == (7 + 30 + 5 + 3 + 2) * 4 + 6 * 12);
  REQUIRE(last_stats.bytes_fetched == (6 + 16 + 12 + 2 + 4 + 1) * 4);
  for (size_t m = 0; m < full.micro_batches.size(); ++m) {
    const MicroBatch& whole = full.micro_batches[m];
    REQUIRE(first.micro_batches[m].tokens == whole.tokens);
    REQUIRE(first.micro_batches[m].positions == whole.positions);
    REQUIRE(first.micro_batches[m].patches == whole.patches);
    REQUIRE(first.micro_batches[m].labels.empty());
    REQUIRE(last.micro_batches[m].labels == whole.labels);
    REQUIRE(last.micro_batches[m].loss_mask == whole.loss_mask);
    REQUIRE(last.micro_batches[m].tokens.empty());
    REQUIRE(last.micro_batches[m].patches.empty());
    const MicroBatch& mid = middle.micro_batches[m];
    REQUIRE(mid.tokens.empty());
    REQUIRE(mid.labels.empty());
    REQUIRE(mid.positions.empty());
    REQUIRE(mid.patches.empty());
    REQUIRE(mid.cu_seqlens == whole.cu_seqlens);
    REQUIRE(mid.sequences == whole.sequences);
    REQUIRE(mid.docs.size() == whole.docs.size());
  }
  // Stages and slices are different batches.
  REQUIRE(first.digest != full.digest);
  REQUIRE(last.digest != middle.digest);
}

TEST_CASE("a CP slice of a last stage reads only label tokens, straight into labels") {
  MemoryFetcher f;
  const StepPlan plan = mixed_plan(f);
  Batch full;
  build_batch(plan, f, BuildOptions{77}, full);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    Batch slice;
    const BuildStats stats = build_batch(plan, f, BuildOptions{77, rank, 2, false, true}, slice);
    fetch_redundancy_check(stats);
    for (size_t m = 0; m < full.micro_batches.size(); ++m) {
      const MicroBatch& part = slice.micro_batches[m];
      for (uint64_t k = 0; k < part.labels.size(); ++k)
        REQUIRE(part.labels[k] == full.micro_batches[m].labels[part.global_position(k)]);
    }
  }
  Batch bad;
  StepPlan odd = plan;
  odd.seq_len = 22;  // not divisible by 2 * 3
  REQUIRE_THROWS_AS(build_batch(odd, f, BuildOptions{77, 0, 3}, bad), ProtocolError);
}

TEST_CASE("a variable-length micro-batch is one row of its pieces, padded to the alignment") {
  MemoryFetcher f;
  // Two packed sequences become one row: doc 0, doc 1's first 5, doc 1's rest;
  // seq_len (8) bounds the pieces, not the row.
  const StepPlan plan = two_documents(f, 2);
  BuildOptions options;
  options.varlen = true;
  Batch batch;
  const BuildStats stats = build_batch(plan, f, options, batch);
  REQUIRE(stats.bytes_fetched == 13 * 4);
  REQUIRE(stats.bytes_fetched == stats.bytes_needed);
  const MicroBatch& mb = batch.micro_batches.at(0);
  REQUIRE(mb.sequences == 1);
  REQUIRE(mb.seq_len == kVarlenAlign);  // 13 positions rounded up
  REQUIRE(mb.tokens.size() == kVarlenAlign);
  REQUIRE(std::vector<int32_t>(mb.tokens.begin(), mb.tokens.begin() + 14) ==
          std::vector<int32_t>{11, 12, 13, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, kPadTokenId});
  REQUIRE(std::vector<int32_t>(mb.positions.begin(), mb.positions.begin() + 13) ==
          std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  REQUIRE(std::vector<int32_t>(mb.labels.begin(), mb.labels.begin() + 14) ==
          std::vector<int32_t>{12, 13, -100, 22, 23, 24, 25, -100, 27, 28, 29, 30, -100, -100});
  REQUIRE(mb.cu_seqlens == std::vector<int32_t>{0, 3, 8, 13, static_cast<int32_t>(kVarlenAlign)});
  REQUIRE(mb.docs.size() == 3);
  for (const DocSpan& doc : mb.docs) REQUIRE(doc.sequence == 0);
  REQUIRE(mb.docs[2].offset == 8);
  // An empty micro-batch has no row.
  REQUIRE(batch.micro_batches.at(1).sequences == 0);
  REQUIRE(batch.micro_batches.at(1).tokens.empty());
  // The same pieces as fixed rows: the same tokens, only the padding moves.
  Batch fixed;
  build_batch(plan, f, {}, fixed);
  REQUIRE(fixed.micro_batches[0].tokens_used() == mb.tokens_used());
  REQUIRE(fixed.digest != batch.digest);
  REQUIRE_FALSE(mb.cp_by_segment);
}

TEST_CASE("under CP a variable-length row splits every piece zigzag on its own (THD), and reassembles") {
  MemoryFetcher f;
  const StepPlan plan = mixed_plan(f);
  BuildOptions whole_options{77};
  whole_options.varlen = true;
  Batch full;
  fetch_redundancy_check(build_batch(plan, f, whole_options, full));
  for (uint32_t cp : {2u, 3u, 4u}) {
    std::vector<std::vector<int>> seen(full.micro_batches.size());
    for (uint32_t rank = 0; rank < cp; ++rank) {
      BuildOptions options = whole_options;
      options.cp_rank = rank;
      options.cp_size = cp;
      Batch slice;
      fetch_redundancy_check(build_batch(plan, f, options, slice));
      for (size_t m = 0; m < full.micro_batches.size(); ++m) {
        const MicroBatch& whole = full.micro_batches[m];
        const MicroBatch& part = slice.micro_batches[m];
        REQUIRE(part.cp_by_segment);
        REQUIRE(part.docs.size() == whole.docs.size());
        // Each piece padded to 2cp, back to back; the row rounded up; cu_seqlens over the padded pieces.
        std::vector<int32_t> cu{0};
        for (const DocSpan& d : part.docs) {
          REQUIRE(d.offset == static_cast<uint32_t>(cu.back()));
          cu.push_back(cu.back() + static_cast<int32_t>(thd_piece_positions(d.length, cp)));
        }
        REQUIRE(part.seq_len == thd_row_positions(static_cast<uint64_t>(cu.back()), cp));
        REQUIRE(part.seq_len % (2 * cp) == 0);
        REQUIRE(part.seq_len % kVarlenAlign == 0);
        if (static_cast<uint32_t>(cu.back()) < part.seq_len) cu.push_back(static_cast<int32_t>(part.seq_len));
        REQUIRE(part.cu_seqlens == cu);
        REQUIRE(part.tokens.size() == part.seq_len / cp);
        if (seen[m].empty()) seen[m].assign(part.seq_len, 0);
        std::vector<uint32_t> held_of_piece(part.docs.size(), 0);
        for (uint64_t k = 0; k < part.tokens.size(); ++k) {
          const uint64_t g = part.global_position(k);
          seen[m].at(g)++;
          // The piece g lies in, and where the whole (unpadded) row holds it.
          size_t i = 0;
          while (i + 1 < part.docs.size() && part.docs[i + 1].offset <= g) ++i;
          const DocSpan& d = part.docs[i];
          if (g >= d.offset + d.length) {  // padding
            REQUIRE(part.tokens[k] == kPadTokenId);
            REQUIRE(part.labels[k] == kIgnoreLabel);
            REQUIRE(part.loss_mask[k] == 0);
            continue;
          }
          ++held_of_piece[i];
          // Which chunk of its piece: this rank's two.
          const uint32_t chunk = static_cast<uint32_t>(thd_piece_positions(d.length, cp) / (2 * cp));
          const uint32_t index = static_cast<uint32_t>(g - d.offset) / chunk;
          REQUIRE((index == rank || index == 2 * cp - 1 - rank));
          const uint64_t w = whole.docs[i].offset + (g - d.offset);
          REQUIRE(part.tokens[k] == whole.tokens[w]);
          REQUIRE(part.positions[k] == whole.positions[w]);
          REQUIRE(part.labels[k] == whole.labels[w]);
          REQUIRE(part.loss_mask[k] == whole.loss_mask[w]);
        }
        // Every CP rank holds the same share of every piece's padded span.
        for (size_t i = 0; i < part.docs.size(); ++i) {
          const uint32_t chunk = static_cast<uint32_t>(thd_piece_positions(part.docs[i].length, cp) / (2 * cp));
          uint32_t expected = 0;
          for (uint32_t j = 0; j < part.docs[i].length; ++j)
            expected += (j / chunk == rank || j / chunk == 2 * cp - 1 - rank) ? 1 : 0;
          REQUIRE(held_of_piece[i] == expected);
        }
        for (size_t p = 0; p < part.patch_positions.size(); ++p) {
          const uint64_t g = part.global_position(static_cast<uint64_t>(part.patch_positions[p]));
          size_t i = 0;
          while (i + 1 < part.docs.size() && part.docs[i + 1].offset <= g) ++i;
          check_patch(part, p, whole, static_cast<int32_t>(whole.docs[i].offset + (g - part.docs[i].offset)));
        }
      }
    }
    for (const auto& counts : seen)
      for (int c : counts) REQUIRE(c == 1);  // the CP ranks' positions partition the row
  }
}

namespace {
// Reads that land only when complete() runs, as two-sided network reads do:
// what begin_build queues must not be needed before finish_build.
class DeferredFetcher : public ByteFetcher {
 public:
  explicit DeferredFetcher(MemoryFetcher& memory) : memory_(memory) {}
  void get(int rank, uint64_t offset, void* out, uint64_t bytes) override {
    queued_.push_back({rank, offset, out, bytes});
  }
  void complete() override {
    for (const Read& r : queued_) memory_.get(r.rank, r.offset, r.out, r.bytes);
    queued_.clear();
  }
  size_t queued() const { return queued_.size(); }

 private:
  struct Read {
    int rank;
    uint64_t offset;
    void* out;
    uint64_t bytes;
  };
  MemoryFetcher& memory_;
  std::vector<Read> queued_;
};
}  // namespace

TEST_CASE("a build begun ahead and finished once its reads landed equals build_batch") {
  MemoryFetcher memory;
  const StepPlan mixed = mixed_plan(memory);
  const StepPlan two = two_documents(memory, 2);
  BuildOptions varlen;
  varlen.varlen = true;
  const std::vector<std::pair<const StepPlan*, BuildOptions>> cases = {
      {&mixed, BuildOptions{77}},
      {&mixed, BuildOptions{77, 1, 2}},
      {&mixed, BuildOptions{77, 0, 1, true, false}},
      {&mixed, BuildOptions{77, 0, 1, false, true}},
      {&mixed, BuildOptions{77, 1, 2, false, true}},
      {&mixed, BuildOptions{77, 0, 1, false, false}},
      {&two, varlen}};
  DeferredFetcher deferred(memory);
  // Two alternating batches, as the client keeps them: the one handed out
  // stays as built while the next one's reads are in flight.
  Batch batches[2];
  Batch handed_out_copy;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [plan, options] = cases[i];
    Batch want;
    const BuildStats want_stats = build_batch(*plan, memory, options, want);
    Batch& into = batches[i % 2];
    BatchBuild build = begin_build(*plan, deferred, options, into);
    REQUIRE(build.pending());
    REQUIRE(deferred.queued() == want_stats.gets);
    if (i > 0) REQUIRE(batch_digest(batches[(i - 1) % 2]) == handed_out_copy.digest);
    deferred.complete();
    const BuildStats stats = finish_build(build);
    REQUIRE_FALSE(build.pending());
    REQUIRE(into.digest == want.digest);
    REQUIRE(into.digest == batch_digest(into));
    REQUIRE(stats.bytes_fetched == want_stats.bytes_fetched);
    REQUIRE(stats.bytes_needed == want_stats.bytes_needed);
    REQUIRE(stats.gets == want_stats.gets);
    handed_out_copy = into;
  }
}

TEST_CASE("begin_build throws on an inconsistent plan before queuing a read") {
  MemoryFetcher memory;
  StepPlan plan = two_documents(memory, 1);
  plan.micro_batches[0].sequences[0].pieces.push_back({0, 0, 3});  // overflows seq_len
  DeferredFetcher deferred(memory);
  Batch batch;
  REQUIRE_THROWS_AS(begin_build(plan, deferred, {}, batch), ProtocolError);
  REQUIRE(deferred.queued() == 0);
}
