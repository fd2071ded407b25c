#include "client/colocated.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "common/digest.h"
#include "common/log.h"
#include "config/part_options.h"
#include "plan/step/baseline.h"
#include "plan/step/modes.h"
#include "source/permutation.h"
#include "transport/slot.h"

namespace msd {

namespace {
// Reads from the rank's own memory, laid out like a loader window.
class ArenaFetcher : public ByteFetcher {
 public:
  explicit ArenaFetcher(const std::vector<uint8_t>& arena) : arena_(arena) {}
  void get(int, uint64_t offset, void* out, uint64_t bytes) override {
    MSD_CHECK_LE(offset + bytes, arena_.size());
    std::memcpy(out, arena_.data() + offset, bytes);
  }
  void complete() override {}

 private:
  const std::vector<uint8_t>& arena_;
};
}  // namespace

ColocatedClient::ColocatedClient(JobContext& job, int client_index)
    : job_(job),
      client_index_(client_index),
      data_group_(job.tree.data_group(client_index)),
      pipeline_(pipeline_options(job.config)),
      mixer_(make_schedule(job.config), job.config.job.global_batch) {
  pipeline_.open_all();
  for (uint32_t s = 0; s < pipeline_.source_count(); ++s) {
    const Source& source = *pipeline_.source(s);
    state_bytes_ += source.state_bytes();
    job_.startup.files_indexed += source.index_counts().scanned;
    job_.startup.files_cached += source.index_counts().cached;
  }
  if (pipeline_.tokenizer()) state_bytes_ += pipeline_.tokenizer()->state_bytes();
  next_cursor_.assign(pipeline_.source_count(), 0);
  bad_.assign(bad_kind_count, 0);
}

ColocatedClient::~ColocatedClient() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  if (worker_.joinable()) worker_.join();
}

