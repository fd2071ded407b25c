#include "runtime/planner.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/digest.h"
#include "common/files.h"
#include "common/log.h"
#include "common/memory.h"
#include "source/permutation.h"
#include "source/source.h"

namespace msd {

namespace {
// The planner reads only the budget flags of a step's PlanStats: it places
// without the reporting-only lower bound (PackOptions::lower_bound).
PackOptions planner_pack_options(const Config& config) {
  PackOptions pack = make_pack_options(config);
  pack.lower_bound = false;
  return pack;
}
// The step's document set, free of the layout: the step number and each
// sample's (source, cursor) in (source, cursor) order, as try_plan_step
// gathers them. Equal on every mesh that delivers the same documents.
uint64_t document_digest(uint64_t step, const std::vector<SampleMeta>& samples) {
  Digest digest;
  digest.update_u64(step);
  for (const auto& m : samples) {
    digest.update_u64(m.source);
    digest.update_u64(m.cursor);
  }
  return digest.value();
}
}  // namespace

PlannerRole::PlannerRole(JobContext& job, const std::vector<SourceInfo>& sources,
                         const std::optional<PlannerCheckpoint>& resume, DataFingerprint data)
    : job_(job),
      out_(job.world.get()),
      mixer_(make_schedule(job.config), job.config.job.global_batch),
      cost_(make_cost_model(job.config)),
      pack_(planner_pack_options(job.config)),
      mode_(training_mode(job.config.job)),
      window_(job.config.loader.window_mb << 20, job.config.job.max_sample_bytes),
      acks_(job.planner_peers(), job.config.job.stall_timeout_s),
      peer_count_(job.planner_peers().size()) {
  sources_.resize(job.config.sources.size());
  online_ = job.config.topology.scaling == Scaling::online;
  if (online_) profiles_.resize(sources_.size());
  for (const auto& info : sources) {
    sources_.at(info.source).samples = info.samples;
    if (online_) profiles_[info.source].open_bytes = static_cast<double>(info.state_bytes);
  }
  for (size_t s = 0; s < sources_.size(); ++s) {
    MSD_CHECK(sources_[s].samples > 0);
    for (int loader : job.assignment.loaders_of_source[s])
      sources_[s].loader_ranks.push_back(job.layout.loader_rank(loader));
  }
  report_.bad_samples.assign(bad_kind_count, 0);
  if (resume) {
    // Continue where the checkpoint's run stood before step `resume->step`:
    // the same cursors and mixer totals give the same batches from there on.
    first_step_ = next_step_ = acked_steps_ = resume->step;
    for (size_t s = 0; s < sources_.size(); ++s) {
      if (resume->source_samples.at(s) != sources_[s].samples)
        throw ConfigError(str("source.", job.config.sources[s].name, ".path: the source now holds ", sources_[s].samples,
                              " samples, the checkpoint's run had ", resume->source_samples[s],
                              "; the batch stream cannot continue"));
      sources_[s].consumed = sources_[s].next_request = resume->consumed.at(s);
      sources_[s].seen_good = true;
    }
    mixer_.restore(resume->step, resume->mixer_realized);
    report_.bad_samples = resume->bad_samples;
    report_.bad_samples.resize(bad_kind_count, 0);
    if (online_) restore_assignment(*resume);
  }
  deliver_from_ = std::max(job.first_step, first_step_);
  data_ = std::move(data);
  report_.first_step = deliver_from_;
  const CheckpointConfig& ckpt = job.config.checkpoint;
  const std::string trace_path = !ckpt.trace.empty() ? ckpt.trace : ckpt.dir.empty() ? "" : join_path(ckpt.dir, "trace.h5");
  if (!trace_path.empty()) {
    std::vector<uint64_t> sizes;
    for (const auto& src : sources_) sizes.push_back(src.samples);
    trace_ = std::make_unique<TraceWriter>(trace_path, make_trace_header(job.config, sizes, data_), first_step_);
  }
  if (!ckpt.dir.empty()) checkpoints_ = std::make_unique<PlannerCheckpointWriter>(ckpt.dir, ckpt.keep);
  if (!job.config.output.metrics.empty()) metrics_ = std::make_unique<MetricsWriter>(job.config);
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < job.layout.loader_ranks(); ++i) {
    LoaderTrack& track = loaders_[job.layout.loader_rank(i)];
    track.last_heard = now;
    track.shadow = job.layout.is_shadow(i);
    track.in_use = !track.shadow;
  }
}

