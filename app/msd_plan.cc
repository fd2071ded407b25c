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
#include "plan/cluster/calibrate.h"
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
  return msd::profile_sources(config, options);
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

// Seconds, one per line ('#' starts a comment), from `path`.
std::vector<double> read_times(const std::string& path, const std::string& option = "--times") {
  std::ifstream in(path);
  if (!in) throw msd::ConfigError(option + ": cannot open " + path);
  std::vector<double> seconds;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    size_t used = 0;
    double value = 0.0;
    try {
      value = std::stod(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || line.find_first_not_of(" \t\r", used) != std::string::npos || !(value > 0.0))
      throw msd::ConfigError(msd::str(path, ":", number, ": '", line, "' is not a time in seconds > 0"));
    seconds.push_back(value);
  }
  return seconds;
}

// One micro-batch shape from a probe_json line: {"sequences":[{"segments":
// [...],"patches":[...],"padding":N},...]}.
msd::MicroBatchShape parse_shape(const std::string& line, const std::string& where) {
  msd::JsonValue value;
  const msd::JsonStatus status = msd::parse_json(line, value);
  if (!status.ok) throw msd::ConfigError(msd::str(where, ": not JSON (", status.message, " at byte ", status.offset, ")"));
  const msd::JsonValue* sequences = value.type == msd::JsonType::object ? value.find("sequences") : nullptr;
  if (!sequences || sequences->type != msd::JsonType::array)
    throw msd::ConfigError(where + ": expected an object with a \"sequences\" array");
  auto count = [&](const msd::JsonValue& v, const char* what) {
    if (v.type != msd::JsonType::number || v.number < 0 || v.number > 1e9 || v.number != std::floor(v.number))
      throw msd::ConfigError(msd::str(where, ": ", what, " must be a whole number of positions"));
    return static_cast<uint32_t>(v.number);
  };
  msd::MicroBatchShape shape;
  for (const msd::JsonValue& item : sequences->array) {
    msd::SequenceShape sequence;
    const msd::JsonValue* segments = item.type == msd::JsonType::object ? item.find("segments") : nullptr;
    const msd::JsonValue* patches = item.type == msd::JsonType::object ? item.find("patches") : nullptr;
    const msd::JsonValue* padding = item.type == msd::JsonType::object ? item.find("padding") : nullptr;
    if (!segments || segments->type != msd::JsonType::array)
      throw msd::ConfigError(where + ": a sequence needs a \"segments\" array");
    for (const msd::JsonValue& v : segments->array) sequence.segments.push_back(count(v, "a segment"));
    if (patches && patches->type == msd::JsonType::array)
      for (const msd::JsonValue& v : patches->array) sequence.patches.push_back(count(v, "patches"));
    sequence.patches.resize(sequence.segments.size(), 0);
    sequence.padding = padding ? count(*padding, "padding") : 0;
    shape.push_back(std::move(sequence));
  }
  return shape;
}

// Micro-batch shapes, one JSON object a line, from `path` (`option` names it in errors).
std::vector<msd::MicroBatchShape> read_shapes(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw msd::ConfigError(option + ": cannot open " + path);
  std::vector<msd::MicroBatchShape> shapes;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number)
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      shapes.push_back(parse_shape(line, msd::str(option, " ", path, ":", number)));
  return shapes;
}