// The prefetch thread stops, and the step watchdog with it: the trainer asks
// for no more steps.
void ColocatedClient::stop_early() {
  steps_.reset();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ColocatedClient::start(int32_t image_token_id) {
  // The baseline's trainer slices after loading: each rank keeps its CP
  // slice and stage fields of the whole samples it loaded.
  options_ = build_options_for(job_.tree, client_index_, image_token_id);
  worker_ = std::thread([this] { prefetch_loop(); });
  steps_ = std::make_unique<Watchdog>("msd", "a colocated step", job_.config.job.stall_timeout_s);
  steps_->phase("the trainer between two steps: it, or a peer it waits for in a collective, is stuck");
}

// Loads one sample of the step into `out`; false (counted and logged) when it
// is bad.
bool ColocatedClient::load(uint32_t source_index, uint64_t cursor, Prepared& out, TransformedSample& sample) {
  const Config& config = job_.config;
  const uint32_t patch_bytes = pipeline_.patch_bytes();
  Source& source = *pipeline_.source(source_index);
  const StreamPosition pos =
      stream_position(config.job.seed, source_index, source.size(), cursor, pipeline_.order(source_index));
  RawSample raw;
  read_sample(source, config.sources[source_index], pos.index, raw);
  std::string reason = raw.reason;
  const BadKind bad = raw.bad != BadKind::none ? raw.bad : pipeline_.transform().apply(raw, sample, reason);
  if (bad != BadKind::none) {
    bad_[static_cast<size_t>(bad)]++;
    log_warn("bad sample in source '", config.sources[source_index].name, "': ", raw.where.file, " offset ",
             raw.where.offset, " (sample ", pos.index, "): ", bad_kind_name(bad), ": ", reason, " (dropped)");
    return false;
  }
  SampleMeta meta;
  meta.source = source_index;
  meta.cursor = cursor;
  meta.index = pos.index;
  meta.loader_rank = 0;
  meta.text_tokens = static_cast<uint32_t>(sample.tokens.size());
  meta.patches = sample.image.patches;
  meta.patch_bytes = meta.patches > 0 ? patch_bytes : 0;
  const uint64_t bytes = slot_bytes(sample, patch_bytes);
  meta.slot_offset = (out.arena.size() + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  meta.slot_bytes = static_cast<uint32_t>(bytes);
  out.arena.resize(meta.slot_offset + bytes);
  write_slot(out.arena.data() + meta.slot_offset, sample, source_index, pos.index, patch_bytes);
  out.plan.samples.push_back(meta);
  out.bytes_loaded += bytes - SlotLayout::tokens_offset();
  return true;
}

// The step's documents are the global mixer's, as the planner's are: source
// s's next quota[s] cursors, in source order, then in the step's arrival
// order (plan/step/modes.h). This rank loads its share, every dp-th, and packs it
// as colocated_samples does (place_step). A bad sample is dropped: replacing
// it would need the other ranks' samples.
ColocatedClient::Prepared ColocatedClient::prepare(uint64_t step) {
  const Config& config = job_.config;
  Prepared out;
  out.plan.step = step;
  out.plan.seq_len = config.job.seq_len;
  const std::vector<uint32_t> quota = mixer_.next();
  std::vector<std::pair<uint32_t, uint64_t>> step_samples;  // (source, cursor)
  for (uint32_t s = 0; s < quota.size(); ++s)
    for (uint32_t k = 0; k < quota[s]; ++k) step_samples.emplace_back(s, next_cursor_[s]++);
  const uint32_t n = checked_cast<uint32_t>(step_samples.size());
  const std::vector<uint32_t> order = arrival_order(config.job.seed, step, n);
  TransformedSample sample;
  for (uint32_t position : sample_share(n, static_cast<uint32_t>(config.topology.dp), static_cast<uint32_t>(data_group_))) {
    const auto [source, cursor] = step_samples[order[position]];
    load(source, cursor, out, sample);
  }
  if (out.plan.samples.empty() && n > 0)
    throw IoError(str("step ", step, ": every sample of DP rank ", data_group_, "'s share is bad"));
  std::vector<PlanDoc> docs;
  for (uint32_t i = 0; i < out.plan.samples.size(); ++i)
    docs.push_back({i, out.plan.samples[i].positions(), out.plan.samples[i].patches, 0.0});
  const LongDocs long_docs = config.job.long_docs;
  for (const MicroBatchPlan& mb : baseline_micro_batches(docs, config.job.micro_batches, config.job.seq_len, long_docs)) {
    MicroBatchWire wire;
    for (const PackedSequence& seq : mb.sequences) {
      SequencePlan wire_seq;
      for (const Piece& p : seq.pieces) wire_seq.pieces.push_back({p.doc, p.begin, p.length});
      wire.sequences.push_back(std::move(wire_seq));
    }
    out.plan.micro_batches.push_back(std::move(wire));
  }
  return out;
}

void ColocatedClient::prefetch_loop() {
  const uint32_t depth = std::max<uint32_t>(1, job_.config.job.prefetch_steps);
  try {
    for (uint64_t step = 0; step < job_.config.job.steps; ++step) {
      Prepared prepared = prepare(step);
      std::unique_lock lock(mutex_);
      room_.wait(lock, [&] { return stopping_ || queue_.size() < depth; });
      if (stopping_) return;
      queue_.push_back(std::move(prepared));
      ready_.notify_one();
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
    ready_.notify_one();
  }
}

const Batch* ColocatedClient::next() {
  if (steps_) steps_->kick();
  if (next_step_ >= job_.config.job.steps) {
    steps_.reset();  // the end of the job has its own bound (Job::finish)
    return nullptr;
  }
  const auto start = std::chrono::steady_clock::now();
  Prepared prepared;
  {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty() || error_; });
    if (queue_.empty() && error_) std::rethrow_exception(error_);
    prepared = std::move(queue_.front());
    queue_.pop_front();
  }
  room_.notify_one();
  ArenaFetcher fetcher(prepared.arena);
  const BuildStats stats = build_batch(prepared.plan, fetcher, options_, batch_);
  batch_.bytes_fetched = prepared.bytes_loaded;
  batch_.bytes_needed = job_.tree.is_tp_leader(client_index_) ? stats.bytes_needed : 0;
  batch_.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++next_step_;
  job_.end_startup();
  return &batch_;
}

}  // namespace msd
