// Builds a rank's batch from its data group's step plan: pulls exactly the
// bytes the rank uses from the loaders' windows (tokens straight into the
// batch's token array, patches into its patch array), then derives labels,
// positions, loss mask and cu_seqlens (docs/batch.md). A context-parallel rank
// reads only its zigzag chunks of every sequence (of every document piece, in
// variable-length rows) and a pipeline stage only its fields. MPI-free except through the fetcher, so tests can feed it from
// memory.
#pragma once

#include <cstdint>
#include <memory>

#include "msd/batch.h"
#include "transport/wire.h"

namespace msd {

// Where bytes come from: get() queues a read, complete() finishes all queued.
class ByteFetcher {
 public:
  virtual ~ByteFetcher() = default;
  virtual void get(int rank, uint64_t offset, void* out, uint64_t bytes) = 0;
  virtual void complete() = 0;
};

// What a rank holds of its data group's batch (MicroBatch's fields of the
// same names). Default: everything (cp = 1, pp = 1).
struct BuildOptions {
  int32_t image_token_id = 0;  // token id at image-patch positions
  uint32_t cp_rank = 0;        // this rank's context-parallel index
  uint32_t cp_size = 1;        // context-parallel ranks of the data group
  bool inputs = true;          // first pipeline stage: tokens, positions, patches
  bool targets = true;         // last pipeline stage: labels, loss mask
  // Variable-length micro-batches (job.micro_batch_shape = varlen): each
  // micro-batch is one row holding its sequences' pieces back to back,
  // seq_len = their positions rounded up to kVarlenAlign. With cp_size > 1
  // each piece is padded to 2 x cp_size and split over the CP ranks on its
  // own (MicroBatch::cp_by_segment, Transformer Engine's THD layout).
  bool varlen = false;
};

struct BuildStats {
  uint64_t bytes_fetched = 0;  // bytes requested through the fetcher
  uint64_t bytes_needed = 0;   // needed_bytes(plan, options), counted apart
  uint64_t gets = 0;           // reads requested
};

// Fills `out` (reusing its buffers) for `plan`. Every byte fetched is used
// and fetched once, so bytes_fetched == bytes_needed. Throws ProtocolError
// when the plan is inconsistent (a piece beyond its document, a sequence over
// seq_len, seq_len not divisible by 2 * cp_size). The same as begin_build,
// fetcher.complete(), finish_build.
BuildStats build_batch(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out);

// build_batch in two halves, so that a client can request a step's bytes and
// hand out the previous batch while they travel (docs/multi-node.md
// "Two-sided reads"): begin_build sizes `out`, queues every read through the
// fetcher and throws as build_batch does; once the fetcher has completed
// them, finish_build derives positions, labels, loss mask, cu_seqlens, the
// needed bytes and the digest. Between the two, `out` holds bytes in flight
// and must not be read, moved or resized. REQUIRES: `plan` and `options`
// outlive the BatchBuild unchanged. Move-only.
class BatchBuild {
 public:
  BatchBuild();
  ~BatchBuild();
  BatchBuild(BatchBuild&& other) noexcept;
  BatchBuild& operator=(BatchBuild&& other) noexcept;
  bool pending() const { return state_ != nullptr; }  // begun and not yet finished

 private:
  struct State;
  friend BatchBuild begin_build(const StepPlan&, ByteFetcher&, const BuildOptions&, Batch&);
  friend BuildStats finish_build(BatchBuild&);
  std::unique_ptr<State> state_;
};
BatchBuild begin_build(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out);
// REQUIRES: build.pending() and the fetcher's reads complete. Leaves the
// build no longer pending.
BuildStats finish_build(BatchBuild& build);

// The sample bytes a rank with `options` uses for `plan` (docs/batch.md
// "Bytes needed"), computed position by position, independently of
// build_batch's byte ranges: the token (4 bytes) or patch (patch_bytes) of
// every held position when the rank holds inputs, and the token one past
// every held position that has a label when it holds targets, each distinct
// sample position once.
uint64_t needed_bytes(const StepPlan& plan, const BuildOptions& options);

// The digest of a batch's contents (Batch::digest), over every field a
// trainer consumes, in a fixed order.
uint64_t batch_digest(const Batch& batch);

}  // namespace msd
