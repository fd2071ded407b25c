// msd-plan: offline planning tools. `simulate` plans steps for an emulated
// cluster from synthetic metadata and reports planner time and balance per
// balance method (lib/plan/cluster/simulate.h); with --compare, every training mode's
// throughput on the device model (lib/plan/cluster/simulate_compare.h). `profile`
// measures what each source of a configuration costs a loader
// (lib/profile/profiler.h); `partition` sizes the loader pool from that
// (lib/plan/pool/partition.h, docs/scaling.md); `calibrate` fits the planner's
// cost model to timed micro-batches (lib/plan/cluster/calibrate.h).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "cli.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "plan/cluster/calibrate.h"
#include "plan/cluster/calibration_io.h"
#include "plan/cluster/place_stream.h"
#include "plan/step/modes.h"
#include "plan/pool/partition.h"
#include "plan/cluster/simulate.h"
#include "plan/cluster/simulate_compare.h"
#include "profile/plan_file.h"
#include "profile/profiler.h"
#include "runtime/assignment.h"
#include "source/jsonl/json.h"

namespace po = msd::cli::po;

namespace {

// One of an enumerated option's names (msd/options.h), or ConfigError naming `option`.
template <typename E>
E parse_choice(const std::string& text, const std::string& option) {
  if (const auto value = msd::find_option_value<E>(text)) return *value;
  throw msd::ConfigError(option + ": '" + text + "' is not a valid value (expected " + msd::option_names<E>() + ")");
}

// The placement options msd-plan simulate and place share (SimulateOptions' msd placement fields).
void add_placement_options(po::options_description& described, msd::SimulateOptions& sim) {
  described.add_options()
      ("max-positions-per-micro-batch", po::value(&sim.max_positions_per_micro_batch)->default_value(sim.max_positions_per_micro_batch),
       "the micro-batch budget (job.max_positions_per_micro_batch; 0: seq_len x the sequences of an equal split)")
      ("cost-micro-batch", po::value(&sim.cost_micro_batch)->default_value(sim.cost_micro_batch),
       "what one micro-batch costs whatever it holds, in units of cost (model.cost_micro_batch)")
      ("hold-above", po::value(&sim.hold_above)->default_value(sim.hold_above),
       "the outlier hold: documents over this x seq_len wait (job.hold_above; 0: no hold)")
      ("hold-steps", po::value(&sim.hold_steps)->default_value(sim.hold_steps),
       "the outlier hold: steps a document waits at most (job.hold_steps)");
}

// The configuration: --config FILE and any --section.key=value overrides,
// read and checked as msd-run reads them.
msd::Config read_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) throw msd::ConfigError("--config: a configuration file is required");
  std::vector<std::string> args{"msd-plan", "--config", path};
  args.insert(args.end(), overrides.begin(), overrides.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return msd::parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
}

// Parses a subcommand's options, keeping what it does not know as
// configuration overrides; false after printing --help.
bool parse_or_help(int argc, char** argv, const po::options_description& described, std::vector<std::string>& overrides) {
  po::variables_map values;
  return msd::cli::parse_or_help(argc, argv, described, values, {.unrecognized = &overrides});
}

msd::ProfileReport measure(const msd::Config& config, uint64_t samples, unsigned threads) {
  msd::ProfileOptions options;
  options.samples = samples;
  options.threads = threads;
  options.progress = [](const std::string& source, uint64_t done, uint64_t total) {
    std::cerr << "profile: " << source << " " << done << "/" << total << " samples\r";
    if (done == total) std::cerr << '\n';
  };
  return msd::profile_sources(msd::pipeline_options(config), options);
}

