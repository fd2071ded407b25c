#include "checkpoint/loader_checkpoint.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <set>

#include "checkpoint/hdf5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/step_files.h"
#include "common/error.h"
#include "common/log.h"
#include "transport/mpi.h"

namespace msd {

namespace {

constexpr const char* kPrefix = "loaders";  // docs/checkpoint.md: loaders-<step>.h5

// Rows as stored (docs/checkpoint.md, "Loader checkpoint").
struct PartRow {
  uint32_t loader;
  uint64_t records_begin, records_count;
};
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

h5::CompoundType part_type() {
  h5::CompoundType type(sizeof(PartRow));
  type.add("loader", offsetof(PartRow, loader), H5T_NATIVE_UINT32)
      .add("records_begin", offsetof(PartRow, records_begin), H5T_NATIVE_UINT64)
      .add("records_count", offsetof(PartRow, records_count), H5T_NATIVE_UINT64);
  return type;
}

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

// Collective: creates 1-D dataset `name` of `total` rows and writes this
// rank's `count` rows at `first` (every rank calls it, maybe with count 0).
void write_slice(hid_t parent, const std::string& name, hid_t type, uint64_t total, uint64_t first, uint64_t count,
                 const void* rows) {
  const std::string hint = str("writing my rows of ", name, " in the loader checkpoint");
  const hsize_t dims[1] = {total};
  h5::Dataspace file_space(MSD_H5(H5Screate_simple(1, dims, nullptr), hint));
  h5::Dataset dataset(
      MSD_H5(H5Dcreate2(parent, name.c_str(), type, file_space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), hint));
  if (total == 0) return;  // nothing to write anywhere
  const hsize_t mem_dims[1] = {std::max<uint64_t>(count, 1)};
  h5::Dataspace memory_space(MSD_H5(H5Screate_simple(1, mem_dims, nullptr), hint));
  if (count == 0) {
    MSD_H5(H5Sselect_none(file_space.get()), hint);
    MSD_H5(H5Sselect_none(memory_space.get()), hint);
  } else {
    const hsize_t start[1] = {first};
    const hsize_t block[1] = {count};
    MSD_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, block, nullptr), hint);
  }
  h5::PropertyList transfer(MSD_H5(H5Pcreate(H5P_DATASET_XFER), hint));
  MSD_H5(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_COLLECTIVE), hint);
  MSD_H5(H5Dwrite(dataset.get(), type, memory_space.get(), file_space.get(), transfer.get(), rows), hint);
}

}  // namespace

std::string loader_checkpoint_path(const std::string& dir, uint64_t step) {
  return step_file_path(dir, kPrefix, step);
}

void write_loader_checkpoint(MPI_Comm loaders, const std::string& dir, uint64_t step, const LoaderCheckpointPart& mine,
                             uint32_t keep) {
  int rank = 0, size = 0;
  MSD_MPI(MPI_Comm_rank(loaders, &rank), "loader checkpoint: rank in the loaders' communicator");
  MSD_MPI(MPI_Comm_size(loaders, &size), "loader checkpoint: size of the loaders' communicator");
  const std::string path = loader_checkpoint_path(dir, step);
  const std::string temp = temporary_path(path);
  if (rank == 0) make_directory(dir);
  MSD_MPI(MPI_Barrier(loaders), "loader checkpoint: waiting for the directory");

  // This rank's rows and where they go: an exclusive prefix sum of counts.
  std::vector<RecordRow> records;
  uint64_t my_bytes = 0;
  for (const auto& r : mine.records) {
    records.push_back({r.source, r.text_tokens, r.patches, r.patch_bytes, r.cursor, r.index, my_bytes, r.bytes.size()});
    my_bytes += r.bytes.size();
  }
  const std::array<uint64_t, 2> counts = {records.size(), my_bytes};
  std::array<uint64_t, 2> first = {0, 0}, total = {0, 0};
  MSD_MPI(MPI_Exscan(counts.data(), first.data(), 2, MPI_UINT64_T, MPI_SUM, loaders),
          "loader checkpoint: offsets of my rows");
  if (rank == 0) first = {0, 0};  // MPI_Exscan leaves rank 0's result undefined
  MSD_MPI(MPI_Allreduce(counts.data(), total.data(), 2, MPI_UINT64_T, MPI_SUM, loaders),
          "loader checkpoint: total rows");
  for (auto& r : records) r.bytes_offset += first[1];
  std::vector<unsigned char> bytes;
  bytes.reserve(my_bytes);
  for (const auto& r : mine.records) bytes.insert(bytes.end(), r.bytes.begin(), r.bytes.end());
  const PartRow part{mine.loader, first[0], counts[0]};

  {
    h5::PropertyList access = h5::file_access(loaders);
    h5::File file = h5::create_file(temp, access.get());
    const hid_t root = file.get();
    h5::write_attribute(root, "format_version", kLoaderCheckpointVersion);
    h5::write_attribute(root, "step", step);
    h5::write_attribute(root, "loaders", static_cast<uint64_t>(size));
    const h5::CompoundType parts = part_type(), record_rows = record_type();
    write_slice(root, "parts", parts.get(), static_cast<uint64_t>(size), static_cast<uint64_t>(rank), 1, &part);
    write_slice(root, "records", record_rows.get(), total[0], first[0], counts[0], records.data());
    write_slice(root, "bytes", H5T_NATIVE_UINT8, total[1], first[1], counts[1], bytes.data());
    file.close(str("closing ", temp, " (collective)"));
  }
  if (rank == 0) {
    {
      h5::PropertyList access = h5::file_access();
      h5::File file = h5::open_file(temp, true, access.get());
      seal_file(file.get());
      file.close(str("closing ", temp, " after sealing it"));
    }
    sync_path(temp);
    rename_durably(temp, path);
    prune_step_files(dir, kPrefix, keep);
  }
  MSD_MPI(MPI_Barrier(loaders), "loader checkpoint: waiting for the rename");
}

