// The planner role: decides which samples form each step (mix), asks loaders
// for them ahead of time, packs and splits each step's documents across the
// data groups, sends every client its plan, and releases slots once a step is
// acknowledged. Touches metadata only, never sample bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "plan/cost.h"
#include "plan/mix.h"
#include "plan/pack.h"
#include "runtime/context.h"

namespace msd {

class PlannerRole {
 public:
  // `sources` from the loaders' hello messages (every source reported once).
  PlannerRole(JobContext& job, const std::vector<SourceInfo>& sources);
  PlannerReport serve();

 private:
  struct SourceState {
    uint64_t samples = 0;
    std::vector<int> loader_ranks;
    uint64_t next_request = 0;  // next stream cursor to request
    uint64_t consumed = 0;      // first cursor not yet taken into a step
    uint64_t bad_in_flight = 0;  // resolved-bad cursors in [consumed, next_request)
    std::map<uint64_t, SampleMeta> resolved;  // cursor -> metadata
    bool seen_good = false;
  };
  struct InFlightStep {
    uint64_t step = 0;
    int acks_missing = 0;
    uint64_t tokens = 0;
    double max_wait_seconds = 0.0;
    std::vector<std::pair<int, uint64_t>> slots;  // (loader rank, slot offset)
  };

  void request_ahead();
  bool try_plan_step();
  void on_meta(const std::vector<SampleMeta>& metas);
  void on_ack(int client_rank, uint64_t step, double wait_seconds);
  void report_progress(const InFlightStep& step);

  JobContext& job_;
  std::vector<SourceState> sources_;
  Mixer mixer_;
  CostModel cost_;
  PackOptions pack_;
  std::deque<std::vector<uint32_t>> quotas_;  // for steps next_step_, next_step_+1, ...
  uint64_t next_step_ = 0;   // next step to plan
  uint64_t acked_steps_ = 0;  // steps acknowledged by every client
  std::map<uint64_t, InFlightStep> in_flight_;
  std::map<int, std::vector<LoadItem>> load_outbox_;
  PlannerReport report_;
  std::chrono::steady_clock::time_point start_, last_step_done_;
};

}  // namespace msd
