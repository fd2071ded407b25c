// device_model: how long a training step takes on real hardware, per rank and
// micro-batch, from the shapes the ranks compute (document segments and
// padding), a model (layers, widths) and a GPU (peak, efficiencies,
// bandwidths). It is what the trainer emulator sleeps and what benchmarks and
// `msd-plan simulate --compare` score placements by. The planner does NOT use
// it: it keeps its own cheaper objective (plan/step/cost.h), so a benchmark scores
// the planner by an independent model, not by the objective it minimised.
// docs/device-model.md derives every term and cites the source of every
// constant. MPI-free; no state; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "msd/batch.h"
#include "plan/step/cost.h"
#include "plan/step/model_spec.h"
#include "plan/step/modes.h"
#include "plan/step/pack.h"

namespace msd {

// A GPU and its links. Presets (device_spec_preset): "h100" (H100 SXM5 80GB),
// "h200" (H200 SXM 141GB). Bandwidths are per GPU, one direction.
struct DeviceSpec {
  std::string name = "h100";
  double peak_flops = 989.4e12;        // dense BF16 tensor-core FLOP/s
  double gemm_efficiency = 0.70;       // achieved fraction of peak on the model's GEMMs
  double hbm_bytes_per_s = 3.35e12;
  double nvlink_bytes_per_s = 450e9;   // inside a node (NVLink 4: 900 GB/s both directions)
  double ib_bytes_per_s = 50e9;        // between nodes (one 400 Gb/s NIC per GPU)
  uint32_t gpus_per_node = 8;
  double micro_batch_overhead_s = 0.5e-3;  // launches and synchronisation per micro-batch and stage
  // Which FlashAttention's published H100 tables time attention: 3 (the
  // default) or 2 (docs/device-model.md "Attention").
  uint32_t flash_attention = 3;
};

// Everything the device model needs. `vision` is an optional vision tower
// (layers == 0: none) that encodes image patches before the language model.
struct DeviceModel {
  ModelSpec model;
  ModelSpec vision{"none", 0, 0, 0, false, 1, 1, 0, false};
  DeviceSpec device;
};

DeviceSpec device_spec_preset(const std::string& name, const std::string& what = "device.preset");

// The job's device model: `model`'s preset (or, when empty, a GELU model of
// its hidden x layers, the shape the planner's cost assumes), the vision
// tower of its vision_hidden x vision_layers, and the GPU `device`
// (device.preset; device_spec_preset).
DeviceModel make_device_model(const CostOptions& model, const std::string& device);

// Sizes of the model-parallel axes. Rank order is Megatron's "tp,cp,dp,pp"
// (fastest first): a TP group is inside a node when tp <= gpus_per_node, a CP
// group when tp * cp <= gpus_per_node, DP when tp * cp * dp <= gpus_per_node;
// otherwise that axis runs at the IB bandwidth.
struct Parallel {
  uint32_t dp = 1, pp = 1, cp = 1, tp = 1;
};

// One packed sequence as its TP/CP group computes it: its segments (document
// pieces, in position order; attention stays inside a segment) and the
// padding positions after them. seq_len = sum(segments) + padding.
// `patches[i]`, when given, is how many leading positions of segment i are
// image patches (encoded by the vision tower first); empty: none.
// `attention` says what attention spans (RowAttention, plan/step/modes.h):
// each segment (the default), the whole row's used positions as one causal
// span (Megatron's default rows), or each segment split over CP ranks on its
// own (THD).
struct SequenceShape {
  std::vector<uint32_t> segments;
  uint32_t padding = 0;
  std::vector<uint32_t> patches;
  RowAttention attention = RowAttention::segments;

