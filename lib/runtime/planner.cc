#include "runtime/planner.h"

#include <algorithm>
#include <cstdio>

#include "common/files.h"
#include "common/log.h"
#include "source/permutation.h"
#include "source/source.h"

namespace msd {

PlannerRole::PlannerRole(JobContext& job, const std::vector<SourceInfo>& sources,
                         const std::optional<PlannerCheckpoint>& resume, DataFingerprint data)
    : job_(job),
      out_(job.world.get()),
      mixer_(make_schedule(job.config), job.config.job.global_batch),
      cost_(make_cost_model(job.config)),
      pack_(make_pack_options(job.config)) {
  sources_.resize(job.config.sources.size());
  for (const auto& info : sources) sources_.at(info.source).samples = info.samples;
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
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < job.layout.loader_ranks(); ++i) {
    LoaderTrack& track = loaders_[job.layout.loader_rank(i)];
    track.last_heard = now;
    track.shadow = job.layout.is_shadow(i);
    track.in_use = !track.shadow;
  }
}

void PlannerRole::send_loads(int loader_rank, std::vector<LoadItem> items) {
  if (items.empty()) return;
  LoaderTrack& track = loaders_.at(loader_rank);
  // Silence is measured from when a loader had something to answer.
  if (track.outstanding.empty()) track.last_heard = std::chrono::steady_clock::now();
  for (const auto& item : items) track.outstanding[{item.source, item.cursor}] = item;
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
  if (shadow_rank < 0) {
    if (!failed.outstanding.empty() && !no_shadow_warned_) {
      log_warn("loader ", index, " ", why, ", and no shadow loader is left (topology.shadow_loaders); waiting");
      no_shadow_warned_ = true;
    }
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  failed.failed = true;
  loaders_.at(shadow_rank).in_use = true;
  for (auto& src : sources_)
    std::replace(src.loader_ranks.begin(), src.loader_ranks.end(), loader_rank, shadow_rank);
  std::vector<LoadItem> items;
  for (const auto& [key, item] : failed.outstanding) items.push_back(item);
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
  send_loads(shadow_rank, std::move(items));
}

void PlannerRole::check_deadlines() {
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = std::chrono::milliseconds(job_.config.loader.deadline_ms);
  for (auto& [rank, track] : loaders_) {
    if (track.failed || track.outstanding.empty() || now - track.last_heard < deadline) continue;
    take_over(rank, str("missed its deadline (", job_.config.loader.deadline_ms, " ms, loader.deadline_ms)"));
  }
}

// Keeps enough load requests outstanding for every step the planner may plan
// now: steps up to prefetch_steps beyond the last acknowledged one.
void PlannerRole::request_ahead() {
  const uint64_t limit = std::min<uint64_t>(job_.config.job.steps, acked_steps_ + 1 + job_.config.job.prefetch_steps);
  while (next_step_ + quotas_.size() < limit) {
    realized_before_.push_back(mixer_.realized());
    quotas_.push_back(mixer_.next());
  }
  std::vector<uint64_t> need(sources_.size(), 0);
  for (const auto& quota : quotas_)
    for (size_t s = 0; s < quota.size(); ++s) need[s] += quota[s];
  std::map<int, std::vector<LoadItem>> outbox;
  for (size_t s = 0; s < sources_.size(); ++s) {
    auto& src = sources_[s];
    while (src.next_request - src.consumed - src.bad_in_flight < need[s]) {
      const uint64_t cursor = src.next_request++;
      const StreamPosition pos = stream_position(job_.config.job.seed, static_cast<uint32_t>(s), src.samples, cursor);
      // Spread a source's requests over its loaders; which loader serves a
      // sample never changes its content.
      const int loader = src.loader_ranks[cursor % src.loader_ranks.size()];
      outbox[loader].push_back({static_cast<uint32_t>(s), cursor, pos.index});
    }
  }
  for (auto& [loader, items] : outbox) send_loads(loader, std::move(items));
}

void PlannerRole::on_meta(int loader_rank, const std::vector<SampleMeta>& metas) {
  LoaderTrack& track = loaders_.at(loader_rank);
  track.last_heard = std::chrono::steady_clock::now();
  std::vector<uint64_t> stale_slots;
  bool read_failed = false;
  for (const auto& meta : metas) {
    auto& src = sources_.at(meta.source);
    const bool answered = track.outstanding.erase({meta.source, meta.cursor}) > 0;
    // A late answer (from a loader that was handed over after a stall) for a
    // sample a shadow already loaded: free its slot, keep the shadow's.
    if (!answered || meta.cursor < src.consumed || src.resolved.count(meta.cursor)) {
      if (meta.bad == 0) stale_slots.push_back(meta.slot_offset);
      continue;
    }
    // Storage failing on an active loader is the loader's failure, not the
    // sample's: a shadow retries it. Only a shadow's read error is final.
    if (meta.bad == static_cast<uint8_t>(BadKind::read_error) && !track.shadow && job_.layout.shadows > 0) {
      track.outstanding[{meta.source, meta.cursor}] = LoadItem{meta.source, meta.cursor, meta.index};
      read_failed = true;
      continue;
    }
    if (meta.bad != 0) {
      src.bad_in_flight++;
      // A source whose every sample fails would be re-requested forever. Two
      // epochs' worth of failures without a single good sample proves it.
      if (!src.seen_good && src.bad_in_flight >= 2 * src.samples)
        throw IoError(str("source '", job_.config.sources[meta.source].name, "': none of its ", src.samples,
                          " samples can be loaded; see the bad-sample messages above"));
    } else {
      src.seen_good = true;
    }
    src.resolved[meta.cursor] = meta;
  }
  if (!stale_slots.empty())
    out_.send(loader_rank, kTagRelease, encode_release(stale_slots), "releasing stale slots");
  if (read_failed) take_over(loader_rank, "failed to read its storage");
}

// Plans step next_step_ if, for every source, the first quota good samples
// after the consumed cursor have all been loaded.
bool PlannerRole::try_plan_step() {
  if (quotas_.empty()) return false;
  const auto& quota = quotas_.front();
  std::vector<uint64_t> end_cursor(sources_.size());
  for (size_t s = 0; s < sources_.size(); ++s) {
    auto& src = sources_[s];
    uint64_t good = 0;
    uint64_t cursor = src.consumed;
    while (good < quota[s]) {
      auto it = src.resolved.find(cursor);
      if (it == src.resolved.end()) return false;
      if (it->second.bad == 0) ++good;
      ++cursor;
    }
    end_cursor[s] = cursor;
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
      auto it = src.resolved.find(cursor);
      if (trace_) consumed.push_back(trace_sample(it->second));
      if (it->second.bad != 0) {
        report_.bad_samples[it->second.bad]++;
        src.bad_in_flight--;
      } else {
        samples.push_back(it->second);
      }
      src.resolved.erase(it);
    }
    src.consumed = end_cursor[s];
  }
  quotas_.pop_front();
  realized_before_.pop_front();
  ++next_step_;
  const FaultConfig& fault = job_.config.fault;
  if (fault.loader >= 0 && step == fault.step)
    out_.send(job_.layout.loader_rank(fault.loader), kTagFault,
               encode(FaultMessage{fault.kind, fault.stall_ms}), "injecting a fault");

  std::vector<PlanDoc> docs(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& m = samples[i];
    docs[i] = PlanDoc{static_cast<uint32_t>(i), m.positions(), m.patches, cost_.document(m.positions(), m.patches)};
  }
  std::vector<BucketPlan> buckets = distribute_and_pack(docs, pack_, cost_);
  MSD_CHECK_EQ(buckets.size(), static_cast<size_t>(job_.tree.data_groups()));
  if (trace_) trace_->append_step(make_step_record(step, std::move(consumed), buckets, cost_));

  InFlightStep record;
  record.step = step;
  const bool delivered = step >= deliver_from_;  // else fast-forwarded: no client gets it
  record.acks_missing = delivered ? job_.tree.size() : 0;
  for (const auto& m : samples) {
    record.slots.push_back({m.loader_rank, m.slot_offset});
    record.samples.push_back({m.source, SampleState::planned, m.loader_rank, m.cursor, m.index});
  }
  for (int group = 0; group < job_.tree.data_groups(); ++group) {
    const BucketPlan& bucket = buckets[static_cast<size_t>(group)];
    StepPlan plan;
    plan.step = step;
    plan.seq_len = pack_.seq_len;
    std::map<uint32_t, uint32_t> local;  // step sample -> index in this plan
    for (const auto& mb : bucket.micro_batches) {
      MicroBatchWire wire_mb;
      for (const auto& seq : mb.sequences) {
        SequencePlan wire_seq;
        for (const auto& piece : seq.pieces) {
          auto [it, inserted] = local.try_emplace(piece.doc, static_cast<uint32_t>(plan.samples.size()));
          if (inserted) plan.samples.push_back(samples[piece.doc]);
          wire_seq.pieces.push_back({it->second, piece.begin, piece.length});
          record.tokens += piece.length;
        }
        wire_mb.sequences.push_back(std::move(wire_seq));
      }
      plan.micro_batches.push_back(std::move(wire_mb));
    }
    const auto bytes = encode(plan);
    for (int client : job_.tree.group_members(group))
      if (delivered) out_.send(job_.layout.client_rank(client), kTagPlan, bytes, "sending a step plan");
    out_.progress();
  }
  if (delivered) report_.tokens += record.tokens;
  in_flight_[step] = std::move(record);
  if (!delivered) complete_step(step);
  return true;
}