int profile_main(int argc, char** argv) {
  std::string config_path;
  uint64_t samples = 256;
  unsigned threads = 1;
  bool json = false;
  po::options_description described(
      "Usage: msd-plan profile --config FILE [options] [--section.key=value ...]\n\n"
      "Measures what each source of the configuration costs a loader, on --samples\n"
      "samples spread over it, with the real readers and transforms (tokenizer, JPEG\n"
      "decode) and the loaders' own measurement: seconds per sample of read (storage\n"
      "latency included) and of transform, each what one sample costs one thread (a\n"
      "loader's threads share both), transformed bytes per sample, positions per\n"
      "sample, and the memory of the open source (index, buffers, decoder,\n"
      "vocabulary). Progress goes to stderr.\n"
      "docs/scaling.md \"Profiles\".\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&config_path), "the job's configuration (as msd-run's --config)")
      ("samples", po::value(&samples)->default_value(samples), "samples measured per source (fewer if it holds fewer)")
      ("threads", po::value(&threads)->default_value(threads), "threads that read and transform (the seconds are per thread either way)")
      ("json", po::bool_switch(&json), "print JSON (msd-plan partition --profile reads it)");
  std::vector<std::string> overrides;
  if (!parse_or_help(argc, argv, described, overrides)) return 0;
  if (samples == 0) throw msd::ConfigError("--samples: must be at least 1");
  if (threads == 0) throw msd::ConfigError("--threads: must be at least 1");
  const msd::ProfileReport report = measure(read_config(config_path, overrides), samples, threads);
  if (json) std::cout << msd::profile_json(report) << '\n';
  else msd::print_profile(report, std::cout);
  return 0;
}

int calibrate_main(int argc, char** argv) {
  std::string config_path, shapes_out, times_path, shapes_in, check_shapes, check_times;
  uint32_t probes = 256;
  uint64_t seed = 1;
  bool json = false;
  po::options_description described(
      "Usage: msd-plan calibrate --config FILE [options] [--section.key=value ...]\n\n"
      "Fits the planner's cost model to measured micro-batch times: the configuration's\n"
      "model.cost_a (the linear layers' weight against attention's L^2) and\n"
      "model.cost_vision_scale (the vision encoder's). Probe micro-batches of job.seq_len\n"
      "sequences (one long document, short web text, image-text, or a mix; partly\n"
      "padded) are timed, and seconds = c0 + c1*positions + c2*sum(L^2) + c3*vision is\n"
      "fitted by least squares; a = c1/c2. Times come from the configuration's device\n"
      "model (model.preset, device.preset, topology) by default, or from a real trainer:\n"
      "--shapes-out writes the probes as JSON lines, time each on the trainer (forward +\n"
      "backward, one rank), and give the seconds, one per line in order, to --times.\n"
      "--shapes fits on a trainer's own micro-batches instead of the probes; --check-shapes\n"
      "with --check-times judges the fit on other micro-batches (another seed's): the\n"
      "median and 90th percentile of |predicted - measured| / measured.\n"
      "docs/cost-and-balance.md \"Calibration\".\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&config_path), "the job's configuration (as msd-run's --config)")
      ("probes", po::value(&probes)->default_value(probes), "probe micro-batches (at least 4)")
      ("seed", po::value(&seed)->default_value(seed), "seed of the probe shapes")
      ("shapes-out", po::value(&shapes_out), "write the probes here as JSON lines and stop, unless --times is given")
      ("times", po::value(&times_path), "seconds per probe from a trainer, one per line, instead of the device model")
      ("shapes", po::value(&shapes_in), "fit on these micro-batches (JSON lines, as --shapes-out writes) timed by --times")
      ("check-shapes", po::value(&check_shapes), "held-out micro-batches (JSON lines) to judge the fit on")
      ("check-times", po::value(&check_times), "their measured seconds, one per line")
      ("json", po::bool_switch(&json), "print the fit as JSON");
  std::vector<std::string> overrides;
  if (!parse_or_help(argc, argv, described, overrides)) return 0;
  const msd::Config config = read_config(config_path, overrides);
  if (probes < 4) throw msd::ConfigError("--probes: at least 4");
  const uint32_t cp = static_cast<uint32_t>(config.topology.cp);
  if (!shapes_in.empty() && times_path.empty()) throw msd::ConfigError("--shapes: give their seconds with --times");
  if (check_shapes.empty() != check_times.empty())
    throw msd::ConfigError("--check-shapes and --check-times go together");
  const std::vector<msd::MicroBatchShape> shapes = shapes_in.empty()
                                                       ? msd::probe_micro_batches(config.job.seq_len, cp, probes, seed)
                                                       : msd::read_shapes(shapes_in, "--shapes");
  if (!shapes_out.empty()) {
    msd::write_shapes(shapes_out, shapes, "--shapes-out");
    std::cerr << "msd-plan calibrate: " << shapes.size() << " probe micro-batches written to " << shapes_out << '\n';
    if (times_path.empty()) return 0;
  }
  std::string timed_on = times_path;
  const std::vector<double> seconds =
      times_path.empty()
          ? msd::device_model_seconds(msd::make_device_model(config), msd::parallel_of(config), shapes, timed_on)
          : msd::read_times(times_path);
  const msd::Calibration c = msd::calibrate(shapes, seconds, msd::make_cost_model(config), cp);
  msd::HeldOutError held{};
  if (!check_shapes.empty())
    held = msd::held_out_error(c, msd::read_shapes(check_shapes, "--check-shapes"),
                               msd::read_times(check_times, "--check-times"), msd::make_cost_model(config), cp);
  if (json)
    std::cout << msd::calibration_json(c, held) << '\n';
  else
    msd::print_calibration(c, held, timed_on, std::cout);
  return 0;
}

