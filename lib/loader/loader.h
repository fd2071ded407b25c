// The source-loader role: owns the file-access state of its sources, serves
// the planner's load requests in order, writes transformed samples into slots
// of its RMA window and reports their metadata; frees slots on release.
#pragma once

#include <deque>
#include <map>
#include <span>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint/loader_checkpoint.h"
#include "profile/meter.h"
#include "runtime/context.h"
#include "loader/fault_injection.h"
#include "loader/index_sharing.h"
#include "pipeline/pipeline.h"
#include "runtime/report.h"
#include "transport/reads.h"
#include "transport/slot.h"

namespace msd {

class LoaderRole {
 public:
  // Opens this loader's sources and the transforms. Never throws: a failure
  // is kept and reported in hello() so the whole job can stop cleanly.
  explicit LoaderRole(JobContext& job);
  ~LoaderRole();

  const HelloMessage& hello() const { return hello_; }
  // The tokenizer's vocabulary size, or -1 when this loader needs none.
  int32_t vocab_size() const;
  // After a resume: samples of the loader checkpoint at or before
  // `first_step` are served from its snapshot instead of read and transformed.
  void resume(uint64_t first_step);
  // Serves requests until the planner says stop.
  RoleStats serve();
  // The moving averages of this loader's sources (docs/scaling.md "Profiles").
  const ProfileMeter& meter() const { return meter_; }

 private:
  struct Prepared;
  // Reads and transforms requested samples, in order, onto `ready` (a sample
  // in a loader checkpoint's snapshot is taken from it): all are read over
  // threads_ threads, then each source's are transformed together over
  // threads_ threads, and measured into meter_. A bad sample is logged and
  // marked.
  void prepare(std::span<const LoadItem> items, std::deque<Prepared>& ready);
  bool place(Prepared& prepared, std::vector<SampleMeta>& outbox);
  bool on_control(const Message& message);
  void build_index_share(int index, const std::vector<uint32_t>& mine);
  SourceInfo open(uint32_t source, std::optional<FileShare> share);
  void reassign(const ReassignMessage& move);
  void write_checkpoint(std::span<const uint8_t> request);
  // Sends the planner this loader's profiles (kTagProfile).
  void send_profile();
  // Source s's open state and transform buffers, into meter_.
  void set_open_bytes(uint32_t s);
  ReadServer::Holds live_slot() const;

  JobContext& job_;
  // Before the sources: its storage (fault.kind = fail) outlives what reads through it.
  FaultInjector faults_;
  HelloMessage hello_;
  SamplePipeline pipeline_;                       // its sources by id (not open: not ours), tokenizer, transform
  std::vector<SourceInfo> opened_;                // what open() told the planner of each open source
  std::vector<std::vector<std::string>> listed_;  // a source's files as start-up's index sharing listed them
  std::unique_ptr<SlotAllocator> slots_;
  RoleStats stats_;
  std::map<uint64_t, SampleMeta> live_;       // slot offset -> the sample in it
  std::unique_ptr<ReadServer> reads_;         // network path: answers clients' reads (transport/reads.h)
  std::vector<bool> snapshot_source_;         // per source: keep in loader checkpoints
  std::map<std::pair<uint32_t, uint64_t>, SnapshotRecord> snapshot_;  // (source, cursor) from a checkpoint
  uint64_t snapshot_hits_ = 0;
  unsigned threads_ = 1;  // this loader's: the partition plan's, else loader.threads
  ProfileMeter meter_;
  std::vector<uint32_t> mine_;  // the sources this loader opened
  // prepare()'s reads on threads_ threads (the transforms have their own
  // workers; the two phases take turns, so at most threads_ run at once).
  WorkerPool read_pool_{"sample reads"};
};

}  // namespace msd
