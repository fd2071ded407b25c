#include "bench/startup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/launch.h"
#include "bench/work_dir.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "common/stats.h"
#include "datagen/datagen.h"

namespace msd::bench {

const std::vector<std::string>& startup_figure_names() {
  static const std::vector<std::string> names = {
      // End to end, and from the job's start (after MPI_Init and the
      // communicator splits) to the last client's first batch.
      "launch_to_first_batch_s", "launch_s", "job_to_first_batch_s",
      // Where the job's start-up went (docs/summary.md "startup"): the
      // slowest loader's open (index built or read), its hello reaching the
      // planner, the planner's state (sources agreed, data fingerprinted,
      // trace and checkpoint), the agreement, the first step (its samples
      // loaded, planned), the first batch (read and built).
      "open_index_s", "hello_s", "planner_state_s", "agree_s", "first_step_s", "first_batch_s",
      // What ranks held at the end of their start-up (max over a role's ranks).
      "planner_rss_bytes", "loader_rss_bytes", "client_rss_bytes", "planner_open_files", "loader_open_files",
      "client_open_files", "planner_cpu_s", "loader_cpu_s", "client_cpu_s",
      // Data files indexed by reading them, and read from an index cache,
      // over every rank that opened sources.
      "files_indexed", "files_cached", "run_wall_s"};
  return names;
}

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Every data file's pages written out and dropped from the page cache, so
// that the next reader reads them from the disk (the files are ours: nothing
// else is evicted).
void evict_from_page_cache(const std::string& dir) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(str("cannot open ", entry.path().string(), " to evict it from the page cache"));
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

std::string write_config(const StartupBenchOptions& o, const std::string& data, const std::string& work) {
  const std::string path = work + "/job.ini";
  std::ofstream out(path);
  out << "[job]\nsteps = 2\nglobal_batch = " << 2 * std::max(o.loaders, o.clients)
      << "\nseq_len = 2048\nmicro_batches = 1\nseed = 1\n"
      << "[topology]\ndp = " << o.clients << "\nloaders = " << o.loaders << "\n"
      << "[mix]\nsources = small, large\n"
      << "[source.small]\nformat = jsonl\npath = " << data << "/web/*.jsonl\nweight = 0.5\n"
      << "[source.large]\nformat = jsonl\npath = " << data << "/books/*.jsonl\nweight = 0.5\n"
      << "[tokenizer]\nvocab = " << data << "/vocab.tiktoken\n"
      << "[loader]\nwindow_mb = 8\ncache_dir = " << work << "/cache\n"
      << "[emulator]\ntime_scale = 0\n";
  if (!out) throw IoError(str("cannot write ", path));
  return path;
}

double at(const JsonValue& s, const std::string& path) {
  const double v = json_number(s, "startup." + path);
  return std::isnan(v) ? 0.0 : v;
}

// The figures of one run from its summary; `spawn` and `end`: when mpirun
// was started and when it returned (unix seconds).
StartupRun figures_of(const JsonValue& s, bool colocated, double spawn, double end) {
  StartupRun run;
  auto& f = run.figures;
  const double origin = at(s, "origin_unix_s"), first_batch = at(s, "first_batch_unix_s");
  f["launch_to_first_batch_s"] = first_batch - spawn;
  f["launch_s"] = origin - spawn;
  f["job_to_first_batch_s"] = at(s, "clients.first_s.max");
  f["run_wall_s"] = end - spawn;
  const std::string opener = colocated ? "clients" : "loaders";
  f["open_index_s"] = at(s, opener + ".open_s.max");
  if (colocated) {
    f["agree_s"] = at(s, "clients.agreed_s.max") - f["open_index_s"];
    f["first_batch_s"] = at(s, "clients.first_s.max") - at(s, "clients.agreed_s.max");
  } else {
    f["hello_s"] = at(s, "planner.hello_s.max") - f["open_index_s"];
    f["planner_state_s"] = at(s, "planner.ready_s.max") - at(s, "planner.hello_s.max");
    f["agree_s"] = at(s, "planner.agreed_s.max") - at(s, "planner.ready_s.max");
    f["first_step_s"] = at(s, "planner.first_s.max") - at(s, "planner.agreed_s.max");
    f["first_batch_s"] = at(s, "clients.first_s.max") - at(s, "planner.first_s.max");
  }
  for (const std::string role : {"planner", "loader", "client"}) {
    if (colocated && role != "client") continue;  // practice's layout has clients only
    const std::string key = role == "planner" ? role : role + "s";
    f[str(role, "_rss_bytes")] = at(s, key + ".peak_rss_bytes.max");
    f[str(role, "_open_files")] = at(s, key + ".open_files.max");
    f[str(role, "_cpu_s")] = at(s, key + ".cpu_s.max");
  }
  f["files_indexed"] = at(s, opener + ".files_indexed");
  f["files_cached"] = at(s, opener + ".files_cached");
  return run;
}

// One msd-run of `row` (its cache state prepared by the caller).
StartupRun run_once(const StartupRow& row, const std::string& config, const std::string& work, int index) {
  const std::string label = str(row.layout, "-", row.cache, "-", index);
  const std::string summary = str(work, "/", label, ".json"), log = str(work, "/", label, ".log");
  std::vector<std::string> args = {"--config", config, "--summary-json", summary, "--output.log_level=info"};
  const bool colocated = row.layout == "colocated";
  if (colocated) {
    args.push_back("--job.mode=colocated_samples");
    args.push_back(str("--topology.dp=", row.ranks));
  } else {
    // A real job checkpoints: the loaders fingerprint the data and the planner writes
    // the trace's header at start-up.
    args.push_back(str("--checkpoint.dir=", work, "/checkpoints-", label));
  }
  std::fprintf(stderr, "msd-bench startup: %s on %d ranks (log %s)\n", label.c_str(), row.ranks, log.c_str());
  const double spawn = unix_now();
  const int rc = run_command(mpirun_command(row.ranks, executable_dir() + "/msd-run", args), log);
  const double end = unix_now();
  if (rc != 0) throw Error(str("the ", label, " run failed with exit code ", rc, "; see ", log));
  return figures_of(read_json_file(summary), colocated, spawn, end);
}

void generate(const StartupBenchOptions& o, const std::string& data, StartupReport& report) {
  datagen::DatagenOptions d;
  d.out_dir = data;
  d.seed = 1;
  d.scale = "tiny";
  d.web_docs = o.small_shards * o.small_shard_docs;
  d.web_shard_docs = o.small_shard_docs;
  d.long_docs = o.large_shards * o.large_shard_docs;
  d.long_shard_docs = o.large_shard_docs;
  d.images = 0;
  d.indexed_docs = 0;
  d.bad_samples = 0;
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "msd-bench startup: generating %llu + %llu shards in %s\n",
               static_cast<unsigned long long>(o.small_shards), static_cast<unsigned long long>(o.large_shards),
               data.c_str());
  const datagen::DatagenResult result = datagen::generate_dataset(d);
  report.generate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const datagen::DatasetFile& file : result.files) {
    if (file.path.rfind("web/", 0) == 0) {
      report.small_docs += file.samples;
      report.small_bytes += file.bytes;
    } else if (file.path.rfind("books/", 0) == 0) {
      report.large_docs += file.samples;
      report.large_bytes += file.bytes;
    }
  }
}

}  // namespace

