// msd/batch.h — what a training rank receives for one step (docs/batch.md).
//
// A step's batch is `micro_batches` micro-batches; each is a number of packed
// sequences of exactly seq_len positions, flattened row-major. Documents are
// packed back to back and delimited by cu_seqlens (the varlen / THD
// convention of FlashAttention and Transformer Engine); padding at the end of a
// sequence forms its own segment. A document longer than seq_len arrives in
// pieces (job.long_docs = split), each piece its own segment. With
// job.micro_batch_shape = varlen a micro-batch is instead one row (sequences
// == 1) of its documents' positions rounded up to kVarlenAlign: its seq_len is
// that row's length, which differs between micro-batches.
//
// A rank holds what its place in the mesh uses (docs/batch.md "Slices and
// stages"): a context-parallel rank only its zigzag chunks of every sequence
// (of every document piece, in variable-length rows: Transformer Engine's THD
// layout), a pipeline stage only its fields; tensor-parallel peers hold
// identical batches.
#pragma once

#include <cstdint>
#include <vector>

namespace msd {

inline constexpr int32_t kIgnoreLabel = -100;  // labels at positions without loss
inline constexpr int32_t kPadTokenId = 0;      // token id at padding positions
inline constexpr uint32_t kVarlenAlign = 64;   // a variable-length row's positions are a multiple of this

// Positions of a variable-length row holding `used` positions: `used`
// rounded up to kVarlenAlign.
inline constexpr uint64_t varlen_row_positions(uint64_t used) {
  return (used + kVarlenAlign - 1) / kVarlenAlign * kVarlenAlign;
}

// A variable-length row split over cp > 1 context-parallel ranks per
// document piece (MicroBatch::cp_by_segment): each piece of `length`
// positions takes thd_piece_positions of the row (padded to a multiple of
// 2 x cp, so that it cuts into 2 x cp equal chunks), and the row is their sum
// rounded up to a multiple of kVarlenAlign and of 2 x cp (thd_row_positions;
// the tail is one more padding segment, cut the same way).
inline constexpr uint64_t thd_piece_positions(uint64_t length, uint32_t cp) {
  const uint64_t align = 2 * uint64_t{cp};
  return (length + align - 1) / align * align;
}
inline constexpr uint64_t thd_row_positions(uint64_t padded_used, uint32_t cp) {
  uint64_t align = kVarlenAlign;
  while (align % (2 * uint64_t{cp}) != 0) align += kVarlenAlign;  // the least common multiple
  return (padded_used + align - 1) / align * align;
}

// Where a segment of the batch came from, for auditing and tests.
struct DocSpan {
  uint32_t source = 0;     // index into the configuration's mix.sources
  uint64_t index = 0;      // sample index in the source's file order
  uint32_t begin = 0;      // first position of the document in this piece
  uint32_t length = 0;     // positions in this piece
  uint32_t sequence = 0;   // which packed sequence of the micro-batch
  uint32_t offset = 0;     // position inside that sequence (cp_by_segment: the padded piece's start)
  uint32_t patches = 0;    // image patches at the start of this piece
};

struct MicroBatch {
  uint32_t sequences = 0;  // packed sequences
  uint32_t seq_len = 0;    // positions of a whole sequence (all CP ranks together)

  // The slice this rank holds. With cp_size > 1 each sequence is cut into
  // 2 * cp_size chunks of seq_len / (2 * cp_size) positions and this rank
  // holds chunks cp_rank and 2 * cp_size - 1 - cp_rank, in that order: the
  // load-balanced zigzag split. Default: the whole sequence (0 of 1).
  uint32_t cp_rank = 0;
  uint32_t cp_size = 1;
  // Variable-length rows under CP (job.micro_batch_shape = varlen, cp_size >
  // 1): the split is per segment instead, Transformer Engine's THD layout with
  // context parallelism. Every segment of cu_seqlens (each document piece
  // padded to thd_piece_positions, then the row's tail padding) is cut into
  // 2 * cp_size chunks of its own, and this rank holds chunks cp_rank and 2 *
  // cp_size - 1 - cp_rank of every segment, segment after segment: each CP
  // rank does the same share of every document's attention. Default: false.
  bool cp_by_segment = false;
  // Pipeline-stage fields: the first stage holds the inputs (tokens,
  // positions, patches), the last the targets (labels, loss_mask); a middle
  // stage neither, only shapes, cu_seqlens and docs. Default: both (pp = 1).
  bool has_inputs = true;
  bool has_targets = true;

  // Per held position, [sequences * local_len()] each; empty when the stage
  // does not hold them.
  std::vector<int32_t> tokens;     // image positions hold image.token_id; padding kPadTokenId
  std::vector<int32_t> labels;     // next token of the same piece, else kIgnoreLabel
  std::vector<int32_t> positions;  // 0, 1, 2, ... restarting at every piece; 0 on padding
  std::vector<uint8_t> loss_mask;  // 1 where labels[i] != kIgnoreLabel

  // Segment boundaries over the flattened whole sequences (not the slice):
  // 0, end of segment 1, ..., sequences * seq_len. Every segment lies inside
  // one sequence. The same on every rank of a data group. With cp_by_segment
  // they are the padded pieces' boundaries, Transformer Engine's
  // cu_seqlens_padded; a piece's unpadded end is its DocSpan's offset +
  // length (TE's cu_seqlens).
  std::vector<int32_t> cu_seqlens;

  // Image patches (inputs): patch_positions[k] is the held (local) flattened
  // position of patch k, whose pixels are patches[k * patch_bytes, (k + 1) *
  // patch_bytes): patch x patch RGB, row-major.
  std::vector<int32_t> patch_positions;
  std::vector<uint8_t> patches;
  uint32_t patch_bytes = 0;

  std::vector<DocSpan> docs;  // every document piece of the whole sequences, in position order

  uint32_t local_len() const { return seq_len / cp_size; }  // held positions per sequence
  // The flattened whole-sequence position of held position `local`
  // (0 <= local < sequences * local_len()); with cp_by_segment, by
  // cu_seqlens.
  uint64_t global_position(uint64_t local) const;
  uint64_t tokens_used() const;  // non-padding positions of the whole sequences
};

struct Batch {
  uint64_t step = 0;
  // Its micro-batches: job.micro_batches of them, or with
  // job.micro_batch_count = variable as many as this rank's share of the
  // step needs (at least job.micro_batches; ranks differ).
  std::vector<MicroBatch> micro_batches;
  // The step's labelled positions (loss_mask ones) over every DP rank's
  // batch, for normalizing the loss by the global token count: each rank
  // sums its token losses and divides by this, and the gradient all-reduce
  // sums. The same on every rank of the step (every stage, CP and TP rank).
  // 0: not known (the colocated_samples mode, where no rank sees the others'
  // documents; all-reduce the ranks' own counts instead). Not in `digest`.
  uint64_t global_loss_tokens = 0;
  uint64_t digest = 0;         // over every field above except docs
  double wait_seconds = 0.0;   // time in next(): waiting for the plan and bytes, requesting the next step's
  uint64_t bytes_fetched = 0;  // sample bytes this rank read for this batch (docs/batch.md)
  uint64_t bytes_needed = 0;   // sample bytes this batch uses, counted on TP leaders only
  // Its plan was taken and its bytes requested by the previous next(), so
  // the reads overlapped the trainer's previous step (two-sided network
  // reads only: docs/multi-node.md "Two-sided reads").
  bool read_ahead = false;
};

}  // namespace msd
