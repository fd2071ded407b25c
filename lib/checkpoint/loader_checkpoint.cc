#include "checkpoint/loader_checkpoint.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>

#include "checkpoint/hdf5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/step_files.h"
#include "common/error.h"
#include "common/log.h"

namespace msd {

namespace {

constexpr const char* kPrefix = "loaders";  // docs/checkpoint.md: loaders-<step>-<loader>.h5

// A record as stored (docs/checkpoint.md, "Loader checkpoint").
struct RecordRow {
  uint32_t source;
  uint32_t text_tokens;
  uint32_t patches;
  uint32_t patch_bytes;
  uint64_t cursor;
  uint64_t index;
  uint64_t bytes_offset;  // into /bytes
  uint64_t bytes_length;
};

h5::CompoundType record_type() {
  h5::CompoundType type(sizeof(RecordRow));
  type.add("source", offsetof(RecordRow, source), H5T_NATIVE_UINT32)
      .add("text_tokens", offsetof(RecordRow, text_tokens), H5T_NATIVE_UINT32)
      .add("patches", offsetof(RecordRow, patches), H5T_NATIVE_UINT32)
      .add("patch_bytes", offsetof(RecordRow, patch_bytes), H5T_NATIVE_UINT32)
      .add("cursor", offsetof(RecordRow, cursor), H5T_NATIVE_UINT64)
      .add("index", offsetof(RecordRow, index), H5T_NATIVE_UINT64)
      .add("bytes_offset", offsetof(RecordRow, bytes_offset), H5T_NATIVE_UINT64)
      .add("bytes_length", offsetof(RecordRow, bytes_length), H5T_NATIVE_UINT64);
  return type;
}

void write_part_file(const std::string& path, const LoaderCheckpointRound& round, const LoaderCheckpointPart& part) {
  std::vector<RecordRow> rows;
  std::vector<uint8_t> bytes;
  for (const auto& r : part.records) {
    rows.push_back({r.source, r.text_tokens, r.patches, r.patch_bytes, r.cursor, r.index, bytes.size(), r.bytes.size()});
    bytes.insert(bytes.end(), r.bytes.begin(), r.bytes.end());
  }
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::create_file(path, access.get());
  const hid_t root = file.get();
  h5::write_attribute(root, "format_version", kLoaderCheckpointVersion);
  h5::write_attribute(root, "step", round.step);
  h5::write_attribute(root, "loader", static_cast<uint64_t>(part.loader));
  h5::write_attribute(root, "writers", static_cast<uint64_t>(round.writers));
  h5::write_attribute(root, "seed", round.identity.seed);
  h5::write_attribute(root, "config_digest", round.identity.config_digest);
  h5::write_attribute(root, "data_digest", round.identity.data_digest);
  const h5::CompoundType type = record_type();
  h5::write_table<RecordRow>(root, "records", type.get(), rows);
  h5::write_array<uint8_t>(root, "bytes", bytes);
  seal_file(root);
  file.close(str("closing ", path));
}

// What differs between the identity a round was taken over and `now`, or "".
std::string identity_difference(const LoaderCheckpointIdentity& then, const LoaderCheckpointIdentity& now) {
  std::string why;
  auto differs = [&](uint64_t a, uint64_t b, const char* what) {
    if (a != b) why += str(why.empty() ? "" : ", ", what);
  };
  differs(then.seed, now.seed, "another job.seed");
  differs(then.config_digest, now.config_digest, "other values of the options the stream depends on");
  differs(then.data_digest, now.data_digest, "other data files or vocabulary");
  return why;
}

// (step -> part paths) of every part in `dir`, newest step first.
std::vector<std::pair<uint64_t, std::vector<std::string>>> rounds_in(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::vector<std::string>>> rounds;
  for (const auto& [step, path] : list_step_files(dir, kPrefix)) {
    if (rounds.empty() || rounds.back().first != step) rounds.push_back({step, {}});
    rounds.back().second.push_back(path);
  }
  return rounds;
}

// The parts of one round that read back and were taken over `identity`;
// empty when its identity differs (warned). Unreadable parts are warned.
std::vector<std::string> usable_parts(uint64_t step, const std::vector<std::string>& paths,
                                      const LoaderCheckpointIdentity& identity) {
  std::vector<std::string> usable;
  uint64_t writers = 0;
  for (const auto& path : paths) {
    try {
      const LoaderCheckpointRound round = read_loader_checkpoint(path).round;
      if (const std::string why = identity_difference(round.identity, identity); !why.empty()) {
        log_warn("skipping the loader checkpoint of step ", step, ": taken over ", why, " (", path, ")");
        return {};
      }
      writers = round.writers;
      usable.push_back(path);
    } catch (const IoError& e) {
      log_warn("skipping loader checkpoint part ", path, " (step ", step, "): ", e.what());
    }
  }
  if (!usable.empty() && usable.size() < writers)
    log_warn("the loader checkpoint of step ", step, " has ", usable.size(), " of its ", writers,
             " parts; the samples of the missing ones are read again");
  return usable;
}

}  // namespace

std::string loader_checkpoint_path(const std::string& dir, uint64_t step, uint32_t loader) {
  return step_part_path(dir, kPrefix, step, loader);
}

void write_loader_checkpoint(const std::string& dir, const LoaderCheckpointRound& round,
                             const LoaderCheckpointPart& part, const std::function<void()>& before_rename) {
  const std::string path = loader_checkpoint_path(dir, round.step, part.loader);
  const std::string temp = temporary_path(path);
  make_directory(dir);
  write_part_file(temp, round, part);
  sync_path(temp);
  if (before_rename) before_rename();
  rename_durably(temp, path);
}

LoaderCheckpointFile read_loader_checkpoint(const std::string& path) {
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::open_file(path, false, access.get());
  const hid_t root = file.get();
  const uint64_t version = h5::read_u64_attribute(root, "format_version");
  if (version != kLoaderCheckpointVersion)
    throw IoError(str(path, ": loader checkpoint format version ", version, ", this msd reads version ",
                      kLoaderCheckpointVersion));
  if (auto changed = check_seal(root)) throw IoError(str(path, ": changed after it was written: ", *changed));
  LoaderCheckpointFile result;
  result.round.step = h5::read_u64_attribute(root, "step");
  result.round.writers = static_cast<uint32_t>(h5::read_u64_attribute(root, "writers"));
  result.round.identity = {h5::read_u64_attribute(root, "seed"), h5::read_u64_attribute(root, "config_digest"),
                           h5::read_u64_attribute(root, "data_digest")};
  result.part.loader = static_cast<uint32_t>(h5::read_u64_attribute(root, "loader"));
  const h5::CompoundType type = record_type();
  const auto rows = h5::read_table<RecordRow>(root, "records", type.get());
  const auto bytes = h5::read_array<uint8_t>(root, "bytes");
  file.close(str("closing ", path));
  for (size_t i = 0; i < rows.size(); ++i) {
    const RecordRow& r = rows[i];
    if (r.bytes_offset > bytes.size() || r.bytes_length > bytes.size() - r.bytes_offset)
      throw IoError(str(path, ": record ", i, " points past the end of /bytes"));
    SnapshotRecord record{r.source, r.cursor, r.index, r.text_tokens, r.patches, r.patch_bytes, {}};
    const auto first = bytes.begin() + static_cast<std::ptrdiff_t>(r.bytes_offset);
    record.bytes.assign(first, first + static_cast<std::ptrdiff_t>(r.bytes_length));
    result.part.records.push_back(std::move(record));
  }
  return result;
}

std::vector<SnapshotRecord> read_loader_snapshot(std::span<const std::string> paths,
                                                 std::span<const uint32_t> sources) {
  const std::set<uint32_t> wanted(sources.begin(), sources.end());
  std::vector<SnapshotRecord> records;
  for (const auto& path : paths)
    for (auto& record : read_loader_checkpoint(path).part.records)
      if (wanted.count(record.source)) records.push_back(std::move(record));
  std::sort(records.begin(), records.end(), [](const SnapshotRecord& a, const SnapshotRecord& b) {
    return a.source != b.source ? a.source < b.source : a.cursor < b.cursor;
  });
  return records;
}

std::optional<std::vector<std::string>> latest_loader_checkpoint(const std::string& dir, uint64_t max_step,
                                                                 const LoaderCheckpointIdentity& identity) {
  for (const auto& [step, paths] : rounds_in(dir)) {
    if (step > max_step) continue;
    auto usable = usable_parts(step, paths, identity);
    if (!usable.empty()) return usable;
  }
  return std::nullopt;
}

void prune_loader_checkpoints(const std::string& dir, uint32_t keep) { prune_step_files(dir, kPrefix, keep); }

}  // namespace msd
