#include "planner/planner.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/digest.h"
#include "common/files.h"
#include "common/log.h"
#include "common/memory.h"
#include "config/part_options.h"
#include "runtime/fatal.h"
#include "profile/message.h"
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
MetricsOptions metrics_options(const Config& config) {
  MetricsOptions options;
  options.path = config.output.metrics;
  for (const SourceConfig& source : config.sources) options.sources.push_back(source.name);
  options.seq_len = config.job.seq_len;
  options.device = make_device_model(config);
  options.parallel = parallel_of(config);
  options.cost = make_cost_model(config);
  options.varlen = make_pack_options(config).varlen;
  return options;
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
                         const std::optional<PlannerCheckpoint>& resume, DataFingerprint data, bool changed_mix)
    : job_(job),
      out_(job.world.get()),
      fleet_(job, out_, job.config.sources.size()),
      scaler_(job, fleet_, out_, sources),
      streams_(job, fleet_, scaler_, out_, sources),
      loader_checkpoints_(job, fleet_, out_),
      cost_(make_cost_model(job.config)),
      pack_(planner_pack_options(job.config)),
      mode_(job.config.job.mode()),
      acks_(job.planner_peers(), job.config.job.stall_timeout_s),
      peer_count_(job.planner_peers().size()),
      hold_(pack_.hold),
      data_(std::move(data)) {
  report_.bad_samples.assign(bad_kind_count, 0);
  for (uint32_t s = 0; s < streams_.sources(); ++s)
    report_.shuffles.push_back({streams_.order(s), streams_.samples(s), {}});
  if (resume) {
    // Continue where the checkpoint's run stood before step `resume->step`.
    first_step_ = next_step_ = acked_steps_ = resume->step;
    streams_.resume_at(*resume);
    report_.bad_samples = resume->bad_samples;
    report_.bad_samples.resize(bad_kind_count, 0);
    scaler_.restore(*resume);
    hold_.restore(resume->held);  // serve() loads its documents again before any step
  }
  deliver_from_ = std::max(job.first_step, first_step_);
  report_.first_step = deliver_from_;
  const CheckpointConfig& ckpt = job.config.checkpoint;
  const std::string trace_path = !ckpt.trace.empty() ? ckpt.trace : ckpt.dir.empty() ? "" : join_path(ckpt.dir, "trace.h5");
  if (!trace_path.empty()) {
    std::vector<uint64_t> sizes;
    for (uint32_t s = 0; s < streams_.sources(); ++s) sizes.push_back(streams_.samples(s));
    trace_ = std::make_unique<TraceWriter>(trace_path, make_trace_header(job.config, sizes, data_), first_step_, 16,
                                           changed_mix);
  }
  if (!ckpt.dir.empty()) checkpoints_ = std::make_unique<PlannerCheckpointWriter>(ckpt.dir, ckpt.keep);
  if (changed_mix && checkpoints_) checkpoints_->submit(*resume);
  if (!job.config.output.metrics.empty()) metrics_ = std::make_unique<MetricsWriter>(metrics_options(job.config));
}

// Plans step next_step_ once, for every source, the first quota good samples
// after the consumed cursor have all been loaded.
bool PlannerRole::try_plan_step() {
  if (!streams_.reloaded(held_meta_)) return false;  // a resume's held documents come first
  const std::vector<uint64_t> bad_before = report_.bad_samples;
  std::optional<SampleStreams::Step> taken = streams_.take_step(report_.bad_samples, trace_ != nullptr);
  if (!taken) return false;
  const uint64_t step = next_step_;
  if (checkpoints_)  // kept until a checkpoint passes the step
    starts_[step] =
        StepStart{std::move(taken->consumed_before), std::move(taken->realized_before), bad_before, hold_.held()};
  ++next_step_;
  inject_fault(step);

  // The stream's documents of the step, before the hold: the same on every mesh.
  const uint64_t documents = document_digest(step, taken->samples);
  std::vector<bool> held;
  const std::vector<SampleMeta> samples = apply_hold(step, *taken, held);
  std::vector<PlanDoc> docs(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& m = samples[i];
    docs[i] = PlanDoc{static_cast<uint32_t>(i), m.positions(), m.patches, cost_.document(m.positions(), m.patches)};
  }
  const std::vector<BucketPlan> buckets = place(step, docs);
  if (trace_) {
    const std::vector<uint32_t> rows = delivered_rows(step, taken->consumed, held);
    trace_->append_step(make_step_record(step, std::move(taken->consumed), buckets, cost_, rows));
  }
  if (metrics_ && step >= deliver_from_) metrics_->planned(step, buckets, docs);

  InFlightStep record;
  record.step = step;
  const bool delivered = step >= deliver_from_;  // else fast-forwarded: no client gets it
  if (delivered) {
    report_.document_digests.push_back(documents);
    record_locality(buckets, samples);
  }
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
    job_.end_startup();
  }
  in_flight_[step] = std::move(record);
  if (!delivered) complete_step(step);
  return true;
}