void PlannerRole::on_ack(int client_rank, uint64_t step, double wait_seconds) {
  auto it = in_flight_.find(step);
  if (it == in_flight_.end())
    throw ProtocolError(str("client rank ", client_rank, " acknowledged step ", step, ", which is not in flight"));
  it->second.max_wait_seconds = std::max(it->second.max_wait_seconds, wait_seconds);
  if (--it->second.acks_missing == 0) complete_step(step);
}

// Every client of every group has step `step` (or, fast-forwarded, none
// needs it): its slots are released and checkpoints taken.
void PlannerRole::complete_step(uint64_t step) {
  auto it = in_flight_.find(step);
  MSD_CHECK(it != in_flight_.end());
  // Every client of every group has its bytes: the slots can be reused.
  std::map<int, std::vector<uint64_t>> releases;
  for (const auto& [loader, offset] : it->second.slots) releases[loader].push_back(offset);
  for (const auto& [loader, offsets] : releases)
    out_.send(loader, kTagRelease, encode_release(offsets), "releasing slots");
  MSD_CHECK_EQ(step, acked_steps_);  // clients consume steps in order
  ++acked_steps_;
  if (checkpoints_ && acked_steps_ % job_.config.checkpoint.planner_every == 0) checkpoint(acked_steps_);
  const uint64_t loader_every = job_.config.checkpoint.loader_every;
  if (loader_every > 0 && acked_steps_ % loader_every == 0 && acked_steps_ < job_.config.job.steps) {
    WireWriter w;
    w.u64(acked_steps_);
    for (int i = 0; i < job_.layout.loader_ranks(); ++i)
      out_.send(job_.layout.loader_rank(i), kTagCheckpoint, w.bytes(), "asking loaders for a checkpoint");
  }
  if (step >= deliver_from_) report_progress(it->second);
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
    for (const auto& [cursor, meta] : sources_[s].resolved)
      cp.in_flight.push_back({s, meta.bad ? SampleState::failed : SampleState::loaded, meta.loader_rank, cursor, meta.index});
  }
  for (const auto& [rank, track] : loaders_)
    for (const auto& [key, item] : track.outstanding)
      cp.in_flight.push_back({item.source, SampleState::requested, rank, item.cursor, item.index});
  return cp;
}