StartupReport run_startup_bench(const StartupBenchOptions& options) {
  if (options.small_shards == 0 || options.large_shards == 0 || options.small_shard_docs == 0 ||
      options.large_shard_docs == 0)
    throw ConfigError("--small-shards, --large-shards and their --*-shard-docs: at least 1");
  if (options.loaders < 2) throw ConfigError("--loaders: at least 2 (one per source)");
  if (options.clients < 1) throw ConfigError("--clients: at least 1");
  if (options.repeats < 1) throw ConfigError("--repeats: at least 1");
  const WorkDir work(options.work_dir, "startup", options.keep);
  StartupReport report;
  report.options = options;
  const std::string data = work.path() + "/data";
  generate(options, data, report);
  const std::string config = write_config(options, data, work.path());
  std::vector<StartupRow> rows;
  for (const std::string layout : {"msd", "colocated"}) {
    if (layout == "colocated" && !options.baseline) continue;
    const int ranks = layout == "msd" ? 1 + options.loaders + options.clients : options.loaders;
    for (const std::string cache : {"cold", "warm"}) rows.push_back({layout, cache, ranks, {}});
  }
  // Cold and warm alternate, so that load on the machine falls on both alike.
  for (uint32_t r = 0; r < options.repeats; ++r)
    for (StartupRow& row : rows) {
      if (row.cache == "cold") {
        std::error_code ignored;
        std::filesystem::remove_all(work.path() + "/cache", ignored);
        evict_from_page_cache(data);
      }
      row.runs.push_back(run_once(row, config, work.path(), static_cast<int>(r)));
    }
  report.rows = std::move(rows);
  if (options.keep || !options.work_dir.empty()) std::fprintf(stderr, "msd-bench startup: kept %s\n", work.path().c_str());
  return report;
}