void PlannerRole::send_loads(int loader_rank, const std::vector<LoadItem>& items) {
  if (items.empty()) return;
  LoaderTrack& track = loaders_.at(loader_rank);
  // Silence is measured from when a loader had something to answer.
  if (track.outstanding.empty()) track.last_heard = std::chrono::steady_clock::now();
  for (const auto& item : items) track.outstanding.add(item);
  out_.send(loader_rank, kTagLoad, encode_load(items), "sending load requests");
}

// Hands a failed loader's sources and unanswered requests to a free shadow.
void PlannerRole::take_over(int loader_rank, const std::string& why) {
  LoaderTrack& failed = loaders_.at(loader_rank);
  if (failed.failed) return;
  int shadow_rank = -1;
  for (auto& [rank, track] : loaders_)
    if (track.shadow && !track.in_use && !track.failed) {
      shadow_rank = rank;
      break;
    }
  const int index = job_.layout.loader_index(loader_rank);
  if (shadow_rank < 0)  // waiting could be forever: fail fast, a requeued job resumes
    throw Error(str("loader ", index, " (world rank ", loader_rank, ") ", why, ", and no shadow loader is left (",
                    job_.layout.shadows, " configured, topology.shadow_loaders)"));
  const auto now = std::chrono::steady_clock::now();
  failed.failed = true;
  loaders_.at(shadow_rank).in_use = true;
  for (auto& src : sources_)
    std::replace(src.loader_ranks.begin(), src.loader_ranks.end(), loader_rank, shadow_rank);
  std::vector<LoadItem> items = failed.outstanding.items();
  failed.outstanding.clear();
  Takeover takeover;
  takeover.loader = index;
  takeover.shadow = job_.layout.loader_index(shadow_rank);
  takeover.step = next_step_;
  takeover.requests = items.size();
  takeover.latency_s = std::chrono::duration<double>(now - failed.last_heard).count();
  takeover.why = why;
  log_warn("loader ", takeover.loader, " ", why, ": shadow loader ", takeover.shadow, " takes over its sources and ",
           items.size(), " pending requests (", static_cast<int>(takeover.latency_s * 1e3), " ms after it went quiet)");
  report_.takeovers.push_back(takeover);
  send_loads(shadow_rank, items);
}

void PlannerRole::check_deadlines() {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = std::chrono::milliseconds(job_.config.loader.deadline_ms);
  for (auto& [rank, track] : loaders_) {
    if (track.failed || track.outstanding.empty() || now - track.last_heard < deadline) continue;
    // Writing its part of a loader checkpoint: bounded on its own.
    if (checkpoint_round_.waits_for(rank)) continue;
    take_over(rank, str("missed its deadline (", job_.config.loader.deadline_ms, " ms, loader.deadline_ms)"));
  }
}

