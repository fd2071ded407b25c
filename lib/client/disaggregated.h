// The client of the disaggregated mode: it receives its data group's plan for
// each step, builds the part of the batch its place uses (CP slice, PP-stage
// fields) from loader windows — or, as a TP follower, receives it from its TP
// leader — and acknowledges it so the planner can release the slots (the
// colocated baseline is in colocated.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "construct/batch_builder.h"
#include "construct/tp_share.h"
#include "msd/client.h"
#include "client/client_impl.h"
#include "runtime/context.h"
#include "runtime/metrics.h"
#include "transport/reads.h"

namespace msd {

// Over two-sided network reads (WindowReader::two_sided) the client reads
// one step ahead: having built step t, it takes step t + 1's plan if the
// planner has already sent it, requests its bytes into a second batch and
// only then returns step t's, so the round trip to the loaders overlaps the
// trainer's step (docs/multi-node.md "Two-sided reads"). The batch returned
// stays untouched until the next next().
class DisaggregatedClient : public ClientImpl {
 public:
  // image_token_id: the token id placed at image-patch positions. tp_comm:
  // the client's TP group; with topology.broadcast_at = tp and more than one
  // TP rank, the constructor is collective over it (TpShare).
  DisaggregatedClient(JobContext& job, int client_index, int32_t image_token_id, MPI_Comm tp_comm);
  // Waits (bounded) for reads still in flight into its batches.
  ~DisaggregatedClient() override;
  DisaggregatedClient(const DisaggregatedClient&) = delete;
  DisaggregatedClient& operator=(const DisaggregatedClient&) = delete;
  const Batch* next() override;
  // At the first call, with broadcast_at = tp and more than one TP rank:
  // collective over tp_comm, the group agrees on the host or nccl path for
  // `sink` (logged by the leader). On the nccl path the sink must stay the
  // same (Error otherwise) and followers receive headers only.
  void attach(BatchSink& sink) override;
  void deliver(BatchSink& sink, const Batch& batch) override;
  const TpBroadcastPlan& tp_plan() const { return tp_plan_; }
  uint64_t steps() const override { return job_.config.job.steps; }
  // Completes reads requested ahead and tells the planner the step this
  // client stops at (kTagStopping); the plans it sent beyond are dropped at
  // the end of the job (Job::finish).
  void stop_early() override;

 private:
  Message receive_plan(int planner);
  StepPlan checked_plan(const Message& message, uint64_t step) const;
  BuildStats build(int planner, bool read_ahead, Batch& batch);
  void request_ahead(int planner);

  JobContext& job_;
  int client_index_;
  // batches_[current_] is the batch handed out; a step read ahead lands in
  // the other one (TP followers and direct reads use only the first).
  std::array<Batch, 2> batches_;
  size_t current_ = 0;
  uint64_t next_step_ = 0;
  BuildOptions options_;
  bool counts_needed_ = true;       // TP leaders count the group's needed bytes
  std::unique_ptr<TpShare> share_;  // TP groups that share
  MPI_Comm tp_comm_;
  BatchSink* tp_sink_ = nullptr;  // the sink the group's path was agreed for; nullptr before
  TpBroadcastPlan tp_plan_;
  RssSampler rss_;                  // sent on acknowledgements for output.metrics
  WindowReader reader_;             // reads the loaders' windows (transport/reads.h)
  StepPlan ahead_plan_;             // step next_step_'s plan while its reads are in flight
  BatchBuild ahead_;                // and its build, pending until next() finishes it
};

}  // namespace msd