std::vector<LoaderCheckpointPart> read_loader_checkpoint(const std::string& path) {
  h5::PropertyList access = h5::file_access();
  h5::File file = h5::open_file(path, false, access.get());
  const hid_t root = file.get();
  const uint64_t version = h5::read_u64_attribute(root, "format_version");
  if (version != kLoaderCheckpointVersion)
    throw IoError(str(path, ": loader checkpoint format version ", version, ", this msd reads version ",
                      kLoaderCheckpointVersion));
  if (auto changed = check_seal(root)) throw IoError(str(path, ": changed after it was written: ", *changed));
  const h5::CompoundType parts_type = part_type(), record_rows = record_type();
  const auto parts = h5::read_table<PartRow>(root, "parts", parts_type.get());
  const auto records = h5::read_table<RecordRow>(root, "records", record_rows.get());
  const auto bytes = h5::read_array<uint8_t>(root, "bytes");
  if (parts.size() != h5::read_u64_attribute(root, "loaders"))
    throw IoError(str(path, ": ", parts.size(), " parts for ", h5::read_u64_attribute(root, "loaders"), " loaders"));
  file.close(str("closing ", path));

  std::vector<LoaderCheckpointPart> result;
  for (const auto& p : parts) {
    if (p.records_begin + p.records_count > records.size())
      throw IoError(str(path, ": part of loader ", p.loader, " points past the end of its tables"));
    LoaderCheckpointPart part;
    part.loader = p.loader;
    for (uint64_t i = p.records_begin; i < p.records_begin + p.records_count; ++i) {
      const RecordRow& r = records[i];
      if (r.bytes_offset + r.bytes_length > bytes.size())
        throw IoError(str(path, ": record ", i, " points past the end of /bytes"));
      SnapshotRecord record{r.source, r.cursor, r.index, r.text_tokens, r.patches, r.patch_bytes, {}};
      record.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(r.bytes_offset),
                          bytes.begin() + static_cast<std::ptrdiff_t>(r.bytes_offset + r.bytes_length));
      part.records.push_back(std::move(record));
    }
    result.push_back(std::move(part));
  }
  return result;
}

std::vector<SnapshotRecord> read_loader_snapshot(const std::string& path, std::span<const uint32_t> sources) {
  const std::set<uint32_t> wanted(sources.begin(), sources.end());
  std::vector<SnapshotRecord> records;
  for (auto& part : read_loader_checkpoint(path))
    for (auto& record : part.records)
      if (wanted.count(record.source)) records.push_back(std::move(record));
  std::sort(records.begin(), records.end(), [](const SnapshotRecord& a, const SnapshotRecord& b) {
    return a.source != b.source ? a.source < b.source : a.cursor < b.cursor;
  });
  return records;
}

std::optional<std::string> latest_loader_checkpoint(const std::string& dir, uint64_t max_step) {
  for (const auto& [step, file] : list_step_files(dir, kPrefix)) {
    if (step > max_step) continue;
    try {
      read_loader_checkpoint(file);
      return file;
    } catch (const IoError& e) {
      log_warn("skipping loader checkpoint ", file, " (step ", step, "): ", e.what());
    }
  }
  return std::nullopt;
}

}  // namespace msd