// Keeps enough load requests outstanding for every step the planner may plan
// now: steps up to prefetch_steps beyond the last acknowledged one. Requests
// go out in step order, and only while they fit the loader's window for
// sure (WindowBudget); the first that does not holds back every later one,
// so the earliest unplanned step is always served first.
void PlannerRole::request_ahead() {
  const uint64_t limit = std::min<uint64_t>(job_.config.job.steps, acked_steps_ + 1 + job_.config.job.prefetch_steps);
  while (next_step_ + quotas_.size() < limit) {
    realized_before_.push_back(mixer_.realized());
    quotas_.push_back(mixer_.next());
  }
  // Scratch kept across calls: the planner passes here on every message.
  need_.assign(sources_.size(), 0);
  outbox_.resize(static_cast<size_t>(job_.layout.loader_ranks()));
  const auto send_outbox = [&] {
    for (size_t i = 0; i < outbox_.size(); ++i) {
      if (outbox_[i].empty()) continue;
      send_loads(job_.layout.loader_rank(static_cast<int>(i)), outbox_[i]);
      outbox_[i].clear();
    }
  };
  for (size_t k = 0; k < quotas_.size(); ++k) {
    for (size_t s = 0; s < sources_.size(); ++s) need_[s] += quotas_[k][s];
    for (size_t s = 0; s < sources_.size(); ++s) {
      auto& src = sources_[s];
      while (src.next_request - src.consumed - src.bad_in_flight < need_[s]) {
        const uint64_t cursor = src.next_request;
        // Spread a source's requests over its loaders; which loader serves a
        // sample never changes its content.
        const int loader = src.loader_ranks[cursor % src.loader_ranks.size()];
        auto& items = outbox_[static_cast<size_t>(job_.layout.loader_index(loader))];
        if (!window_.fits(loader, loaders_.at(loader).outstanding.size() + items.size())) {
          send_outbox();
          if (k == 0) make_room(loader);
          return;
        }
        items.push_back({static_cast<uint32_t>(s), cursor, file_index(static_cast<uint32_t>(s), cursor)});
        src.next_request++;
      }
    }
  }
  send_outbox();
}

// stream_position(seed, source, samples, cursor).index, with the epoch's
// permutation kept between calls.
uint64_t PlannerRole::file_index(uint32_t source, uint64_t cursor) {
  SourceState& src = sources_[source];
  const uint64_t epoch = cursor / src.samples;
  if (!src.permutation || src.permutation_epoch != epoch) {
    src.permutation.emplace(src.samples, permutation_key(job_.config.job.seed, source, epoch));
    src.permutation_epoch = epoch;
  }
  return (*src.permutation)(cursor % src.samples);
}

// The earliest unplanned step needs a request that `loader`'s window cannot
// take. Once the loader has answered everything, samples loaded for later
// steps are given back (and asked for again later: same cursors, same
// bytes). If that frees nothing and no step in flight holds a slot there,
// the window cannot hold this one step: a configuration error.
void PlannerRole::make_room(int loader) {
  if (!loaders_.at(loader).outstanding.empty()) return;  // answers will come
  bool freed = false, waiting = false;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const std::optional<uint64_t> end = step_end(s);
    if (!end) continue;  // every sample loaded so far belongs to the earliest step
    if (rewind(static_cast<uint32_t>(s), *end, freed)) continue;
    waiting = true;  // a request of a later step is still out: rewind when it is answered
  }
  if (freed || waiting) return;
  for (const auto& [step, record] : in_flight_)
    if (record.slots.holds(loader)) return;  // released when that step is acknowledged
  throw ConfigError(str("loader.window_mb: loader ", job_.layout.loader_index(loader), "'s window (",
                        window_.capacity(), " bytes) cannot hold step ", next_step_, ": its samples there take ",
                        window_.used(loader), " bytes and the next may take up to job.max_sample_bytes = ",
                        job_.config.job.max_sample_bytes, "; raise loader.window_mb or lower job.max_sample_bytes"));
}

// The cursor of source `s` just past the earliest unplanned step's samples,
// once that many good samples are loaded.
std::optional<uint64_t> PlannerRole::step_end(size_t s) const {
  const auto& src = sources_[s];
  uint64_t good = 0, cursor = src.consumed;
  while (good < quotas_.front()[s]) {
    const SampleMeta* meta = src.resolved.find(cursor);
    if (!meta) return std::nullopt;
    if (meta->bad == 0) ++good;
    ++cursor;
  }
  return cursor;
}

// Forgets what source `s` loaded from cursor `end` on and asks for it again
// later; false (nothing done) while a request in that range is unanswered.
bool PlannerRole::rewind(uint32_t s, uint64_t end, bool& freed) {
  auto& src = sources_[s];
  for (const auto& [rank, track] : loaders_)
    if (track.outstanding.any_from(s, end)) return false;
  src.resolved.erase_from(end, [&](uint64_t, const SampleMeta& meta) {
    if (meta.bad != 0) {
      src.bad_in_flight--;
      return;
    }
    --src.resolved_good;
    releases_.add(meta.loader_rank, meta.slot_offset, meta.slot_bytes);
    freed = true;
  });
  send_releases(releases_, "giving back samples of later steps");
  src.next_request = std::min(src.next_request, end);
  return true;
}

