// msd/client.h — start here. What a trainer links: msd::Job splits the MPI job
// into planner, source-loader and client ranks; on client ranks (the training
// ranks) msd::Client hands out one batch per step.
//
//   msd::Invocation inv = msd::parse_command_line(argc, argv);  // msd/config.h
//   MPI_Init(&argc, &argv);
//   msd::Job job(inv.config, MPI_COMM_WORLD);    // collective over the world
//   if (job.role() == msd::Role::client) {
//     while (const msd::Batch* batch = job.client().next()) train(*batch);
//   } else {
//     job.serve();                                // planner or loader loop
//   }
//   msd::Summary summary = job.finish(stats);     // collective; rank 0 has it all
//   int status = job.shutdown();                  // may end the job (see there)
//   MPI_Finalize();
//
// Contract:
// - Job's constructor is collective over `world`. It throws ConfigError on
//   every rank, before any work, when the world size does not match the
//   configuration (the message says how many ranks are needed) and when a
//   loader cannot open a source (rank 0's message names the option and file).
// - Client::next() talks to the planner (plan, acknowledgement) and reads
//   loader windows: copies from a node-shared window, across nodes one read
//   request and reply per loader (or passive-target MPI_Get). With tp > 1 and
//   broadcast_at = tp it is collective over the client's TP group: the
//   group's leader fetches and shares the batch (by host memory, or by one
//   NCCL broadcast when every rank of the group delivers into a device sink
//   with NCCL, agreed at the first call; docs/gpu.md); it never communicates
//   with clients of other TP groups. Call it from one thread.
// - The Batch returned by next() is owned by the Client and stays valid until
//   the next call to next() or until the Job is destroyed. Across nodes,
//   next() may already have requested the following step's bytes into a
//   second batch (Batch::read_ahead); the one returned is never written
//   meanwhile.
// - next() returns nullptr after the configured number of steps.
// - Where the batch's buffers land is the client's BatchSink
//   (msd/batch_sink.h, docs/gpu.md): by default the host buffers
//   of the returned Batch; a device sink set with set_sink() also receives
//   every batch, finished, before next() returns it.
// - Every batch is a pure function of (configuration, seed, step): the number
//   of loaders, their speed and restarts do not change it.
// - Sub-communicators for the trainer (dp, tp, cp, pp, and all clients) are
//   valid on client ranks for the Job's lifetime.
// - finish() is collective over the ranks still alive: call it on every rank
//   once the client loop or serve() has returned. A loader that a shadow took
//   over is left out (it may be stopped or hung), and it never joins.
// - finish() before next() returned nullptr (an evaluation loop, early
//   stopping) is a clean end when every client calls it after the same
//   step: the stream ends there (the summary's stopped_early; a planner
//   checkpoint of that step lets --resume continue exactly). One client
//   finishing while the others go on ends the job with a TrainerError
//   (status 5) naming it, at the first step another client takes past it.
// - Any exception after the constructor must end the whole job through
//   abort_job() before the Job is destroyed: its destructor frees windows and
//   communicators collectively, which a failed peer would never join. What
//   a trainer does not catch is named by a std::terminate handler the Job
//   installs (its type and message; status 5 for the trainer's own, msd's
//   own status for an msd::Error). A Job destroyed mid-stream (an exception
//   unwinding through it, or dropped before finish()) ends the job itself
//   (abort_job) instead of freeing anything.
// - SIGTERM and SIGINT, where the process has none of its own handlers, end
//   the rank with one line naming it and its step, status 128 + the signal
//   (docs/errors.md).
// - Deferred start (Job(config, world, Job::DeferStart{}) then start()): the
//   constructor only checks the world size and makes the communicators, so a
//   trainer can build its model over dp/tp/cp/pp and load its own checkpoint
//   before msd decides where the stream begins; start() (collective over the
//   world) agrees on the resume step and does the rest of the start-up.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msd/batch.h"
#include "msd/batch_sink.h"
#include "msd/config.h"
#include "msd/error.h"
#include "msd/exit.h"
#include "msd/place_tree.h"

