#include "loader/loader.h"

#include <chrono>
#include <cstring>
#include <deque>
#include <sstream>
#include <utility>

#include "common/storage.h"
#include "common/log.h"
#include "common/memory.h"
#include "config/part_options.h"
#include "runtime/fatal.h"
#include "loader/index_sharing.h"
#include "source/fingerprint.h"
#include "source/format.h"
#include "runtime/metrics.h"
#include "profile/message.h"
#include "transport/progress.h"

namespace msd {

namespace {
// A kTagMeta message goes out once it answers the last request of a load
// message (the planner sends one per loader and step), or its oldest sample
// has waited this long, or the loader has nothing more to serve now.
constexpr std::chrono::milliseconds kMetaMaxAge{2};
}  // namespace

struct LoaderRole::Prepared {
  LoadItem item;
  TransformedSample sample;
  std::optional<SnapshotRecord> snapshot;  // the whole slot, from a loader checkpoint
  BadKind bad = BadKind::none;
  uint64_t bytes = 0;
};


LoaderRole::LoaderRole(JobContext& job) : job_(job), faults_(job), pipeline_(pipeline_options(job.config)) {
  const int index = job.layout.loader_index(job.rank);
  // A shadow keeps every source open, so it can take over any loader.
  std::vector<uint32_t> mine;
  threads_ = job.config.loader.threads;
  if (job.layout.is_shadow(index)) {
    for (uint32_t s = 0; s < job.config.sources.size(); ++s) mine.push_back(s);
  } else {
    mine = job.assignment.sources_of_loader[static_cast<size_t>(index)];
    if (static_cast<size_t>(index) < job.assignment.threads_of_loader.size())
      threads_ = job.assignment.threads_of_loader[static_cast<size_t>(index)];
  }
  mine_ = mine;
  meter_ = ProfileMeter(job.config.sources.size());
  snapshot_source_.assign(job.config.sources.size(), false);
  {
    std::istringstream names(job.config.checkpoint.snapshot_sources);
    for (std::string name; std::getline(names, name, ',');)
      for (size_t s = 0; s < job.config.sources.size(); ++s)
        if (job.config.sources[s].name == name) snapshot_source_[s] = true;
  }
  opened_.assign(job.config.sources.size(), {});
  listed_.resize(job.config.sources.size());
  faults_.before_opening_sources();
  try {
    build_index_share(index, mine);
    for (uint32_t s : mine) hello_.sources.push_back(open(s, file_share(job.assignment, s, index)));
    for (uint32_t s : mine) set_open_bytes(s);
  } catch (const std::exception& e) {
    hello_.error = e.what();
    hello_.sources.clear();
  }
}

// Start-up's index sharing (index_sharing.h): the index caches of this
// loader's share of each of its sources' files, built before any source is
// opened; then the word to and from the loaders it shares sources with,
// also when building failed (that error is rethrown after).
void LoaderRole::build_index_share(int index, const std::vector<uint32_t>& mine) {
  std::exception_ptr failed;
  try {
    SourceOptions options;
    options.cache_dir = job_.config.loader.cache_dir;
    for (uint32_t s : mine) {
      const std::optional<FileShare> share = file_share(job_.assignment, s, index);
      if (!share || share->loaders < 2) continue;
      listed_[s] = source_files(job_.config.sources[s]);  // open() takes this listing
      const std::vector<std::string>& files = listed_[s];
      std::vector<std::string> shared;
      for (size_t f = 0; f < files.size(); ++f)
        if (share->holds(f)) shared.push_back(files[f]);
      const IndexCounts counts = build_index_caches(job_.config.sources[s], std::move(shared), options);
      job_.startup.files_indexed += counts.scanned;
      job_.startup.files_cached += counts.cached;
    }
  } catch (...) {
    failed = std::current_exception();
  }
  exchange_index_shares(job_, index);
  if (failed) std::rethrow_exception(failed);
}

// Opens source `s` through the pipeline (which opens the tokenizer the first
// time a source needs it); with `share`, fingerprints those of its files (when
// checkpoints or a trace record the data).
SourceInfo LoaderRole::open(uint32_t s, std::optional<FileShare> share) {
  const SourceConfig& config = job_.config.sources[s];
  std::vector<std::string> files = listed_[s].empty() ? source_files(config) : std::move(listed_[s]);
  listed_[s].clear();
  SourceInfo info{s, 0, 0, {}, {}};
  for (const auto& path : files) info.files.push_back({path, file_stamp(path).size_bytes, 0});
  const CheckpointConfig& ckpt = job_.config.checkpoint;
  if (share && (!ckpt.dir.empty() || !ckpt.trace.empty()))
    for (uint32_t f = 0; f < files.size(); ++f) {
      if (!share->holds(f)) continue;
      for (const auto& part : format_spec(config).data_files(files[f])) {
        const FileFingerprint print = fingerprint_file(part);
        info.fingerprints.push_back({f, part, print.bytes, print.digest});
      }
    }
  const bool had_tokenizer = pipeline_.tokenizer() != nullptr;
  // With a share, the index bundles its loaders wrote (build_index_share).
  const Source& source = pipeline_.open(s, std::move(files), share ? share->loaders : 1);
  info.samples = source.size();
  const std::vector<uint64_t> samples = source.file_samples();
  MSD_CHECK_EQ(samples.size(), info.files.size());
  for (size_t f = 0; f < samples.size(); ++f) info.files[f].samples = samples[f];
  info.state_bytes = source.state_bytes();
  stats_.state_bytes += info.state_bytes;
  job_.startup.files_indexed += source.index_counts().scanned;
  job_.startup.files_cached += source.index_counts().cached;
  if (!had_tokenizer && pipeline_.tokenizer()) stats_.state_bytes += pipeline_.tokenizer()->state_bytes();
  opened_[s] = info;
  return info;
}

// An online-scaling move: the planner has no request of ours pending for
// the sources to close, so their state (index, buffers, snapshot) goes now.
void LoaderRole::reassign(const ReassignMessage& move) {
  HelloMessage answer;
  try {
    for (uint32_t s : move.close) {
      if (!pipeline_.source(s)) continue;
      pipeline_.close(s);
      stats_.state_bytes -= opened_[s].state_bytes;
      opened_[s] = {};
      for (auto it = snapshot_.lower_bound({s, 0}); it != snapshot_.end() && it->first.first == s;)
        it = snapshot_.erase(it);
    }
    for (uint32_t s : move.open) {
      if (s >= pipeline_.source_count())
        throw ProtocolError(str("loader rank ", job_.rank, " asked to open source ", s));
      answer.sources.push_back(pipeline_.source(s) ? opened_[s] : open(s, std::nullopt));
    }
  } catch (const std::exception& e) {
    answer.error = e.what();
    answer.sources.clear();
  }
  log_debug("reassigned: closed ", move.close.size(), ", opened ", move.open.size(), " source(s); open source state ",
            stats_.state_bytes, " bytes");
  job_.send_to_planner(kTagReassign, encode(answer), "answering a reassignment");
}

LoaderRole::~LoaderRole() = default;

void LoaderRole::resume(uint64_t first_step) {
  const std::string& dir = job_.config.checkpoint.dir;
  if (first_step == 0 || dir.empty()) return;
  const auto paths = latest_loader_checkpoint(dir, first_step, job_.checkpoint_identity);
  if (!paths) return;
  std::vector<uint32_t> mine;
  for (uint32_t s = 0; s < pipeline_.source_count(); ++s)
    if (pipeline_.source(s) && snapshot_source_[s]) mine.push_back(s);
  if (mine.empty()) return;
  for (auto& record : read_loader_snapshot(*paths, mine)) {
    const std::pair<uint32_t, uint64_t> key{record.source, record.cursor};
    snapshot_.emplace(key, std::move(record));
  }
  log_info("resume: ", snapshot_.size(), " transformed samples available from the loader checkpoint of ",
           paths->size(), " part(s) in ", dir);
}

// Releases, stop, checkpoint requests and injected faults; true on stop.
bool LoaderRole::on_control(const Message& message) {
  if (message.tag == kTagRelease) {
    for (const SlotRange& range : decode_release(message.bytes)) {
      slots_->release_range(range.offset, range.bytes);
      live_.erase(live_.lower_bound(range.offset), live_.lower_bound(range.offset + range.bytes));
    }
  } else if (message.tag == kTagStop) {
    // The planner waits (bounded) for this before the summary: a loader that
    // does not answer is left out of it. The last profiles go first.
    send_profile();
    job_.send_to_planner(kTagStop, {}, "confirming the stop");
    return true;
  } else if (message.tag == kTagReassign) {
    reassign(decode_reassign(message.bytes));
  } else if (message.tag == kTagFault) {
    faults_.inject(decode_fault(message.bytes));
  } else {
    throw ProtocolError(str("loader rank ", job_.rank, " got unexpected tag ", message.tag));
  }
  return false;
}

// This loader's part of the loader checkpoint the planner asked for (u64
// step, u32 writers): the live samples of its snapshot sources, written alone
// (no other rank waits on it), then "written" to the planner. A loader
// stopped inside the write is taken over like anywhere else.
void LoaderRole::write_checkpoint(std::span<const uint8_t> request) {
  LoaderCheckpointRound round;
  decode_fields(request, "loader checkpoint request", round.step, round.writers);
  round.identity = job_.checkpoint_identity;
  LoaderCheckpointPart part;
  part.loader = static_cast<uint32_t>(job_.layout.loader_index(job_.rank));
  for (const auto& [offset, meta] : live_) {
    if (!snapshot_source_[meta.source]) continue;
    const uint8_t* slot = job_.windows.base() + offset;
    part.records.push_back({meta.source, meta.cursor, meta.index, meta.text_tokens, meta.patches, meta.patch_bytes,
                            std::vector<unsigned char>(slot, slot + meta.slot_bytes)});
  }
  write_loader_checkpoint(job_.config.checkpoint.dir, round, part, [this] { faults_.inside_checkpoint_write(); });
  job_.send_to_planner(kTagCheckpoint, encode_fields(round.step), "loader checkpoint part written");
}

void LoaderRole::send_profile() {
  ProfileMessage message;
  for (uint32_t s : mine_) {
    if (!pipeline_.source(s)) continue;
    set_open_bytes(s);
    message.sources.emplace_back(s, meter_.profiles()[s]);
  }
  job_.send_to_planner(kTagProfile, encode(message), "sending source profiles");
}

void LoaderRole::set_open_bytes(uint32_t s) {
  Source& source = *pipeline_.source(s);
  meter_.set_open_bytes(s, open_bytes(source, pipeline_.tokenizer(), pipeline_.transform()),
                        shared_open_bytes(source, pipeline_.tokenizer(), pipeline_.transform()));
}

int32_t LoaderRole::vocab_size() const { return pipeline_.tokenizer() ? pipeline_.tokenizer()->vocab_size() : -1; }

void LoaderRole::prepare(std::span<const LoadItem> items, std::deque<Prepared>& ready) {
  std::vector<RawSample> raws(items.size());
  std::vector<Prepared*> prepared;
  std::vector<size_t> to_read;  // positions in items of the samples not in the snapshot
  for (size_t k = 0; k < items.size(); ++k) {
    const LoadItem& item = items[k];
    Prepared& out = ready.emplace_back();  // references to deque elements stay valid
    prepared.push_back(&out);
    out.item = item;
    if (auto it = snapshot_.find({item.source, item.cursor}); it != snapshot_.end()) {
      // The same bytes the transform would make: the stream does not change.
      out.bytes = it->second.bytes.size();
      out.snapshot = std::move(it->second);
      snapshot_.erase(it);
      ++snapshot_hits_;
      continue;
    }
    const Source* source = pipeline_.source(item.source);
    if (source == nullptr || item.index >= source->size())
      throw ProtocolError(str("loader rank ", job_.rank, " asked for sample ", item.index, " of source ", item.source,
                              ", which it does not serve"));
    to_read.push_back(k);
  }
  // The reads run on the loader's threads, each sample into its own RawSample
  // (Source::read is safe to call concurrently); what follows reads them in
  // request order, so the bytes are those of one thread.
  std::vector<double> reads(to_read.size());
  read_measured(read_pool_, threads_, reads, [&](size_t r) {
    const LoadItem& item = items[to_read[r]];
    read_sample(*pipeline_.source(item.source), job_.config.sources[item.source], item.index, raws[to_read[r]]);
  });
  std::vector<const RawSample*> to_transform;
  std::vector<TransformedSample*> outs;
  std::vector<uint32_t> to_transform_source;
  std::vector<double> read_seconds;
  for (size_t r = 0; r < to_read.size(); ++r) {
    const size_t k = to_read[r];
    Prepared& out = *prepared[k];
    out.bad = raws[k].bad;
    if (out.bad == BadKind::none) {
      to_transform.push_back(&raws[k]);
      outs.push_back(&out.sample);
      to_transform_source.push_back(out.item.source);
      read_seconds.push_back(reads[r]);
    }
  }
  std::vector<BadKind> verdicts(to_transform.size());
  std::vector<std::string> reasons(to_transform.size());
  const uint32_t patch_bytes = pipeline_.patch_bytes();
  auto bytes_of = [&](const TransformedSample& s) { return slot_bytes(s, patch_bytes); };
  transform_measured(pipeline_.transform(), to_transform, to_transform_source, read_seconds, outs, verdicts, reasons,
                     threads_, bytes_of, meter_);
  for (size_t k = 0, t = 0; k < items.size(); ++k) {
    Prepared& out = *prepared[k];
    if (out.snapshot) continue;
    std::string reason = raws[k].reason;
    if (out.bad == BadKind::none) {
      out.bad = verdicts[t];
      if (out.bad != BadKind::none) reason = reasons[t];
      ++t;
    }
    if (out.bad == BadKind::none) {
      out.bytes = slot_bytes(out.sample, patch_bytes);
      if (out.bytes > job_.config.job.max_sample_bytes) {
        out.bad = BadKind::too_large;
        reason = str(out.bytes, " bytes transformed, more than job.max_sample_bytes = ", job_.config.job.max_sample_bytes);
      }
    }
    if (out.bad != BadKind::none)
      log_warn("bad sample in source '", job_.config.sources[out.item.source].name, "': ", raws[k].where.file,
               " offset ", raws[k].where.offset, " (sample ", out.item.index, "): ", bad_kind_name(out.bad), ": ",
               reason);
  }
}

// Writes a prepared sample into a free slot; false when the window is full.
bool LoaderRole::place(Prepared& prepared, std::vector<SampleMeta>& outbox) {
  SampleMeta meta;
  meta.source = prepared.item.source;
  meta.cursor = prepared.item.cursor;
  meta.index = prepared.item.index;
  meta.loader_rank = job_.rank;
  if (prepared.bad != BadKind::none) {
    meta.bad = static_cast<uint8_t>(prepared.bad);
    outbox.push_back(meta);
    return true;
  }
  auto offset = slots_->allocate(prepared.bytes);
  if (!offset) return false;
  if (prepared.snapshot) {
    const SnapshotRecord& record = *prepared.snapshot;
    std::memcpy(job_.windows.base() + *offset, record.bytes.data(), record.bytes.size());
    meta.slot_offset = *offset;
    meta.slot_bytes = static_cast<uint32_t>(record.bytes.size());
    meta.text_tokens = record.text_tokens;
    meta.patches = record.patches;
    meta.patch_bytes = record.patch_bytes;
    outbox.push_back(meta);
    live_[*offset] = meta;
    ++stats_.samples_loaded;
    return true;
  }
  const auto& sample = prepared.sample;
  write_slot(job_.windows.base() + *offset, sample, meta.source, meta.index, pipeline_.patch_bytes());
  meta.slot_offset = *offset;
  meta.slot_bytes = static_cast<uint32_t>(prepared.bytes);
  meta.text_tokens = static_cast<uint32_t>(sample.tokens.size());
  meta.patches = sample.image.patches;
  meta.patch_bytes = meta.patches > 0 ? pipeline_.patch_bytes() : 0;
  outbox.push_back(meta);
  live_[*offset] = meta;
  ++stats_.samples_loaded;
  return true;
}

// Whether a live slot holds a client's read (ReadServer).
ReadServer::Holds LoaderRole::live_slot() const {
  return [this](uint64_t offset, uint64_t bytes) {
    auto it = live_.upper_bound(offset);
    if (it == live_.begin()) return false;
    --it;
    return offset - it->first <= it->second.slot_bytes && bytes <= it->second.slot_bytes - (offset - it->first);
  };
}

RoleStats LoaderRole::serve() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  note_serving();
  slots_ = std::make_unique<SlotAllocator>(job_.windows.bytes());
  const int planner = job_.layout.planner_rank();
  std::deque<LoadItem> pending;
  std::deque<size_t> unplaced;  // per load message being served, in order: its requests not yet placed
  bool answered = false;        // a load message's last request placed since the last metadata
  std::deque<Prepared> ready;  // transformed, in request order, waiting for room in the window
  // With several threads, requests are transformed in batches (their text
  // tokenized together); with one, one at a time for the lowest latency.
  const size_t batch = threads_ > 1 ? size_t{16} * threads_ : 1;
  // Profiles go to the planner at most once a second (docs/wire.md).
  auto profile_sent = Clock::now();
  std::vector<SampleMeta> outbox;
  Clock::time_point outbox_since;  // when the oldest sample in outbox was placed
  ServePoll backoff(!job_.windows.direct());  // reads across nodes need this rank's progress
  if (!job_.windows.direct() && job_.config.topology.network_reads == NetworkReads::two_sided) {
    reads_ = std::make_unique<ReadServer>(job_.windows, job_.world.get(), live_slot());
    log_debug("window not node-shared: clients read it by request and reply (kTagRead)");
  }
  bool stop = false;
  const bool metrics = !job_.config.output.metrics.empty();
  RssSampler rss;
  auto flush = [&] {
    if (outbox.empty()) return;
    job_.windows.sync_local();
    LoaderStatus status;  // for the planner's per-step metrics
    if (metrics)
      status = {rss.bytes(), stats_.transform_seconds, std::chrono::duration<double>(Clock::now() - start).count()};
    job_.send_to_planner(kTagMeta, encode_meta(outbox, status), "sending sample metadata to the planner");
    outbox.clear();
    job_.end_startup();
  };
  while (!stop) {
    bool progressed = false;
    while (auto message = try_receive(job_.world.get(), planner, MPI_ANY_TAG, "waiting for planner requests")) {
      progressed = true;
      if (message->tag == kTagLoad) {
        const std::vector<LoadItem> items = decode_load(message->bytes);
        pending.insert(pending.end(), items.begin(), items.end());
        if (!items.empty()) unplaced.push_back(items.size());
      } else if (message->tag == kTagCheckpoint) {
        flush();  // what was loaded before the checkpoint is reported first
        write_checkpoint(message->bytes);
      } else {
        stop = on_control(*message) || stop;
      }
    }
    if (stop) break;
    // Reads of what was placed are answered even when hung, as one-sided
    // reads of the window would be.
    if (reads_ && reads_->serve()) progressed = true;
    if (faults_.hung()) {  // serve nothing, only notice the end of the job
      backoff.idle(false);
      continue;
    }
    // Serve in request order; a full window stalls the queue until releases.
    for (size_t served = 0; served < std::max<size_t>(8, batch); ++served) {
      if (ready.empty() && !pending.empty()) {
        const size_t count = std::min(batch, pending.size());
        const std::vector<LoadItem> items(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(count));
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(count));
        const auto t0 = Clock::now();
        prepare(items, ready);
        stats_.transform_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      }
      if (outbox.empty()) outbox_since = Clock::now();
      if (ready.empty() || !place(ready.front(), outbox)) break;
      ready.pop_front();
      if (--unplaced.front() == 0) {
        unplaced.pop_front();
        answered = true;
      }
      progressed = true;
    }
    // Metadata goes out in batches: the planner handles each message on a
    // pass of its own, so the messages per step matter more than a sample's
    // latency, which the age bound keeps short for slow (image) samples.
    if (!outbox.empty() &&
        (!progressed || pending.empty() || answered || Clock::now() - outbox_since >= kMetaMaxAge)) {
      flush();
      answered = false;
    }
    if (Clock::now() - profile_sent >= std::chrono::seconds(1)) {
      send_profile();
      profile_sent = Clock::now();
    }
    sample_anon_shmem();  // the window's pages and the decoders' buffers at their peak
    if (progressed) backoff.reset();
    else backoff.idle(!live_.empty());
  }
  if (snapshot_hits_ > 0) log_info("served ", snapshot_hits_, " samples from the loader checkpoint's snapshot");
  stats_.role = static_cast<int32_t>(Role::loader);
  stats_.window_peak_bytes = slots_->peak_used();
  for (uint32_t s = 0; s < pipeline_.source_count(); ++s) stats_.open_sources += pipeline_.source(s) ? 1 : 0;
  stats_.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats_;
}

}  // namespace msd
