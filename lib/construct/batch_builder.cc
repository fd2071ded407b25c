#include "construct/batch_builder.h"

#include <algorithm>
#include <span>
#include <vector>

#include "common/digest.h"
#include "common/error.h"
#include "transport/slot.h"

namespace msd {

namespace {

// A held chunk of a sequence: positions [begin, end) of the whole sequence,
// stored from `local` on in the rank's arrays.
struct Chunk {
  uint32_t begin = 0, end = 0, local = 0;
};

// The chunks a rank holds of every sequence: the whole sequence, or the two
// zigzag chunks cp_rank and 2 * cp_size - 1 - cp_rank.
std::vector<Chunk> held_chunks(uint32_t seq_len, uint32_t cp_rank, uint32_t cp_size, uint64_t step) {
  if (cp_size <= 1) return {{0, seq_len, 0}};
  if (cp_rank >= cp_size || seq_len % (2 * cp_size) != 0)
    throw ProtocolError(str("step ", step, ": seq_len ", seq_len, " cannot be split into 2 x ", cp_size,
                            " chunks for context-parallel rank ", cp_rank));
  const uint32_t chunk = seq_len / (2 * cp_size);
  const uint32_t second = 2 * cp_size - 1 - cp_rank;
  // The middle rank's chunks touch: one run, so a label at the seam is not
  // read twice.
  if (second == cp_rank + 1) return {{cp_rank * chunk, (second + 1) * chunk, 0}};
  return {{cp_rank * chunk, (cp_rank + 1) * chunk, 0}, {second * chunk, (second + 1) * chunk, chunk}};
}

// One piece's positions inside one held chunk.
struct Run {
  uint32_t sample = 0;
  uint32_t piece_begin = 0;  // document position where the piece starts
  uint32_t piece_end = 0;    // one past its last document position
  uint32_t lo = 0, hi = 0;   // document positions held: [lo, hi)
  uint64_t local = 0;        // held flattened index of position lo
};

// The first label position of a run and one past its last: labels exist at
// text positions whose next position is in the same piece.
uint32_t label_lo(const Run& r, const SampleMeta& s) { return std::max(r.lo, s.patches); }
uint32_t label_hi(const Run& r) { return std::min(r.hi, r.piece_end - 1); }

}  // namespace

uint64_t MicroBatch::tokens_used() const {
  uint64_t used = 0;
  for (const auto& doc : docs) used += doc.length;
  return used;
}

uint64_t MicroBatch::global_position(uint64_t local) const {
  if (cp_size <= 1) return local;
  if (cp_by_segment) {
    // Segment s holds held indices [cu[s] / cp, cu[s + 1] / cp): every segment is a multiple of 2 x cp.
    const auto next = std::upper_bound(cu_seqlens.begin(), cu_seqlens.end(), static_cast<int64_t>(local * cp_size));
    MSD_CHECK(next != cu_seqlens.begin() && next != cu_seqlens.end());
    const uint64_t begin = static_cast<uint64_t>(*(next - 1)), end = static_cast<uint64_t>(*next);
    const uint64_t chunk = (end - begin) / (2 * cp_size), k = local - begin / cp_size;
    const uint64_t index = k < chunk ? cp_rank : 2 * cp_size - 1 - cp_rank;
    return begin + index * chunk + k % chunk;
  }
  const uint32_t len = local_len();
  const uint64_t sequence = local / len;
  const uint32_t k = static_cast<uint32_t>(local % len);
  const uint32_t chunk = seq_len / (2 * cp_size);
  const uint32_t index = k < chunk ? cp_rank : 2 * cp_size - 1 - cp_rank;
  return sequence * seq_len + uint64_t{index} * chunk + k % chunk;
}

namespace {

// What a build's passes share: the rank's chunks, the held runs per
// micro-batch, and the tokens one past a held chunk that label its last
// position (for a rank that holds both inputs and targets; its other labels
// are its own tokens).
struct Layout {
  const StepPlan& plan;
  const BuildOptions& options;
  std::vector<Chunk> chunks;
  uint32_t local_len = 0;
  std::vector<std::vector<Run>> runs;
  size_t edges = 0;
  std::vector<int32_t> edge_tokens;
  std::vector<uint64_t> edge_labels;  // held index each edge token labels

