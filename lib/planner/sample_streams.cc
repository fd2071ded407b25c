#include "planner/sample_streams.h"

#include <algorithm>

#include "config/part_options.h"
#include "source/source.h"
#include "transport/wire.h"

namespace msd {

SampleStreams::SampleStreams(const JobContext& job, LoaderFleet& fleet, OnlineScaler& scaler, AsyncSender& out,
                             const std::vector<SourceInfo>& sources)
    : job_(job),
      fleet_(fleet),
      scaler_(scaler),
      out_(out),
      sources_(job.config.sources.size()),
      mixer_(make_schedule(job.config), job.config.job.global_batch),
      window_(job.config.loader.window_mb << 20, job.config.job.max_sample_bytes) {
  for (const auto& info : sources) {
    SourceState& src = sources_.at(info.source);
    src.samples = info.samples;
    std::vector<std::string> files;
    for (const SourceFile& file : info.files) files.push_back(file.path);
    src.order.emplace(job.config.job.seed, info.source, info.samples,
                      shuffle_order(job.config.sources.at(info.source), files));
  }
  for (const auto& src : sources_) MSD_CHECK(src.samples > 0 && src.order);
}

void SampleStreams::resume_at(const PlannerCheckpoint& resume) {
  // The same cursors and mixer totals give the same batches from there on.
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (resume.source_samples.at(s) != sources_[s].samples)
      throw ConfigError(str("source.", job_.config.sources[s].name, ".path: the source now holds ", sources_[s].samples,
                            " samples, the checkpoint's run had ", resume.source_samples[s],
                            "; the batch stream cannot continue"));
    sources_[s].consumed = sources_[s].next_request = resume.consumed.at(s);
    sources_[s].seen_good = true;
    // A stream continued across added sources or changed files (changed_mix.h).
    // Its shuffle order is this run's: check_resumable refused a change.
    const uint32_t key = resume.stream_keys.empty() ? s : resume.stream_keys.at(s);
    const ShuffleOrder shuffle = sources_[s].order->shuffle();
    if (s < resume.stream_eras.size() && !resume.stream_eras[s].empty())
      sources_[s].order.emplace(resume.seed, key, resume.stream_eras[s], shuffle);
    else
      sources_[s].order.emplace(resume.seed, key, sources_[s].samples, shuffle);
    MSD_CHECK_EQ(sources_[s].order->samples(), sources_[s].samples);
  }
  mixer_.restore(resume.step, resume.mixer_realized, resume.mixer_origin_step, resume.mixer_origin);
  mixer_origin_step_ = resume.mixer_origin_step;
  mixer_origin_ = resume.mixer_origin;
}

void SampleStreams::stream_state(PlannerCheckpoint& checkpoint) const {
  checkpoint.stream_keys.clear();
  checkpoint.stream_eras.clear();
  bool keys = false, eras = false;
  for (uint32_t s = 0; s < sources_.size(); ++s) {
    keys = keys || sources_[s].order->key() != s;
    eras = eras || !sources_[s].order->plain();
  }
  for (const SourceState& src : sources_) {
    if (keys) checkpoint.stream_keys.push_back(src.order->key());
    if (eras) checkpoint.stream_eras.push_back(src.order->plain() ? std::vector<StreamEra>{} : src.order->eras());
  }
  checkpoint.mixer_origin_step = mixer_origin_step_;
  checkpoint.mixer_origin = mixer_origin_;
}

void SampleStreams::reload(const std::vector<HeldDoc>& held) {
  std::map<int, std::vector<LoadItem>> by_loader;
  for (const HeldDoc& doc : held) {
    if (!reloads_.emplace(std::make_pair(doc.source, doc.cursor), std::nullopt).second) continue;
    const uint64_t index = file_index(doc.source, doc.cursor);
    by_loader[loader_for(doc.source, doc.cursor, index)].push_back({doc.source, doc.cursor, index});
    ++reloads_missing_;
  }
  for (auto& [loader, items] : by_loader) fleet_.send_loads(loader, items);
}

bool SampleStreams::reloaded(std::map<std::pair<uint32_t, uint64_t>, SampleMeta>& out) {
  if (reloads_missing_ > 0) return false;
  for (auto& [key, meta] : reloads_) out.emplace(key, *meta);
  reloads_.clear();
  return true;
}