void PlannerRole::on_meta(int loader_rank, const std::vector<SampleMeta>& metas) {
  LoaderTrack& track = loaders_.at(loader_rank);
  const auto now = std::chrono::steady_clock::now();
  if (online_)
    learn_costs(metas, std::chrono::duration<double>(now - track.last_heard).count(), threads_of(loader_rank));
  track.last_heard = now;
  bool read_failed = false;
  for (const auto& meta : metas) {
    auto& src = sources_.at(meta.source);
    const bool answered = track.outstanding.answer(meta.source, meta.cursor);
    // A late answer (from a loader that was handed over after a stall) for a
    // sample a shadow already loaded: free its slot, keep the shadow's.
    if (!answered || meta.cursor < src.consumed || src.resolved.contains(meta.cursor)) {
      if (meta.bad == 0) releases_.add(loader_rank, meta.slot_offset, meta.slot_bytes);
      continue;
    }
    // Storage failing on an active loader is the loader's failure, not the
    // sample's: a shadow retries it. Only a shadow's read error is final.
    if (meta.bad == static_cast<uint8_t>(BadKind::read_error) && !track.shadow && job_.layout.shadows > 0) {
      track.outstanding.add(LoadItem{meta.source, meta.cursor, meta.index});
      read_failed = true;
      continue;
    }
    if (meta.bad != 0) {
      src.bad_in_flight++;
      // A source whose every sample fails would be re-requested forever. Two
      // epochs' worth of failures without a single good sample proves it.
      if (!src.seen_good && src.bad_in_flight >= 2 * src.samples)
        throw DataError(str("source '", job_.config.sources[meta.source].name, "': none of its ", src.samples,
                          " samples can be loaded; see the bad-sample messages above"));
    } else {
      src.seen_good = true;
      window_.placed(loader_rank, meta.slot_bytes);
    }
    src.resolved.insert(meta.cursor, meta);
    if (meta.bad == 0) ++src.resolved_good;
  }
  send_releases(releases_, "releasing stale slots", false);  // never placed in window_
  if (read_failed) take_over(loader_rank, "failed to read its storage");
}

// Sends `slots` back to their loaders, and frees their bytes in the window
// budget where they were `placed` there.
void PlannerRole::send_releases(SlotReleases& slots, const char* why, bool placed) {
  slots.drain([&](int loader, const std::vector<SlotRange>& ranges, uint64_t bytes) {
    if (placed) window_.released(loader, bytes);
    out_.send(loader, kTagRelease, encode_release(ranges), why);
  });
}