void print_calibration(const msd::Calibration& c, const std::string& timed_on, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-plan calibrate: %llu probe micro-batches timed on %s\n"
                "fit: seconds = %.4g + %.4g * (a*L + L^2 + vision_scale*V) per micro-batch; R^2 %.5f, largest "
                "error %.2f%%\n"
                "put in the configuration:\n[model]\ncost_a = %.6g\n",
                static_cast<unsigned long long>(c.probes), timed_on.c_str(), c.overhead_seconds, c.seconds_per_unit,
                c.r_squared, 100 * c.max_relative_error, c.a);
  out << line;
  // model.cost_vision_scale = 0 means "derive it", not "patches cost no more than text".
  if (c.vision_scale > 0.0)
    out << "cost_vision_scale = " << c.vision_scale << '\n';
  else
    out << "# the times show no vision-tower cost beyond text; cost_vision_scale has no value for that (0 derives it)\n";
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
  const std::vector<msd::MicroBatchShape> shapes =
      shapes_in.empty() ? msd::probe_micro_batches(config.job.seq_len, cp, probes, seed) : read_shapes(shapes_in, "--shapes");
  if (!shapes_out.empty()) {
    std::ofstream out(shapes_out);
    for (const msd::MicroBatchShape& shape : shapes) out << msd::probe_json(shape) << '\n';
    if (!out) throw msd::IoError("--shapes-out: cannot write " + shapes_out);
    std::cerr << "msd-plan calibrate: " << shapes.size() << " probe micro-batches written to " << shapes_out << '\n';
    if (times_path.empty()) return 0;
  }
  std::vector<double> seconds;
  std::string timed_on = times_path;
  if (!times_path.empty()) {
    seconds = read_times(times_path);
  } else {
    const msd::DeviceModel device = msd::make_device_model(config);
    const msd::Parallel parallel{static_cast<uint32_t>(config.topology.dp), static_cast<uint32_t>(config.topology.pp),
                                 cp, static_cast<uint32_t>(config.topology.tp)};
    for (const msd::MicroBatchShape& shape : shapes) seconds.push_back(msd::micro_batch_seconds(device, parallel, shape));
    timed_on = "the device model (" + device.model.name + " on " + device.device.name + ")";
  }
  const msd::Calibration c = msd::calibrate(shapes, seconds, msd::make_cost_model(config), cp);
  msd::HeldOutError held{};
  if (!check_shapes.empty())
    held = msd::held_out_error(c, read_shapes(check_shapes, "--check-shapes"), read_times(check_times, "--check-times"),
                               msd::make_cost_model(config), cp);
  if (!json) {
    print_calibration(c, timed_on, std::cout);
    if (held.micro_batches > 0)
      std::printf("# held out: %llu micro-batches, median error %.2f%%, 90th percentile %.2f%%\n",
                  static_cast<unsigned long long>(held.micro_batches), 100 * held.median_abs_error,
                  100 * held.p90_abs_error);
    return 0;
  }
  msd::JsonWriter w;
  w.begin_object().value("probes", c.probes).value("cost_a", c.a).value("cost_vision_scale", c.vision_scale);
  w.value("seconds_per_unit", c.seconds_per_unit).value("overhead_seconds", c.overhead_seconds);
  w.value("r_squared", c.r_squared).value("max_relative_error", c.max_relative_error);
  if (held.micro_batches > 0) {
    w.value("held_out_micro_batches", held.micro_batches);
    w.value("median_abs_error", held.median_abs_error).value("p90_abs_error", held.p90_abs_error);
  }
  w.end_object();
  std::cout << w.str() << '\n';
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
                                                           : msd::read_profile_json(profile_path, config, "--profile");
  options.max_threads = config.loader.threads;
  options.max_rank_bytes = max_loader_mb * 1024 * 1024;
  options.memory_option = "--max-loader-mb";
  const msd::PartitionDemand demand = msd::make_demand(config, profiles.profiles, steps_per_s);
  const msd::PartitionPlan plan = msd::partition(demand, options);
  // The static assignment of topology.loaders, for comparison.
  msd::PartitionPlan baseline;
  baseline.groups = msd::groups_of(msd::assign_sources(config), config.loader.threads);
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

// A placement name of msd-plan place: a mode, or an msd mode + "_varlen"
// (its micro-batches in variable-length rows).
std::pair<msd::TrainingMode, bool> parse_placement(const std::string& name) {
  const std::string suffix = "_varlen";
  const bool varlen = name.size() > suffix.size() && name.ends_with(suffix) && name.starts_with("msd_");
  const msd::TrainingMode mode =
      msd::parse_training_mode(varlen ? name.substr(0, name.size() - suffix.size()) : name, "greedy", "--modes", true);
  return {mode, varlen || mode == msd::TrainingMode::megatron_varlen};
}