// An answer to reload(): kept for reloaded() (true), or not one (false).
bool SampleStreams::take_reload(LoaderFleet::Track& track, int rank, const SampleMeta& meta, bool& read_failed) {
  auto it = reloads_.find({meta.source, meta.cursor});
  if (it == reloads_.end() || it->second) return false;
  if (meta.bad == static_cast<uint8_t>(BadKind::read_error) && !track.shadow && job_.layout.shadows > 0) {
    track.outstanding.add(LoadItem{meta.source, meta.cursor, meta.index});  // a shadow retries it
    read_failed = true;
    return true;
  }
  if (meta.bad != 0)
    throw DataError(str("source '", job_.config.sources[meta.source].name, "': sample at cursor ", meta.cursor,
                        " (index ", meta.index, "), held by the outlier hold when the checkpoint was taken, now fails (",
                        bad_kind_name(static_cast<BadKind>(meta.bad)), "): the data changed under the checkpoint"));
  window_.placed(rank, meta.slot_bytes);
  it->second = meta;
  --reloads_missing_;
  return true;
}

// Requests go out in step order, and only while they fit the loader's window
// for sure (WindowBudget); the first that does not holds back every later
// one, so the earliest unplanned step is always served first.
void SampleStreams::request_ahead(uint64_t next_step, uint64_t limit, const std::function<bool(int)>& holds_slot) {
  while (next_step + quotas_.size() < limit) {
    realized_before_.push_back(mixer_.realized());
    quotas_.push_back(mixer_.next());
  }
  // Scratch kept across calls: the planner passes here on every message.
  need_.assign(sources_.size(), 0);
  outbox_.resize(static_cast<size_t>(job_.layout.loader_ranks()));
  const auto send_outbox = [&] {
    for (size_t i = 0; i < outbox_.size(); ++i) {
      if (outbox_[i].empty()) continue;
      fleet_.send_loads(job_.layout.loader_rank(static_cast<int>(i)), outbox_[i]);
      outbox_[i].clear();
    }
  };
  for (size_t k = 0; k < quotas_.size(); ++k) {
    for (size_t s = 0; s < sources_.size(); ++s) need_[s] += quotas_[k][s];
    for (uint32_t s = 0; s < sources_.size(); ++s) {
      auto& src = sources_[s];
      while (src.next_request - src.consumed - src.bad_in_flight < need_[s]) {
        const uint64_t cursor = src.next_request;
        const uint64_t index = file_index(s, cursor);
        const int loader = loader_for(s, cursor, index);
        auto& items = outbox_[static_cast<size_t>(job_.layout.loader_index(loader))];
        if (!window_.fits(loader, fleet_.track(loader).outstanding.size() + items.size())) {
          send_outbox();
          if (k == 0) make_room(loader, next_step, holds_slot);
          return;
        }
        items.push_back({s, cursor, index});
        src.next_request++;
      }
    }
  }
  send_outbox();
}

// Spreads a source's requests over its loaders: by cursor, or under the
// block order by block, so that a block's records go to one loader, which
// decodes it once (block_cache.h), instead of to every loader. Which loader
// serves a sample never changes its content.
int SampleStreams::loader_for(uint32_t source, uint64_t cursor, uint64_t index) {
  const std::vector<int>& serving = fleet_.serving(source);
  const ShuffleOrder& order = sources_[source].order->shuffle();
  const uint64_t spread = order.blocks ? index / order.block_records : cursor;
  return serving[spread % serving.size()];
}

// The source's stream order at `cursor`: a document of the data now (a
// held document whose file was removed never gets here: a changed mixture
// drops it, changed_mix.h).
uint64_t SampleStreams::file_index(uint32_t source, uint64_t cursor) {
  const uint64_t index = sources_[source].order->index(cursor);
  MSD_CHECK(index != kRemovedIndex);
  return index;
}

// The earliest unplanned step needs a request that `loader`'s window cannot
// take. Once the loader has answered everything, samples loaded for later
// steps are given back (and asked for again later: same cursors, same
// bytes). If that frees nothing and no step in flight holds a slot there,
// the window cannot hold this one step: a configuration error.
void SampleStreams::make_room(int loader, uint64_t next_step, const std::function<bool(int)>& holds_slot) {
  if (!fleet_.track(loader).outstanding.empty()) return;  // answers will come
  bool freed = false, waiting = false;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const std::optional<uint64_t> end = step_end(s);
    if (!end) continue;  // every sample loaded so far belongs to the earliest step
    if (rewind(static_cast<uint32_t>(s), *end, freed)) continue;
    waiting = true;  // a request of a later step is still out: rewind when it is answered
  }
  if (freed || waiting || holds_slot(loader)) return;  // else released when that step is acknowledged
  throw ConfigError(str("loader.window_mb: loader ", job_.layout.loader_index(loader), "'s window (",
                        window_.capacity(), " bytes) cannot hold step ", next_step, ": its samples there take ",
                        window_.used(loader), " bytes and the next may take up to job.max_sample_bytes = ",
                        job_.config.job.max_sample_bytes, "; raise loader.window_mb or lower job.max_sample_bytes",
                        job_.config.job.hold_above > 0
                            ? " (the outlier hold keeps up to topology.dp - 1 documents in the windows between steps)"
                            : ""));
}