  uint64_t positions() const;  // segments + padding
};
using MicroBatchShape = std::vector<SequenceShape>;

// Seconds one rank of one pipeline stage spends on a micro-batch, forward
// plus backward: GEMMs over every position (padding included) / tp, causal
// attention per segment at its length's efficiency / tp (or over the whole
// row, RowAttention::row; under CP: the busiest rank's zigzag share, chunks r
// and 2cp-1-r of the row, or of each segment with RowAttention::thd), the TP activation
// all-reduces and CP KV ring exchange, elementwise HBM traffic, and
// micro_batch_overhead_s. The stage holds layers / pp of the layers (and of
// the embedding/output projection and vision tower). An empty micro-batch
// costs nothing. REQUIRES under CP every sequence's positions divisible by
// 2 * cp.
double micro_batch_seconds(const DeviceModel& model, const Parallel& parallel, const MicroBatchShape& micro_batch);

struct StepTime {
  double step_seconds = 0.0;  // slowest DP rank's pipeline + the gradient all-reduce
  std::vector<double> per_dp_rank_seconds;  // each DP rank's pipeline (1F1B) makespan
  double allreduce_seconds = 0.0;           // ring all-reduce of the stage's gradients over dp
  // Idle share of the pipeline stages inside each DP rank's own makespan
  // (warm-up, cool-down and waiting on uneven micro-batches), mean over DP ranks.
  double bubble_fraction = 0.0;
  double dp_max_over_mean = 1.0;  // over per_dp_rank_seconds
  // The slowest micro-batch of the step over the mean micro-batch (all DP
  // ranks and indices; empty micro-batches count as 0). 1 when all are empty.
  double microbatch_max_over_mean = 1.0;
  double padding_fraction = 0.0;  // padding positions / all positions computed
  // Per DP rank, each micro-batch's micro_batch_seconds (a stage's; 0 when empty).
  std::vector<std::vector<double>> micro_batch_seconds;
};

// One DP rank's share of a step: its micro-batches, in order, through pp
// stages as a 1F1B schedule (forward a third of micro_batch_seconds, backward
// two thirds; activations sent between stages at the link bandwidth).
struct RankTime {
  double seconds = 0.0;                  // the pipeline's makespan
  std::vector<double> micro_batch_seconds;  // per stage, each micro-batch
  double bubble_fraction = 0.0;          // idle share of a stage within the makespan
  double positions = 0.0, padding = 0.0;  // positions computed, of which padding
};
RankTime rank_time(const DeviceModel& model, const Parallel& parallel, const std::vector<MicroBatchShape>& micro_batches);

// The ring all-reduce of one rank's fp32 gradients (its 1/(tp*pp) share of
// the weights) over dp ranks; 0 for dp = 1.
double gradient_allreduce_seconds(const DeviceModel& model, const Parallel& parallel);

// The step: each DP rank runs its micro-batches, in order, through pp stages
// as a 1F1B schedule (forward a third of micro_batch_seconds, backward two
// thirds; activations sent between stages at the link bandwidth), then the
// gradients are all-reduced over dp (ring). `micro_batches_by_dp_rank` has
// one entry per DP rank (its size is the dp used; parallel.dp is ignored);
// ranks may hold different numbers of micro-batches.
StepTime step_time(const DeviceModel& model, const Parallel& parallel,
                   const std::vector<std::vector<MicroBatchShape>>& micro_batches_by_dp_rank);

// 1F1B makespan of micro-batches taking `seconds[j]` per stage (forward a
// third, backward two thirds) over `stages` stages, with `hop_seconds[j]`
// per activation (or gradient) transfer of micro-batch j between stages.
// Stage s runs min(stages - s - 1, m) forwards, then alternates one forward
// and one backward, then drains its backwards. REQUIRES equal sizes.
double one_f_one_b_seconds(std::span<const double> seconds, std::span<const double> hop_seconds, uint32_t stages);

// The shape of a micro-batch as the runtime hands it to the trainer (whole
// sequences, not the CP slice), and as the planner packed it. `docs` are the
// step's documents indexed by id (docs[i].id == i, as the planner and
// `msd-plan simulate` build them), for their patches.
MicroBatchShape shape_of(const MicroBatch& micro_batch);
// `varlen`: each packed sequence is a variable-length row padded only to
// row_positions (plan/step/pack.h; under `cp` > 1 each piece padded to 2 x cp,
// THD), as PackOptions::varlen plans are computed. `attention`: every
// sequence's (row_attention of the placement's mode). The MicroBatch form
// takes the layout the batch says (MicroBatch::cp_by_segment: THD).
MicroBatchShape shape_of(const MicroBatchPlan& plan, uint32_t seq_len, const std::vector<PlanDoc>& docs,
                         bool varlen = false, RowAttention attention = RowAttention::segments, uint32_t cp = 1);

// Megatron's hybrid (dynamic) context parallelism (megatron_dynamic_cp,
// plan/step/megatron.h): ranks [first_rank, first_rank + ranks) of the dp x cp
// domain compute `samples` one after another, each a micro-batch of one row
// split over those ranks (CP size `ranks`). A group is teams over disjoint
// ranks covering the domain.
struct CpTeamShape {
  uint32_t first_rank = 0, ranks = 1;
  std::vector<SequenceShape> samples;
};
using CpGroupShape = std::vector<CpTeamShape>;

// A dynamic-CP sample of `length` positions (`patches` of them image
// patches) on `ranks` ranks: one THD row, rounded up to kVarlenAlign and to
// a multiple of 2 x ranks.
SequenceShape cp_sample_shape(uint32_t length, uint32_t patches, uint32_t ranks);

// One dynamic-CP step: every rank runs its groups in order; a team starts
// when all its ranks have finished their previous team's work and takes the
// sum of micro_batch_seconds of its samples at CP size `ranks` (pp 1); the
// step is the last rank's finish plus the gradient all-reduce of `parallel`
// (as for every placement). per_dp_rank_seconds holds each rank of the
// domain's finish (dp x cp entries); micro-batch max/mean is over samples.
StepTime dynamic_cp_step_time(const DeviceModel& model, const Parallel& parallel,
                              const std::vector<CpGroupShape>& groups);

// How well one cost ranks another over the same items (e.g. the planner's
// cost against device seconds over a step's micro-batches): Spearman's rank
// correlation (ties get mean ranks) and R^2 of the least-squares line of
// `actual` on `predicted`. Both 1 for fewer than 2 items or when either side
// is constant and the other is too; 0 when only one side is constant.
struct CostModelFit {
  double spearman = 1.0;
  double r_squared = 1.0;
  uint64_t points = 0;
};
CostModelFit cost_model_fit(std::span<const double> predicted, std::span<const double> actual);

// The planner's cost of a micro-batch shape: row_cost (plan/step/modes.h) of
// each sequence under its attention plus CostModel::padding over their
// padding (the planner's own view: padding costs the linear term).
double planner_cost(const CostModel& cost, const MicroBatchShape& micro_batch, uint32_t cp);

}  // namespace msd
