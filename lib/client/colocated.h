// The colocated_samples baseline (docs/design.md "The colocated baseline", docs/evaluation.md),
// run by the same binary for side-by-side measurement: no planner and no
// loader ranks. Every client opens every source, runs the one global mixer
// (the same step documents as every other mode), loads its DP rank's share of
// them (every dp-th in arrival order, as DistributedSampler does), transforms
// in-process (on a prefetch thread, as data-loader workers do), fills
// micro-batches by sample count and packs them next-fit in arrival order.
// TP/CP/PP peers load the same data redundantly.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "plan/step/mix.h"
#include "client/client_impl.h"
#include "runtime/context.h"
#include "pipeline/pipeline.h"
#include "runtime/watchdog.h"

namespace msd {

class ColocatedClient : public ClientImpl {
 public:
  // Opens every source; throws ConfigError/IoError like a loader would.
  ColocatedClient(JobContext& job, int client_index);
  ~ColocatedClient() override;

  const Batch* next() override;
  uint64_t steps() const override { return job_.config.job.steps; }
  void stop_early() override;
  int32_t vocab_size() const { return pipeline_.tokenizer() ? pipeline_.tokenizer()->vocab_size() : -1; }
  void start(int32_t image_token_id);  // starts the prefetch thread
  uint64_t state_bytes() const { return state_bytes_; }
  const std::vector<uint64_t>& bad_samples() const { return bad_; }

 private:
  struct Prepared {
    StepPlan plan;
    std::vector<uint8_t> arena;  // slots, laid out as in a loader window
    uint64_t bytes_loaded = 0;   // transformed sample bytes (tokens and patches) this rank made
  };
  Prepared prepare(uint64_t step);
  bool load(uint32_t source, uint64_t cursor, Prepared& out, TransformedSample& sample);
  void prefetch_loop();

  JobContext& job_;
  int client_index_;
  int data_group_;
  SamplePipeline pipeline_;  // every source open, with its stream's order; the tokenizer; the transform
  Mixer mixer_;
  std::vector<uint64_t> next_cursor_;   // per source: next cursor of the global stream
  std::vector<uint64_t> bad_;           // per BadKind
  uint64_t state_bytes_ = 0;
  BuildOptions options_;
  Batch batch_;
  uint64_t next_step_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Prepared> queue_;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread worker_;
  // job.stall_timeout_s from one next() to the next: a trainer stuck between
  // steps (itself, or in a collective with a stuck peer) ends the process;
  // nothing else waits inside msd in the colocated modes.
  std::unique_ptr<Watchdog> steps_;
};

}  // namespace msd