// Plans step next_step_ if, for every source, the first quota good samples
// after the consumed cursor have all been loaded.
bool PlannerRole::try_plan_step() {
  if (quotas_.empty()) return false;
  // Counting first: the planner passes here on every message, and a scan of
  // the resolved samples each time would grow with the step's size squared.
  for (size_t s = 0; s < sources_.size(); ++s)
    if (sources_[s].resolved_good < quotas_.front()[s]) return false;
  std::vector<uint64_t> end_cursor(sources_.size());
  for (size_t s = 0; s < sources_.size(); ++s) {
    const std::optional<uint64_t> end = step_end(s);
    if (!end) return false;
    end_cursor[s] = *end;
  }
  const uint64_t step = next_step_;
  if (checkpoints_) {  // kept until a checkpoint passes the step
    StepStart& start = starts_[step];
    for (const auto& src : sources_) start.consumed.push_back(src.consumed);
    start.realized = realized_before_.front();
    start.bad = report_.bad_samples;
  }
  std::vector<SampleMeta> samples;
  std::vector<TraceSample> consumed;  // every cursor of the step, bad ones too
  for (size_t s = 0; s < sources_.size(); ++s) {
    auto& src = sources_[s];
    for (uint64_t cursor = src.consumed; cursor < end_cursor[s]; ++cursor) {
      const SampleMeta& meta = *src.resolved.find(cursor);
      if (trace_) consumed.push_back(trace_sample(meta));
      if (meta.bad != 0) {
        report_.bad_samples[meta.bad]++;
        src.bad_in_flight--;
      } else {
        samples.push_back(meta);
        --src.resolved_good;
      }
      src.resolved.erase(cursor);
    }
    src.consumed = end_cursor[s];
  }
  quotas_.pop_front();
  realized_before_.pop_front();
  ++next_step_;
  inject_fault(step);

  std::vector<PlanDoc> docs(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& m = samples[i];
    docs[i] = PlanDoc{static_cast<uint32_t>(i), m.positions(), m.patches, cost_.document(m.positions(), m.patches)};
  }
  std::vector<BucketPlan> buckets;
  const double placing_since = thread_cpu_seconds();
  if (mode_ == TrainingMode::colocated_tokens) {
    // The Megatron-style baseline packs in the step's arrival order, the one
    // the colocated client uses; msd's plans do not depend on the order.
    std::vector<PlanDoc> arrived;
    for (uint32_t i : arrival_order(job_.config.job.seed, step, static_cast<uint32_t>(docs.size()))) arrived.push_back(docs[i]);
    buckets = place_step(mode_, arrived, pack_, cost_);
  } else {
    // pack_.balance is the mode's (make_pack_options), as place_step would set it.
    PackedStep packed = pack_step(docs, pack_, cost_);
    report_.budget_binding_steps += packed.stats.budget_binding;
    report_.budget_exceeded_steps += packed.stats.budget_exceeded;
    buckets = std::move(packed.buckets);
  }
  report_.placement_cpu_seconds += thread_cpu_seconds() - placing_since;
  MSD_CHECK_EQ(buckets.size(), static_cast<size_t>(job_.tree.data_groups()));
  if (trace_) trace_->append_step(make_step_record(step, std::move(consumed), buckets, cost_));
  if (metrics_ && step >= deliver_from_) metrics_->planned(step, buckets, docs);

  InFlightStep record;
  record.step = step;
  const bool delivered = step >= deliver_from_;  // else fast-forwarded: no client gets it
  if (delivered) report_.document_digests.push_back(document_digest(step, samples));
  record.acks_missing = delivered ? static_cast<int>(peer_count_) : 0;
  record.samples.reserve(samples.size());
  for (const auto& m : samples) {
    record.slots.add(m.loader_rank, m.slot_offset, m.slot_bytes);
    record.samples.push_back({m.source, SampleState::planned, m.loader_rank, m.cursor, m.index});
  }
  record.tokens = send_plans(step, buckets, samples, delivered);
  out_.progress();
  if (delivered) {
    report_.tokens += record.tokens;
    acks_.sent(step, std::chrono::steady_clock::now());
  }
  in_flight_[step] = std::move(record);
  if (!delivered) complete_step(step);
  return true;
}

// Each data group's plan of `step`, to every client of the group that reads
// its own batch (none when the step is fast-forwarded, `delivered` false);
// returns the step's tokens.
uint64_t PlannerRole::send_plans(uint64_t step, const std::vector<BucketPlan>& buckets,
                                 const std::vector<SampleMeta>& samples, bool delivered) {
  uint64_t tokens = 0;
  plans_.start(step, pack_.seq_len, samples);
  for (int group = 0; group < job_.tree.data_groups(); ++group) {
    std::vector<uint8_t> bytes = plans_.encode(buckets[static_cast<size_t>(group)], tokens);
    if (!delivered) continue;
    int last = -1;  // the last receiver takes the bytes, the others a copy
    for (int client : job_.tree.group_members(group)) {
      if (!job_.talks_to_planner(client)) continue;
      if (last >= 0) out_.send(job_.layout.client_rank(last), kTagPlan, bytes, "sending a step plan");
      last = client;
    }
    if (last >= 0) out_.send(job_.layout.client_rank(last), kTagPlan, std::move(bytes), "sending a step plan");
  }
  return tokens;
}

