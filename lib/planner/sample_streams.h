// The planner's sample streams: for each source, the cursors of its
// shuffled stream requested from the loaders ahead of the steps that need
// them, the metadata of those loaded, and the window room they take. The
// mix (Mixer) gives every step its quota per source; a step is ready once
// the first `quota` good samples after each source's consumed cursor are
// loaded, and take_step then hands them over in cursor order. Requests go
// out in step order and only while they fit the loader's window for sure
// (WindowBudget). Sends requests and slot releases through the planner's
// AsyncSender; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/trace.h"
#include "plan/step/mix.h"
#include "plan/step/outlier_hold.h"
#include "runtime/context.h"
#include "planner/cursor_ring.h"
#include "planner/loader_fleet.h"
#include "planner/online_scaler.h"
#include "planner/slot_releases.h"
#include "planner/window_budget.h"
#include "source/stream_order.h"
#include "transport/mpi.h"

namespace msd {

class SampleStreams {
 public:
  // One step's samples, taken out of the streams.
  struct Step {
    std::vector<SampleMeta> samples;     // the good ones, by source, in cursor order
    std::vector<TraceSample> consumed;   // every cursor of the step, bad ones too (with `trace`)
    // Before the step: each source's consumed cursor and the mixer's totals.
    std::vector<uint64_t> consumed_before, realized_before;
  };

  SampleStreams(const JobContext& job, LoaderFleet& fleet, OnlineScaler& scaler, AsyncSender& out,
                const std::vector<SourceInfo>& sources);
  // Continues where the checkpoint's run stood before `resume.step`; a
  // source whose sample count changed is a ConfigError naming it.
  void resume_at(const PlannerCheckpoint& resume);

  // Asks the loaders again for the documents a resumed run's outlier hold
  // keeps (consumed before the checkpoint, so behind the streams' cursors):
  // their answers go to reloaded(), never into a step.
  void reload(const std::vector<HeldDoc>& held);
  // Once every document reload() asked for is loaded, moves their metadata
  // into `out` (by source and cursor) and returns true; false while some are
  // still out. True at once without reloads. Throws DataError when one is no
  // longer a good sample (the data changed under the checkpoint).
  bool reloaded(std::map<std::pair<uint32_t, uint64_t>, SampleMeta>& out);

  // Keeps requests out for the steps from `next_step` up to `limit`.
  // `holds_slot(rank)`: whether a step in flight holds a slot of that
  // loader (its release will make room).
  void request_ahead(uint64_t next_step, uint64_t limit, const std::function<bool(int)>& holds_slot);
  // A loader's answer; bad samples of a source are counted in `bad`.
  void on_meta(int rank, const std::vector<SampleMeta>& metas, uint64_t next_step);
  // The next step's samples once they are all loaded (bad ones counted in
  // `bad_samples`), else nullopt.
  std::optional<Step> take_step(std::vector<uint64_t>& bad_samples, bool trace);
  // Sends `slots` back to their loaders; `placed`: their bytes were counted
  // in the window budget (else stale answers never placed there).
  void release(SlotReleases& slots, const char* why, bool placed = true);

  size_t sources() const { return sources_.size(); }
  uint64_t samples(uint32_t source) const { return sources_.at(source).samples; }
  const ShuffleOrder& order(uint32_t source) const { return sources_.at(source).order->shuffle(); }
  const Schedule& schedule() const { return mixer_.schedule(); }
  // What a checkpoint of the next unplanned step records.
  std::vector<uint64_t> consumed() const;
  std::vector<uint64_t> realized_next() const;
  // The streams' keys and eras (the checkpoint's stream_keys, stream_eras:
  // empty when every source keeps its own index and plain order) and the
  // mixer's origin, for a checkpoint.
  void stream_state(PlannerCheckpoint& checkpoint) const;
  // Every sample loaded (or failed) but not yet in a step.
  void for_each_resolved(const std::function<void(uint32_t source, uint64_t cursor, const SampleMeta&)>& f) const;

 private:
  struct SourceState {
    uint64_t samples = 0;
    uint64_t next_request = 0;   // next stream cursor to request
    uint64_t consumed = 0;       // first cursor not yet taken into a step
    uint64_t bad_in_flight = 0;  // resolved-bad cursors in [consumed, next_request)
    CursorRing<SampleMeta> resolved;  // cursor -> metadata
    uint64_t resolved_good = 0;  // good samples in `resolved`: a step needs its quota of them first
    bool seen_good = false;
    // The stream's order (source/stream_order.h): the file index of every
    // cursor requested, in the source's shuffle order (shuffle_order of the
    // loaders' files), across resumes that changed the source's data.
    std::optional<StreamOrder> order;
  };

  uint64_t file_index(uint32_t source, uint64_t cursor);
  int loader_for(uint32_t source, uint64_t cursor, uint64_t index);
  bool take_reload(LoaderFleet::Track& track, int rank, const SampleMeta& meta, bool& read_failed);
  void make_room(int rank, uint64_t next_step, const std::function<bool(int)>& holds_slot);
  std::optional<uint64_t> step_end(size_t source) const;
  bool rewind(uint32_t source, uint64_t end, bool& freed);

  const JobContext& job_;
  LoaderFleet& fleet_;
  OnlineScaler& scaler_;
  AsyncSender& out_;
  std::vector<SourceState> sources_;
  Mixer mixer_;
  uint64_t mixer_origin_step_ = 0;      // a resume's (Mixer::restore), carried into checkpoints
  std::vector<uint64_t> mixer_origin_;
  WindowBudget window_;
  SlotReleases releases_;  // stale slots to give back, sent by release
  std::deque<std::vector<uint32_t>> quotas_;  // for the steps from the next unplanned one on
  std::deque<std::vector<uint64_t>> realized_before_;  // Mixer::realized() before each step in quotas_
  std::vector<uint64_t> need_;                 // request_ahead's scratch: samples per source
  std::vector<std::vector<LoadItem>> outbox_;  // request_ahead's scratch: requests per loader index
  // reload(): the held documents asked for again, by (source, cursor), and
  // how many have not answered.
  std::map<std::pair<uint32_t, uint64_t>, std::optional<SampleMeta>> reloads_;
  size_t reloads_missing_ = 0;
};

}  // namespace msd
