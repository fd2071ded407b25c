// msd/config.h — the job's configuration, as read from an INI file and
// `--section.key=value` overrides (lib/config: option_table.cc, config.cc
// parsing, validate.cc; every option is listed in README.md "Configuration
// reference" and by `msd-run --help`).
//
// Relative paths in a configuration file are resolved against the directory of
// that file; paths given on the command line against the working directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "msd/options.h"
#include "msd/source_config.h"

namespace msd {

struct TopologyConfig {
  int dp = 1, pp = 1, cp = 1, tp = 1;
  std::string order = "tp,cp,dp,pp";  // fastest-varying axis first (Megatron's)
  int loaders = 1;                    // size of the source-loader pool
  int shadow_loaders = 0;             // spare loader ranks that take over a failed loader
  BroadcastAt broadcast_at = BroadcastAt::tp;  // tp: a TP group's leader fetches and shares; none: every TP rank fetches
  NetworkReads network_reads = NetworkReads::two_sided;  // reads of windows that are not node-shared (msd/options.h)
  int ranks_per_node = 0;             // 0: the nodes MPI reports; N: every N consecutive world ranks share a node
  DataRanks data_ranks = DataRanks::first;     // where the planner and loaders sit
  Scaling scaling = Scaling::fixed;  // loader pool scaling (msd/options.h; docs/scaling.md)
  // scaling = partition: the plan file (msd-plan partition --out); empty:
  // the planner profiles the sources and computes the plan at start-up.
  std::string partition_plan;
  uint64_t scaling_lookahead_steps = 16;  // online: how far ahead the schedule is read
  uint64_t scaling_interval_steps = 4;    // online: fewest steps between two moves
};

struct JobConfig {
  uint64_t steps = 20;
  uint64_t seed = 1234;
  uint32_t global_batch = 32;   // samples per step, over all DP groups
  uint32_t seq_len = 2048;      // tokens per packed sequence
  uint32_t micro_batches = 1;   // per DP rank and step
  uint32_t prefetch_steps = 2;  // how far the planner plans ahead
  // job.mode: a mode of kTrainingModes, or none for the alias disaggregated
  // (the msd mode `balance` names). mode() resolves it.
  std::optional<TrainingMode> named_mode;
  LongDocs long_docs = LongDocs::split;             // documents over seq_len
  BalanceMethod balance = BalanceMethod::greedy;
  // fixed: a micro-batch is [sequences, seq_len] rows, padded; varlen: one
  // row of its positions rounded up to kVarlenAlign (packed "THD" attention),
  // for the planner-driven modes (the colocated baselines keep fixed rows).
  RowShape micro_batch_shape = RowShape::fixed;
  // Most positions (tokens + patches) one micro-batch may hold: the activation
  // memory budget. 0: seq_len x the sequences a micro-batch gets under an
  // equal token split of the step (PackOptions::max_positions_per_micro_batch).
  uint64_t max_positions_per_micro_batch = 0;
  // Where the planner may cut documents (msd/options.h; docs/cost-and-balance.md
  // "Cut-aware packing"). balance needs micro_batch_shape = varlen.
  Cuts cuts = Cuts::whole;
  // fixed: micro_batches per DP rank; variable: as many as each rank's
  // positions need under max_positions_per_micro_batch, at least
  // micro_batches (docs/cost-and-balance.md "Variable micro-batches"). variable
  // needs micro_batch_shape = varlen.
  MicroBatchCount micro_batch_count = MicroBatchCount::fixed;
  // The outlier hold (docs/cost-and-balance.md "Outlier delay"): a document
  // of more than hold_above x seq_len positions waits up to hold_steps steps
  // until topology.dp such documents wait, and they are placed together, one
  // per rank; the last step places whatever waits. 0: no hold.
  double hold_above = 0.0;
  uint32_t hold_steps = 8;
  // A transformed sample bigger than this (slot bytes: header, tokens,
  // patches; docs/window-slot.md) is bad (too_large): a property of the
  // stream, so the window size never changes which samples are used. Every
  // loader window must hold at least one such sample.
  uint64_t max_sample_bytes = uint64_t{1} << 20;
  // A step whose plan was sent this long ago and that some client has not
  // acknowledged ends the job naming that client (the planner); a client
  // that waits this long plus 10 s for its next plan ends it naming the
  // planner; a rank missing at the end of the job this long after the last
  // step ends it naming the rank; in the colocated modes a client whose
  // trainer asks for no step this long ends its process. Must exceed
  // (prefetch_steps + 1) of the trainer's longest steps plus its longest
  // pause; 0: never.
  uint64_t stall_timeout_s = 600;
  // Every wait from process start to the first step (MPI_Init, the loaders'
  // hello, the start-up agreement) is bounded by this: a rank that has not
  // arrived ends the job naming it. 0: never.
  uint64_t startup_timeout_s = 300;