namespace msd {

class ClientImpl;

// What a client records about every batch it hands out, for the summary:
// digests, the wait, and the batch's cost (per micro-batch and its largest
// document piece) under the configuration's cost model.
struct ClientLog {
  std::vector<uint64_t> step_digests;
  std::vector<double> step_costs;  // per step: micro_batches costs, then the largest piece's cost
  uint64_t tokens = 0;             // non-padding positions received
  double wait_seconds = 0.0;
  std::vector<uint64_t> source_samples;  // per source: documents received (first pieces)
  std::vector<uint64_t> source_tokens;   // per source: positions received
  std::vector<uint64_t> step_bytes_fetched;  // per step: Batch::bytes_fetched
  std::vector<uint64_t> step_bytes_needed;   // per step: Batch::bytes_needed
  uint64_t steps_read_ahead = 0;             // batches with Batch::read_ahead
};

class Client {
 public:
  Client(std::unique_ptr<ClientImpl> impl, const Config& config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The next step's batch, or nullptr when the job's steps are done.
  const Batch* next();
  uint64_t steps() const;  // job.steps
  const ClientLog& log() const { return log_; }

  // Delivers every following batch to `sink` as well (deliver() inside
  // next(), finish() at the stream's end or an early finish). The caller
  // keeps `sink` alive until the Job's finish() or the next set_sink().
  // nullptr: the default host sink, which leaves batches where they are.
  void set_sink(BatchSink* sink);
  BatchSink& sink() { return *sink_; }

 private:
  std::unique_ptr<ClientImpl> impl_;
  const Config& config_;
  ClientLog log_;
  std::unique_ptr<BatchSink> host_sink_;
  BatchSink* sink_ = nullptr;
};

// Ends the whole job now, from any rank, without any collective call: logs
// one line naming this rank, its role and `cause`, then MPI_Abort with
// exit_status(cause) (a TrainerError for the trainer's own failures: 5).
[[noreturn]] void abort_job(const std::exception& cause);

// What a client rank's trainer reports to the summary.
struct TrainerStats {
  uint64_t steps = 0;
  double compute_seconds = 0.0;  // emulated or real compute
  double wall_seconds = 0.0;     // first next() to the end of the last step
};

// The job's final numbers, complete on world rank 0 (see docs/summary.md).
struct Summary {
  std::string json;  // the summary as one JSON object
  std::string text;  // the same for people
};

class JobImpl;

class Job {
 public:
  // Collective over `world`: roles, communicators, then start-up (start()).
  Job(const Config& config, MPI_Comm world);
  // The same without start-up: call start() before serve() or client().
  struct DeferStart {};
  Job(const Config& config, MPI_Comm world, DeferStart);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  Role role() const;
  int world_rank() const;
  const ClientPlaceTree& tree() const;
  const Config& config() const;

  // Deferred start only; collective over the world. `resume_step` is the step
  // the stream continues from, given by the ranks that know it (a trainer's
  // client ranks after loading their checkpoint), empty elsewhere. Every rank
  // that gives one must give the same, else ConfigError on every rank; a step
  // > 0 resumes there (checkpoint.resume_step, docs/checkpoint.md). Then
  // loaders open their sources and the planner plans its first step; throws
  // like the constructor.
  void start(std::optional<uint64_t> resume_step = std::nullopt);
  bool started() const;

  // Planner and loader ranks: runs that role until the job ends.
  void serve();
  // Client ranks only.
  Client& client();
  int client_index() const;
  MPI_Comm clients_comm() const;  // all client ranks: the trainer's world
  MPI_Comm dp_comm() const;
  MPI_Comm tp_comm() const;
  MPI_Comm cp_comm() const;
  MPI_Comm pp_comm() const;

  // Collective over the world. `stats` matters on client ranks only. On a
  // client before the stream's end, ends its stream there (see the
  // contract above). World rank 0 writes output.summary_json.
  Summary finish(const TrainerStats& stats);
  // After finish(), on every rank: the exit status (kExitOk). When a loader
  // taken over by a shadow did not confirm the stop (it may be SIGSTOPped or
  // hung), MPI_Finalize and the Job's collective frees would wait for it
  // forever, so rank 0 ends the job with MPI_Abort(kExitOk) instead of
  // returning: mpirun then kills every rank, the stopped one included.
  int shutdown();
  // After finish(): whether some loader did not confirm the stop (the job can
  // then end only by shutdown()'s MPI_Abort, never by freeing its windows),
  // and the live ranks' communicator (MPI_COMM_NULL in the colocated modes).
  bool loaders_gone() const;
  MPI_Comm live_comm() const;

 private:
  std::unique_ptr<JobImpl> impl_;
};

}  // namespace msd
