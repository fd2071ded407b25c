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
#include "plan/step/mix.h"
#include "plan/step/modes.h"
#include "plan/pool/online_scaling.h"
#include "plan/step/pack.h"
#include "plan/pool/profile.h"
#include "runtime/ack_watch.h"
#include "runtime/checkpoint_round.h"
#include "runtime/context.h"
#include "runtime/report.h"
#include "runtime/cursor_ring.h"
#include "runtime/loader_profiles.h"
#include "runtime/metrics.h"
#include "runtime/plan_encoder.h"
#include "runtime/slot_releases.h"
#include "runtime/window_budget.h"
#include "source/permutation.h"

namespace msd {

class PlannerRole {
 public:
  // `sources` from the loaders' hello messages (every source reported once).
  // `resume`: the checkpoint to continue from (the Job found and checked it).
  // Steps from there up to job.first_step are planned but delivered to no
  // client (the fast-forward of checkpoint.resume_step). `data`: the data's
  // fingerprint, recorded in checkpoints and the trace.
  PlannerRole(JobContext& job, const std::vector<SourceInfo>& sources,
              const std::optional<PlannerCheckpoint>& resume, DataFingerprint data = {});
  PlannerReport serve();
  // What each source costs a loader, as the loaders last reported it
  // (kTagProfile, at most once a second per loader; docs/scaling.md
  // "Profiles"): per source, the mean over the loaders serving it weighted
  // by the samples each measured (open_bytes: over those that opened it);
  // samples_measured is their sum. All zero before any report.
  std::vector<SourceProfile> profiles() const;

 private:
  struct SourceState {
    uint64_t samples = 0;
    std::vector<int> loader_ranks;
    uint64_t next_request = 0;  // next stream cursor to request
    uint64_t consumed = 0;      // first cursor not yet taken into a step
    uint64_t bad_in_flight = 0;  // resolved-bad cursors in [consumed, next_request)
    CursorRing<SampleMeta> resolved;  // cursor -> metadata
    uint64_t resolved_good = 0;  // good samples in `resolved`: a step needs its quota of them first
    bool seen_good = false;
    // The stream's permutation of the epoch last requested from: the file
    // index of every cursor requested (stream_position), built once an epoch.
    std::optional<Permutation> permutation;
    uint64_t permutation_epoch = 0;
  };
  // What the planner knows of a loader rank: the requests it has not
  // answered, and when it was last heard from; a loader silent past
  // loader.deadline_ms with requests pending is handed over to a shadow.
  struct LoaderTrack {
    PendingRequests outstanding;
    std::chrono::steady_clock::time_point last_heard;  // last metadata, or when it went busy
    bool shadow = false;
    bool failed = false;   // handed over: gets no new requests
    bool in_use = true;    // shadows: taken over a loader
    // Online scaling: moving from one source to another; it gets no new
    // requests for `from`, and is told to switch once it answered them all.
    struct Move {
      uint32_t from = 0, to = 0;
    };
    std::optional<Move> move;
  };
  struct InFlightStep {
    uint64_t step = 0;
    int acks_missing = 0;
    uint64_t tokens = 0;
    double max_wait_seconds = 0.0;
    double wait_sum_seconds = 0.0;  // over clients
    SlotReleases slots;  // released once every client acknowledged the step
    std::vector<InFlightSample> samples;          // for checkpoints' DGraph
  };

  void request_ahead();
  uint64_t file_index(uint32_t source, uint64_t cursor);
  void send_loads(int loader_rank, const std::vector<LoadItem>& items);
  void make_room(int loader_rank);
  std::optional<uint64_t> step_end(size_t source) const;
  bool rewind(uint32_t source, uint64_t end, bool& freed);
  void check_deadlines();
  void take_over(int loader_rank, const std::string& why);
  bool try_plan_step();
  void handle(const Message& message);  // a loader's or client's message to the planner
  uint64_t send_plans(uint64_t step, const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples,
                      bool delivered);
  void on_meta(int loader_rank, const std::vector<SampleMeta>& metas);
  void on_ack(int client_rank, uint64_t step, double wait_seconds);
  void complete_step(uint64_t step);
  void send_releases(SlotReleases& slots, const char* why, bool placed = true);
  MetricsStep metrics_step(const InFlightStep& step) const;
  void checkpoint(uint64_t step);
  void inject_fault(uint64_t step);
  void ask_loader_checkpoint(uint64_t step);
  void advance_loader_checkpoint();
  void on_checkpoint_written(int loader_rank, uint64_t step);
  void stop_loaders();
  // Online scaling (planner_scaling.cc, docs/scaling.md).
  void scale_online();
  ScalingInput scaling_input(std::vector<int>& ranks) const;
  void start_move(int loader_rank, uint32_t from, uint32_t to, MoveReason why);
  void advance_moves();
  void on_reassigned(int loader_rank, const HelloMessage& answer);
  void learn_costs(const std::vector<SampleMeta>& metas, double seconds, unsigned threads);
  // The threads a loader reads and transforms on.
  unsigned threads_of(int loader_rank) const;
  std::vector<uint32_t> sources_of(int loader_rank) const;
  std::vector<std::vector<uint32_t>> assignment_now() const;  // per loader index; a moving loader at its target
  void restore_assignment(const PlannerCheckpoint& resume);
  PlannerCheckpoint state_before(uint64_t step) const;

  JobContext& job_;
  AsyncSender out_;  // the planner never blocks on a busy or stalled peer
  WorkTimer work_;   // the serve loop's passes that handled something
  std::vector<SourceState> sources_;
  Mixer mixer_;
  CostModel cost_;
  PackOptions pack_;
  TrainingMode mode_;  // job.mode: how a step's documents are placed (plan/step/modes.h)
  WindowBudget window_;
  SlotReleases releases_;  // slots to give back, sent by send_releases
  AckWatch acks_;  // job.stall_timeout_s: a client that stops acknowledging
  size_t peer_count_;  // clients that get plans and acknowledge (JobContext::planner_peers)
  std::vector<uint64_t> need_;                    // request_ahead's scratch: samples per source
  std::vector<std::vector<LoadItem>> outbox_;     // request_ahead's scratch: requests per loader index
  PlanEncoder plans_;                             // send_plans': each group's plan into bytes
  std::deque<std::vector<uint32_t>> quotas_;  // for steps next_step_, next_step_+1, ...
  std::deque<std::vector<uint64_t>> realized_before_;  // Mixer::realized() before each step in quotas_
  // What a checkpoint of step t needs, taken when t is planned: consumed
  // cursors, mixer totals and bad counts before t.
  struct StepStart {
    std::vector<uint64_t> consumed, realized, bad;
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
  std::map<int, LoaderTrack> loaders_;  // by world rank
  CheckpointRound checkpoint_round_;  // the loader checkpoint round asked for
  PlannerReport report_;
  LoaderProfiles loader_profiles_;
  ProgressLine progress_{job_.config.output.progress_every, job_.config.job.steps};
  // Online scaling: what a sample of each source costs a loader, as the
  // planner sees it (until loaders measure it themselves), when the last
  // move started, the step the policy last ran for, and, after a resume,
  // the switches that restore the checkpoint's assignment.
  bool online_ = false;
  std::vector<SourceProfile> profiles_;
  std::optional<uint64_t> last_move_step_;
  uint64_t scaled_for_step_ = UINT64_MAX;
  std::vector<std::pair<int, ReassignMessage>> restore_;
};

}  // namespace msd
