// The client of the disaggregated mode: it receives its data group's plan for
// each step, builds the part of the batch its place uses (CP slice, PP-stage
// fields) from loader windows — or, as a TP follower, receives it from its TP
// leader — and acknowledges it so the planner can release the slots (the
// colocated baseline is in colocated.h).
#pragma once

#include <cstdint>
#include <memory>

#include "construct/batch_builder.h"
#include "construct/tp_share.h"
#include "msd/client.h"
#include "runtime/client_impl.h"
#include "runtime/context.h"
#include "runtime/metrics.h"
#include "transport/reads.h"

namespace msd {

class DisaggregatedClient : public ClientImpl {
 public:
  // image_token_id: the token id placed at image-patch positions. tp_comm:
  // the client's TP group; with topology.broadcast_at = tp and more than one
  // TP rank, the constructor is collective over it (TpShare).
  DisaggregatedClient(JobContext& job, int client_index, int32_t image_token_id, MPI_Comm tp_comm);
  const Batch* next() override;
  uint64_t steps() const override { return job_.config.job.steps; }

 private:
  Message receive_plan(int planner);

  JobContext& job_;
  int client_index_;
  Batch batch_;
  uint64_t next_step_ = 0;
  BuildOptions options_;
  bool counts_needed_ = true;       // TP leaders count the group's needed bytes
  std::unique_ptr<TpShare> share_;  // TP groups that share
  RssSampler rss_;                  // sent on acknowledgements for output.metrics
  WindowReader reader_;             // reads the loaders' windows (transport/reads.h)
};

}  // namespace msd