// What the stream's order gives up in randomness, as the summary reports
// it: in each rank's batch, the distance between the file indexes of a
// source's documents that follow each other (each document counted at its
// first piece).
void PlannerRole::record_locality(const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples) {
  std::vector<std::optional<uint64_t>> last(report_.shuffles.size());
  for (const BucketPlan& bucket : buckets) {
    std::fill(last.begin(), last.end(), std::nullopt);
    for (const MicroBatchPlan& micro_batch : bucket.micro_batches)
      for (const PackedSequence& sequence : micro_batch.sequences)
        for (const Piece& piece : sequence.pieces) {
          if (piece.begin != 0) continue;
          const SampleMeta& m = samples.at(piece.doc);
          if (last.at(m.source)) report_.shuffles[m.source].locality.add(*last[m.source], m.index);
          last[m.source] = m.index;
        }
  }
}

// The step's documents after the outlier hold: those it took that do not
// wait, in order, then the waiting ones of earlier steps it delivers, oldest
// first (the trace's rows gain those, from the step that took them).
// held[i]: the i-th good sample taken waits.
std::vector<SampleMeta> PlannerRole::apply_hold(uint64_t step, SampleStreams::Step& taken, std::vector<bool>& held) {
  for (TraceSample& row : taken.consumed) row.from_step = step;
  if (!hold_.options().enabled() && hold_.held().empty()) return std::move(taken.samples);
  std::vector<HeldDoc> arrivals;
  arrivals.reserve(taken.samples.size());
  for (const SampleMeta& m : taken.samples) arrivals.push_back({m.source, m.cursor, m.positions(), m.patches, step});
  OutlierHold::Decision decision = hold_.step(step, arrivals);
  std::vector<SampleMeta> samples;
  samples.reserve(taken.samples.size() + decision.released.size());
  for (size_t i = 0; i < taken.samples.size(); ++i) {
    const SampleMeta& m = taken.samples[i];
    if (decision.held[i])
      held_meta_.emplace(std::make_pair(m.source, m.cursor), m);
    else
      samples.push_back(m);
  }
  for (const HeldDoc& doc : decision.released) {
    auto it = held_meta_.find({doc.source, doc.cursor});
    MSD_CHECK(it != held_meta_.end());
    samples.push_back(it->second);
    if (trace_) {
      taken.consumed.push_back(trace_sample(it->second));
      taken.consumed.back().from_step = doc.since;
    }
    held_meta_.erase(it);
  }
  if (step >= deliver_from_) report_.placement.hold.add(step, decision.released);
  held = std::move(decision.held);
  return samples;
}

// The step's documents over the data groups, as job.mode places them.
std::vector<BucketPlan> PlannerRole::place(uint64_t step, const std::vector<PlanDoc>& docs) {
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
    if (step >= deliver_from_) {
      PlacementReport& placed = report_.placement;
      placed.pieces += packed.stats.pieces;
      placed.megatron_pieces += packed.stats.megatron_pieces;
      placed.max_micro_batches = std::max(placed.max_micro_batches, packed.stats.max_micro_batches);
    }
    buckets = std::move(packed.buckets);
  }
  report_.placement_cpu_seconds += thread_cpu_seconds() - placing_since;
  MSD_CHECK_EQ(buckets.size(), static_cast<size_t>(job_.tree.data_groups()));
  return buckets;
}

