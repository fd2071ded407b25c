// Builds a rank's batch from its step plan: pulls exactly the bytes of every
// planned piece from the loaders' windows (tokens straight into the batch's
// token array, patches into its patch array), then derives labels, positions,
// loss mask and cu_seqlens (docs/batch.md). MPI-free except through the
// fetcher, so tests can feed it from memory.
#pragma once

#include <cstdint>

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

struct BuildOptions {
  int32_t image_token_id = 0;  // token id at image-patch positions
};

struct BuildStats {
  uint64_t bytes_fetched = 0;
  uint64_t gets = 0;
};

// Fills `out` (reusing its buffers) for `plan`. Throws ProtocolError when the
// plan is inconsistent (a piece beyond its document, a sequence over seq_len).
BuildStats build_batch(const StepPlan& plan, ByteFetcher& fetcher, const BuildOptions& options, Batch& out);

// The digest of a batch's contents (Batch::digest), over every field a
// trainer consumes, in a fixed order.
uint64_t batch_digest(const Batch& batch);

}  // namespace msd
