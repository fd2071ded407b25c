// The planner role: decides which samples form each step (mix), asks loaders
// for them ahead of time, packs and splits each step's documents across the
// data groups, sends every client its plan, and releases slots once a step is
// acknowledged. Touches metadata only, never sample bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/trace.h"
#include "plan/step/cost.h"
#include "plan/step/modes.h"
#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"
#include "plan/pool/profile.h"
#include "planner/ack_watch.h"
#include "planner/loader_checkpoints.h"
#include "planner/loader_fleet.h"
#include "runtime/context.h"
#include "runtime/report.h"
#include "planner/loader_profiles.h"
#include "runtime/metrics.h"
#include "planner/plan_encoder.h"
#include "planner/slot_releases.h"
#include "planner/online_scaler.h"
#include "planner/sample_streams.h"

namespace msd {

class PlannerRole {
 public:
  // `sources` from the loaders' hello messages (every source reported once).
  // `resume`: the checkpoint to continue from (the Job found and checked it).
  // Steps from there up to job.first_step are planned but delivered to no
  // client (the fast-forward of checkpoint.resume_step). `data`: the data's
  // fingerprint, recorded in checkpoints and the trace.
  // `changed_mix`: `resume` is a checkpoint continued under a changed mixture
  // (changed_mix.h); it is written at once as the checkpoint of its step (a
  // resume after a crash then needs no flag), and the trace begins anew there.
  PlannerRole(JobContext& job, const std::vector<SourceInfo>& sources,
              const std::optional<PlannerCheckpoint>& resume, DataFingerprint data = {}, bool changed_mix = false);
  PlannerReport serve();
  // What each source costs a loader, as the loaders last reported it
  // (kTagProfile, at most once a second per loader; docs/scaling.md
  // "Profiles"): per source, the mean over the loaders serving it weighted
  // by the samples each measured (open_bytes: over those that opened it);
  // samples_measured is their sum. All zero before any report.
  std::vector<SourceProfile> profiles() const;

 private:
  struct InFlightStep {
    uint64_t step = 0;
    int acks_missing = 0;
    uint64_t tokens = 0;
    double max_wait_seconds = 0.0;
    double wait_sum_seconds = 0.0;  // over clients
    SlotReleases slots;  // released once every client acknowledged the step
    std::vector<InFlightSample> samples;          // for checkpoints' DGraph
  };

  bool try_plan_step();
  std::vector<SampleMeta> apply_hold(uint64_t step, SampleStreams::Step& taken, std::vector<bool>& held);
  std::vector<BucketPlan> place(uint64_t step, const std::vector<PlanDoc>& docs);
  void record_locality(const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples);
  void handle(const Message& message);  // a loader's or client's message to the planner
  uint64_t send_plans(uint64_t step, const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples,
                      bool delivered);
  void on_ack(int client_rank, uint64_t step, double wait_seconds);
  void on_stopping(int client_rank, uint64_t step);
  void check_stops();
  void check_acks();
  void end_stream_early(uint64_t end);
  uint64_t stream_end() const { return end_early_.value_or(job_.config.job.steps); }
  void complete_step(uint64_t step);
  MetricsStep metrics_step(const InFlightStep& step) const;
  void checkpoint(uint64_t step);
  PlannerCheckpoint state_before(uint64_t step) const;
  void inject_fault(uint64_t step);
  void stop_loaders();

  JobContext& job_;
  AsyncSender out_;  // the planner never blocks on a busy or stalled peer
  WorkTimer work_;   // the serve loop's passes that handled something
  // Its collaborators: the loaders and failover, online scaling, the
  // sample streams and their requests, the loader checkpoint rounds.
  LoaderFleet fleet_;
  OnlineScaler scaler_;
  SampleStreams streams_;
  LoaderCheckpoints loader_checkpoints_;
  CostModel cost_;
  PackOptions pack_;
  TrainingMode mode_;  // job.mode: how a step's documents are placed (plan/modes.h)
  AckWatch acks_;  // job.stall_timeout_s: a client that stops acknowledging
  size_t peer_count_;  // clients that get plans and acknowledge (JobContext::planner_peers)
  PlanEncoder plans_;  // send_plans': each group's plan into bytes
  // The outlier hold (job.hold_above): which documents wait for later steps,
  // and the metadata of those waiting (their slots stay taken until the step
  // that delivers them is acknowledged).
  OutlierHold hold_;
  std::map<std::pair<uint32_t, uint64_t>, SampleMeta> held_meta_;  // by (source, cursor)
  // What a checkpoint of step t needs, taken when t is planned: consumed
  // cursors, mixer totals and bad counts before t.
  struct StepStart {
    std::vector<uint64_t> consumed, realized, bad;
    std::vector<HeldDoc> held;  // the outlier hold's documents
  };
  std::map<uint64_t, StepStart> starts_;
  uint64_t first_step_ = 0;    // the first step planned (the checkpoint's)
  uint64_t deliver_from_ = 0;  // the first step delivered; earlier ones are fast-forwarded
  DataFingerprint data_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<PlannerCheckpointWriter> checkpoints_;
  std::unique_ptr<MetricsWriter> metrics_;  // output.metrics
  uint64_t next_step_ = 0;   // next step to plan
  uint64_t acked_steps_ = 0;  // steps acknowledged by every client
  std::map<uint64_t, InFlightStep> in_flight_;
  // Clients whose trainer finished early (world rank -> the step it stops
  // at), and the step the stream ends at once every client stopped there.
  std::map<int, uint64_t> stopping_;
  std::optional<uint64_t> end_early_;
  PlannerReport report_;
  LoaderProfiles loader_profiles_;
  ProgressLine progress_{job_.config.output.progress_every, job_.config.job.steps};
};

}  // namespace msd
