// msd/batch_sink.h — the receiving end of a client's batches
// (Client::set_sink, docs/gpu.md). A trainer implements it to take each
// finished batch before Client::next() returns it, e.g. to start its copy into
// device memory; msd's own are the host sink (the default, which leaves the
// batch in the Client's host buffers) and, built with MSD_WITH_CUDA, the CUDA
// sink.
#pragma once

#include <string>

#include "msd/batch.h"

namespace msd {

// The receiving end of a client's batches. Called from the thread that calls
// Client::next(); never concurrently.
class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // `batch` is step's finished batch (digest computed); it stays valid and
  // unchanged until the next deliver() or finish(). Throws when it cannot be
  // delivered (msd's own sinks: msd::Error); the exception leaves next().
  virtual void deliver(const Batch& batch) = 0;
  // The stream ended (next() returned nullptr, or the trainer stopped
  // early): complete whatever is in flight. Default: nothing is.
  virtual void finish() {}
  virtual std::string name() const = 0;
};

}  // namespace msd