  // How this job places its steps: job.mode, or with disaggregated the msd
  // mode job.balance names.
  TrainingMode mode() const { return named_mode.value_or(msd_mode(balance)); }
  // job.mode as an INI file writes it.
  const char* mode_name() const { return named_mode ? option_name(*named_mode) : kDisaggregated; }
};

struct ImageConfig {
  uint32_t max_side = 224;  // longest side after resizing, pixels
  uint32_t patch = 16;      // patch side, pixels; patches are the image's tokens
  int64_t token_id = -1;    // id placed at patch positions; -1: the vocabulary size
};

struct LoaderConfig {
  uint64_t window_mb = 256;  // RMA window per loader rank
  std::string cache_dir;     // index caches; empty: beside the data (else ~/.cache/msd)
  uint64_t deadline_ms = 2000;  // a loader silent this long with requests pending is failed over
  uint32_t threads = 1;         // threads tokenizing a batch of requests together
};

struct ModelConfig {
  uint32_t hidden = 1024;  // hidden size: the cost model's a = 6 * hidden
  uint32_t layers = 8;
  uint32_t vision_hidden = 768;  // vision encoder, for image patches' cost
  uint32_t vision_layers = 4;
  double cost_a = 0.0;  // the cost model's linear weight a; 0: derived, 6 * hidden
  // The cost model's vision_scale (a vision-encoder unit in LM units); 0:
  // derived from the widths and depths. msd-plan calibrate fits both.
  double cost_vision_scale = 0.0;
  // llama3-8b | llama3-70b | vit-l: the model's shape (replaces hidden and
  // layers for the planner and the device model). Empty: hidden x layers.
  std::string preset;
  // What one micro-batch costs whatever it holds, in units of a*L + L^2
  // (CostModel::micro_batch; msd-plan calibrate fits it). 0: none.
  double cost_micro_batch = 0.0;
};

// The GPU the device model (lib/plan/cluster/device_model.h) emulates.
struct DeviceConfig {
  std::string preset = "h100";  // h100 | h200
};

struct EmulatorConfig {
  // The trainer emulator sleeps the device model's step time times this
  // (e.g. 0.01: a 1 s step sleeps 10 ms). 0: no sleeping at all.
  double time_scale = 1.0;
};

struct OutputConfig {
  std::string summary_json;  // write the final summary here when set
  std::string metrics;       // write one JSON line per step here when set (docs/metrics.md)
  uint32_t progress_every = 1;  // a progress line every N steps; 0: none
  std::string log_level = "info";
};

struct CheckpointConfig {
  std::string dir;              // checkpoints and the trace; empty: none
  uint64_t planner_every = 10;  // planner state every N steps
  uint64_t loader_every = 0;    // loader state every N steps; 0: never
  uint32_t keep = 3;            // checkpoint files kept per kind
  std::string trace;            // trace file; empty: DIR/trace.h5 when dir is set
  bool resume = false;          // start from the latest consistent checkpoint in dir
  // Resume at this step (the trainer's): from the newest planner checkpoint at
  // or before it, fast-forwarded to it; the first step delivered is this one.
  // Implies resume. Default unset: the latest checkpoint's step.
  std::optional<uint64_t> resume_step;
  bool accept_changed_data = false;  // resume although the data fingerprint differs (warns)
  // Resume although the mixture changed: weights, sources, a source's files
  // (docs/checkpoint.md "Resume with a changed mixture"; warns, listing each).
  bool accept_changed_mix = false;
  // Start at step 0 over a dir holding an earlier run's checkpoints (none of
  // which reads back, or without resume): they are moved to DIR/replaced-<time>/.
  bool start_over = false;
  bool resuming() const { return resume || resume_step.has_value(); }
  std::string snapshot_sources;  // comma-separated: sources whose transformed samples loader checkpoints keep
};

// Fault injection, for testing and showing failover: from step `step` on,
// loader `loader` hangs (stops serving), stalls (for stall_ms, then goes on)
// or fails its reads; or (kind crash) the rank `rank` (any role) throws.
struct FaultConfig {
  int loader = -1;  // loader index; -1: no fault
  int rank = -1;    // kind crash: world rank that throws at `step`; -1: fault.loader's rank
  std::string kind = "hang";  // hang | stall | fail | crash
  uint64_t step = 0;
  uint64_t stall_ms = 3000;
};

struct Config {
  std::string config_path;  // the file read, if any
  JobConfig job;
  TopologyConfig topology;
  ScheduleKind schedule = ScheduleKind::constant;
  std::vector<SourceConfig> sources;
  TokenizerConfig tokenizer;
  ImageConfig image;
  LoaderConfig loader;
  ModelConfig model;
  DeviceConfig device;
  EmulatorConfig emulator;
  OutputConfig output;
  CheckpointConfig checkpoint;
  FaultConfig fault;

  int clients() const { return topology.dp * topology.pp * topology.cp * topology.tp; }
  // MPI ranks the job needs: 1 planner + loaders + shadow loaders + clients
  // (disaggregated), or clients alone (colocated).
  int world_size() const;
};

// What parse_command_line decided besides the configuration itself.
struct Invocation {
  Config config;
  bool help = false;              // --help or --help-markdown: print usage and exit 0
  bool print_world_size = false;  // --print-world-size
  bool print_layout = false;      // --print-layout: world rank -> role, coordinates, node
  std::string usage;              // the text --help prints (--help-markdown: README's option table)
};

// Parses argv (`--config FILE`, `--key=value` overrides, aliases) and the INI
// file, then validates. Throws ConfigError naming the option on any unknown
// key, bad value, or inconsistent combination — before any work starts.
Invocation parse_command_line(int argc, const char* const* argv);

// Validation on its own (parse_command_line calls it); throws ConfigError.
void validate(const Config& config);

// The configuration as canonical INI text: every option of every section, in
// the order of the option table in lib/config/option_table.cc (which prints them),
// paths already resolved, numbers written so they read back exactly.
// parse_command_line with `--config` of this text gives a Config equal to
// `config` (except config_path). Checkpoints and traces store it.
// Throws ConfigError for a value INI cannot hold (a '#', a line break, or
// leading/trailing blanks, e.g. in a tokenizer.pattern regex).
std::string to_ini(const Config& config);

}  // namespace msd
