#include "checkpoint/planner_checkpoint.h"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <sstream>

#include "checkpoint/changed_mix.h"
#include "checkpoint/data_record.h"
#include "checkpoint/hdf5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/step_files.h"
#include "common/digest.h"
#include "common/error.h"
#include "common/log.h"
#include "common/storage.h"

namespace msd {

namespace {

constexpr const char* kPrefix = "planner";  // docs/checkpoint.md: planner-<step>.h5

// The in_flight table's row, as stored (docs/checkpoint.md).
struct InFlightRow {
  uint32_t source;
  uint8_t state;
  int32_t loader_rank;
  uint64_t cursor;
  uint64_t index;
};

h5::CompoundType in_flight_type() {
  h5::CompoundType type(sizeof(InFlightRow));
  type.add("source", offsetof(InFlightRow, source), H5T_NATIVE_UINT32)
      .add("state", offsetof(InFlightRow, state), H5T_NATIVE_UINT8)
      .add("loader_rank", offsetof(InFlightRow, loader_rank), H5T_NATIVE_INT32)
      .add("cursor", offsetof(InFlightRow, cursor), H5T_NATIVE_UINT64)
      .add("index", offsetof(InFlightRow, index), H5T_NATIVE_UINT64);
  return type;
}

// The held table's row (docs/checkpoint.md).
struct HeldRow {
  uint32_t source;
  uint32_t positions;
  uint32_t patches;
  uint64_t cursor;
  uint64_t since;
};

h5::CompoundType held_type() {
  h5::CompoundType type(sizeof(HeldRow));
  type.add("source", offsetof(HeldRow, source), H5T_NATIVE_UINT32)
      .add("positions", offsetof(HeldRow, positions), H5T_NATIVE_UINT32)
      .add("patches", offsetof(HeldRow, patches), H5T_NATIVE_UINT32)
      .add("cursor", offsetof(HeldRow, cursor), H5T_NATIVE_UINT64)
      .add("since", offsetof(HeldRow, since), H5T_NATIVE_UINT64);
  return type;
}

// The stream tables' rows (docs/checkpoint.md): one per era of a source
// whose data changed, one per run of an era's index map.
struct EraRow {
  uint32_t source;
  uint32_t era;
  uint64_t begin;
  uint64_t tail;
  uint64_t first_epoch;
  uint64_t samples;
};
struct EraMapRow {
  uint32_t source;
  uint32_t era;
  uint64_t first;
  uint64_t count;
  uint64_t to;
};

h5::CompoundType era_type() {
  h5::CompoundType type(sizeof(EraRow));
  type.add("source", offsetof(EraRow, source), H5T_NATIVE_UINT32)
      .add("era", offsetof(EraRow, era), H5T_NATIVE_UINT32)
      .add("begin", offsetof(EraRow, begin), H5T_NATIVE_UINT64)
      .add("tail", offsetof(EraRow, tail), H5T_NATIVE_UINT64)
      .add("first_epoch", offsetof(EraRow, first_epoch), H5T_NATIVE_UINT64)
      .add("samples", offsetof(EraRow, samples), H5T_NATIVE_UINT64);
  return type;
}

h5::CompoundType era_map_type() {
  h5::CompoundType type(sizeof(EraMapRow));
  type.add("source", offsetof(EraMapRow, source), H5T_NATIVE_UINT32)
      .add("era", offsetof(EraMapRow, era), H5T_NATIVE_UINT32)
      .add("first", offsetof(EraMapRow, first), H5T_NATIVE_UINT64)
      .add("count", offsetof(EraMapRow, count), H5T_NATIVE_UINT64)
      .add("to", offsetof(EraMapRow, to), H5T_NATIVE_UINT64);
  return type;
}

// Version 5's stream state: keys, eras and their maps, the mixer's origin.
void write_streams(hid_t root, const PlannerCheckpoint& c) {
  h5::write_array<uint32_t>(root, "stream_keys", c.stream_keys);
  std::vector<EraRow> eras;
  std::vector<EraMapRow> maps;
  for (size_t source = 0; source < c.stream_eras.size(); ++source)
    for (size_t era = 0; era < c.stream_eras[source].size(); ++era) {
      const StreamEra& e = c.stream_eras[source][era];
      const uint32_t s = checked_cast<uint32_t>(source), k = checked_cast<uint32_t>(era);
      eras.push_back({s, k, e.begin, e.tail, e.first_epoch, e.samples});
      for (const IndexRun& run : e.map) maps.push_back({s, k, run.first, run.count, run.to});
    }
  const h5::CompoundType era_rows = era_type(), map_rows = era_map_type();
  h5::write_table<EraRow>(root, "stream_eras", era_rows.get(), eras);
  h5::write_table<EraMapRow>(root, "stream_era_maps", map_rows.get(), maps);
  h5::write_attribute(root, "mixer_origin_step", c.mixer_origin_step);
  h5::write_array<uint64_t>(root, "mixer_origin", c.mixer_origin);
}

void read_streams(hid_t root, PlannerCheckpoint& c, const std::string& path) {
  c.stream_keys = h5::read_array<uint32_t>(root, "stream_keys");
  const h5::CompoundType era_rows = era_type(), map_rows = era_map_type();
  for (const EraRow& row : h5::read_table<EraRow>(root, "stream_eras", era_rows.get())) {
    if (row.source >= c.stream_eras.size()) c.stream_eras.resize(row.source + 1);
    auto& eras = c.stream_eras[row.source];
    if (row.era != eras.size())
      throw IoError(str(path, ": stream_eras holds era ", row.era, " of source ", row.source, " after ", eras.size()));
    eras.push_back({row.begin, row.tail, row.first_epoch, row.samples, {}});
  }
  for (const EraMapRow& row : h5::read_table<EraMapRow>(root, "stream_era_maps", map_rows.get())) {
    if (row.source >= c.stream_eras.size() || row.era >= c.stream_eras[row.source].size())
      throw IoError(str(path, ": stream_era_maps names era ", row.era, " of source ", row.source, ", which it lacks"));
    c.stream_eras[row.source][row.era].map.push_back({row.first, row.count, row.to});
  }
  c.mixer_origin_step = h5::read_u64_attribute(root, "mixer_origin_step");
  c.mixer_origin = h5::read_array<uint64_t>(root, "mixer_origin");
}

}  // namespace

const char* sample_state_name(SampleState state) {
  switch (state) {
    case SampleState::requested: return "requested";
    case SampleState::loaded: return "loaded";
    case SampleState::planned: return "planned";
    case SampleState::failed: return "failed";
  }
  return "unknown";
}

std::string planner_checkpoint_path(const std::string& dir, uint64_t step) {
  return step_file_path(dir, kPrefix, step);
}

void write_planner_checkpoint_file(const std::string& path, const PlannerCheckpoint& c) {
  MSD_CHECK_EQ(c.consumed.size(), c.source_samples.size());
  MSD_CHECK_EQ(c.mixer_realized.size(), c.source_samples.size());
  // Built in memory (the core driver) and written out by one write at close:
  // a fraction of the time of HDF5's many small writes to a file.
  h5::PropertyList access = h5::file_access();
  MSD_H5(H5Pset_fapl_core(access.get(), 64 * 1024, 1), "choosing the in-memory driver for a planner checkpoint");
  h5::File file = h5::create_file(path, access.get());
  const hid_t root = file.get();
  h5::write_attribute(root, "format_version", kPlannerCheckpointVersion);
  h5::write_attribute(root, "step", c.step);
  h5::write_attribute(root, "seed", c.seed);
  h5::write_attribute(root, "config_ini", c.config_ini);
  h5::write_array<uint64_t>(root, "source_samples", c.source_samples);
  h5::write_array<uint64_t>(root, "consumed", c.consumed);
  h5::write_array<uint64_t>(root, "mixer_realized", c.mixer_realized);
  h5::write_array<uint64_t>(root, "bad_samples", c.bad_samples);
  std::vector<InFlightRow> rows;
  rows.reserve(c.in_flight.size());
  for (const auto& s : c.in_flight)
    rows.push_back({s.source, static_cast<uint8_t>(s.state), s.loader_rank, s.cursor, s.index});
  const h5::CompoundType type = in_flight_type();
  h5::write_table<InFlightRow>(root, "in_flight", type.get(), rows);
  std::vector<uint32_t> assigned_loader, assigned_source;  // (loader, source) pairs
  for (size_t loader = 0; loader < c.loader_sources.size(); ++loader)
    for (uint32_t source : c.loader_sources[loader]) {
      assigned_loader.push_back(checked_cast<uint32_t>(loader));
      assigned_source.push_back(source);
    }
  h5::write_attribute(root, "loaders", static_cast<uint64_t>(c.loader_sources.size()));
  h5::write_array<uint32_t>(root, "assignment_loader", assigned_loader);
  h5::write_array<uint32_t>(root, "assignment_source", assigned_source);
  std::vector<HeldRow> held;
  for (const HeldDoc& d : c.held) held.push_back({d.source, d.positions, d.patches, d.cursor, d.since});
  const h5::CompoundType held_rows = held_type();
  h5::write_table<HeldRow>(root, "held", held_rows.get(), held);
  write_data_fingerprint(root, c.data);
  write_streams(root, c);
  seal_file(root);
  file.close(str("closing ", path));
}

void write_planner_checkpoint(const std::string& dir, const PlannerCheckpoint& checkpoint, uint32_t keep) {
  make_directory(dir);
  const std::string path = planner_checkpoint_path(dir, checkpoint.step);
  const std::string temp = temporary_path(path);
  write_planner_checkpoint_file(temp, checkpoint);
  sync_path(temp);
  rename_durably(temp, path);
  prune_step_files(dir, kPrefix, keep);
}

PlannerCheckpoint read_planner_checkpoint(const std::string& path) {
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::open_file(path, false, access.get());
  const hid_t root = file.get();
  const uint64_t version = h5::read_u64_attribute(root, "format_version");
  if (version > kPlannerCheckpointVersion || version < 2)
    throw IoError(str(path, ": planner checkpoint format version ", version, ", this msd reads version ",
                      kPlannerCheckpointVersion));
  if (auto changed = check_seal(root)) throw IoError(str(path, ": changed after it was written: ", *changed));
  PlannerCheckpoint c;
  c.step = h5::read_u64_attribute(root, "step");
  c.seed = h5::read_u64_attribute(root, "seed");
  c.config_ini = h5::read_string_attribute(root, "config_ini");
  c.source_samples = h5::read_array<uint64_t>(root, "source_samples");
  c.consumed = h5::read_array<uint64_t>(root, "consumed");
  c.mixer_realized = h5::read_array<uint64_t>(root, "mixer_realized");
  c.bad_samples = h5::read_array<uint64_t>(root, "bad_samples");
  const h5::CompoundType type = in_flight_type();
  for (const auto& row : h5::read_table<InFlightRow>(root, "in_flight", type.get())) {
    if (row.state > static_cast<uint8_t>(SampleState::failed))
      throw IoError(str(path, ": in_flight holds an unknown sample state ", +row.state));
    c.in_flight.push_back({row.source, static_cast<SampleState>(row.state), row.loader_rank, row.cursor, row.index});
  }
  c.data = read_data_fingerprint(root, path);
  if (version >= 3) {
    c.loader_sources.resize(h5::read_u64_attribute(root, "loaders"));
    const auto loaders = h5::read_array<uint32_t>(root, "assignment_loader");
    const auto sources = h5::read_array<uint32_t>(root, "assignment_source");
    if (loaders.size() != sources.size())
      throw IoError(str(path, ": assignment_loader and assignment_source differ in length"));
    for (size_t i = 0; i < loaders.size(); ++i) {
      if (loaders[i] >= c.loader_sources.size())
        throw IoError(str(path, ": the assignment names loader ", loaders[i], " of ", c.loader_sources.size()));
      c.loader_sources[loaders[i]].push_back(sources[i]);
    }
  }
  if (version >= 4) {
    const h5::CompoundType held_rows = held_type();
    for (const auto& row : h5::read_table<HeldRow>(root, "held", held_rows.get()))
      c.held.push_back({row.source, row.cursor, row.positions, row.patches, row.since});
  }
  if (version >= 5) read_streams(root, c, path);
  file.close(str("closing ", path));
  const size_t sources = c.source_samples.size();
  if (!c.stream_eras.empty() && c.stream_eras.size() <= sources) c.stream_eras.resize(sources);  // the rows end at the last changed one
  if ((!c.stream_keys.empty() && c.stream_keys.size() != sources) || c.stream_eras.size() > sources ||
      (!c.mixer_origin.empty() && c.mixer_origin.size() != sources) || c.mixer_origin_step > c.step)
    throw IoError(str(path, ": the stream state disagrees with its ", sources, " sources (", c.stream_keys.size(),
                      " keys, eras of ", c.stream_eras.size(), ", ", c.mixer_origin.size(), " mixer origins at step ",
                      c.mixer_origin_step, ")"));
  if (c.consumed.size() != sources || c.mixer_realized.size() != sources)
    throw IoError(str(path, ": per-source arrays disagree (source_samples ", sources, ", consumed ", c.consumed.size(),
                      ", mixer_realized ", c.mixer_realized.size(), ")"));
  for (const auto& s : c.in_flight)
    if (s.source >= sources) throw IoError(str(path, ": in_flight names source ", s.source, " of ", sources));
  for (const HeldDoc& d : c.held)
    if (d.source >= sources || d.since >= c.step || d.positions == 0)
      throw IoError(str(path, ": held names source ", d.source, " cursor ", d.cursor, " since step ", d.since,
                        " (", d.positions, " positions), not a held document of ", sources, " sources before step ",
                        c.step));
  for (const auto& mine : c.loader_sources)
    for (uint32_t s : mine)
      if (s >= sources) throw IoError(str(path, ": the assignment names source ", s, " of ", sources));
  if (auto named = step_in_file_name(path, kPrefix); named && *named != c.step)
    throw IoError(str(path, ": holds step ", c.step, ", its name says step ", *named));
  return c;
}

std::optional<std::string> check_planner_checkpoint_integrity(const std::string& path) {
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::open_file(path, false, access.get());
  return check_seal(file.get());
}

std::optional<PlannerCheckpoint> latest_planner_checkpoint(const std::string& dir, std::string* path,
                                                           uint64_t max_step, std::vector<std::string>* skipped) {
  for (const auto& [step, file] : list_step_files(dir, kPrefix)) {
    if (step > max_step) continue;
    try {
      PlannerCheckpoint checkpoint = read_planner_checkpoint(file);
      if (path) *path = file;
      return checkpoint;
    } catch (const IoError& e) {
      log_warn("skipping planner checkpoint ", file, " (step ", step, "): ", e.what());
      if (skipped) skipped->push_back(str(file, ": ", e.what()));
    }
  }
  return std::nullopt;
}

// The data under the checkpoint against the data now (check_resumable):
// `vocabulary_only` when the files are the changed mixture's business.
static void check_same_data(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data,
                            bool vocabulary_only) {
  DataFingerprint recorded = checkpoint.data, now = data;
  if (vocabulary_only) recorded.files.clear(), now.files.clear();
  const std::vector<std::string> differences = fingerprint_differences(recorded, now, config.sources);
  if (differences.empty()) return;
  std::string list;
  for (const auto& d : differences) list += "\n  " + d;
  if (!config.checkpoint.accept_changed_data)
    throw ConfigError(str("--resume: the data changed since the checkpoint at step ", checkpoint.step,
                          " was written; the batch stream would not continue:", list,
                          "\n(--resume-accept-changed-data, = --checkpoint.accept_changed_data=true, resumes anyway; "
                          "--resume-accept-changed-mix continues over files added to or removed from a source)"));
  log_warn("--resume: the data changed since the checkpoint at step ", checkpoint.step,
           " was written; resuming anyway (checkpoint.accept_changed_data):", list);
}

bool check_resumable(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data) {
  if (checkpoint.seed != config.job.seed)
    throw ConfigError(str("--resume: the checkpoint at step ", checkpoint.step, " was written with job.seed = ",
                          checkpoint.seed, ", this run has job.seed = ", config.job.seed));
  const ResumeChanges changes = resume_changes(checkpoint, config, data);
  if (!changes.refused.empty())
    throw ConfigError(str("--resume: ", changes.refused, "; the batch stream would not continue"));
  const bool accept = config.checkpoint.accept_changed_mix;
  if (changes.options_changed || (changes.files_changed && accept)) {
    if (!accept) {
      std::string list;
      for (const auto& line : changes.mix) list += "\n  " + line;
      throw ConfigError(str("--resume: the mixture changed since the checkpoint at step ", checkpoint.step,
                            " was written:", list,
                            "\n(--resume-accept-changed-mix, = --checkpoint.accept_changed_mix=true, resumes under the "
                            "new mixture from that step; docs/checkpoint.md)"));
    }
    check_same_data(checkpoint, config, data, true);
    return true;
  }
  check_same_data(checkpoint, config, data, false);
  return false;
}

uint64_t stream_config_digest(const Config& config) {
  Digest digest;
  for (const auto& [key, value] : ini_values(to_ini(config))) {
    if (stream_independent(key)) continue;
    const std::string line = key + " = " + value + "\n";
    digest.update(line.data(), line.size());
  }
  return digest.value();
}

std::optional<PlannerCheckpoint> find_resume_checkpoint(const Config& config, const DataFingerprint& data,
                                                        std::vector<std::string>* changes) {
  const CheckpointConfig& ckpt = config.checkpoint;
  std::string path;
  std::vector<std::string> skipped;
  std::optional<PlannerCheckpoint> found =
      latest_planner_checkpoint(ckpt.dir, &path, ckpt.resume_step.value_or(UINT64_MAX), &skipped);
  if (!found && !skipped.empty() && !ckpt.resume_step && !ckpt.start_over) {
    std::string list;
    for (const auto& s : skipped) list += "\n  " + s;
    throw ConfigError(str("checkpoint.resume: none of the ", skipped.size(), " planner checkpoint(s) in ", ckpt.dir,
                          " reads back; resuming would silently start over at step 0:", list,
                          "\n(checkpoint.start_over = true starts at step 0, moving them aside)"));
  }
  if (!found) {
    if (ckpt.resume_step.value_or(0) > 0) {
      std::string steps;
      for (const auto& [step, file] : list_step_files(ckpt.dir, kPrefix))
        steps += (steps.empty() ? "" : ", ") + str(step);
      throw ConfigError(str("checkpoint.resume_step: no readable planner checkpoint at or before step ",
                            *ckpt.resume_step, " in ", ckpt.dir, " (planner checkpoints there: ",
                            steps.empty() ? "none" : steps, "); keep older ones with checkpoint.keep"));
    }
    if (!ckpt.resume_step) log_warn("checkpoint.resume: no planner checkpoint in ", ckpt.dir, "; starting at step 0");
    return std::nullopt;
  }
  if (check_resumable(*found, config, data)) {
    std::vector<std::string> lines;
    *found = continue_with_changed_mix(*found, config, data, lines);
    std::string list;
    for (const auto& line : lines) list += "\n  " + line;
    log_warn("--resume: the mixture changed since the checkpoint at step ", found->step, " (", path,
             ") was written; it continues under the new one from that step (checkpoint.accept_changed_mix):", list);
    if (changes) *changes = std::move(lines);
  }
  if (ckpt.resume_step && *ckpt.resume_step > found->step)
    log_info("resuming from ", path, " at step ", found->step, ", fast-forwarding to step ", *ckpt.resume_step);
  else
    log_info("resuming from ", path, " at step ", found->step);
  return found;
}

PlannerCheckpointWriter::PlannerCheckpointWriter(std::string dir, uint32_t keep)
    : dir_(std::move(dir)), keep_(keep) {
  make_directory(dir_);
  thread_ = std::thread([this] { run(); });
}

PlannerCheckpointWriter::~PlannerCheckpointWriter() {
  try {
    finish();
  } catch (const std::exception& e) {
    log_error("planner checkpoint writer: ", e.what());
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PlannerCheckpointWriter::rethrow_failure() {
  if (!failure_) return;
  std::exception_ptr failure = std::exchange(failure_, nullptr);
  std::rethrow_exception(failure);
}

void PlannerCheckpointWriter::submit(const PlannerCheckpoint& checkpoint) {
  {
    std::lock_guard lock(mutex_);
    rethrow_failure();
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string path = planner_checkpoint_path(dir_, checkpoint.step);
  write_planner_checkpoint_file(temporary_path(path), checkpoint);
  last_write_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<Pending> replaced;
  {
    std::lock_guard lock(mutex_);
    if (pending_) replaced = std::move(pending_);
    pending_ = Pending{checkpoint.step, path};
  }
  wake_.notify_all();
  // An older checkpoint not yet made durable is superseded by this one.
  if (replaced && replaced->path != path) default_storage().remove(temporary_path(replaced->path));
}

void PlannerCheckpointWriter::finish() {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [this] { return !pending_ && !busy_; });
  rethrow_failure();
}

void PlannerCheckpointWriter::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || pending_.has_value(); });
    if (!pending_) return;  // stop_ with nothing queued
    Pending pending = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      sync_path(temporary_path(pending.path));
      rename_durably(temporary_path(pending.path), pending.path);
      prune_step_files(dir_, kPrefix, keep_);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failure) failure_ = failure;
    wake_.notify_all();
  }
}

}  // namespace msd