// [fault] at its step: a loader is told (hang, stall, fail, crash), the
// planner itself throws (crash on rank 0); a client crashes on its own.
void PlannerRole::inject_fault(uint64_t step) {
  const FaultConfig& fault = job_.config.fault;
  // startup_stall and finish_stall are the rank's own, at start-up and at the end.
  if (step != fault.step || fault.kind == "startup_stall" || fault.kind == "finish_stall") return;
  const int rank = fault.rank >= 0 ? fault.rank : fault.loader >= 0 ? job_.layout.loader_rank(fault.loader) : -1;
  if (rank < 0) return;
  if (rank == job_.rank) throw Error(str("injected crash (fault.kind = crash) at step ", step));
  if (job_.layout.role(rank) == Role::loader)
    out_.send(rank, kTagFault, encode(FaultMessage{fault.kind, fault.stall_ms}), "injecting a fault");
}

void PlannerRole::on_ack(int client_rank, uint64_t step, double wait_seconds) {
  auto it = in_flight_.find(step);
  if (it == in_flight_.end())
    throw ProtocolError(str("client rank ", client_rank, " acknowledged step ", step, ", which is not in flight"));
  it->second.max_wait_seconds = std::max(it->second.max_wait_seconds, wait_seconds);
  it->second.wait_sum_seconds += wait_seconds;
  acks_.acked(client_rank, step);
  if (--it->second.acks_missing == 0) complete_step(step);
}

// Every client of every group has step `step` (or, fast-forwarded, none
// needs it): its slots are released and checkpoints taken.
void PlannerRole::complete_step(uint64_t step) {
  auto it = in_flight_.find(step);
  MSD_CHECK(it != in_flight_.end());
  acks_.completed(step);
  // Every client of every group has its bytes: the slots can be reused.
  send_releases(it->second.slots, "releasing slots");
  MSD_CHECK_EQ(step, acked_steps_);  // clients consume steps in order
  ++acked_steps_;
  if (checkpoints_ && acked_steps_ % job_.config.checkpoint.planner_every == 0) checkpoint(acked_steps_);
  const uint64_t loader_every = job_.config.checkpoint.loader_every;
  if (loader_every > 0 && acked_steps_ % loader_every == 0 && acked_steps_ < job_.config.job.steps)
    ask_loader_checkpoint(acked_steps_);
  if (step >= deliver_from_)
    progress_.step_done(step, it->second.tokens, it->second.max_wait_seconds, report_.tokens,
                        std::chrono::steady_clock::now());
  if (metrics_ && step >= deliver_from_) metrics_->completed(metrics_step(it->second));
  in_flight_.erase(it);
}

// The planner's state before `step` (every step < step delivered): the
// cursors, mixer totals and bad counts recorded when `step` was planned, or
// the current ones when it has not been planned yet; plus the DGraph of
// samples requested or loaded beyond it.
PlannerCheckpoint PlannerRole::state_before(uint64_t step) const {
  PlannerCheckpoint cp;
  cp.step = step;
  cp.seed = job_.config.job.seed;
  cp.config_ini = to_ini(job_.config);
  cp.data = data_;
  for (const auto& src : sources_) cp.source_samples.push_back(src.samples);
  if (auto it = starts_.find(step); it != starts_.end()) {
    cp.consumed = it->second.consumed;
    cp.mixer_realized = it->second.realized;
    cp.bad_samples = it->second.bad;
  } else {
    MSD_CHECK_EQ(step, next_step_);
    for (const auto& src : sources_) cp.consumed.push_back(src.consumed);
    cp.mixer_realized = realized_before_.empty() ? mixer_.realized() : realized_before_.front();
    cp.bad_samples = report_.bad_samples;
  }
  for (const auto& [planned, record] : in_flight_)
    if (planned >= step) cp.in_flight.insert(cp.in_flight.end(), record.samples.begin(), record.samples.end());
  for (uint32_t s = 0; s < sources_.size(); ++s) {
    sources_[s].resolved.for_each([&](uint64_t cursor, const SampleMeta& meta) {
      cp.in_flight.push_back({s, meta.bad ? SampleState::failed : SampleState::loaded, meta.loader_rank, cursor, meta.index});
    });
  }
  for (const auto& [rank, track] : loaders_)
    for (const auto& item : track.outstanding.items())
      cp.in_flight.push_back({item.source, SampleState::requested, rank, item.cursor, item.index});
  cp.loader_sources = assignment_now();
  return cp;
}