// The cursor of source `s` just past the earliest unplanned step's samples,
// once that many good samples are loaded.
std::optional<uint64_t> SampleStreams::step_end(size_t s) const {
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
bool SampleStreams::rewind(uint32_t s, uint64_t end, bool& freed) {
  auto& src = sources_[s];
  for (const auto& [rank, track] : fleet_.tracks())
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
  release(releases_, "giving back samples of later steps");
  src.next_request = std::min(src.next_request, end);
  return true;
}

void SampleStreams::on_meta(int rank, const std::vector<SampleMeta>& metas, uint64_t next_step) {
  LoaderFleet::Track& track = fleet_.track(rank);
  const auto now = std::chrono::steady_clock::now();
  scaler_.learn(rank, metas, std::chrono::duration<double>(now - track.last_heard).count());
  track.last_heard = now;
  bool read_failed = false;
  for (const auto& meta : metas) {
    auto& src = sources_.at(meta.source);
    const bool answered = track.outstanding.answer(meta.source, meta.cursor);
    if (answered && !reloads_.empty() && take_reload(track, rank, meta, read_failed)) continue;
    // A late answer (from a loader that was handed over after a stall) for a
    // sample a shadow already loaded: free its slot, keep the shadow's.
    if (!answered || meta.cursor < src.consumed || src.resolved.contains(meta.cursor)) {
      if (meta.bad == 0) releases_.add(rank, meta.slot_offset, meta.slot_bytes);
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
      window_.placed(rank, meta.slot_bytes);
    }
    src.resolved.insert(meta.cursor, meta);
    if (meta.bad == 0) ++src.resolved_good;
  }
  release(releases_, "releasing stale slots", false);  // never placed in window_
  if (read_failed) fleet_.take_over(rank, "failed to read its storage", next_step);
}

std::optional<SampleStreams::Step> SampleStreams::take_step(std::vector<uint64_t>& bad_samples, bool trace) {
  if (quotas_.empty()) return std::nullopt;
  // Counting first: the planner passes here on every message, and a scan of
  // the resolved samples each time would grow with the step's size squared.
  for (size_t s = 0; s < sources_.size(); ++s)
    if (sources_[s].resolved_good < quotas_.front()[s]) return std::nullopt;
  std::vector<uint64_t> end_cursor(sources_.size());
  for (size_t s = 0; s < sources_.size(); ++s) {
    const std::optional<uint64_t> end = step_end(s);
    if (!end) return std::nullopt;
    end_cursor[s] = *end;
  }
  Step step;
  step.consumed_before = consumed();
  step.realized_before = realized_before_.front();
  for (size_t s = 0; s < sources_.size(); ++s) {
    auto& src = sources_[s];
    for (uint64_t cursor = src.consumed; cursor < end_cursor[s]; ++cursor) {
      const SampleMeta& meta = *src.resolved.find(cursor);
      if (trace) step.consumed.push_back(trace_sample(meta));
      if (meta.bad != 0) {
        bad_samples[meta.bad]++;
        src.bad_in_flight--;
      } else {
        step.samples.push_back(meta);
        --src.resolved_good;
      }
      src.resolved.erase(cursor);
    }
    src.consumed = end_cursor[s];
  }
  quotas_.pop_front();
  realized_before_.pop_front();
  return step;
}

void SampleStreams::release(SlotReleases& slots, const char* why, bool placed) {
  slots.drain([&](int loader, const std::vector<SlotRange>& ranges, uint64_t bytes) {
    if (placed) window_.released(loader, bytes);
    out_.send(loader, kTagRelease, encode_release(ranges), why);
  });
}

std::vector<uint64_t> SampleStreams::consumed() const {
  std::vector<uint64_t> out;
  for (const auto& src : sources_) out.push_back(src.consumed);
  return out;
}

std::vector<uint64_t> SampleStreams::realized_next() const {
  return realized_before_.empty() ? mixer_.realized() : realized_before_.front();
}

void SampleStreams::for_each_resolved(
    const std::function<void(uint32_t source, uint64_t cursor, const SampleMeta&)>& f) const {
  for (uint32_t s = 0; s < sources_.size(); ++s)
    sources_[s].resolved.for_each([&](uint64_t cursor, const SampleMeta& meta) { f(s, cursor, meta); });
}

}  // namespace msd
