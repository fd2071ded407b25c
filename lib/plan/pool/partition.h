// partition: how many loader ranks serve each source, which sources share
// ranks, and how many threads each loader uses, from the sources' profiles
// (profile.h), the mixing schedule over the whole run, the global batch and a
// target step rate: the fewest loader ranks, then the least open-source
// memory, that meet the rate at every point of the schedule. Pure math: no
// MPI, no data. docs/scaling.md "Partition" has the algorithm and why it is
// optimal.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "msd/options.h"
#include "plan/cluster/device_model.h"
#include "plan/step/pack.h"
#include "plan/pool/profile.h"

namespace msd {

// What the loaders must deliver: at each checked step of the schedule, each
// source's weight and the step rate the trainer runs at there.
struct PartitionDemand {
  std::vector<std::string> names;        // per source
  std::vector<SourceProfile> profiles;   // per source
  uint32_t global_batch = 1;             // samples per step
  std::vector<uint64_t> points;          // the steps checked (schedule_points)
  std::vector<std::vector<double>> weights;  // per point: normalized weight per source
  std::vector<double> steps_per_s;       // per point: target steps per second

  // Seconds of one loader rank's time that source `s` asks for each second
  // at point `p` when the rank reads and transforms on `threads` threads:
  // steps/s x batch x weight x (read + transform) / threads per sample
  // (SourceProfile::seconds_on). A loader reads a batch on its threads and
  // then transforms it on them (lib/loader/loader.cc), so threads shorten
  // both.
  double load(size_t s, size_t p, unsigned threads) const;
  // Its parts, all ranks together: seconds of reads and seconds of
  // transforms, each on one thread, asked for each second.
  double read_load(size_t s, size_t p) const;
  double transform_load(size_t s, size_t p) const;
};

// What a job's demand is computed from (lib/config/part_options.h makes it
// from the configuration): its sources' weight curves, its steps and batch,
// and how its training mode places and the device model times a step.
struct DemandOptions {
  std::vector<std::string> names;                 // per source (source.NAME)
  ScheduleKind schedule = ScheduleKind::constant;  // mix.schedule
  std::vector<std::vector<WeightPoint>> weights;  // per source: its weight curve (source.NAME.weight)
  uint64_t steps = 20;                            // job.steps
  uint32_t global_batch = 32;                     // job.global_batch
  TrainingMode mode = TrainingMode::msd_greedy;   // how a step is placed (job.mode)
  PackOptions pack;                               // the job's packing (seq_len among it)
  CostModel cost;                                 // the planner's cost
  DeviceModel device;                             // what times a step
  Parallel parallel;                              // the trainer's mesh
  double time_scale = 1.0;                        // emulator.time_scale
};

// The steps at which the load of any set of sources peaks over the run
// [0, steps): step 0, steps - 1 and every weight point between (none
// besides 0 for a constant schedule). Between two consecutive such steps
// each weight is constant (piecewise) or a ratio of linear functions of the
// step (linear: raw weights interpolate linearly and are normalized), so any
// positive combination of them is monotone there and peaks at an end.
std::vector<uint64_t> schedule_points(const DemandOptions& job);

// One step's representative documents at a mix: each source's share of
// global_batch (floor of batch x weight, the rest by largest remainder),
// every document of its profile's mean positions_per_sample (at least 1),
// the leading patches_per_sample of them image patches (at most seq_len).
// Ids 0..n-1.
std::vector<PlanDoc> representative_step(const DemandOptions& job, std::span<const double> weights,
                                         std::span<const SourceProfile> profiles);

// The modelled step time at a mix: the representative step placed as the
// job's training mode places a step (the planner's own packing into seq_len
// sequences, DP buckets and micro-batches, padding and imbalance included)
// and timed by the device model (device_model.h) with time_scale applied:
// the evaluation the trainer emulator's step follows (compare.h's
// evaluate_mode). 0 for an empty step.
double modelled_step_seconds(const DemandOptions& job, std::span<const double> weights,
                             std::span<const SourceProfile> profiles);

// The demand of `job`'s schedule: at every schedule point, steps_per_s if
// > 0, else 1 / modelled_step_seconds. Throws ConfigError when neither gives
// a rate (emulator.time_scale = 0 without steps_per_s) or the profiles do not
// match the sources.
PartitionDemand make_demand(const DemandOptions& job, const std::vector<SourceProfile>& profiles, double steps_per_s);

struct PartitionOptions {
  uint32_t max_threads = 1;    // loader.threads: threads one loader rank may use
  double headroom = 0.1;       // share of each rank's time kept spare: a plan loads ranks up to 1 - headroom
  double max_rank_bytes = 0;   // most open-source memory one loader rank may hold; 0: no limit
  std::string memory_option = "max_rank_bytes";  // the option named when a source alone exceeds it
  size_t exact_up_to = 16;     // sources up to which the search is exact; more: greedy merging
};

// Sources that share loader ranks: each of the `ranks` ranks opens every
// source of the group and serves an equal share of each (the planner hands a
// source's requests to its ranks round-robin).
struct LoaderGroup {
  std::vector<uint32_t> sources;
  uint32_t ranks = 1;
  uint32_t threads = 1;        // per rank
  double rank_bytes = 0.0;     // open-source memory of one rank: own bytes of each source + the largest shared part
  // Seconds of one rank's time per second the group asks for at its worst
  // point on `threads` threads, all its ranks together (each carries 1 -
  // headroom of it at most).
  double peak_load = 0.0;
  // Per schedule point, all ranks together: seconds of reads and seconds of
  // transforms, each on one thread, asked for each second (PartitionDemand's
  // read_load and transform_load summed over the group). Empty for a group
  // read from a plan file without them.
  std::vector<double> read_load, transform_load;

