#include "checkpoint/planner_checkpoint.h"

#include <chrono>
#include <cstdlib>
#include <cstddef>
#include <filesystem>
#include <map>
#include <sstream>

#include "checkpoint/data_record.h"
#include "checkpoint/hdf5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/step_files.h"
#include "common/digest.h"
#include "common/error.h"
#include "common/log.h"
#include "source/source.h"

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

// Option -> value of an INI text written by to_ini ("section.key" keys).
std::map<std::string, std::string> ini_values(const std::string& ini) {
  std::map<std::string, std::string> values;
  std::istringstream in(ini);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const size_t equals = line.find(" = ");
    if (equals == std::string::npos) continue;
    values[section + "." + line.substr(0, equals)] = line.substr(equals + 3);
  }
  return values;
}

// Options that do not change which documents a step holds: how fast or by
// whom they are read, and the mesh, which only places them (each step's
// documents are the mix's job.global_batch samples whatever the layout;
// docs/checkpoint.md, "What a resume may change").
bool stream_independent(const std::string& key) {
  for (const char* exact : {"job.steps", "job.prefetch_steps", "topology.loaders", "topology.shadow_loaders",
                            "topology.broadcast_at", "topology.dp", "topology.pp", "topology.cp", "topology.tp",
                            "topology.order", "topology.ranks_per_node", "topology.data_ranks", "job.micro_batches",
                            "topology.partition_plan", "topology.network_reads", "job.stall_timeout_s", "job.startup_timeout_s"})
    if (key == exact) return true;
  for (const char* prefix : {"loader.", "emulator.", "output.", "checkpoint.", "fault.", "topology.scaling"})
    if (key.rfind(prefix, 0) == 0) return true;
  // Emulated storage latency (source.NAME.read_delay_us) only slows reads;
  // the cache of decoded blocks (source.NAME.cache_mib) only speeds them.
  auto ends_with = [&](const char* suffix) { return key.rfind("source.", 0) == 0 && key.ends_with(suffix); };
  return ends_with(".read_delay_us") || ends_with(".cache_mib");
}

// The stream order's options (compared as the orders they resolve to: the
// order, not its spelling, is what the stream depends on).
bool order_option(const std::string& key) {
  return key.rfind("source.", 0) == 0 &&
         (key.ends_with(".shuffle") || key.ends_with(".shuffle_block_records") || key.ends_with(".shuffle_window_blocks"));
}

// Each source's stream order in the run that wrote the checkpoint (its INI
// values `saved`) against this run's, both over the files `data` lists. A
// run from before source.NAME.shuffle existed took the uniform order. Throws
// ConfigError naming the first source whose order differs.
void check_same_orders(const PlannerCheckpoint& checkpoint, const std::map<std::string, std::string>& saved,
                       const Config& config, const DataFingerprint& data) {
  for (size_t s = 0; s < config.sources.size(); ++s) {
    const SourceConfig& now = config.sources[s];
    std::vector<std::string> files;
    for (const FileFingerprint& file : data.files)
      if (file.source == s) files.push_back(file.path);
    SourceConfig before = now;
    const std::string prefix = "source." + now.name + ".";
    const auto shuffle = saved.find(prefix + "shuffle");
    before.shuffle = shuffle == saved.end() ? Shuffle::uniform
                                            : find_option_value<Shuffle>(shuffle->second).value_or(Shuffle::automatic);
    for (auto [key, field] : {std::pair{"shuffle_block_records", &SourceConfig::shuffle_block_records},
                              std::pair{"shuffle_window_blocks", &SourceConfig::shuffle_window_blocks}})
      if (const auto it = saved.find(prefix + key); it != saved.end())
        before.*field = std::strtoull(it->second.c_str(), nullptr, 10);
    const ShuffleOrder then = shuffle_order(before, files), order = shuffle_order(now, files);
    auto describe = [](const ShuffleOrder& o) {
      return o.blocks ? str("block (", o.block_records, " records a block, ", o.window_blocks, " a window)")
                      : std::string("uniform");
    };
    if (then != order)
      throw ConfigError(str("--resume: ", prefix, "shuffle: the stream's order was ", describe(then),
                            " in the run that wrote the checkpoint at step ", checkpoint.step, " and is ",
                            describe(order), " now; the batch stream would not continue (set ", prefix,
                            "shuffle and its block options as that run had them)"));
  }
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
  file.close(str("closing ", path));
  const size_t sources = c.source_samples.size();
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

// The data under the checkpoint against the data now (check_resumable).
static void check_same_data(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data) {
  const std::vector<std::string> differences = fingerprint_differences(checkpoint.data, data, config);
  if (differences.empty()) return;
  std::string list;
  for (const auto& d : differences) list += "\n  " + d;
  if (!config.checkpoint.accept_changed_data)
    throw ConfigError(str("--resume: the data changed since the checkpoint at step ", checkpoint.step,
                          " was written; the batch stream would not continue:", list,
                          "\n(--resume-accept-changed-data, = --checkpoint.accept_changed_data=true, resumes anyway)"));
  log_warn("--resume: the data changed since the checkpoint at step ", checkpoint.step,
           " was written; resuming anyway (checkpoint.accept_changed_data):", list);
}

void check_resumable(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data) {
  if (checkpoint.seed != config.job.seed)
    throw ConfigError(str("--resume: the checkpoint at step ", checkpoint.step, " was written with job.seed = ",
                          checkpoint.seed, ", this run has job.seed = ", config.job.seed));
  const auto saved = ini_values(checkpoint.config_ini);
  const auto now = ini_values(to_ini(config));
  // An option the checkpoint's text lacks is newer than its run, which ran
  // by the option's default (a source's too).
  Config base;
  for (const SourceConfig& source : config.sources) {
    SourceConfig fresh;
    fresh.name = source.name;
    base.sources.push_back(fresh);
  }
  const auto defaults = ini_values(to_ini(base));
  auto value_in = [&](const std::map<std::string, std::string>& values, const std::string& key) {
    if (auto it = values.find(key); it != values.end()) return "'" + it->second + "'";
    if (auto it = defaults.find(key); &values == &saved && it != defaults.end()) return "'" + it->second + "'";
    return std::string("(not set)");
  };
  std::map<std::string, bool> keys;
  for (const auto& [key, value] : saved) keys[key] = true;
  for (const auto& [key, value] : now) keys[key] = true;
  for (const auto& [key, unused] : keys) {
    if (stream_independent(key) || order_option(key)) continue;
    const std::string before = value_in(saved, key), after = value_in(now, key);
    if (before != after)
      throw ConfigError(str("--resume: ", key, " was ", before, " in the run that wrote the checkpoint at step ",
                            checkpoint.step, " and is ", after, " now; the batch stream would not continue"));
  }
  check_same_orders(checkpoint, saved, config, data);
  check_same_data(checkpoint, config, data);
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

std::optional<PlannerCheckpoint> find_resume_checkpoint(const Config& config, const DataFingerprint& data) {
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
  check_resumable(*found, config, data);
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
  if (replaced && replaced->path != path) std::filesystem::remove(temporary_path(replaced->path));
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