void PlannerRole::checkpoint(uint64_t step) {
  // The trace must hold every step before a checkpoint a resume may start from.
  if (trace_) trace_->sync();
  checkpoints_->submit(state_before(step));
  const double seconds = checkpoints_->last_write_seconds();
  report_.checkpoints++;
  report_.checkpoint_seconds += seconds;
  report_.checkpoint_max_seconds = std::max(report_.checkpoint_max_seconds, seconds);
  // Steps before the checkpoint are never needed again.
  starts_.erase(starts_.begin(), starts_.lower_bound(step));
}

// A loader checkpoint round: every live loader is asked to write its own part
// (u64 step, u32 writers) and answers "written". None waits on another, so a
// loader stopped inside its write is taken over like anywhere else once it is
// silent past checkpoint_write_bound(); the round then lacks its part, which
// a resume reads again (docs/checkpoint.md, "Loader checkpoint").
void PlannerRole::ask_loader_checkpoint(uint64_t step) {
  std::set<int> writers;
  for (const auto& [rank, track] : loaders_)
    if (!track.failed) writers.insert(rank);
  WireWriter w;
  w.u64(step);
  w.u32(static_cast<uint32_t>(writers.size()));
  if (!checkpoint_round_.begin(step, writers, std::chrono::steady_clock::now())) return;
  for (int rank : writers) out_.send(rank, kTagCheckpoint, w.bytes(), "asking loaders for a checkpoint");
}

// Ends the round once every part is written or its writer taken over (then
// prunes old rounds, checkpoint.keep).
void PlannerRole::advance_loader_checkpoint() {
  const auto bound = job_.checkpoint_write_bound();
  const auto gone = [&](int rank) { return loaders_.at(rank).failed; };
  const uint64_t step = checkpoint_round_.step();
  for (int rank : checkpoint_round_.drop_late(std::chrono::steady_clock::now(), bound, gone))
    take_over(rank, str("did not write its part of the loader checkpoint of step ", step, " within ", bound.count(),
                        " ms"));
  if (checkpoint_round_.finish())
    prune_loader_checkpoints(job_.config.checkpoint.dir, job_.config.checkpoint.keep);
}

void PlannerRole::on_checkpoint_written(int loader_rank, uint64_t step) {
  loaders_.at(loader_rank).last_heard = std::chrono::steady_clock::now();
  checkpoint_round_.written(loader_rank, step);
}

// Stops every loader and waits, bounded, for each to confirm; those that do
// not (stopped, hung) are left out of the summary and of a clean shutdown.
// Tells the others and every client who is left out.
void PlannerRole::stop_loaders() {
  std::set<int> waiting;
  for (int i = 0; i < job_.layout.loader_ranks(); ++i) {
    const int rank = job_.layout.loader_rank(i);
    out_.send(rank, kTagStop, {}, "stopping loaders");
    waiting.insert(rank);
  }
  const uint64_t bound_ms = std::clamp<uint64_t>(job_.config.loader.deadline_ms, 1000, 5000);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
  Backoff backoff;
  while (!waiting.empty() && std::chrono::steady_clock::now() < end) {
    if (auto message = job_.try_receive_at_planner("waiting for loaders to stop")) {
      if (message->tag == kTagStop) waiting.erase(message->source);  // late metadata and readiness are moot now
      if (message->tag == kTagProfile) loader_profiles_.record(message->source, decode_profile(message->bytes).sources);
      backoff.reset();
    } else {
      backoff.idle();
    }
  }
  report_.gone.assign(waiting.begin(), waiting.end());
  for (int rank : report_.gone)
    log_warn("loader ", job_.layout.loader_index(rank), " (world rank ", rank, ") did not confirm the stop within ",
             bound_ms, " ms; it is left out of the summary");
  const auto bytes = encode(RanksMessage{acked_steps_, report_.gone});
  for (int rank = 1; rank < job_.layout.world_size(); ++rank)
    if (!waiting.count(rank)) out_.send(rank, kTagFinish, bytes, "telling ranks who is left out");
}