int partition_main(int argc, char** argv) {
  std::string config_path, out_path, profile_path;
  uint64_t samples = 256;
  double steps_per_s = 0.0, max_loader_mb = 0.0;
  msd::PartitionOptions options;
  bool json = false;
  po::options_description described(
      "Usage: msd-plan partition --config FILE [options] [--section.key=value ...]\n\n"
      "Sizes the loader pool: how many loader ranks serve each source, which sources\n"
      "share ranks and how many threads each loader uses (at most loader.threads), so\n"
      "that the loaders keep up with the target step rate at every point of the mixing\n"
      "schedule with the fewest loader ranks, then the least open-source memory. The\n"
      "profiles are measured as msd-plan profile does, or read with --profile. The rate\n"
      "is --steps-per-s, or the device model's step time for the configuration's model\n"
      "and device at each schedule point. msd-run uses the plan with\n"
      "topology.scaling = partition and topology.partition_plan = the --out file.\n"
      "docs/scaling.md \"Partition\".\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value(&config_path), "the job's configuration (as msd-run's --config)")
      ("profile", po::value(&profile_path), "read the profiles from msd-plan profile --json output or a msd-run summary JSON")
      ("samples", po::value(&samples)->default_value(samples), "without --profile: samples measured per source")
      ("steps-per-s", po::value(&steps_per_s), "target steps per second (default: the device model's)")
      ("headroom", po::value(&options.headroom)->default_value(options.headroom),
       "share of each loader rank's time kept spare, in [0, 0.9]")
      ("max-loader-mb", po::value(&max_loader_mb), "most open-source memory one loader rank may hold, MiB")
      ("out", po::value(&out_path), "write the plan (JSON) here, for topology.partition_plan")
      ("json", po::bool_switch(&json), "print the plan as JSON");
  std::vector<std::string> overrides;
  if (!parse_or_help(argc, argv, described, overrides)) return 0;
  if (options.headroom < 0 || options.headroom > 0.9) throw msd::ConfigError("--headroom: must be in [0, 0.9]");
  if (steps_per_s < 0 || (std::isnan(steps_per_s))) throw msd::ConfigError("--steps-per-s: must be positive");
  if (max_loader_mb < 0) throw msd::ConfigError("--max-loader-mb: must be positive");
  if (samples == 0) throw msd::ConfigError("--samples: must be at least 1");
  const msd::Config config = read_config(config_path, overrides);
  const msd::ProfileReport profiles = profile_path.empty() ? measure(config, samples, 1)
                                                           : msd::read_profile_json(profile_path, config.sources, "--profile");
  options.max_threads = config.loader.threads;
  options.max_rank_bytes = max_loader_mb * 1024 * 1024;
  options.memory_option = "--max-loader-mb";
  const msd::PartitionDemand demand = msd::make_demand(config, profiles.profiles, steps_per_s);
  const msd::PartitionPlan plan = msd::partition(demand, options);
  // The static assignment of topology.loaders, for comparison.
  msd::PartitionPlan baseline;
  const msd::SourceAssignment assignment = msd::assign_sources(config.topology.loaders, msd::weight_curves(config));
  baseline.groups = msd::groups_of(assignment, config.loader.threads);
  msd::evaluate(baseline, demand, options, false);
  const std::string text = msd::plan_json(plan, demand, options, &baseline);
  if (!out_path.empty()) {
    std::ofstream out(out_path);
    out << text << '\n';
    if (!out) throw msd::ConfigError("--out: cannot write '" + out_path + "'");
  }
  if (json) std::cout << text << '\n';
  else {
    msd::print_plan(plan, demand, std::cout);
    msd::print_other(baseline, "static, topology.loaders = " + std::to_string(config.topology.loaders), std::cout);
  }
  return 0;
}

