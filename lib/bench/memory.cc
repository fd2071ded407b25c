#include "bench/memory.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench/launch.h"
#include "bench/work_dir.h"
#include "common/error.h"
#include "common/files.h"
#include "common/digest.h"
#include "common/json_writer.h"
#include "datagen/datagen.h"
#include "msd/config.h"
#include "source/indexed/indexed_source.h"
#include "source/format.h"
#include "source/source.h"

namespace msd::bench {

namespace {

std::string source_name(int s) {
  char name[16];
  std::snprintf(name, sizeof name, "s%03d", s);
  return name;
}

// Source s of the dataset: JSON lines (even s: a line index, and the
// tokenizer on the loader) or a Megatron indexed corpus (odd s: sizes and
// pointers), `documents` records each, written once and reused.
std::string write_source(const std::string& dir, int s, uint64_t documents) {
  static const char* const words[] = {"data", "loader", "sample", "token", "source", "window", "rank", "batch",
                                      "model", "train", "the", "of", "and", "a", "to", "in", "memory", "index",
                                      "sequence", "pipeline", "tensor", "context", "parallel", "slot"};
  uint64_t rng = 0x5eed0000ULL + static_cast<uint64_t>(s);
  const std::string prefix = dir + "/" + source_name(s) + "-" + std::to_string(documents);
  if (s % 2 == 0) {
    const std::string path = prefix + ".jsonl";
    if (file_exists(path)) return path;
    const std::string temp = path + ".tmp";
    {
      std::ofstream out(temp);
      for (uint64_t d = 0; d < documents; ++d) {
        std::string text;
        const uint64_t n = 8 + splitmix64(rng) % 32;
        for (uint64_t w = 0; w < n; ++w) text += std::string(w ? " " : "") + words[splitmix64(rng) % std::size(words)];
        JsonWriter json;
        out << json.begin_object().value("text", text).end_object().str() << "\n";
      }
      if (!out) throw IoError(str("cannot write ", temp));
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) throw IoError(str("cannot rename ", temp));
    return path;
  }
  return write_random_corpus(prefix, documents, 16, 80, 250, rng);
}

std::string write_config(const MemoryOptions& options, const std::string& dir, const std::string& vocab,
                         const std::vector<std::string>& paths, int sources, const HybridLayout& l) {
  const std::string path = dir + "/job-s" + std::to_string(sources) + "-r" + std::to_string(l.dp * l.pp * l.cp * l.tp) + ".ini";
  std::ofstream out(path);
  out << "[job]\nsteps = " << options.steps << "\nglobal_batch = " << 16 * l.dp << "\nseq_len = " << options.seq_len
      << "\nmicro_batches = 1\nprefetch_steps = 1\nseed = 11\n\n";
  out << "[topology]\ndp = " << l.dp << "\npp = " << l.pp << "\ncp = " << l.cp << "\ntp = " << l.tp
      << "\nloaders = " << std::min(options.loaders, sources) << "\n\n[mix]\nsources = ";
  for (int s = 0; s < sources; ++s) out << (s ? ", " : "") << source_name(s);
  out << "\n\n";
  for (int s = 0; s < sources; ++s)
    out << "[source." << source_name(s) << "]\nformat = " << format_name(s % 2 == 0 ? SourceFormat::jsonl : SourceFormat::indexed) << "\npath = "
        << paths[static_cast<size_t>(s)] << "\n\n";
  out << "[tokenizer]\nvocab = " << vocab << "\n\n[loader]\nwindow_mb = 16\n\n[emulator]\ntime_scale = 0\n\n"
      << "[output]\nprogress_every = 0\nlog_level = warn\n";
  if (!out) throw IoError(str("cannot write ", path));
  return path;
}

MemoryMode run_mode(const std::string& config, const std::string& mode, const std::string& work, uint64_t steps) {
  const std::vector<std::string> args = {"--config", config, "--mode", mode};
  std::vector<const char*> argv = {"msd-run"};
  for (const auto& a : args) argv.push_back(a.c_str());
  const Invocation inv = parse_command_line(static_cast<int>(argv.size()), argv.data());
  MemoryMode result;
  result.world_size = inv.config.world_size();
  const std::string stem = config.substr(0, config.size() - 4) + "-" + mode;
  std::vector<std::string> run_args = args;
  run_args.insert(run_args.end(), {"--summary-json", stem + ".json"});
  std::fprintf(stderr, "msd-bench memory: %s on %d ranks (log %s.log)\n", mode.c_str(), result.world_size,
               stem.c_str());
  const int rc = run_command(mpirun_command(result.world_size, executable_dir() + "/msd-run", run_args), stem + ".log");
  if (rc != 0) throw Error(str("the ", mode, " run failed with exit code ", rc, "; see ", stem, ".log"));
  const JsonValue s = read_json_file(stem + ".json");
  auto number = [&](const std::string& key) {
    const double v = json_number(s, key);
    if (std::isnan(v)) throw Error(str(stem, ".json has no number ", key));
    return v;
  };
  result.loader_memory_bytes = static_cast<uint64_t>(number("loader_memory_bytes.total"));
  result.planner_bytes = static_cast<uint64_t>(number("loader_memory_bytes.planner"));
  result.loader_bytes = static_cast<uint64_t>(number("loader_memory_bytes.loader"));
  result.client_bytes = static_cast<uint64_t>(number("loader_memory_bytes.client"));
  result.bytes_fetched_per_step = number("bytes_fetched_total") / static_cast<double>(steps);
  result.bytes_needed_per_step = number("bytes_needed_total") / static_cast<double>(steps);
  result.fetch_redundancy = number("fetch_redundancy");
  (void)work;
  return result;
}

}  // namespace

HybridLayout hybrid_layout(int ranks) {
  if (ranks >= 8 && ranks % 8 == 0) return {ranks / 8, 2, 2, 2};
  if (ranks == 4) return {1, 1, 2, 2};
  if (ranks == 2) return {1, 1, 1, 2};
  if (ranks == 1) return {};
  throw ConfigError(str("--ranks: ", ranks, " is not 1, 2, 4 or a multiple of 8 (dp x pp 2 x cp 2 x tp 2)"));
}

int megatron_loading_ranks(const HybridLayout& layout) { return layout.dp * layout.cp * std::min(layout.pp, 2); }

MemoryReport run_memory_bench(const MemoryOptions& options) {
  if (options.sources.empty() || options.ranks.empty()) throw ConfigError("--sources and --ranks need a value each");
  int max_sources = 0;
  for (int s : options.sources) {
    if (s < 1 || s > 1024) throw ConfigError(str("--sources: ", s, " is not in [1, 1024]"));
    max_sources = std::max(max_sources, s);
  }
  for (int r : options.ranks) {
    const HybridLayout l = hybrid_layout(r);
    if (options.seq_len % (2 * static_cast<uint32_t>(l.cp)) != 0)
      throw ConfigError(str("--seq-len: ", options.seq_len, " is not divisible by 2 * cp = ", 2 * l.cp));
  }
  if (options.documents_per_source < 1) throw ConfigError("--documents must be at least 1");
  if (options.steps < 1) throw ConfigError("--steps must be at least 1");
  if (options.loaders < 1) throw ConfigError("--loaders must be at least 1");
  const WorkDir work_dir(options.work_dir, "memory", true);  // kept, for inspection
  const std::string& work = work_dir.path();
  make_dir(work + "/data");
  // The vocabulary of the tiny dataset (BPE trained on its text).
  datagen::DatagenOptions gen;
  gen.out_dir = work + "/data/base";
  gen.seed = 7;
  gen.scale = "tiny";
  gen.bad_samples = 0;
  std::fprintf(stderr, "msd-bench memory: writing %d sources of %llu documents under %s/data\n", max_sources,
               static_cast<unsigned long long>(options.documents_per_source), work.c_str());
  datagen::generate_dataset(gen);
  const std::string vocab = gen.out_dir + "/vocab.tiktoken";
  std::vector<std::string> paths;
  for (int s = 0; s < max_sources; ++s) {
    paths.push_back(write_source(work + "/data", s, options.documents_per_source));
    // Opening a JSON-lines source once writes its index cache, so every run
    // measures loading the index, as a job does after the first, and not
    // the one-time scan.
    SourceConfig source;
    source.name = source_name(s);
    source.format = s % 2 == 0 ? SourceFormat::jsonl : SourceFormat::indexed;
    source.path = paths.back();
    open_source(source, SourceOptions{});
  }

  MemoryReport report;
  report.documents_per_source = options.documents_per_source;
  for (int sources : options.sources) {
    for (int ranks : options.ranks) {
      MemoryRow row;
      row.sources = sources;
      row.ranks = ranks;
      row.layout = hybrid_layout(ranks);
      const std::string config = write_config(options, work, vocab, paths, sources, row.layout);
      row.disaggregated = run_mode(config, "disaggregated", work, options.steps);
      row.colocated = run_mode(config, "colocated", work, options.steps);
      row.ratio = row.disaggregated.loader_memory_bytes
                      ? double(row.colocated.loader_memory_bytes) / double(row.disaggregated.loader_memory_bytes)
                      : 0.0;
      const int clients = row.layout.dp * row.layout.pp * row.layout.cp * row.layout.tp;
      row.megatron_bytes = row.colocated.loader_memory_bytes / static_cast<uint64_t>(clients) *
                           static_cast<uint64_t>(megatron_loading_ranks(row.layout));
      row.ratio_vs_megatron = row.disaggregated.loader_memory_bytes
                                  ? double(row.megatron_bytes) / double(row.disaggregated.loader_memory_bytes)
                                  : 0.0;
      report.rows.push_back(row);
    }
  }
  return report;
}

std::string memory_json(const MemoryReport& report) {
  JsonWriter w;
  w.begin_object();
  w.value("documents_per_source", report.documents_per_source);
  w.begin_array("rows");
  for (const MemoryRow& row : report.rows) {
    w.begin_object();
    w.value("sources", row.sources);
    w.value("ranks", row.ranks);
    w.begin_object("layout")
        .value("dp", row.layout.dp)
        .value("pp", row.layout.pp)
        .value("cp", row.layout.cp)
        .value("tp", row.layout.tp)
        .end_object();
    w.value("colocated_bytes", row.colocated.loader_memory_bytes);
    w.value("disaggregated_bytes", row.disaggregated.loader_memory_bytes);
    w.value("ratio", row.ratio);
    w.value("megatron_bytes", row.megatron_bytes);
    w.value("ratio_vs_megatron", row.ratio_vs_megatron);
    w.begin_object("fetch_redundancy")
        .value("colocated", row.colocated.fetch_redundancy)
        .value("disaggregated", row.disaggregated.fetch_redundancy)
        .end_object();
    for (const auto& [name, mode] : {std::pair{"colocated", &row.colocated}, std::pair{"disaggregated", &row.disaggregated}})
      w.begin_object(name)
          .value("world_size", mode->world_size)
          .value("planner_bytes", mode->planner_bytes)
          .value("loader_bytes", mode->loader_bytes)
          .value("client_bytes", mode->client_bytes)
          .value("bytes_fetched_per_step", mode->bytes_fetched_per_step)
          .value("bytes_needed_per_step", mode->bytes_needed_per_step)
          .end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

void write_memory_text(const MemoryReport& report, std::ostream& out) {
  char line[256];
  out << "msd-bench memory: loader memory (peak RSS over start-up) and sample bytes fetched/needed per step,\n"
         "colocated (every rank opens every source) vs disaggregated (planner + loaders), "
      << report.documents_per_source << " documents per source\n";
  std::snprintf(line, sizeof line, "  %7s %5s %-12s %12s %12s %7s %12s %7s %12s %12s %10s %10s\n", "sources", "ranks",
                "dp.pp.cp.tp", "colocated", "disagg.", "ratio", "megatron", "ratio", "coloc. MB/st", "disagg MB/st", "coloc f/n",
                "disagg f/n");
  out << line;
  for (const MemoryRow& row : report.rows) {
    char layout[32];
    std::snprintf(layout, sizeof layout, "%d.%d.%d.%d", row.layout.dp, row.layout.pp, row.layout.cp, row.layout.tp);
    std::snprintf(line, sizeof line,
                  "  %7d %5d %-12s %9.1f MB %9.1f MB %6.2fx %9.1f MB %6.2fx %12.3f %12.3f %10.2f %10.2f\n", row.sources,
                  row.ranks, layout, row.colocated.loader_memory_bytes / 1e6, row.disaggregated.loader_memory_bytes / 1e6,
                  row.ratio, row.megatron_bytes / 1e6, row.ratio_vs_megatron, row.colocated.bytes_fetched_per_step / 1e6,
                  row.disaggregated.bytes_fetched_per_step / 1e6, row.colocated.fetch_redundancy,
                  row.disaggregated.fetch_redundancy);
    out << line;
  }
  out << "  megatron: the colocated run's loader memory per rank x the ranks that load under Megatron-LM\n"
         "  (TP rank 0, first and last pipeline stage, every CP rank); its ratio is against disaggregated\n";
  out << "  f/n: bytes fetched (colocated: loaded and transformed) over bytes the batches use, all client ranks\n";
}

}  // namespace msd::bench