// Each data group's plan of `step`, to every client of the group that reads
// its own batch (none when the step is fast-forwarded, `delivered` false);
// returns the step's tokens.
uint64_t PlannerRole::send_plans(uint64_t step, const std::vector<BucketPlan>& buckets,
                                 const std::vector<SampleMeta>& samples, bool delivered) {
  uint64_t tokens = 0;
  plans_.start(step, pack_.seq_len, samples, loss_tokens(buckets, samples));
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
  if (!stopping_.empty()) check_stops();
  if (--it->second.acks_missing == 0) complete_step(step);
}

void PlannerRole::on_stopping(int client_rank, uint64_t step) {
  stopping_[client_rank] = step;
  acks_.stopped(client_rank);
  check_stops();
}

// A trainer may finish before the stream's end, on every client at the same
// step: the stream then ends there. A client that goes on past another's
// stop, or stops at another step, is the trainer's misuse, named at once
// (TrainerError) rather than when the stall bound runs out.
void PlannerRole::check_stops() {
  const auto first = std::min_element(stopping_.begin(), stopping_.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto [rank, step] = *first;
  const std::string stopped = str("client world rank ", rank, " called finish() at step ", step,
                                  ", before the stream's end (job.steps = ", job_.config.job.steps, ")");
  for (const auto& [other, other_step] : stopping_)
    if (other_step != step)
      throw TrainerError(str(stopped, ", client world rank ", other, " at step ", other_step,
                             ": every client must finish at the same step"));
  if (const auto going = acks_.acknowledged_from(step))
    throw TrainerError(str(stopped, " while client world rank ", going->first, " went on to step ", going->second,
                           ": one client finishing while the others go on is a usage error; every client must "
                           "finish at the same step"));
  if (stopping_.size() == peer_count_) end_early_ = step;
}

// job.stall_timeout_s; after a client finished early, the clients that
// neither acknowledge nor finish are the trainer's misuse (they may wait for
// the finished one in a collective).
void PlannerRole::check_acks() {
  try {
    acks_.check(std::chrono::steady_clock::now());
  } catch (const Error& e) {
    if (stopping_.empty()) throw;
    throw TrainerError(str(e.what(), "; client world rank ", stopping_.begin()->first, " called finish() at step ",
                           stopping_.begin()->second, ": every client must finish at the same step"));
  }
}

// Every client finished at `end`: the steps planned beyond it are never
// delivered (their tokens and document digests leave the report), and a
// planner checkpoint of `end` lets --resume continue exactly there.
void PlannerRole::end_stream_early(uint64_t end) {
  log_info("every client finished at step ", end, ", before the stream's end (job.steps = ", job_.config.job.steps,
           "): the stream ends there");
  for (auto it = in_flight_.lower_bound(std::max(end, deliver_from_)); it != in_flight_.end(); ++it)
    report_.tokens -= it->second.tokens;
  if (report_.document_digests.size() > end - deliver_from_) report_.document_digests.resize(end - deliver_from_);
  if (checkpoints_ && end % job_.config.checkpoint.planner_every != 0) checkpoint(end);
}

// Every client of every group has step `step` (or, fast-forwarded, none
// needs it): its slots are released and checkpoints taken.
void PlannerRole::complete_step(uint64_t step) {
  auto it = in_flight_.find(step);
  MSD_CHECK(it != in_flight_.end());
  acks_.completed(step);
  // Every client of every group has its bytes: the slots can be reused.
  streams_.release(it->second.slots, "releasing slots");
  MSD_CHECK_EQ(step, acked_steps_);  // clients consume steps in order
  ++acked_steps_;
  note_step(acked_steps_);
  if (checkpoints_ && acked_steps_ % job_.config.checkpoint.planner_every == 0) checkpoint(acked_steps_);
  const uint64_t loader_every = job_.config.checkpoint.loader_every;
  if (loader_every > 0 && acked_steps_ % loader_every == 0 && acked_steps_ < job_.config.job.steps)
    loader_checkpoints_.ask(acked_steps_);
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
  for (uint32_t s = 0; s < streams_.sources(); ++s) cp.source_samples.push_back(streams_.samples(s));
  if (auto it = starts_.find(step); it != starts_.end()) {
    cp.consumed = it->second.consumed;
    cp.mixer_realized = it->second.realized;
    cp.bad_samples = it->second.bad;
    cp.held = it->second.held;
  } else {
    MSD_CHECK_EQ(step, next_step_);
    cp.consumed = streams_.consumed();
    cp.mixer_realized = streams_.realized_next();
    cp.bad_samples = report_.bad_samples;
    cp.held = hold_.held();
  }
  for (const auto& [planned, record] : in_flight_)
    if (planned >= step) cp.in_flight.insert(cp.in_flight.end(), record.samples.begin(), record.samples.end());
  streams_.for_each_resolved([&](uint32_t s, uint64_t cursor, const SampleMeta& meta) {
    cp.in_flight.push_back({s, meta.bad ? SampleState::failed : SampleState::loaded, meta.loader_rank, cursor, meta.index});
  });
  for (const auto& [rank, track] : fleet_.tracks())
    for (const auto& item : track.outstanding.items())
      cp.in_flight.push_back({item.source, SampleState::requested, rank, item.cursor, item.index});
  cp.loader_sources = fleet_.assignment();
  streams_.stream_state(cp);
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
  for (uint32_t s = 0; s < streams_.sources(); ++s) out.backlog.push_back(fleet_.pending(s));
  out.source_loaders = fleet_.serving();
  return out;
}

std::vector<SourceProfile> PlannerRole::profiles() const { return loader_profiles_.average(streams_.sources()); }

void PlannerRole::handle(const Message& message) {
  if (message.tag == kTagMeta) {
    LoaderStatus status;
    streams_.on_meta(message.source, decode_meta(message.bytes, &status), next_step_);
    if (metrics_) metrics_->loader_status(message.source, status);
  } else if (message.tag == kTagProfile) {
    loader_profiles_.record(message.source, decode_profile(message.bytes).sources);
  } else if (message.tag == kTagAck) {
    const AckMessage ack = decode_ack(message.bytes);
    if (metrics_) metrics_->client_rss(message.source, ack.rss_bytes);
    on_ack(message.source, ack.step, ack.wait_seconds);
  } else if (message.tag == kTagReassign) {
    scaler_.reassigned(message.source, decode_hello(message.bytes));
  } else if (message.tag == kTagCheckpoint) {
    loader_checkpoints_.written(message.source, message.bytes);
  } else if (message.tag == kTagStopping) {
    on_stopping(message.source, decode_ack(message.bytes).step);
  } else {
    throw ProtocolError(str("planner got unexpected tag ", message.tag, " from rank ", message.source));
  }
}

PlannerReport PlannerRole::serve() {
  progress_.start(std::chrono::steady_clock::now());
  if (metrics_) metrics_->start(progress_.started());
  scaler_.send_restores();
  streams_.reload(hold_.held());  // a resume's held documents, to their loaders as restored
  // Requests for the steps up to prefetch_steps beyond the last acknowledged
  // one; a loader whose window is full gets room back as steps in flight
  // release their slots.
  const auto request_ahead = [&] {
    const uint64_t limit = std::min<uint64_t>(stream_end(), acked_steps_ + 1 + job_.config.job.prefetch_steps);
    streams_.request_ahead(next_step_, limit, [&](int loader) {
      return std::any_of(in_flight_.begin(), in_flight_.end(),
                         [&](const auto& step) { return step.second.slots.holds(loader); });
    });
  };
  Backoff backoff;
  while (acked_steps_ < stream_end() || loader_checkpoints_.round().open()) {
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
    while (!end_early_ && try_plan_step()) {
      progressed = true;
      request_ahead();
    }
    fleet_.check_deadlines(next_step_, loader_checkpoints_.round());
    check_acks();
    scaler_.run(next_step_, streams_.schedule(), loader_profiles_);
    loader_checkpoints_.advance(next_step_);
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
  if (end_early_) end_stream_early(*end_early_);
  report_.work_seconds = work_.wall_seconds();
  report_.work_cpu_seconds = work_.cpu_seconds();
  report_.messages_sent = out_.sent();
  stop_loaders();
  // Bounded: a send to a loader that stopped receiving never completes.
  out_.drain_for(std::clamp<uint64_t>(job_.config.loader.deadline_ms, 1000, 5000));
  if (trace_) trace_->close();
  if (checkpoints_) checkpoints_->finish();
  report_.steps = acked_steps_ - deliver_from_;
  report_.takeovers = fleet_.takeovers();
  report_.moves = scaler_.moves();
  report_.profiles = profiles();
  report_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - progress_.started()).count();
  return report_;
}

}  // namespace msd