int place_main(int argc, char** argv) {
  msd::SimulateOptions sim;
  sim.dp = 2;
  sim.tp = 1;
  sim.seq_len = 4096;
  sim.samples_per_gpu = 8;
  sim.micro_batches = 2;
  sim.steps = 6;
  sim.lengths = "pile";
  sim.image_share = 0.0;
  sim.hold_above = msd::kComparedHoldAbove;  // for the _hold placements
  std::string modes = "megatron,megatron_docmask,megatron_dp_balanced,msd_tokens,msd_greedy";
  po::options_description described(
      "Usage: msd-plan place [options]\n\n"
      "Places one token stream under several placements, for a trainer to time them on\n"
      "the same tokens (tools/bench-trainer.sh, examples/bench_trainer.py). --steps steps\n"
      "of --dp x --samples-per-gpu text documents (lengths from --lengths: pareto, pile or\n"
      "llama, as msd-bench sweep draws them), in each step's arrival order, make the\n"
      "stream, cut at the last whole global batch of Megatron's (its last document\n"
      "shortened) so that every placement places all of it. Placements: megatron\n"
      "(GPTDataset and MegatronPretrainingSampler over the stream: documents and samples\n"
      "shuffled, samples of seq_len inputs dealt in blocks of micro-batch size x dp, full\n"
      "causal attention over each row), megatron_docmask (the same rows, attention per\n"
      "document piece), megatron_dp_balanced (Megatron core's DpBalancedScheduler per\n"
      "step: variable-length rows), and the msd modes step by step with the planner's\n"
      "analytic cost (a = 6 x --hidden, or --cost-a). Every placement has the same\n"
      "steps, each of exactly Megatron's global batch of positions: the placements but\n"
      "megatron and megatron_docmask take the stream in arrival order in steps of that\n"
      "many positions, a document across a step's edge cut there and continued in the\n"
      "next step (its pieces keep its id and begin offsets). An msd mode with _varlen\n"
      "(msd_greedy_varlen) places variable-length rows; _cut cuts documents to balance\n"
      "(job.cuts = balance), _vmb gives each rank its own micro-batch count\n"
      "(job.micro_batch_count = variable), _hold holds outlier documents (job.hold_above),\n"
      "in any combination (msd_greedy_cut_vmb_hold; _cut and _vmb place variable-length\n"
      "rows). docs/evaluation.md, docs/cost-and-balance.md.\n\n"
      "Prints one JSON object: documents (lengths in stream order; a piece's doc indexes\n"
      "it; the cut one shortened), positions (every placement's), dropped_positions (cut\n"
      "off the end), step_positions (every step's, every placement's), megatron_batch\n"
      "(micro_batch_size, micro_batches: Megatron's batch per DP rank and step, a\n"
      "global batch of about a step), and per placement: rows\n"
      "(fixed: each sequence a seq_len row, its tail padding; varlen: a micro-batch one\n"
      "row of its pieces), attention (row: one causal span over each row, positions\n"
      "counting on across its documents and each label the stream's next token;\n"
      "document: each piece attends and is labelled on its own), positions, pieces,\n"
      "micro-batch count, the hold's delays, document_order (megatron and\n"
      "megatron_docmask: the documents in GPTDataset's order, so a row's next token is\n"
      "known; after the last one comes the corpus token after the stream's last\n"
      "document, the first the cut removed: Megatron's one extra label token), and\n"
      "steps[step][rank][micro-batch] = sequences of [doc, begin, length] pieces (a\n"
      "rank's micro-batches: its own count with _vmb).\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("dp", po::value(&sim.dp)->default_value(sim.dp), "data-parallel ranks")
      ("seq-len", po::value(&sim.seq_len)->default_value(sim.seq_len), "positions per sequence (row)")
      ("micro-batches", po::value(&sim.micro_batches)->default_value(sim.micro_batches), "micro-batches per rank and step")
      ("samples-per-gpu", po::value(&sim.samples_per_gpu)->default_value(sim.samples_per_gpu),
       "documents per DP rank and step")
      ("steps", po::value(&sim.steps)->default_value(sim.steps), "steps of the stream")
      ("seed", po::value(&sim.seed)->default_value(sim.seed),
       "seed of the lengths, the arrival orders and GPTDataset's shuffles")
      ("lengths", po::value(&sim.lengths)->default_value(sim.lengths), "pareto | pile | llama")
      ("long-share", po::value(&sim.long_share)->default_value(sim.long_share), "pareto: share of long documents")
      ("hidden", po::value(&sim.model.hidden)->default_value(sim.model.hidden), "the trainer's hidden size (a = 6*hidden)")
      ("cost-a", po::value(&sim.cost_a)->default_value(sim.cost_a), "the planner cost's a directly (0: 6*hidden)")
      ("modes", po::value(&modes)->default_value(modes), "placements, comma-separated")
      ("json", "print JSON (the only output; accepted for symmetry with the other commands)");
  add_placement_options(described, sim);
  std::vector<std::string> unknown;
  if (!parse_or_help(argc, argv, described, unknown)) return 0;
  if (!unknown.empty()) throw msd::ConfigError("msd-plan place: unknown option '" + unknown[0] + "'");
  if (sim.dp == 0 || sim.micro_batches == 0 || sim.samples_per_gpu == 0 || sim.steps == 0 || sim.seq_len < 16)
    throw msd::ConfigError("--dp, --micro-batches, --samples-per-gpu and --steps must be at least 1, --seq-len 16");
  if (!(sim.hold_above >= 0.0)) throw msd::ConfigError("--hold-above: must be >= 0");
  std::cout << msd::place_stream_json(sim, msd::cli::split_list(modes, "--modes"), "--modes") << '\n';
  return 0;
}

}  // namespace

