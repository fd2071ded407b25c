// The loaders' checkpoint under MPI: every loader rank writes its part of one
// file through parallel HDF5; the file reads back whole with serial HDF5, and
// a loader of a different pool reads the snapshot records of its sources; a
// file with one stored value changed afterwards is refused, naming where.
//
// Usage: test_loader_checkpoint DIR, under mpiexec with any rank count. All
// ranks agree on the exit code.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/loader_checkpoint.h"
#include "checkpoint/step_files.h"
#include "common/error.h"
#include "mpi/mpi_test.h"
#include "tools/h5_poke.h"

using namespace msd;
using test::fail;

namespace {

// Rank 1 holds no snapshot, the others hold r+1 records of sources r, r+1, ...
// (mod 4) of growing size (rank 0's first is empty).
LoaderCheckpointPart part_of(int rank, uint64_t step) {
  LoaderCheckpointPart part;
  part.loader = static_cast<uint32_t>(rank);
  if (rank == 1) return part;
  for (int i = 0; i <= rank; ++i) {
    SnapshotRecord r;
    r.source = static_cast<uint32_t>((rank + i) % 4);
    r.cursor = step * 10 + static_cast<uint64_t>(i);
    r.index = static_cast<uint64_t>(1000 * rank + i);
    r.text_tokens = static_cast<uint32_t>(3 * i);
    r.patches = static_cast<uint32_t>(i);
    r.patch_bytes = 768;
    for (int b = 0; b < 37 * i; ++b) r.bytes.push_back(static_cast<unsigned char>(rank * 31 + b));
    part.records.push_back(std::move(r));
  }
  return part;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    if (argc != 2) throw Error("usage: test_loader_checkpoint DIR");
    const std::string dir = str(argv[1], "/np", size);
    if (rank == 0) std::filesystem::remove_all(dir);
    MPI_Barrier(MPI_COMM_WORLD);
    for (uint64_t step : {10, 20, 30}) write_loader_checkpoint(MPI_COMM_WORLD, dir, step, part_of(rank, step), 2);

    // Retention: the newest two; the file names the step.
    const auto files = list_step_files(dir, "loaders");
    if (files.size() != 2 || files[0].first != 30 || files[1].first != 20)
      fail("rank ", rank, ": expected loader checkpoints 30 and 20, found ", files.size(), " files");
    if (std::filesystem::exists(temporary_path(loader_checkpoint_path(dir, 30))))
      fail("the temporary file is still there");

    const auto parts = read_loader_checkpoint(loader_checkpoint_path(dir, 30));
    if (parts.size() != static_cast<size_t>(size)) fail("rank ", rank, ": ", parts.size(), " parts for ", size, " loaders");
    for (int r = 0; r < size && r < static_cast<int>(parts.size()); ++r)
      if (!(parts[r] == part_of(r, 30))) fail("rank ", rank, ": the part of loader ", r, " does not read back equal");

    // A loader of another pool that serves sources 0 and 2 gets every record
    // of those sources, ordered by (source, cursor).
    const std::vector<uint32_t> mine = {0, 2};
    const auto records = read_loader_snapshot(loader_checkpoint_path(dir, 30), mine);
    size_t expected = 0;
    for (int r = 0; r < size; ++r)
      for (const auto& record : part_of(r, 30).records) expected += record.source == 0 || record.source == 2;
    if (records.size() != expected) fail("snapshot of sources 0, 2: ", records.size(), " records, expected ", expected);
    for (size_t i = 1; i < records.size(); ++i)
      if (records[i - 1].source > records[i].source ||
          (records[i - 1].source == records[i].source && records[i - 1].cursor > records[i].cursor))
        fail("snapshot records out of order at ", i);
    for (const auto& record : records)
      if (record.source != 0 && record.source != 2) fail("snapshot holds source ", record.source);

    const auto latest = latest_loader_checkpoint(dir, 25);
    if (!latest || *latest != loader_checkpoint_path(dir, 20)) fail("latest loader checkpoint <= 25 is not step 20's");
    if (latest_loader_checkpoint(dir, 5)) fail("a loader checkpoint <= step 5 was found");

    // One snapshot record's cursor, one part's row range: each is found and named;
    // a resume then takes the older intact checkpoint.
    MPI_Barrier(MPI_COMM_WORLD);  // every rank has read the intact files
    const std::string copy = str(dir, "/copy-", rank, ".h5");
    using Field = std::pair<const char*, const char*>;  // dataset, member
    for (const auto& [dataset, member] : {Field{"records", "cursor"}, Field{"parts", "records_count"}}) {
      std::filesystem::copy_file(loader_checkpoint_path(dir, 30), copy, std::filesystem::copy_options::overwrite_existing);
      test::poke_dataset(copy, dataset, 0, member);
      try {
        read_loader_checkpoint(copy);
        fail("rank ", rank, ": a loader checkpoint with /", dataset, " changed was read");
      } catch (const IoError& e) {
        if (std::string(e.what()).find(str("dataset /", dataset)) == std::string::npos)
          fail("rank ", rank, ": the refusal does not name /", dataset, ": ", e.what());
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) test::poke_dataset(loader_checkpoint_path(dir, 30), "records", 0, "index");
    MPI_Barrier(MPI_COMM_WORLD);
    const auto intact = latest_loader_checkpoint(dir, 30);
    if (!intact || *intact != loader_checkpoint_path(dir, 20)) fail("rank ", rank, ": a changed checkpoint was used");
  } catch (const std::exception& e) {
    fail("rank ", rank, ": ", e.what());
  }
  return test::finish("loader_checkpoint");
}