  // Seconds of one rank's time per second at point `p` on `threads`
  // threads, all ranks together: (reads + transforms) / threads.
  double load_on(size_t p, unsigned threads) const;
  // load_on at the worst point.
  double peak_on(unsigned threads) const;
};

struct PartitionPlan {
  std::vector<LoaderGroup> groups;
  uint32_t loader_ranks = 0;
  double memory_bytes = 0.0;   // open-source memory over all loader ranks
  bool rate_met = false;       // capacity >= demand at every point, in every group
  double worst_margin = 0.0;   // min over groups and points of capacity / demand - 1
  uint64_t worst_step = 0;     // where it is
  bool exact = true;           // the search was exhaustive (else greedy merging)
  uint32_t spare_ranks = 0;    // ranks added beyond the minimum (add_spare_ranks)
  double headroom = 0.1;       // PartitionOptions::headroom it was planned with

  // Per source: its group's index.
  std::vector<uint32_t> group_of_source(size_t sources) const;
};

// The fewest ranks, then the least memory. Throws ConfigError naming
// options.memory_option when one source alone needs more than max_rank_bytes.
PartitionPlan partition(const PartitionDemand& demand, const PartitionOptions& options);

// Recomputes ranks totals, memory, threads, margins and rate_met of `plan`'s
// groups (their sources and ranks as given). `choose_threads` false: the
// groups' threads as given too (e.g. loader.threads for every loader of the
// static assignment).
void evaluate(PartitionPlan& plan, const PartitionDemand& demand, const PartitionOptions& options,
              bool choose_threads = true);

// Gives `total_ranks - plan.loader_ranks` more ranks, one by one, to the
// group whose ranks carry the highest peak load each on
// options.max_threads (ties: the first), and recomputes threads (the fewest
// that carry the group's read_load and transform_load), loader_ranks and
// memory_bytes. A rank more never lowers a group's capacity below its peak
// load, so the rate stays met; worst_margin keeps the planned value (a lower
// bound). Nothing when total_ranks <= plan.loader_ranks.
void add_spare_ranks(PartitionPlan& plan, const PartitionOptions& options, uint32_t total_ranks);

void print_plan(const PartitionPlan& plan, const PartitionDemand& demand, std::ostream& out);
// One line on another assignment evaluated for the same demand (e.g. the
// static one): its ranks, memory, whether it meets the rate, worst margin.
void print_other(const PartitionPlan& other, const std::string& label, std::ostream& out);

}  // namespace msd
