// msd-bench: benchmark programs, one subcommand each; the measuring lives in
// lib/bench/. A subcommand is a function that parses its own options and a
// line in `subcommands` below.
#include <mpi.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench/handoff.h"
#include "bench/memory.h"
#include "bench/throughput.h"
#include "bench/transforms.h"
#include "common/error.h"
#include "common/log.h"

namespace po = boost::program_options;

namespace {

// Returns the exit code; `argv[0]` is the subcommand's name, which the
// parser skips as it would a program name.
int transforms_main(int argc, char** argv) {
  msd::bench::TransformsBenchOptions options;
  bool json = false;
  po::options_description described(
      "Usage: msd-bench transforms [options]\n\n"
      "Speed of the loader's CPU work against the reference implementations, measured\n"
      "in this run on the same inputs, one core each:\n"
      "  tokenizer  MB/s of UTF-8 text: msd's tokenizer vs the npm package tiktoken under\n"
      "             Node.js (tools/reference/install.sh installs it; without it the\n"
      "             reference is reported unavailable), and documents whose ids differ;\n"
      "             and msd's encode_batch over --threads threads (aggregate and per thread);\n"
      "  jpeg       source megapixels/s: msd's image transform (decode + resize + patchify)\n"
      "             vs a plain full-size TurboJPEG decode, with the transform's time split;\n"
      "             on the dataset's images (or --images) and on large synthetic photos.\n"
      "Inputs default to a dataset made by msd-datagen (web and books text, image shards,\n"
      "vocabulary). Rates are medians over passes over all inputs.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("data", po::value(&options.data_dir)->default_value(options.data_dir),
       "dataset directory (msd-datagen --out DIR) giving the default inputs")
      ("text", po::value(&options.text), "text file instead of the dataset's: plain UTF-8 (a document per line) or .jsonl")
      ("images", po::value(&options.images), "JPEG files instead of the dataset's images (comma-separated globs)")
      ("vocab", po::value(&options.vocab), "tiktoken vocabulary (default: DATA/vocab.tiktoken)")
      ("pattern", po::value(&options.pattern)->default_value(options.pattern),
       "pre-tokenization pattern: cl100k, o200k, gpt2, r50k, p50k or a regex")
      ("seconds", po::value(&options.seconds)->default_value(options.seconds), "least measured seconds per rate")
      ("min-passes", po::value(&options.min_passes)->default_value(options.min_passes), "least passes per rate")
      ("max-side", po::value(&options.max_side)->default_value(options.max_side), "longest image side after resizing, pixels")
      ("patch", po::value(&options.patch)->default_value(options.patch), "image patch side, pixels")
      ("large-photos", po::value(&options.large_photos)->default_value(options.large_photos),
       "synthetic 6-12 megapixel photos for the large-photo row; 0 leaves it out")
      ("max-text-mb", po::value<double>()->default_value(static_cast<double>(options.max_text_bytes) / (1 << 20)),
       "text to tokenize, MiB (whole documents)")
      ("max-images", po::value(&options.max_images)->default_value(options.max_images), "images to decode, at most")
      ("reference-dir", po::value(&options.reference_dir), "folder of bench_encode.mjs (default: the source tree's tools/reference)")
      ("node", po::value(&options.node)->default_value(options.node), "the Node.js executable")
      ("threads", po::value(&options.threads)->default_value(options.threads),
       "threads for the tokenizer's encode_batch rate")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  po::variables_map values;
  po::store(po::command_line_parser(argc, argv).options(described).run(), values);
  po::notify(values);
  if (values.count("help")) {
    std::cout << described << '\n';
    return 0;
  }
  const double max_text_mb = values["max-text-mb"].as<double>();
  if (!(max_text_mb > 0)) throw msd::ConfigError("--max-text-mb must be above 0");
  options.max_text_bytes = static_cast<uint64_t>(max_text_mb * (1 << 20));
  if (options.patch == 0 || options.max_side < options.patch)
    throw msd::ConfigError("--patch must be at least 1 and at most --max-side");
  const msd::bench::TransformsReport report = msd::bench::run_transforms_bench(options);
  if (json) {
    std::cout << msd::bench::transforms_json(report) << '\n';
  } else {
    msd::bench::write_transforms_text(report, std::cout);
  }
  return 0;
}

int throughput_main(int argc, char** argv) {
  msd::bench::ThroughputOptions options;
  bool json = false;
  po::options_description described(
      "Usage: msd-bench throughput --config FILE [options] [-- msd-run options...]\n\n"
      "Runs the configuration twice through msd-run under mpirun, back to back: the\n"
      "colocated baseline (--mode=colocated: every training rank loads its own shard,\n"
      "micro-batches by sample count, greedy packing in arrival order) and msd\n"
      "(disaggregated: planner + loaders, attention-cost balancing). Prints tokens/s of\n"
      "each and their ratio, the per-step max/mean cost over DP ranks (median and\n"
      "worst), the same per micro-batch index, the lower bound, and data-wait time.\n"
      "Options after -- go to both runs (e.g. -- --job.steps=10). mpirun flags come from\n"
      "MSD_MPIRUN_FLAGS when set (default: as tools/mpirun.sh).\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&options.config)->required(), "msd-run configuration (e.g. configs/bench-longctx.ini)")
      ("work-dir", po::value(&options.work_dir), "where summaries and logs go (default: a new /tmp/msd-bench-*)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  int own = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      own = i;
      for (int k = i + 1; k < argc; ++k) options.overrides.emplace_back(argv[k]);
      break;
    }
  }
  po::variables_map values;
  po::store(po::command_line_parser(own, argv).options(described).run(), values);
  if (values.count("help")) {
    std::cout << described << '\n';
    return 0;
  }
  po::notify(values);
  const msd::bench::ThroughputReport report = msd::bench::run_throughput_bench(options);
  if (json) {
    std::cout << msd::bench::throughput_json(report) << '\n';
  } else {
    msd::bench::write_throughput_text(report, std::cout);
  }
  return 0;
}

int memory_main(int argc, char** argv) {
  msd::bench::MemoryOptions options;
  bool json = false;
  std::string sources, ranks;
  po::options_description described(
      "Usage: msd-bench memory [options]\n\n"
      "Loader memory against the number of sources S and training ranks R: for each\n"
      "(S, R) it runs msd-run colocated (every rank opens every source) and disaggregated\n"
      "(planner + loaders) on a generated dataset of S sources with realistic indexes, in\n"
      "the hybrid layout dp x pp 2 x cp 2 x tp 2 (smaller R: tp 2, cp 2). Prints each\n"
      "mode's loader memory (peak RSS over start-up, summed over the ranks that hold\n"
      "loader state), their ratio, and the sample bytes fetched over bytes needed.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("sources", po::value(&sources)->default_value("8,32,128"), "S per row, comma-separated")
      ("ranks", po::value(&ranks)->default_value("8,32"), "R (client ranks) per row, comma-separated")
      ("documents", po::value(&options.documents_per_source)->default_value(options.documents_per_source),
       "records per source")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps per run")
      ("loaders", po::value(&options.loaders)->default_value(options.loaders), "disaggregated loader ranks")
      ("seq-len", po::value(&options.seq_len)->default_value(options.seq_len), "positions per sequence")
      ("work-dir", po::value(&options.work_dir), "dataset, summaries and logs (default: a new /tmp/msd-bench-memory-*)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  po::variables_map values;
  po::store(po::command_line_parser(argc, argv).options(described).run(), values);
  if (values.count("help")) {
    std::cout << described << '\n';
    return 0;
  }
  po::notify(values);
  auto list = [](const std::string& text, const char* what) {
    std::vector<int> out;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = std::min(text.find(',', start), text.size());
      try {
        out.push_back(std::stoi(text.substr(start, comma - start)));
      } catch (const std::exception&) {
        throw msd::ConfigError(std::string(what) + ": '" + text + "' is not a list of numbers");
      }
      start = comma + 1;
    }
    return out;
  };
  options.sources = list(sources, "--sources");
  options.ranks = list(ranks, "--ranks");
  const msd::bench::MemoryReport report = msd::bench::run_memory_bench(options);
  if (json) {
    std::cout << msd::bench::memory_json(report) << '\n';
  } else {
    msd::bench::write_memory_text(report, std::cout);
  }
  return 0;
}

int handoff_main(int argc, char** argv) {
  msd::bench::HandoffOptions options;
  bool json = false;
  po::options_description described(
      "Usage: msd-bench handoff [options]\n\n"
      "How fast a client reads a batch out of a loader's RMA window: msd's Window\n"
      "(MPI_Get of every piece, then one flush) against memcpy of the same pieces in\n"
      "the same process, for three batch shapes (short-context, long-context, 8K\n"
      "packed; log-normal documents of int32 tokens scattered over the window). Two\n"
      "runs of 2 ranks under mpirun: the one-node settings (MSD_MPIRUN_FLAGS, default\n"
      "osc sm) and the forced network path (pml/osc ucx, UCX_TLS=tcp,self over\n"
      "loopback, docs/multi-node.md). ratio_vs_memcpy per path: all shapes' bytes over\n"
      "their MPI_Get time, divided by the same over memcpy time.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("seconds", po::value(&options.seconds)->default_value(options.seconds), "least measured seconds per rate")
      ("scale", po::value(&options.scale)->default_value(options.scale), "multiplies the shapes' sequence length")
      ("work-dir", po::value(&options.work_dir)->default_value(options.work_dir), "where the runs' files go")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  po::variables_map values;
  po::store(po::command_line_parser(argc, argv).options(described).run(), values);
  if (values.count("help")) {
    std::cout << described << '\n';
    return 0;
  }
  po::notify(values);
  if (!(options.seconds > 0) || !(options.scale > 0)) throw msd::ConfigError("--seconds and --scale must be above 0");
  const msd::bench::HandoffReport report = msd::bench::run_handoff_bench(options);
  std::cout << (json ? msd::bench::handoff_json(report) + "\n" : msd::bench::handoff_text(report));
  for (const auto& path : report.paths)
    if (!path.ran && path.path == "shared_memory") return 1;
  return 0;
}

// Under mpirun, started by `handoff`: handoff-worker SECONDS SCALE OUT_FILE.
int handoff_worker_main(int argc, char** argv) {
  if (argc != 4) throw msd::ConfigError("usage: msd-bench handoff-worker SECONDS SCALE OUT_FILE");
  MPI_Init(&argc, &argv);
  try {
    msd::bench::handoff_worker(MPI_COMM_WORLD, std::stod(argv[1]), std::stod(argv[2]), argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "msd-bench handoff-worker: " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}

struct Subcommand {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);
};

constexpr Subcommand subcommands[] = {
    {"transforms", "tokenizer and JPEG speed against tiktoken and TurboJPEG", transforms_main},
    {"throughput", "msd against the colocated baseline on one configuration", throughput_main},
    {"memory", "loader memory and fetched bytes, colocated vs disaggregated, over sources x ranks", memory_main},
    {"handoff", "client MPI_Get from loader windows vs memcpy, shared memory and network path", handoff_main},
    {"handoff-worker", "(started by handoff under mpirun)", handoff_worker_main},
};

void print_usage(std::ostream& out) {
  out << "Usage: msd-bench <subcommand> [options]\n"
         "       msd-bench <subcommand> --help\n\n"
         "Subcommands:\n";
  for (const Subcommand& subcommand : subcommands) {
    out << "  " << subcommand.name << std::string(12 - std::min<size_t>(11, std::strlen(subcommand.name)), ' ')
        << subcommand.summary << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  msd::set_log_prefix("bench");
  msd::set_log_level(msd::LogLevel::warn);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(std::cout);
    return argc < 2 ? 2 : 0;
  }
  for (const Subcommand& subcommand : subcommands) {
    if (std::strcmp(argv[1], subcommand.name) != 0) continue;
    try {
      return subcommand.main(argc - 1, argv + 1);
    } catch (const po::error& error) {
      std::cerr << "msd-bench " << subcommand.name << ": " << error.what() << " (see --help)\n";
    } catch (const msd::Error& error) {
      std::cerr << "msd-bench " << subcommand.name << ": " << error.what() << '\n';
    }
    return 2;
  }
  std::cerr << "msd-bench: unknown subcommand '" << argv[1] << "'\n";
  print_usage(std::cerr);
  return 2;
}
