// The client (data-constructor) role behind msd::Client: what both modes
// implement (disaggregated.h, colocated.h).
#pragma once

#include <cstdint>

#include "construct/batch_builder.h"
#include "construct/batch_sink.h"
#include "msd/batch.h"
#include "msd/place_tree.h"

namespace msd {

class ClientImpl {
 public:
  virtual ~ClientImpl() = default;
  virtual const Batch* next() = 0;
  // Before every next() (Client::next), with the sink the batch goes to.
  // A client that shares batches within its TP group agrees there on the
  // group's path at the first call (collective over the group,
  // construct/tp_device.h); default: nothing to agree on.
  virtual void attach(BatchSink& sink) { (void)sink; }
  // Hands next()'s batch to `sink`. Default: sink.deliver(batch).
  virtual void deliver(BatchSink& sink, const Batch& batch) { sink.deliver(batch); }
  virtual uint64_t steps() const = 0;
  // The trainer finished before the stream's end (Job::finish): complete
  // what is in flight and stop; no next() follows.
  virtual void stop_early() = 0;
};

// What the client at `client_index` builds: its CP slice and its pipeline
// stage's fields (include/msd/batch.h).
BuildOptions build_options_for(const ClientPlaceTree& tree, int client_index, int32_t image_token_id);

}  // namespace msd