// A step's line of output.metrics: what the planner knows when it completes.
MetricsStep PlannerRole::metrics_step(const InFlightStep& step) const {
  MetricsStep out;
  out.step = step.step;
  out.tokens = step.tokens;
  out.wait_max_seconds = step.max_wait_seconds;
  out.wait_sum_seconds = step.wait_sum_seconds;
  out.clients = static_cast<int>(peer_count_);  // the clients that acknowledge
  out.planner_work_seconds = work_.wall_seconds();
  out.backlog.assign(sources_.size(), 0);
  for (const auto& [rank, track] : loaders_)
    for (size_t s = 0; s < sources_.size(); ++s) out.backlog[s] += track.outstanding.of_source(static_cast<uint32_t>(s));
  for (const auto& src : sources_) out.source_loaders.push_back(src.loader_ranks);
  return out;
}

std::vector<SourceProfile> PlannerRole::profiles() const { return loader_profiles_.average(sources_.size()); }

void PlannerRole::handle(const Message& message) {
  if (message.tag == kTagMeta) {
    LoaderStatus status;
    on_meta(message.source, decode_meta(message.bytes, &status));
    if (metrics_) metrics_->loader_status(message.source, status);
  } else if (message.tag == kTagProfile) {
    loader_profiles_.record(message.source, decode_profile(message.bytes).sources);
  } else if (message.tag == kTagAck) {
    const AckMessage ack = decode_ack(message.bytes);
    if (metrics_) metrics_->client_rss(message.source, ack.rss_bytes);
    on_ack(message.source, ack.step, ack.wait_seconds);
  } else if (message.tag == kTagReassign) {
    on_reassigned(message.source, decode_hello(message.bytes));
  } else if (message.tag == kTagCheckpoint) {
    WireReader r(message.bytes, "loader checkpoint written");
    const uint64_t step = r.u64();
    r.finish();
    on_checkpoint_written(message.source, step);
  } else {
    throw ProtocolError(str("planner got unexpected tag ", message.tag, " from rank ", message.source));
  }
}

PlannerReport PlannerRole::serve() {
  progress_.start(std::chrono::steady_clock::now());
  if (metrics_) metrics_->start(progress_.started());
  const uint64_t steps = job_.config.job.steps;
  for (auto& [rank, message] : restore_) out_.send(rank, kTagReassign, encode(message), "restoring the assignment");
  restore_.clear();
  Backoff backoff;
  while (acked_steps_ < steps || checkpoint_round_.open()) {
    work_.begin();
    bool progressed = false;
    // Messages first, then whatever they made possible (requests into freed
    // room, the next step once its samples are in), in the same pass: a step
    // acknowledged or loaded costs one busy pass, not two.
    while (auto message = job_.try_receive_at_planner("waiting for loaders and clients")) {
      progressed = true;
      report_.messages_received++;
      handle(*message);
    }
    request_ahead();
    while (try_plan_step()) {
      progressed = true;
      request_ahead();
    }
    check_deadlines();
    acks_.check(std::chrono::steady_clock::now());
    scale_online();
    advance_moves();
    advance_loader_checkpoint();
    out_.progress();
    work_.end(progressed);
    sample_anon_shmem();
    if (progressed) {
      report_.busy_passes++;
      backoff.reset();
    } else {
      backoff.idle();
    }
  }
  report_.work_seconds = work_.wall_seconds();
  report_.work_cpu_seconds = work_.cpu_seconds();
  report_.messages_sent = out_.sent();
  stop_loaders();
  // Bounded: a send to a loader that stopped receiving never completes.
  out_.drain_for(std::clamp<uint64_t>(job_.config.loader.deadline_ms, 1000, 5000));
  if (trace_) trace_->close();
  if (checkpoints_) checkpoints_->finish();
  report_.steps = acked_steps_ - deliver_from_;
  report_.profiles = profiles();
  report_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - progress_.started()).count();
  return report_;
}

}  // namespace msd
