// The client (data-constructor) role behind msd::Client. ClientImpl is what
// both modes implement; DisaggregatedClient receives its data group's plan for
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
#include "runtime/context.h"

namespace msd {

class ClientImpl {
 public:
  virtual ~ClientImpl() = default;
  virtual const Batch* next() = 0;
  virtual uint64_t steps() const = 0;
};

// What the client at `client_index` builds: its CP slice and its pipeline
// stage's fields (include/msd/batch.h).
BuildOptions build_options_for(const ClientPlaceTree& tree, int client_index, int32_t image_token_id);

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
};

}  // namespace msd