  bool needs_edge(const Run& r, const SampleMeta& s) const {
    return options.inputs && options.targets && r.hi < r.piece_end && r.hi > s.patches;
  }
};

// Whether variable-length rows are split per segment (THD under CP).
bool by_segment(const BuildOptions& options) { return options.varlen && options.cp_size > 1; }

// Positions a piece of `length` takes in its row: itself, or under THD its
// length padded to 2 x cp.
uint32_t piece_span(const BuildOptions& options, uint32_t length) {
  return by_segment(options) ? static_cast<uint32_t>(thd_piece_positions(length, options.cp_size)) : length;
}

// A micro-batch's rows: its sequences and their length, seq_len (fixed), or
// one row of its pieces rounded up to kVarlenAlign (varlen; none when empty;
// under THD each piece padded to 2 x cp, the row to thd_row_positions).
struct Rows {
  size_t count = 0;
  uint32_t length = 0;
  uint32_t local_len = 0;  // positions held of a row
};
Rows rows_of(const Layout& layout, const MicroBatchWire& wire) {
  const BuildOptions& options = layout.options;
  if (!options.varlen) return {wire.sequences.size(), layout.plan.seq_len, layout.local_len};
  uint64_t used = 0;
  for (const auto& sequence : wire.sequences)
    for (const auto& piece : sequence.pieces) used += piece_span(options, piece.length);
  const uint32_t cp = std::max<uint32_t>(1, options.cp_size);
  const uint64_t length = by_segment(options) ? thd_row_positions(used, cp) : varlen_row_positions(used);
  if (length > UINT32_MAX / 2)
    throw ProtocolError(str("step ", layout.plan.step, ": a variable-length row of ", used, " positions"));
  return {used > 0 ? size_t{1} : size_t{0}, static_cast<uint32_t>(length), static_cast<uint32_t>(length / cp)};
}

// Sizes and clears one micro-batch's arrays for its rows.
void reset_micro_batch(const Layout& layout, const Rows& rows, MicroBatch& mb) {
  const BuildOptions& options = layout.options;
  const size_t sequences = rows.count;
  mb.sequences = static_cast<uint32_t>(sequences);
  mb.seq_len = rows.length;
  mb.cp_rank = options.cp_size <= 1 ? 0 : options.cp_rank;
  mb.cp_size = std::max<uint32_t>(1, options.cp_size);
  mb.cp_by_segment = by_segment(options);
  mb.has_inputs = options.inputs;
  mb.has_targets = options.targets;
  const size_t held = options.inputs || options.targets ? sequences * rows.local_len : 0;
  mb.tokens.assign(options.inputs ? held : 0, kPadTokenId);
  mb.positions.assign(options.inputs ? held : 0, 0);
  mb.labels.assign(options.targets ? held : 0, kIgnoreLabel);
  mb.loss_mask.assign(options.targets ? held : 0, 0);
  mb.cu_seqlens.assign(1, 0);
  mb.patch_positions.clear();
  mb.docs.clear();
  mb.patch_bytes = 0;
}

// Checks one piece against its sample and its sequence; returns the sample.
const SampleMeta& checked_piece(const StepPlan& plan, const PiecePlan& piece, size_t sequence, uint32_t offset,
                                uint32_t row) {
  if (piece.sample >= plan.samples.size())
    throw ProtocolError(str("step ", plan.step, ": piece of sample ", piece.sample, " of ", plan.samples.size()));
  const SampleMeta& s = plan.samples[piece.sample];
  const uint32_t lo = piece.begin;
  const uint32_t hi = piece.begin + piece.length;
  if (hi > s.positions() || piece.length == 0 || hi < lo)
    throw ProtocolError(str("step ", plan.step, ": piece [", lo, ", ", hi, ") of a sample with ", s.positions(),
                            " positions"));
  if (piece.length > plan.seq_len || offset + piece.length > row)
    throw ProtocolError(str("step ", plan.step, ": sequence ", sequence, " overflows seq_len ", row));
  return s;
}

// First pass over micro-batch m: validate, record the pieces and the held
// runs, size every array. The reads land in place, so nothing may be resized
// after it.
void lay_out_micro_batch(Layout& layout, size_t m, MicroBatch& mb) {
  const BuildOptions& options = layout.options;
  const auto& wire = layout.plan.micro_batches[m];
  const size_t n = wire.sequences.size();
  const Rows rows = rows_of(layout, wire);
  reset_micro_batch(layout, rows, mb);
  // A variable-length row is one whole chunk; its sequences follow each other
  // in it. Under THD each piece has chunks of its own.
  const std::vector<Chunk> row_chunk{{0, rows.length, 0}};
  std::vector<Chunk> piece_chunks;
  uint64_t patch_total = 0;
  uint32_t offset = 0;
  for (size_t wire_q = 0; wire_q < n; ++wire_q) {
    const size_t q = options.varlen ? 0 : wire_q;
    if (!options.varlen) offset = 0;
    for (const auto& piece : wire.sequences[wire_q].pieces) {
      const SampleMeta& s = checked_piece(layout.plan, piece, q, offset, rows.length);
      const uint32_t lo = piece.begin;
      const uint32_t hi = piece.begin + piece.length;
      const uint32_t patch_hi = std::min(hi, s.patches);
      if (lo < patch_hi) {
        if (mb.patch_bytes != 0 && mb.patch_bytes != s.patch_bytes)
          throw ProtocolError(str("step ", layout.plan.step, ": samples with different patch sizes in one micro-batch"));
        mb.patch_bytes = s.patch_bytes;
      }
      mb.docs.push_back({s.source, s.index, lo, piece.length, static_cast<uint32_t>(q), offset,
                         patch_hi > lo ? patch_hi - lo : 0});
      const uint32_t span = piece_span(options, piece.length);
      if (by_segment(options)) {
        piece_chunks = held_chunks(span, options.cp_rank, options.cp_size, layout.plan.step);
        for (Chunk& chunk : piece_chunks) {
          chunk.begin += offset;
          chunk.end += offset;
          chunk.local += offset / options.cp_size;
        }
      }
      const std::vector<Chunk>& chunks = by_segment(options) ? piece_chunks : options.varlen ? row_chunk : layout.chunks;
      for (const Chunk& chunk : chunks) {
        const uint32_t g0 = std::max(offset, chunk.begin);
        const uint32_t g1 = std::min(offset + piece.length, chunk.end);
        if (g0 >= g1 || !(options.inputs || options.targets)) continue;
        Run run{piece.sample, lo, hi, lo + (g0 - offset), lo + (g1 - offset),
                q * uint64_t{rows.local_len} + chunk.local + (g0 - chunk.begin)};
        if (options.inputs && run.lo < s.patches) patch_total += std::min(run.hi, s.patches) - run.lo;
        if (layout.needs_edge(run, s)) ++layout.edges;
        layout.runs[m].push_back(run);
      }
      offset += span;
    }
  }
  if (!options.inputs) mb.patch_bytes = 0;
  mb.patches.resize(patch_total * mb.patch_bytes);
}

// Second pass: queue the reads of micro-batch m's runs.
void queue_reads(Layout& layout, size_t m, ByteFetcher& fetcher, BuildStats& stats, MicroBatch& mb) {
  const BuildOptions& options = layout.options;
  auto get = [&](const SampleMeta& s, uint64_t offset, void* to, uint64_t bytes) {
    fetcher.get(s.loader_rank, s.slot_offset + offset, to, bytes);
    stats.bytes_fetched += bytes;
    stats.gets++;
  };
  uint64_t patch_cursor = 0;
  for (const Run& r : layout.runs[m]) {
    const SampleMeta& s = layout.plan.samples[r.sample];
    const uint64_t tokens_at = SlotLayout::tokens_offset();
    if (options.inputs) {
      // Patches [lo, min(hi, patches)), then tokens [max(lo, patches), hi).
      const uint32_t patch_hi = std::min(r.hi, s.patches);
      if (r.lo < patch_hi) {
        const uint64_t count = patch_hi - r.lo;
        get(s, SlotLayout::patches_offset(s.text_tokens) + uint64_t{r.lo} * s.patch_bytes,
            mb.patches.data() + patch_cursor * mb.patch_bytes, count * s.patch_bytes);
        for (uint64_t k = 0; k < count; ++k) mb.patch_positions.push_back(static_cast<int32_t>(r.local + k));
        patch_cursor += count;
      }
      const uint32_t text_lo = std::max(r.lo, s.patches);
      if (text_lo < r.hi)
        get(s, tokens_at + uint64_t{text_lo - s.patches} * sizeof(int32_t), mb.tokens.data() + r.local + (text_lo - r.lo),
            uint64_t{r.hi - text_lo} * sizeof(int32_t));
      if (layout.needs_edge(r, s)) {
        get(s, tokens_at + uint64_t{r.hi - s.patches} * sizeof(int32_t),
            layout.edge_tokens.data() + layout.edge_labels.size(), sizeof(int32_t));
        layout.edge_labels.push_back(r.local + (r.hi - 1 - r.lo));
      }
    } else if (options.targets) {
      // Labels alone: the tokens one past each label position, straight
      // into the label array.
      const uint32_t l0 = label_lo(r, s), l1 = label_hi(r);
      if (l0 < l1)
        get(s, tokens_at + uint64_t{l0 + 1 - s.patches} * sizeof(int32_t), mb.labels.data() + r.local + (l0 - r.lo),
            uint64_t{l1 - l0} * sizeof(int32_t));
    }
  }
}

// Third pass, per run: positions, image tokens, labels and the loss mask.
// `edge` counts the edge tokens used so far.
void derive_positions_and_labels(const Layout& layout, size_t m, size_t& edge, MicroBatch& mb) {
  const BuildOptions& options = layout.options;
  for (const Run& r : layout.runs[m]) {
    const SampleMeta& s = layout.plan.samples[r.sample];
    if (options.inputs) {
      for (uint32_t j = r.lo; j < r.hi; ++j) mb.positions[r.local + (j - r.lo)] = static_cast<int32_t>(j - r.piece_begin);
      for (uint32_t j = r.lo; j < std::min(r.hi, s.patches); ++j) mb.tokens[r.local + (j - r.lo)] = options.image_token_id;
    }
    if (!options.targets) continue;
    // A label is the next token of the same piece; patches have none, nor
    // does the last patch predict the first text token.
    const uint32_t l0 = label_lo(r, s), l1 = label_hi(r);
    for (uint32_t j = l0; j < l1; ++j) {
      const uint64_t at = r.local + (j - r.lo);
      if (options.inputs) {
        if (j + 1 < r.hi) {
          mb.labels[at] = mb.tokens[at + 1];
        } else {
          MSD_CHECK_EQ(layout.edge_labels.at(edge), at);
          mb.labels[at] = layout.edge_tokens[edge++];
        }
      }
      mb.loss_mask[at] = 1;
    }
  }
}

// cu_seqlens over the whole sequences: every piece (under THD its padded
// span), then the padding at the end of a sequence as one more segment.
void derive_cu_seqlens(uint32_t seq_len, MicroBatch& mb) {
  auto span = [&](uint32_t length) {
    return mb.cp_by_segment ? static_cast<uint32_t>(thd_piece_positions(length, mb.cp_size)) : length;
  };
  uint32_t current_sequence = 0;
  uint32_t end_of_sequence = 0;  // offset of the first padding position
  auto close_sequence = [&](uint32_t q) {
    if (end_of_sequence < seq_len) mb.cu_seqlens.push_back(static_cast<int32_t>(uint64_t{q} * seq_len + seq_len));
  };
  for (const DocSpan& doc : mb.docs) {
    while (current_sequence < doc.sequence) {
      close_sequence(current_sequence);
      ++current_sequence;
      end_of_sequence = 0;
    }
    end_of_sequence = doc.offset + span(doc.length);
    mb.cu_seqlens.push_back(static_cast<int32_t>(size_t{doc.sequence} * seq_len + end_of_sequence));
  }
  for (; current_sequence < mb.sequences; ++current_sequence) {
    close_sequence(current_sequence);
    end_of_sequence = 0;
  }
}

}  // namespace

// A build between its halves: the layout the reads were queued by, the
// batch they land in, and what was requested.
struct BatchBuild::State {
  Layout layout;
  Batch& out;
  BuildStats stats;
};

BatchBuild::BatchBuild() = default;
BatchBuild::~BatchBuild() = default;
BatchBuild::BatchBuild(BatchBuild&& other) noexcept = default;
BatchBuild& BatchBuild::operator=(BatchBuild&& other) noexcept = default;

BatchBuild begin_build(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out) {
  const uint32_t seq_len = plan.seq_len;
  const size_t micro_batches = plan.micro_batches.size();
  Layout empty{plan,
               options,
               held_chunks(seq_len, options.cp_rank, options.cp_size, plan.step),
               options.cp_size <= 1 ? seq_len : seq_len / options.cp_size,
               std::vector<std::vector<Run>>(micro_batches),
               0,
               {},
               {}};
  BatchBuild build;
  build.state_ = std::make_unique<BatchBuild::State>(std::move(empty), out, BuildStats{});
  // Laid out in the state itself: the edge tokens' reads land in its vector.
  Layout& layout = build.state_->layout;
  out.step = plan.step;
  out.global_loss_tokens = plan.loss_tokens;
  out.micro_batches.resize(micro_batches);
  for (size_t m = 0; m < micro_batches; ++m) lay_out_micro_batch(layout, m, out.micro_batches[m]);
  layout.edge_tokens.assign(layout.edges, 0);
  layout.edge_labels.clear();
  for (size_t m = 0; m < micro_batches; ++m) queue_reads(layout, m, fetcher, build.state_->stats, out.micro_batches[m]);
  return build;
}

BuildStats finish_build(BatchBuild& build) {
  MSD_CHECK(build.pending());
  const std::unique_ptr<BatchBuild::State> state = std::move(build.state_);
  const Layout& layout = state->layout;
  Batch& out = state->out;
  size_t edge = 0;
  for (size_t m = 0; m < out.micro_batches.size(); ++m) {
    derive_positions_and_labels(layout, m, edge, out.micro_batches[m]);
    derive_cu_seqlens(out.micro_batches[m].seq_len, out.micro_batches[m]);
  }
  MSD_CHECK_EQ(edge, layout.edge_tokens.size());
  BuildStats stats = state->stats;
  stats.bytes_needed = needed_bytes(layout.plan, layout.options);
  out.digest = batch_digest(out);
  return stats;
}

BuildStats build_batch(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out) {
  BatchBuild build = begin_build(plan, fetcher, options, out);
  fetcher.complete();
  return finish_build(build);
}

uint64_t needed_bytes(const StepPlan& plan, const BuildOptions& options) {
  if (!options.inputs && !options.targets) return 0;
  const uint32_t seq_len = plan.seq_len;
  const uint32_t cp = std::max<uint32_t>(1, options.cp_size);
  MicroBatch shape;  // global_position() of this rank's slice
  shape.seq_len = seq_len;
  shape.cp_rank = cp > 1 ? options.cp_rank : 0;
  shape.cp_size = cp;
  const uint32_t local_len = shape.local_len();
  // used[sample][position]: that sample position's bytes are used.
  std::vector<std::vector<bool>> used(plan.samples.size());
  auto mark = [&](uint32_t sample, uint32_t position) {
    auto& bits = used[sample];
    if (bits.empty()) bits.assign(plan.samples[sample].positions(), false);
    bits.at(position) = true;
  };
  // Document position j of a held piece: its byte, and the next one when it has a label.
  auto use = [&](const PiecePlan& piece, uint32_t j) {
    if (options.inputs) mark(piece.sample, j);
    const SampleMeta& s = plan.samples[piece.sample];
    if (options.targets && j >= s.patches && j + 1 < piece.begin + piece.length) mark(piece.sample, j + 1);
  };
  std::vector<uint32_t> starts;
  std::vector<std::vector<PiecePlan>> rows;
  for (const auto& wire : plan.micro_batches) {
    // The micro-batch's rows: each sequence, or one of them all back to back.
    rows.clear();
    for (const auto& sequence : wire.sequences) {
      if (!options.varlen || rows.empty()) rows.emplace_back();
      rows.back().insert(rows.back().end(), sequence.pieces.begin(), sequence.pieces.end());
    }
    for (const auto& row : rows) {
      if (by_segment(options)) {  // THD: chunks r and 2cp-1-r of every piece, padded to 2cp
        for (const auto& piece : row) {
          const uint32_t chunk = static_cast<uint32_t>(thd_piece_positions(piece.length, cp) / (2 * cp));
          for (uint32_t i = 0; i < piece.length; ++i)
            if (i / chunk == shape.cp_rank || i / chunk == 2 * cp - 1 - shape.cp_rank) use(piece, piece.begin + i);
        }
        continue;
      }
      starts.clear();
      uint32_t offset = 0;
      for (const auto& piece : row) {
        starts.push_back(offset);
        offset += piece.length;
      }
      const uint32_t held = options.varlen ? offset : local_len;  // padding is never read
      for (uint32_t k = 0; k < held; ++k) {
        const uint32_t g = static_cast<uint32_t>(shape.global_position(k));
        const size_t p = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), g) - starts.begin());
        if (p == 0) continue;
        const PiecePlan& piece = row[p - 1];
        if (g >= starts[p - 1] + piece.length) continue;  // padding
        use(piece, piece.begin + (g - starts[p - 1]));
      }
    }
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < used.size(); ++i) {
    const SampleMeta& s = plan.samples[i];
    for (uint32_t j = 0; j < used[i].size(); ++j)
      if (used[i][j]) bytes += j < s.patches ? s.patch_bytes : sizeof(int32_t);
  }
  return bytes;
}

uint64_t batch_digest(const Batch& batch) {
  Digest digest;
  digest.update_u64(batch.step);
  for (const MicroBatch& mb : batch.micro_batches) {
    digest.update_u64(mb.sequences);
    digest.update_u64(mb.seq_len);
    digest.update_u64(mb.cp_rank);
    digest.update_u64(mb.cp_size);
    digest.update_u64((mb.has_inputs ? 1u : 0u) | (mb.has_targets ? 2u : 0u) | (mb.cp_by_segment ? 4u : 0u));
    digest.update(std::span<const int32_t>(mb.tokens));
    digest.update(std::span<const int32_t>(mb.labels));
    digest.update(std::span<const int32_t>(mb.positions));
    digest.update(std::span<const uint8_t>(mb.loss_mask));
    digest.update(std::span<const int32_t>(mb.cu_seqlens));
    digest.update(std::span<const int32_t>(mb.patch_positions));
    digest.update(std::span<const uint8_t>(mb.patches));
  }
  return digest.value();
}

}  // namespace msd
