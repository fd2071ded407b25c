// msd-bench scaling: a curriculum that moves the weight from a cheap text
// source (BPE tokenization) to an expensive image source (JPEG decode and
// patching) half-way, run under mpirun with a loader pool that is enough
// only if it follows the mix, once per scaling mode (topology.scaling).
// Per mode: data wait as a share of step time and tokens/s before and after
// the shift (from the planner's per-step progress lines), loader ranks,
// loader memory and moves. docs/scaling.md, "The benchmark", says how the
// step time is set so that loaders, not CPU contention, bound the rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msd::bench {

struct ScalingOptions {
  std::string work_dir;        // dataset, configurations, summaries, logs; default: a temp dir
  uint64_t steps = 48;         // the shift is at steps / 2
  int loaders = 3;             // loader ranks (static gives the text source the spare one; partition: its plan's)
  uint32_t global_batch = 64;  // samples per step
  uint64_t images = 256;       // image-text pairs generated (re-read each epoch)
  uint32_t image_side = 256;   // image.max_side
  // The emulated step time after the shift, as a share of the step time of
  // the static assignment without emulated compute (its one image loader's
  // pace): above 1/2, two image loaders keep up; below 1, one does not.
  double load_share = 0.65;
  // Emulated storage latency per image read (source.images.read_delay_us),
  // on top of the real decode: 0 (the default) measures real work only; a
  // few ms make the image loaders' pace independent of how busy the cores
  // are (docs/scaling.md).
  double image_read_ms = 0.0;
  // loader.threads of every run: the threads a loader reads and transforms
  // on (static and online loaders run them all; partition's plan chooses up
  // to this many per group).
  uint32_t loader_threads = 1;
};

// One group of the partition plan: its sources (joined by '+'), ranks and
// threads per rank.
struct ScalingPlanGroup {
  std::string sources;
  int ranks = 0;
  int threads = 0;
};

// What a mode of the table is and whether this build has it.
struct ScalingModeSpec {
  const char* name;     // the row
  const char* scaling;  // topology.scaling
  bool available;
  const char* note;     // why not, when not
};

// static, partition (with the plan of msd-plan partition and its loader
// ranks), online. Adding a mode is one entry.
const std::vector<ScalingModeSpec>& scaling_modes();

struct ScalingModeResult {
  std::string name;
  bool available = false;
  std::string note;
  double data_wait_fraction_before = 0, data_wait_fraction_after = 0;
  double tokens_per_s_before = 0, tokens_per_s_after = 0;
  int loader_ranks = 0;
  uint64_t loader_memory_bytes = 0;  // summary's loader_memory_bytes.total (peak RSS over start-up)
  // Whole processes, start-up included: the planner's and the loaders' peak
  // RSS (summary memory_peak_bytes.planner + .loader_total), so a loader
  // rank more or fewer shows (its MPI runtime and libraries).
  uint64_t loader_peak_rss_bytes = 0;
  // The planner's and the loaders' own memory, start-up included, without
  // the file-backed pages every process of the node shares (summary
  // loader_rank_memory_bytes.total): what a loader rank fewer gives back, and
  // the figure partition's memory target is read on.
  uint64_t loader_rank_memory_bytes = 0;
  uint64_t source_state_bytes = 0;   // open source state at the end, over loaders
  uint64_t moves = 0;
  std::string batch_digest;
};

struct ScalingReport {
  ScalingOptions options;
  uint64_t shift_step = 0;
  // Measured here, one sample at a time on one thread.
  double seconds_per_image = 0, seconds_per_text = 0;
  double pilot_step_s_after = 0;   // static, no emulated compute: seconds per step after the shift
  double time_scale = 0;           // emulator.time_scale the runs use
  double target_step_s_after = 0;  // the step time the device model asks for after the shift
  // The partition run's plan (msd-plan partition, at time_scale): its loader
  // ranks (the run's topology.loaders), open-source memory in the plan's
  // model and worst margin over the schedule; the static assignment of
  // options.loaders evaluated for the same demand.
  int plan_loader_ranks = 0;
  double plan_memory_bytes = 0, plan_worst_margin = 0;
  double plan_steps_per_s_max = 0;  // the plan's target rate at its fastest point
  double static_plan_memory_bytes = 0, static_worst_margin = 0;
  std::vector<ScalingPlanGroup> plan_groups;
  std::vector<ScalingModeResult> modes;
  bool same_stream = true;  // every mode delivered the same batch digest
};

// Throws Error when a run fails (its log is named).
ScalingReport run_scaling_bench(const ScalingOptions& options);
std::string scaling_json(const ScalingReport& report);
std::string scaling_text(const ScalingReport& report);

}  // namespace msd::bench
