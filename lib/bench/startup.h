// `msd-bench startup`: how long a job over thousands of shards takes to its
// first batch, and what its ranks hold at start-up, with and without index
// caches.
//
// It writes (msd-datagen's generator) a source of many small JSON-lines
// shards and one of fewer, larger ones, then runs msd-run under mpirun with
// `loaders` loader ranks (on this machine: every rank of the job at once,
// oversubscribed) cold and warm, `repeats` times each, alternating:
//   cold  no index caches (loader.cache_dir emptied) and the data files
//         evicted from the page cache (fdatasync + POSIX_FADV_DONTNEED), so
//         every index is built by reading the data from the disk;
//   warm  the caches of the run before, the data in the page cache.
// Beside msd, the same mesh in practice's layout (job.mode =
// colocated_samples: `loaders` training ranks, each opening every source
// itself, as a per-rank data loader does) on the same files, cold and warm.
// Each run reads back its summary's "startup" object (docs/summary.md):
// seconds from the job's start to each start-up point, per role, and what
// each rank held at its end (peak RSS, descriptors, CPU seconds).
// app/msd_bench.cc only parses the command line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace msd::bench {

struct StartupBenchOptions {
  std::string work_dir;  // dataset, caches, configurations, logs; default a new /tmp/msd-bench-startup-*, removed
  bool keep = false;     // keep work_dir (a default one) after the run
  uint64_t small_shards = 10000, small_shard_docs = 20;  // web documents: about 1 KB each
  uint64_t large_shards = 2000, large_shard_docs = 40;   // long documents: about 14 KB each
  int loaders = 32;  // loader ranks of the msd runs; training ranks of the baseline
  int clients = 2;   // data-parallel clients of the msd runs
  uint32_t repeats = 3;
  bool baseline = true;  // the colocated_samples rows
};

// One run: its figures by name (startup_figure_names()).
struct StartupRun {
  std::map<std::string, double> figures;
};

struct StartupRow {
  std::string layout;  // msd | colocated
  std::string cache;   // cold | warm
  int ranks = 0;
  std::vector<StartupRun> runs;
};

struct StartupReport {
  StartupBenchOptions options;
  uint64_t small_docs = 0, large_docs = 0;
  uint64_t small_bytes = 0, large_bytes = 0;
  double generate_s = 0;
  std::vector<StartupRow> rows;
};

// The figures of a run, in report order: seconds (suffix _s), bytes
// (_bytes) or counts; each reported as median, min and max over the repeats.
const std::vector<std::string>& startup_figure_names();

// Throws ConfigError for bad options, Error when a run fails (its log named).
StartupReport run_startup_bench(const StartupBenchOptions& options);
std::string startup_json(const StartupReport& report);
std::string startup_text(const StartupReport& report);

}  // namespace msd::bench