// One placed run as "steps": [step][rank][micro-batch] = [sequence = [[doc, begin, length], ...], ...].
void write_placed(msd::JsonWriter& w, const std::vector<std::vector<msd::BucketPlan>>& placed) {
  w.begin_array("steps");
  for (const auto& step : placed) {
    w.begin_array();
    for (const msd::BucketPlan& bucket : step) {
      w.begin_array();
      for (const msd::MicroBatchPlan& mb : bucket.micro_batches) {
        w.begin_array();
        for (const msd::PackedSequence& sequence : mb.sequences) {
          w.begin_array();
          for (const msd::Piece& p : sequence.pieces)
            w.begin_array().value("", p.doc).value("", p.begin).value("", p.length).end_array();
          w.end_array();
        }
        w.end_array();
      }
      w.end_array();
    }
    w.end_array();
  }
  w.end_array();
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
  std::string modes = "megatron,megatron_varlen,msd_tokens,msd_greedy";
  po::options_description described(
      "Usage: msd-plan place [options]\n\n"
      "Places one token stream under several placements, for a trainer to time them on\n"
      "the same tokens (tools/bench-trainer.sh, examples/bench_trainer.py). --steps steps\n"
      "of --dp x --samples-per-gpu text documents (lengths from --lengths: pareto, pile or\n"
      "llama, as msd-bench sweep draws them), in each step's arrival order, make the\n"
      "stream; every placement places all of it: megatron and megatron_varlen over the\n"
      "whole stream (an equal sequence count per rank and step), the msd modes step by\n"
      "step with the planner's analytic cost (a = 6 x --hidden, or --cost-a). An msd mode\n"
      "with _varlen (msd_greedy_varlen) places variable-length rows. Prints one JSON\n"
      "object: documents (lengths in stream order; a piece's doc indexes it), positions,\n"
      "and per placement its rows (fixed or varlen), positions and steps[step][rank]\n"
      "[micro-batch] = sequences of [doc, begin, length] pieces.\n\n"
      "Options");
  described.add_options()
      ("help,h", "print this help and exit")
      ("dp", po::value(&sim.dp)->default_value(sim.dp), "data-parallel ranks")
      ("seq-len", po::value(&sim.seq_len)->default_value(sim.seq_len), "positions per sequence (row)")
      ("micro-batches", po::value(&sim.micro_batches)->default_value(sim.micro_batches), "micro-batches per rank and step")
      ("samples-per-gpu", po::value(&sim.samples_per_gpu)->default_value(sim.samples_per_gpu),
       "documents per DP rank and step")
      ("steps", po::value(&sim.steps)->default_value(sim.steps), "steps of the stream")
      ("seed", po::value(&sim.seed)->default_value(sim.seed), "seed of the lengths and arrival orders")
      ("lengths", po::value(&sim.lengths)->default_value(sim.lengths), "pareto | pile | llama")
      ("long-share", po::value(&sim.long_share)->default_value(sim.long_share), "pareto: share of long documents")
      ("hidden", po::value(&sim.model.hidden)->default_value(sim.model.hidden), "the trainer's hidden size (a = 6*hidden)")
      ("cost-a", po::value(&sim.cost_a)->default_value(sim.cost_a), "the planner cost's a directly (0: 6*hidden)")
      ("modes", po::value(&modes)->default_value(modes), "placements, comma-separated")
      ("json", "print JSON (the only output; accepted for symmetry with the other commands)");
  std::vector<std::string> unknown;
  if (!parse_or_help(argc, argv, described, unknown)) return 0;
  if (!unknown.empty()) throw msd::ConfigError("msd-plan place: unknown option '" + unknown[0] + "'");
  if (sim.dp == 0 || sim.micro_batches == 0 || sim.samples_per_gpu == 0 || sim.steps == 0 || sim.seq_len < 16)
    throw msd::ConfigError("--dp, --micro-batches, --samples-per-gpu and --steps must be at least 1, --seq-len 16");
  const msd::CostModel cost = msd::CostModel::from(sim.model, sim.cost_a);
  std::vector<std::vector<msd::PlanDoc>> steps;
  std::vector<uint32_t> documents;
  for (uint32_t s = 0; s < sim.steps; ++s) {
    const std::vector<msd::PlanDoc> docs = msd::synthetic_step(sim, cost, s);
    steps.emplace_back();
    for (uint32_t i : msd::arrival_order(sim.seed, s, static_cast<uint32_t>(docs.size()))) {
      steps.back().push_back(docs[i]);
      steps.back().back().id = static_cast<uint32_t>(documents.size());
      documents.push_back(docs[i].positions);
    }
  }
  msd::PackOptions pack;
  pack.seq_len = sim.seq_len;
  pack.dp = sim.dp;
  pack.micro_batches = sim.micro_batches;
  uint64_t positions = 0;
  for (uint32_t length : documents) positions += length;
  msd::JsonWriter w;
  w.begin_object().value("seq_len", sim.seq_len).value("dp", sim.dp).value("micro_batches", sim.micro_batches);
  w.value("seed", sim.seed).value("lengths", sim.lengths).value("cost_a", cost.a).value("positions", positions);
  w.begin_array("documents");
  for (uint32_t length : documents) w.value("", length);
  w.end_array().begin_object("placements");
  for (const std::string& name : msd::cli::split_list(modes, "--modes")) {
    const auto [mode, varlen] = parse_placement(name);
    pack.varlen = varlen && !msd::is_baseline(mode);
    const auto placed = msd::place_run(mode, steps, pack, cost);
    uint64_t placed_positions = 0;
    for (const auto& step : placed)
      for (const msd::BucketPlan& bucket : step) placed_positions += bucket.positions;
    MSD_CHECK_EQ(placed_positions, positions);  // every placement trains the same tokens
    w.begin_object(name).value("rows", varlen ? "varlen" : "fixed").value("positions", placed_positions);
    write_placed(w, placed);
    w.end_object();
  }
  w.end_object().end_object();
  std::cout << w.str() << '\n';
  return 0;
}

}  // namespace

int simulate_main(int argc, char** argv) {
  msd::SimulateOptions options;
  msd::CompareOptions compare;
  std::string command, methods, long_docs = "split", cost_model = "calibrated", shape = "fixed";
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
      "megatron_varlen, msd_tokens, msd_greedy, msd_kk) places the same steps and the device model\n"
      "(--model, --vision, --device) times them: tokens/s, padding, DP and micro-batch\n"
      "max/mean, bubbles, and msd's speedups over the baselines. The planner's cost\n"
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
      ("json", "print the report as JSON");
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