namespace {

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(const StartupRow& row, const std::string& name) {
  std::vector<double> values;
  for (const StartupRun& run : row.runs)
    if (auto it = run.figures.find(name); it != run.figures.end()) values.push_back(it->second);
  if (values.empty()) return {};
  return {median(values), *std::min_element(values.begin(), values.end()), max_of(values)};
}

bool row_has(const StartupRow& row, const std::string& name) {
  return !row.runs.empty() && row.runs.front().figures.count(name) > 0;
}

}  // namespace

std::string startup_json(const StartupReport& r) {
  JsonWriter w;
  w.begin_object();
  w.begin_object("dataset")
      .value("small_shards", r.options.small_shards)
      .value("small_docs", r.small_docs)
      .value("small_bytes", r.small_bytes)
      .value("large_shards", r.options.large_shards)
      .value("large_docs", r.large_docs)
      .value("large_bytes", r.large_bytes)
      .value("generate_s", r.generate_s)
      .end_object();
  w.value("loaders", r.options.loaders).value("clients", r.options.clients).value("repeats", r.options.repeats);
  w.begin_array("rows");
  for (const StartupRow& row : r.rows) {
    w.begin_object().value("layout", row.layout).value("cache", row.cache).value("ranks", row.ranks);
    for (const std::string& name : startup_figure_names()) {
      if (!row_has(row, name)) continue;
      const Stats s = stats_of(row, name);
      w.begin_object(name).value("median", s.median).value("min", s.min).value("max", s.max).end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

std::string startup_text(const StartupReport& r) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-bench startup: %llu small shards (%llu documents, %.1f MB) and %llu large shards (%llu "
                "documents, %.1f MB); msd with %d loaders and %d clients, practice (colocated_samples) with %d "
                "ranks; median [min, max] of %u runs each\n",
                static_cast<unsigned long long>(r.options.small_shards), static_cast<unsigned long long>(r.small_docs),
                r.small_bytes / 1e6, static_cast<unsigned long long>(r.options.large_shards),
                static_cast<unsigned long long>(r.large_docs), r.large_bytes / 1e6, r.options.loaders, r.options.clients,
                r.options.loaders, r.options.repeats);
  out << line;
  for (const std::string& name : startup_figure_names()) {
    std::snprintf(line, sizeof line, "  %-24s", name.c_str());
    out << line;
    for (const StartupRow& row : r.rows) {
      const Stats s = stats_of(row, name);
      const bool bytes = name.ends_with("_bytes");
      const double scale = bytes ? 1.0 / (1 << 20) : 1.0;
      if (!row_has(row, name))
        std::snprintf(line, sizeof line, " %s %s: -", row.layout.c_str(), row.cache.c_str());
      else
        std::snprintf(line, sizeof line, " %s %s: %.3g [%.3g, %.3g]%s", row.layout.c_str(), row.cache.c_str(),
                      s.median * scale, s.min * scale, s.max * scale, bytes ? " MiB" : "");
      out << line;
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace msd::bench
