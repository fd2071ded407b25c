#include "checkpoint/changed_mix.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <optional>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/files.h"
#include "source/source.h"

namespace msd {

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

namespace {

// The files `data` lists for source `source`; for data that lists none (a
// trace written outside msd-run), the globs' own names.
std::vector<std::string> listed_files(const DataFingerprint& data, uint32_t source, const SourceConfig& config) {
  std::vector<std::string> files;
  for (const FileFingerprint& f : data.files)
    if (f.source == source) files.push_back(f.path);
  return files.empty() ? split_patterns(config.path) : files;
}

}  // namespace

std::vector<ShuffleOrder> shuffle_orders(const Config& config, const DataFingerprint& data) {
  std::vector<ShuffleOrder> orders;
  for (uint32_t s = 0; s < config.sources.size(); ++s)
    orders.push_back(shuffle_order(config.sources[s], listed_files(data, s, config.sources[s])));
  return orders;
}

namespace {

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

std::optional<size_t> find_name(const std::vector<std::string>& names, const std::string& name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? std::nullopt : std::optional<size_t>(static_cast<size_t>(it - names.begin()));
}

// One file of a source as its reader counts it (an indexed source's .idx
// with its .bin), from a fingerprint.
struct ReaderFile {
  std::string path;
  std::string name;  // the last component: a dataset moved elsewhere keeps its files
  uint64_t bytes = 0, digest = 0, samples = 0;
  uint64_t first = 0;  // its first file-order index
};

std::vector<ReaderFile> reader_files(const DataFingerprint& data, uint32_t source) {
  std::vector<ReaderFile> files;
  uint64_t first = 0;
  for (const FileFingerprint& f : data.files) {
    if (f.source != source) continue;
    const bool bin_of_previous = !files.empty() && f.path.ends_with(".bin") && files.back().path.ends_with(".idx");
    if (!bin_of_previous) {
      files.push_back({f.path, std::filesystem::path(f.path).filename().string(), 0, 0, f.samples, first});
      first += f.samples;
    }
    files.back().bytes += f.bytes;
    files.back().digest = files.back().digest * 0x100000001b3ULL ^ f.digest;
  }
  return files;
}

uint64_t total_samples(const std::vector<ReaderFile>& files) {
  uint64_t total = 0;
  for (const ReaderFile& f : files) total += f.samples;
  return total;
}

// A kept source's files before and after: each old file matched to the first
// new one of the same name, size and contents not matched yet.
struct FileMatch {
  std::vector<ReaderFile> before, after;
  std::vector<std::optional<size_t>> to;  // per old file
  std::vector<bool> kept;                 // per new file: an old one matched it
  bool same() const {
    if (before.size() != after.size()) return false;
    for (size_t i = 0; i < to.size(); ++i)
      if (to[i] != i) return false;
    return true;
  }
};

FileMatch match_files(const DataFingerprint& old_data, uint32_t old_source, const DataFingerprint& data, uint32_t source) {
  FileMatch m{reader_files(old_data, old_source), reader_files(data, source), {}, {}};
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::deque<size_t>> free;
  for (size_t j = 0; j < m.after.size(); ++j) free[{m.after[j].name, m.after[j].bytes, m.after[j].digest}].push_back(j);
  m.kept.assign(m.after.size(), false);
  for (const ReaderFile& f : m.before) {
    auto& candidates = free[{f.name, f.bytes, f.digest}];
    m.to.emplace_back();
    if (candidates.empty()) continue;
    m.to.back() = candidates.front();
    m.kept[candidates.front()] = true;
    candidates.pop_front();
  }
  return m;
}

// The old indexes onto the new ones, as runs (IndexRun).
std::vector<IndexRun> index_map(const FileMatch& m) {
  std::vector<IndexRun> runs;
  for (size_t i = 0; i < m.before.size(); ++i) {
    const ReaderFile& f = m.before[i];
    if (f.samples == 0) continue;
    const uint64_t to = m.to[i] ? m.after[*m.to[i]].first : kRemovedIndex;
    IndexRun* last = runs.empty() ? nullptr : &runs.back();
    if (last && last->first + last->count == f.first &&
        ((to == kRemovedIndex && last->to == kRemovedIndex) ||
         (to != kRemovedIndex && last->to != kRemovedIndex && last->to + last->count == to)))
      last->count += f.samples;
    else
      runs.push_back({f.first, f.samples, to});
  }
  return runs;
}

// The lines naming a kept source's added, removed and changed files.
std::vector<std::string> file_lines(const std::string& source, const FileMatch& m) {
  std::vector<std::string> lines;
  std::map<std::string, size_t> new_by_name;
  for (size_t j = 0; j < m.after.size(); ++j)
    if (!m.kept[j]) new_by_name[m.after[j].name] = j;
  for (size_t i = 0; i < m.before.size(); ++i) {
    if (m.to[i]) continue;
    const bool changed = new_by_name.count(m.before[i].name) > 0;
    lines.push_back(str("source '", source, "': file ", m.before[i].path, changed ? " changed (size or contents)" : " removed"));
  }
  for (size_t j = 0; j < m.after.size(); ++j)
    if (!m.kept[j]) lines.push_back(str("source '", source, "': file ", m.after[j].path, " added"));
  return lines;
}

std::string value_of(const std::map<std::string, std::string>& values, const std::map<std::string, std::string>& defaults,
                     const std::string& key) {
  if (auto it = values.find(key); it != values.end()) return "'" + it->second + "'";
  if (auto it = defaults.find(key); it != defaults.end()) return "'" + it->second + "'";
  return "(not set)";
}

// Whether `key` is an option of source NAME (source.NAME.*), and which.
std::optional<std::pair<std::string, std::string>> source_option(const std::string& key) {
  if (key.rfind("source.", 0) != 0) return std::nullopt;
  const size_t dot = key.rfind('.');
  if (dot <= 7) return std::nullopt;
  return std::pair(key.substr(7, dot - 7), key.substr(dot + 1));
}

// The stream order's options, compared as the orders they resolve to (the
// order, not its spelling, is what the stream depends on).
bool order_option(const std::string& key) {
  const auto option = source_option(key);
  return option && (option->second == "shuffle" || option->second == "shuffle_block_records" ||
                    option->second == "shuffle_window_blocks");
}

std::string describe(const ShuffleOrder& o) {
  return o.blocks ? str("block (", o.block_records, " records a block, ", o.window_blocks, " a window)")
                  : std::string("uniform");
}

// Kept source `now`'s order in the checkpoint's run (its INI values `saved`,
// over the checkpoint's files of its source `o`) against this run's (over
// `data`'s of its source `s`): the refusal when they differ, else empty. A
// run from before source.NAME.shuffle existed took the uniform order. The
// order holds for the whole stream, so it may not change, not even with the
// files (auto resolves by them) on a resume with a changed mixture.
std::string changed_order(const PlannerCheckpoint& checkpoint, const std::map<std::string, std::string>& saved,
                          uint32_t o, const SourceConfig& now, const DataFingerprint& data, uint32_t s) {
  SourceConfig before = now;
  const std::string prefix = "source." + now.name + ".";
  const auto shuffle = saved.find(prefix + "shuffle");
  before.shuffle = shuffle == saved.end() ? Shuffle::uniform
                                          : find_option_value<Shuffle>(shuffle->second).value_or(Shuffle::automatic);
  for (auto [key, field] : {std::pair{"shuffle_block_records", &SourceConfig::shuffle_block_records},
                            std::pair{"shuffle_window_blocks", &SourceConfig::shuffle_window_blocks}})
    if (const auto it = saved.find(prefix + key); it != saved.end())
      before.*field = std::strtoull(it->second.c_str(), nullptr, 10);
  const ShuffleOrder then = shuffle_order(before, listed_files(checkpoint.data, o, before));
  const ShuffleOrder order = shuffle_order(now, listed_files(data, s, now));
  if (then == order) return {};
  return str(prefix, "shuffle: the stream's order was ", describe(then), " in the run that wrote the checkpoint at step ",
             checkpoint.step, " and is ", describe(order), " now (set ", prefix,
             "shuffle and its block options as that run had them)");
}

}  // namespace

ResumeChanges resume_changes(const PlannerCheckpoint& checkpoint, const Config& config, const DataFingerprint& data) {
  ResumeChanges changes;
  const auto saved = ini_values(checkpoint.config_ini);
  const auto now = ini_values(to_ini(config));
  // An option the checkpoint's text lacks is newer than its run, which ran
  // by its default (a source's too).
  Config base;
  for (const SourceConfig& source : config.sources) {
    SourceConfig fresh;
    fresh.name = source.name;
    base.sources.push_back(fresh);
  }
  const auto defaults = ini_values(to_ini(base));
  const std::vector<std::string> before = split_names(saved.count("mix.sources") ? saved.at("mix.sources") : "");
  std::vector<std::string> after;
  for (const SourceConfig& s : config.sources) after.push_back(s.name);
  std::map<std::string, bool> keys;
  for (const auto& [key, value] : saved) keys[key] = true;
  for (const auto& [key, value] : now) keys[key] = true;
  for (const auto& [key, unused] : keys) {
    if (stream_independent(key) || order_option(key)) continue;
    const std::string was = value_of(saved, defaults, key), is = value_of(now, {}, key);
    if (was == is) continue;
    const auto option = source_option(key);
    const bool kept = option && find_name(before, option->first) && find_name(after, option->first);
    if (option && !kept) continue;  // an option of a source added or removed: that is the change
    if (key == "mix.sources" || key == "mix.schedule" || (option && (option->second == "weight" || option->second == "path"))) {
      changes.mix.push_back(str(key, ": ", was, " -> ", is));
      changes.options_changed = changes.options_changed || option == std::nullopt || option->second == "weight";
      continue;
    }
    if (changes.refused.empty())
      changes.refused = str(key, " was ", was, " in the run that wrote the checkpoint at step ", checkpoint.step,
                            " and is ", is, " now");
  }
  for (const std::string& name : before)
    if (!find_name(after, name)) changes.mix.push_back(str("source '", name, "' removed"));
  for (const std::string& name : after)
    if (!find_name(before, name)) changes.mix.push_back(str("source '", name, "' added"));
  for (uint32_t s = 0; s < after.size(); ++s) {
    const auto o = find_name(before, after[s]);
    if (!o) continue;
    if (std::string order = changed_order(checkpoint, saved, static_cast<uint32_t>(*o), config.sources[s], data, s);
        !order.empty() && changes.refused.empty())
      changes.refused = std::move(order);
    const FileMatch m = match_files(checkpoint.data, static_cast<uint32_t>(*o), data, s);
    if (m.same()) continue;
    changes.files_changed = true;
    for (std::string& line : file_lines(after[s], m)) changes.mix.push_back(std::move(line));
  }
  return changes;
}

namespace {

// One kept source carried over: its stream and the warning's lines.
// `shuffle`: its order, the same before and after (resume_changes).
StreamOrder continue_source(const PlannerCheckpoint& old, uint32_t o, const std::string& name, const FileMatch& m,
                            const ShuffleOrder& shuffle, std::vector<std::string>& lines) {
  const uint32_t key = old.stream_keys.empty() ? o : old.stream_keys.at(o);
  const StreamOrder order = o < old.stream_eras.size() && !old.stream_eras[o].empty()
                                ? StreamOrder(old.seed, key, old.stream_eras[o], shuffle)
                                : StreamOrder(old.seed, key, old.source_samples.at(o), shuffle);
  if (m.same()) return order;
  if (total_samples(m.before) != old.source_samples.at(o))
    throw ConfigError(str("--resume-accept-changed-mix: source '", name, "' has other files than when the checkpoint at "
                          "step ", old.step, " was written, and the checkpoint does not record how many samples each "
                          "of its files held (it predates planner checkpoint format version 5): its files cannot change "
                          "on a resume from it (its weight can, and sources can be added or removed)"));
  const uint64_t cursor = old.consumed.at(o), epoch = order.epoch(cursor);
  std::vector<uint64_t> dropped;
  StreamOrder next = order.changed(cursor, total_samples(m.after), index_map(m), &dropped);
  std::sort(dropped.begin(), dropped.end());
  for (size_t i = 0; i < m.before.size(); ++i) {
    if (m.to[i]) continue;
    const ReaderFile& f = m.before[i];
    const auto lo = std::lower_bound(dropped.begin(), dropped.end(), f.first);
    const auto hi = std::lower_bound(dropped.begin(), dropped.end(), f.first + f.samples);
    lines.push_back(str("source '", name, "': file ", f.path, " removed (or changed): ", hi - lo, " of its ", f.samples,
                        " documents not yet consumed in epoch ", epoch, " are dropped"));
  }
  for (size_t j = 0; j < m.after.size(); ++j)
    if (!m.kept[j])
      lines.push_back(str("source '", name, "': file ", m.after[j].path, " added: its ", m.after[j].samples,
                          " documents join the rest of epoch ", epoch));
  return next;
}

}  // namespace

PlannerCheckpoint continue_with_changed_mix(const PlannerCheckpoint& old, const Config& config,
                                            const DataFingerprint& data, std::vector<std::string>& lines) {
  const auto saved = ini_values(old.config_ini);
  const std::vector<std::string> before = split_names(saved.count("mix.sources") ? saved.at("mix.sources") : "");
  MSD_CHECK_EQ(before.size(), old.source_samples.size());
  const auto now = ini_values(to_ini(config));
  std::vector<std::string> after;
  for (const SourceConfig& s : config.sources) after.push_back(s.name);
  PlannerCheckpoint next;
  next.step = old.step;
  next.seed = old.seed;
  next.config_ini = to_ini(config);
  next.data = data;
  next.bad_samples = old.bad_samples;
  next.mixer_origin_step = old.step;
  uint32_t next_key = static_cast<uint32_t>(before.size());
  for (uint32_t key : old.stream_keys) next_key = std::max(next_key, key + 1);
  const std::vector<ShuffleOrder> shuffles = shuffle_orders(config, data);
  std::vector<std::optional<StreamOrder>> orders;
  for (uint32_t s = 0; s < after.size(); ++s) {
    const std::string& name = after[s];
    const auto o = find_name(before, name);
    std::optional<StreamOrder> order;
    uint64_t cursor = 0, realized = 0;
    if (o) {
      const FileMatch m = match_files(old.data, static_cast<uint32_t>(*o), data, s);
      order.emplace(continue_source(old, static_cast<uint32_t>(*o), name, m, shuffles[s], lines));
      cursor = old.consumed.at(*o);
      realized = old.mixer_realized.at(*o);
      const std::string weight = str("source.", name, ".weight");
      if (saved.count(weight) && now.count(weight) && saved.at(weight) != now.at(weight))
        lines.push_back(str(weight, ": '", saved.at(weight), "' -> '", now.at(weight), "' from step ", old.step));
    } else {
      uint64_t samples = 0;
      for (const ReaderFile& f : reader_files(data, s)) samples += f.samples;
      if (samples == 0)
        throw ConfigError(str("--resume-accept-changed-mix: the data of source '", name, "' records no samples per file"));
      order.emplace(old.seed, next_key++, samples, shuffles[s]);
      lines.push_back(str("source '", name, "' added: its stream starts at cursor 0"));
    }
    next.source_samples.push_back(order->samples());
    next.consumed.push_back(cursor);
    next.mixer_realized.push_back(realized);
    next.mixer_origin.push_back(realized);
    next.stream_keys.push_back(order->key());
    next.stream_eras.push_back(order->plain() ? std::vector<StreamEra>{} : order->eras());
    orders.push_back(std::move(order));
  }
  for (size_t o = 0; o < before.size(); ++o)
    if (!find_name(after, before[o]))
      lines.push_back(str("source '", before[o], "' removed: it stops (", old.consumed[o], " samples consumed)"));
  for (const char* key : {"mix.sources", "mix.schedule"})
    if (saved.count(key) && saved.at(key) != now.at(key))
      lines.push_back(str(key, ": '", saved.at(key), "' -> '", now.at(key), "'"));
  for (const std::string& name : after) {
    const std::string path = str("source.", name, ".path");
    if (find_name(before, name) && saved.count(path) && saved.at(path) != now.at(path))
      lines.push_back(str(path, ": '", saved.at(path), "' -> '", now.at(path), "'"));
  }
  for (const HeldDoc& doc : old.held) {
    const auto s = find_name(after, before.at(doc.source));
    if (!s || orders[*s]->index(doc.cursor) == kRemovedIndex) {
      lines.push_back(str("source '", before.at(doc.source), "': the document at cursor ", doc.cursor,
                          " the outlier hold kept since step ", doc.since, " is gone with its ",
                          s ? "file" : "source", ": dropped"));
      continue;
    }
    HeldDoc kept = doc;
    kept.source = static_cast<uint32_t>(*s);
    next.held.push_back(kept);
  }
  if (std::all_of(next.stream_eras.begin(), next.stream_eras.end(), [](const auto& e) { return e.empty(); }))
    next.stream_eras.clear();
  return next;
}

}  // namespace msd
