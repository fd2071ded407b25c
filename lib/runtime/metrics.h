// Per-step metrics (output.metrics, docs/metrics.md): the planner writes one
// JSON line per delivered step once every client acknowledged it. What it
// needs from other ranks rides on messages they send anyway: loaders put
// their RSS and busy seconds on sample metadata, clients their RSS on
// acknowledgements; no collective is added to a step.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plan/cluster/device_model.h"
#include "plan/step/pack.h"
#include "transport/wire.h"

namespace msd {

// The resident set size of this process, read from /proc at most every
// `refresh_ms` (a step may be far shorter than a read of /proc is worth).
// Not thread-safe.
class RssSampler {
 public:
  explicit RssSampler(uint32_t refresh_ms = 100) : refresh_(refresh_ms) {}
  uint64_t bytes();

 private:
  std::chrono::milliseconds refresh_;
  std::chrono::steady_clock::time_point read_at_{};
  uint64_t bytes_ = 0;
  bool read_ = false;
};

// CPU time of the calling thread so far (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

// The planner's own work: wall and CPU time (of its thread) of the passes of
// its loop that handled something (messages, plans), not the sleeps between
// passes that found nothing. Not thread-safe.
class WorkTimer {
 public:
  void begin();              // a pass starts
  void end(bool worked);     // it ends; counted when it worked
  double wall_seconds() const { return wall_; }
  double cpu_seconds() const { return cpu_; }

 private:
  std::chrono::steady_clock::time_point wall_at_;
  double cpu_at_ = 0.0;
  double wall_ = 0.0, cpu_ = 0.0;
};

// The planner's progress line every output.progress_every steps (and at the
// last): the step's tokens, its time since the previous step, its data wait
// (max over ranks) and the job's tokens per second so far. Not thread-safe.
class ProgressLine {
 public:
  ProgressLine(uint32_t every, uint64_t steps) : every_(every), steps_(steps) {}
  void start(std::chrono::steady_clock::time_point now) { start_ = last_ = now; }
  std::chrono::steady_clock::time_point started() const { return start_; }
  // Step `step` is done; `total_tokens` counts every step done so far.
  void step_done(uint64_t step, uint64_t tokens, double max_wait_seconds, uint64_t total_tokens,
                 std::chrono::steady_clock::time_point now);

 private:
  uint32_t every_;
  uint64_t steps_;
  std::chrono::steady_clock::time_point start_, last_;
};

// What the planner knows of a step when every client acknowledged it.
struct MetricsStep {
  uint64_t step = 0;
  uint64_t tokens = 0;            // non-padding positions over all data groups
  double wait_max_seconds = 0.0;  // the longest wait of one client for this step
  double wait_sum_seconds = 0.0;  // summed over clients
  int clients = 0;
  double planner_work_seconds = 0.0;  // WorkTimer::wall_seconds so far
  std::vector<uint64_t> backlog;               // per source: load requests not yet answered
  std::vector<std::vector<int>> source_loaders;  // per source: world ranks of the loaders serving it now
};

// What the metrics are written from (the planner makes them from the
// configuration).
struct MetricsOptions {
  std::string path;                  // output.metrics
  std::vector<std::string> sources;  // the sources' names, in order
  uint32_t seq_len = 2048;           // job.seq_len
  DeviceModel device;                // what the trainer emulator sleeps
  Parallel parallel;                 // the trainer's mesh
  CostModel cost;                    // the planner's, for the padding it charges
  bool varlen = false;               // variable-length rows (PackOptions::varlen): no padding charged
};

// Writes output.metrics on the planner. Every line is flushed when written,
// so a job that dies leaves one line per step completed before. Throws
// IoError naming output.metrics when the file cannot be written.
class MetricsWriter {
 public:
  explicit MetricsWriter(MetricsOptions options);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Wall times count from here (the planner starts serving).
  void start(std::chrono::steady_clock::time_point at) { start_ = last_ = at; }
  // A step was planned: its balance, by the planner's cost and by the
  // device model (what the trainer emulator sleeps), from the buckets.
  void planned(uint64_t step, const std::vector<BucketPlan>& buckets, const std::vector<PlanDoc>& docs);
  // Latest figures a loader (by world rank) or a client sent.
  void loader_status(int loader_rank, const LoaderStatus& status);
  void client_rss(int client_rank, uint64_t rss_bytes);
  // Every client has the step: writes its line.
  void completed(const MetricsStep& step);

 private:
  struct Balance {
    double cost = 0.0, device = 0.0;  // max over mean across data groups
  };
  struct LoaderSeen {
    LoaderStatus latest, at_last_line;
    double busy_fraction = 0.0;  // over the reports between the last two lines
  };
  std::string line(const MetricsStep& step, double wall, double step_seconds, const Balance& balance);

  const MetricsOptions options_;
  std::FILE* file_ = nullptr;
  std::chrono::steady_clock::time_point start_, last_;
  double planner_work_at_last_ = 0.0;
  std::map<uint64_t, Balance> balance_;  // planned, not yet completed
  std::map<int, LoaderSeen> loaders_;
  std::map<int, uint64_t> clients_;
  RssSampler rss_;
};

}  // namespace msd