void PlannerRole::checkpoint(uint64_t step) {
  // The trace must hold every step before a checkpoint a resume may start from.
  if (trace_) trace_->flush();
  checkpoints_->submit(state_before(step));
  const double seconds = checkpoints_->last_write_seconds();
  report_.checkpoints++;
  report_.checkpoint_seconds += seconds;
  report_.checkpoint_max_seconds = std::max(report_.checkpoint_max_seconds, seconds);
  // Steps before the checkpoint are never needed again.
  starts_.erase(starts_.begin(), starts_.lower_bound(step));
}

void PlannerRole::report_progress(const InFlightStep& step) {
  const auto now = std::chrono::steady_clock::now();
  const double step_seconds = std::chrono::duration<double>(now - last_step_done_).count();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  last_step_done_ = now;
  const uint32_t every = job_.config.output.progress_every;
  const uint64_t steps = job_.config.job.steps;
  if (every == 0 || log_level() > LogLevel::info) return;
  if ((step.step + 1) % every != 0 && step.step + 1 != steps) return;
  char line[256];
  std::snprintf(line, sizeof line, "step %llu/%llu  tokens %llu  step %.0f ms  data wait (max over ranks) %.1f ms  %.0f tokens/s",
                static_cast<unsigned long long>(step.step + 1), static_cast<unsigned long long>(steps),
                static_cast<unsigned long long>(step.tokens), step_seconds * 1e3, step.max_wait_seconds * 1e3,
                elapsed > 0 ? static_cast<double>(report_.tokens) / elapsed : 0.0);
  log_info(line);
}

PlannerReport PlannerRole::serve() {
  start_ = last_step_done_ = std::chrono::steady_clock::now();
  const uint64_t steps = job_.config.job.steps;
  Backoff backoff;
  while (acked_steps_ < steps) {
    bool progressed = false;
    request_ahead();
    while (try_plan_step()) {
      progressed = true;
      request_ahead();
    }
    while (auto message = try_receive(job_.world.get(), MPI_ANY_SOURCE, MPI_ANY_TAG, "waiting for loaders and clients")) {
      progressed = true;
      if (message->tag == kTagMeta) {
        on_meta(message->source, decode_meta(message->bytes));
      } else if (message->tag == kTagAck) {
        const AckMessage ack = decode_ack(message->bytes);
        on_ack(message->source, ack.step, ack.wait_seconds);
      } else {
        throw ProtocolError(str("planner got unexpected tag ", message->tag, " from rank ", message->source));
      }
    }
    check_deadlines();
    out_.progress();
    if (progressed) backoff.reset();
    else backoff.idle();
  }
  for (int loader = 0; loader < job_.layout.loader_ranks(); ++loader)
    out_.send(job_.layout.loader_rank(loader), kTagStop, encode_release({}), "stopping loaders");

  out_.drain();
  if (trace_) trace_->close();
  if (checkpoints_) checkpoints_->finish();
  report_.steps = acked_steps_ - deliver_from_;
  report_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return report_;
}

}  // namespace msd