int simulate_main(int argc, char** argv) {
  msd::SimulateOptions options;
  msd::CompareOptions compare;
  std::string command, methods, long_docs = "split", cost_model = "calibrated", shape = "fixed", cuts = "whole",
      count = "fixed";
  po::options_description described(
      "Usage: msd-plan simulate [options]\n"
      "(other commands: msd-plan profile --help, msd-plan partition --help, msd-plan calibrate --help,\n"
      " msd-plan place --help)\n\n"
      "Plans --steps steps for an emulated cluster from synthetic heavy-tailed metadata\n"
      "(short web text, long documents, image-text), with no data and no MPI, once per\n"
      "balance method, and prints the planner's milliseconds per step on one core (wall\n"
      "and thread CPU time) and the balance reached: DP max/mean cost, its lower bound,\n"
      "micro-batch max/mean and DP max/mean positions (median and worst over steps).\n"
      "docs/cost-and-balance.md.\n"
      "With --compare: every training mode (colocated_samples, colocated_tokens, megatron,\n"
      "megatron_docmask, megatron_dp_balanced, megatron_dynamic_cp where --cp > 1 and --pp 1,\n"
      "msd_tokens, msd_greedy, msd_kk) places the same steps, cut at Megatron's last whole\n"
      "global batch, and the device model (--model, --vision, --device) times them:\n"
      "tokens/s, padding, DP and micro-batch max/mean, bubbles, and msd's speedups over\n"
      "the baselines. The planner's cost\n"
      "model is calibrated first (--cost-model): its a and vision_scale are fitted to\n"
      "probe micro-batches timed on the device model, as one profiles a GPU before a\n"
      "run. docs/evaluation.md.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("gpus", po::value(&options.gpus)->default_value(options.gpus), "emulated GPUs: dp = gpus / (tp*pp*cp)")
      ("dp", po::value(&options.dp)->default_value(options.dp), "data-parallel ranks directly (0: from --gpus)")
      ("tp", po::value(&options.tp)->default_value(options.tp), "tensor-parallel size")
      ("pp", po::value(&options.pp)->default_value(options.pp), "pipeline-parallel size")
      ("cp", po::value(&options.cp)->default_value(options.cp), "context-parallel size")
      ("samples-per-gpu", po::value(&options.samples_per_gpu)->default_value(options.samples_per_gpu),
       "samples per step per data-parallel rank (one model replica of tp*pp*cp GPUs)")
      ("seq-len", po::value(&options.seq_len)->default_value(options.seq_len), "positions per packed sequence")
      ("micro-batches", po::value(&options.micro_batches)->default_value(options.micro_batches),
       "micro-batches per rank and step")
      ("steps", po::value(&options.steps)->default_value(options.steps), "steps to plan")
      ("seed", po::value(&options.seed)->default_value(options.seed), "seed of the synthetic metadata")
      ("long-docs", po::value(&long_docs)->default_value(long_docs), "split | truncate")
      ("hidden", po::value(&options.model.hidden)->default_value(options.model.hidden), "model hidden size (a = 6*hidden)")
      ("layers", po::value(&options.model.layers)->default_value(options.model.layers), "model layers")
      ("cost-a", po::value(&options.cost_a)->default_value(options.cost_a), "the cost model's a directly (0: 6*hidden)")
      ("tflops", po::value(&options.tflops)->default_value(options.tflops), "device speed for the step-time column")
      ("long-share", po::value(&options.long_share)->default_value(options.long_share), "share of long documents")
      ("image-share", po::value(&options.image_share)->default_value(options.image_share), "share of image-text samples")
      ("lengths", po::value(&options.lengths)->default_value(options.lengths),
       "text lengths: pareto (short web text + --long-share long), pile or llama (published corpus mixes)")
      ("methods", po::value(&methods), "comma-separated balance methods (default: tokens,greedy,karmarkar_karp)")
      ("compare", "evaluate every training mode on the device model instead")
      ("model", po::value(&compare.model_preset)->default_value(compare.model_preset),
       "--compare: language model preset (llama3-8b, llama3-70b)")
      ("vision", po::value(&compare.vision_preset)->default_value(compare.vision_preset),
       "--compare: vision tower preset for image patches (vit-l), or none")
      ("device", po::value(&compare.device_preset)->default_value(compare.device_preset), "--compare: GPU preset (h100, h200)")
      ("cost-model", po::value(&cost_model)->default_value(cost_model),
       "--compare: the planner's cost, calibrated (fitted to the device's times) or analytic (--cost-a, or 6*hidden)")
      ("micro-batch-shape", po::value(&shape)->default_value(shape),
       "msd's micro-batches: fixed [sequences, seq_len] rows, or varlen (one row of their positions)")
      ("cuts", po::value(&cuts)->default_value(cuts),
       "msd's cuts: whole, or balance (cut to even out the ranks, never more pieces than Megatron's cut; job.cuts)")
      ("micro-batch-count", po::value(&count)->default_value(count),
       "msd's micro-batches per rank: fixed (--micro-batches) or variable (job.micro_batch_count)")
      ("json", "print the report as JSON");
  add_placement_options(described, options);
  po::positional_options_description positional;
  positional.add("command", 1);
  po::options_description hidden;
  hidden.add_options()("command", po::value(&command));
  po::options_description all;
  all.add(described).add(hidden);
  po::variables_map values;
  if (!msd::cli::parse_or_help(argc, argv, all, values, {.positional = &positional, .help = &described})) return 0;
  if (command != "simulate")
    throw msd::ConfigError(
        "expected a command: simulate, profile, partition, calibrate or place (see msd-plan COMMAND --help)");
  if (long_docs != "split" && long_docs != "truncate") throw msd::ConfigError("--long-docs: split or truncate");
  options.long_docs = long_docs == "split" ? msd::LongDocs::split : msd::LongDocs::truncate;
  if (values.count("methods")) {
    options.methods.clear();
    for (const std::string& method : msd::cli::split_list(methods, "--methods"))
      options.methods.push_back(msd::parse_balance_method(method, "--methods"));
  }
  compare.calibrate = msd::parse_cost_model(cost_model, "--cost-model");
  options.varlen = msd::parse_micro_batch_shape(shape, "--micro-batch-shape");
  options.cuts = parse_choice<msd::Cuts>(cuts, "--cuts");
  options.variable_micro_batches = parse_choice<msd::MicroBatchCount>(count, "--micro-batch-count") ==
                                   msd::MicroBatchCount::variable;
  if (!(options.hold_above >= 0.0)) throw msd::ConfigError("--hold-above: must be >= 0");
  if (values.count("compare")) {
    const msd::CompareReport report = msd::compare_modes(options, compare);
    if (values.count("json"))
      std::cout << msd::compare_json(report) << '\n';
    else
      msd::print_compare(report, std::cout);
    return 0;
  }
  const msd::SimulateReport report = msd::simulate(options);
  if (values.count("json"))
    std::cout << msd::report_json(report) << '\n';
  else
    msd::print_report(report, std::cout);
  return 0;
}

int main(int argc, char** argv) {
  return msd::cli::guarded("msd-plan", [&] {
    if (argc > 1 && std::strcmp(argv[1], "profile") == 0) return profile_main(argc - 1, argv + 1);
    if (argc > 1 && std::strcmp(argv[1], "partition") == 0) return partition_main(argc - 1, argv + 1);
    if (argc > 1 && std::strcmp(argv[1], "calibrate") == 0) return calibrate_main(argc - 1, argv + 1);
    if (argc > 1 && std::strcmp(argv[1], "place") == 0) return place_main(argc - 1, argv + 1);
    return simulate_main(argc, argv);
  });
}
