// Training modes (TrainingMode, named in msd/options.h): how one step's
// documents are placed on the data-parallel ranks. Every mode places the SAME
// documents (the one global mixer's step, docs/evaluation.md); only where
// they go differs. MPI-free: the planner, the
// colocated client, the simulator and the benchmarks all place through here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/step/megatron.h"
#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"

namespace msd {

// How each mode places:
// - colocated_samples: Equal samples per DP rank (DistributedSampler: rank r takes every dp-th document in arrival
//   order), micro-batches by sample count, next-fit packing in arrival order: many multimodal trainers' practice.
// - colocated_tokens: Megatron's packing held to one step's documents (what the colocated runtime can deliver): the
//   step's documents, concatenated in arrival order, are cut into seq_len sequences (pack_concatenated); each rank
//   takes a contiguous run of floor or ceil(sequences / dp) sequences, cut into micro-batches of equal sequence
//   count.
// - megatron: Megatron-LM as it runs (plan/step/megatron.h): GPTDataset over the run's stream (its documents
//   shuffled, concatenated and cut into samples of seq_len inputs, the samples shuffled), dealt by
//   MegatronPretrainingSampler (blocks of micro_batch_size x dp samples, DP rank r taking slice r of each; a step
//   is `micro_batches` blocks). Fixed rows with full causal attention over each row (--reset-attention-mask off): a
//   row costs one segment of seq_len positions. A stream mode.
// - megatron_docmask: The same rows with document-masked attention (--reset-attention-mask with a varlen kernel):
//   each piece its own segment, sum(L^2). A stream mode.
// - megatron_dp_balanced: Megatron core's DpBalancedScheduler over one step's documents (dp_balanced_step):
//   variable-length rows, an equal micro-batch count per DP rank.
// - megatron_dynamic_cp: Megatron core's hybrid context parallelism (BalancedCPScheduler, dynamic_cp_step) over one
//   step's documents: each piece its own CP size. Only with cp > 1; placed by place_dynamic_cp, not as DP buckets.
// - msd_tokens: disaggregated, balancing positions only (BalanceMethod::tokens)
// - msd_greedy: disaggregated, LPT on cost
// - msd_kk: disaggregated, Karmarkar-Karp on cost

// Every mode, as the evaluations compare them (msd-plan simulate --compare;
// megatron_dynamic_cp only where cp > 1).
inline constexpr TrainingMode kEvaluationModes[] = {
    TrainingMode::colocated_samples,    TrainingMode::colocated_tokens,    TrainingMode::megatron,
    TrainingMode::megatron_docmask,     TrainingMode::megatron_dp_balanced, TrainingMode::megatron_dynamic_cp,
    TrainingMode::msd_tokens,           TrainingMode::msd_greedy,          TrainingMode::msd_kk};

// A mode's name (msd/options.h names them once).
inline const char* training_mode_name(TrainingMode mode) { return option_name(mode); }
// A mode name of kTrainingModes (or, with `evaluation`, of kEvaluationModes),
// or the aliases "colocated" (colocated_samples) and "disaggregated" (msd
// with `balance`: tokens, greedy or karmarkar_karp). Throws ConfigError
// naming `what` for anything else.
TrainingMode parse_training_mode(const std::string& name, const std::string& balance = "greedy",
                                 const std::string& what = "job.mode", bool evaluation = false);
bool is_baseline(TrainingMode mode);  // the colocated and megatron modes
// megatron and megatron_docmask: placed over a run's stream (place_run).
bool is_stream_mode(TrainingMode mode);
// Whether `mode`'s micro-batches are variable-length rows: megatron_dp_balanced
// and megatron_dynamic_cp always, the msd modes when `varlen`
// (PackOptions::varlen), the others never.
bool varlen_rows(TrainingMode mode, bool varlen);
// Throws ConfigError naming `what` when `mode` cannot place under `options`:
// megatron_dynamic_cp without context parallelism (cp > 1), with pipeline
// stages (Megatron runs hybrid CP with pp 1 only), or on a dp x cp domain
// that is not a power of two (its CP groups are).
void check_mode(TrainingMode mode, const PackOptions& options, const std::string& what);

// What a row's attention spans and, under context parallelism, how its
// positions are split over the CP ranks.
enum class RowAttention {
  // Causal within each segment (document piece); under CP the row is split
  // zigzag as a whole, CP rank r holding chunks r and 2cp-1-r (msd's batches).
  segments,
  // One causal span over all the row's positions, whatever documents it
  // holds (Megatron's default, --reset-attention-mask off): a full row of S
  // positions costs a*S + S^2. Under CP the row is split zigzag.
  row,
  // Causal within each segment; under CP each segment is split zigzag on its
  // own (Transformer Engine's THD layout, cu_seqlens).
  thd,
};
// megatron: row; the other megatron modes and variable-length rows: thd (a
// varlen kernel; under CP the most even split); otherwise segments.
RowAttention row_attention(TrainingMode mode, bool varlen);
// "row" (megatron) or "document" (every other mode): what a placement's rows
// attend over, as msd-plan place writes it.
const char* attention_name(TrainingMode mode);
// The planner's cost of one row of `row_positions` positions holding
// segments `lengths` (the first `patches[i]` of segment i image patches)
// under `attention`, padding not included: segments, cost.zigzag_sequence;
// row, the zigzag cost of one segment of their sum plus each segment's
// vision term; thd, each segment's zigzag cost on its own (rounded up to
// 2cp positions).
double row_cost(const CostModel& cost, std::span<const uint32_t> lengths, std::span<const uint32_t> patches,
                uint32_t row_positions, uint32_t cp, RowAttention attention);

// What the stream modes take beyond PackOptions: Megatron's run.
struct StreamOptions {
  uint64_t seed = 1;  // GPTDataset's random seed: its document and sample shuffles
  // Megatron's batch: per DP rank and step, `micro_batches` micro-batches of
  // micro_batch_size samples (a global batch of micro_batch_size x dp x
  // micro_batches). 0: megatron_batch of the run.
  uint32_t micro_batch_size = 0;
  uint32_t micro_batches = 0;
};

// Megatron's batch for a run of `steps` steps holding `positions`: g samples
// per DP rank and step, the run's (positions / seq_len / (steps x dp))
// rounded, at least 1 and at most what the run holds; as options.micro_batches
// micro-batches of g / micro_batches samples (rounded, at least 1) when g >=
// micro_batches, else as g micro-batches of one sample. So a global batch
// holds about a step of the run (a short run: at least one global batch).
StreamOptions megatron_batch(uint64_t positions, size_t steps, const PackOptions& options, uint64_t seed);

// A run as every placement of a comparison takes it, so that megatron drops
// nothing: an image-text document longer than seq_len keeps its patches and
// the text that fits (as every mode places it), and the stream is cut at the
// last whole global batch of Megatron's (megatron_batch: micro_batch_size x
// dp x micro_batches samples of seq_len): the document across the cut is
// shortened (its last positions dropped), those after it removed, and steps
// left empty removed. Ids are kept. The token after the cut, which the
// shortened document held, is Megatron's one extra label token
// (gpt_samples). Throws ConfigError naming `what` when the run does not hold
// one global batch.
struct ComparedRun {
  std::vector<std::vector<PlanDoc>> steps;
  StreamOptions stream;            // the seed, and the batch the cut used
  uint64_t positions = 0;          // every placement places these
  uint64_t dropped_positions = 0;  // cut off the run's end
};
ComparedRun whole_global_batches(const std::vector<std::vector<PlanDoc>>& steps, const PackOptions& options,
                                 uint64_t seed, const std::string& what);

// Arrival order of a step of n documents: a permutation of [0, n), a pure
// function of (seed, step, n), the order a shuffled data loader delivers the
// step's documents in. Modes that pack in arrival order (the colocated ones)
// use it; all ranks and the planner compute the same one.
std::vector<uint32_t> arrival_order(uint64_t seed, uint64_t step, uint32_t n);

// colocated_samples: the arrival positions DP rank `rank` of `dp` loads
// (every dp-th, from `rank`).
std::vector<uint32_t> sample_share(uint32_t n, uint32_t dp, uint32_t rank);

// Places one step. `docs` are in arrival order (the msd modes ignore the
// order; pack_step's result does not depend on it). Returns one BucketPlan
// per DP rank (options.dp), each with options.micro_batches micro-batches
// (colocated_tokens may leave some empty when a rank has fewer sequences;
// megatron_dp_balanced gives every rank its packs' count instead); the
// plans' positions and costs are filled. `options.balance` is ignored: the
// mode says how to balance. REQUIRES a mode that places step by step (not a
// stream mode, not megatron_dynamic_cp).
std::vector<BucketPlan> place_step(TrainingMode mode, const std::vector<PlanDoc>& docs, const PackOptions& options,
                                   const CostModel& cost = CostModel{});

// The positions of one of Megatron's global batches: micro_batch_size x dp x
// micro_batches x seq_len. 0 when `stream` gives no batch.
uint64_t global_batch_positions(const StreamOptions& stream, const PackOptions& options);

// Places a run of steps: steps[t] holds step t's documents in arrival order,
// ids unique over the whole run. The stream modes place the run's stream as
// Megatron does (plan/step/megatron.h: the documents in GPTDataset's order,
// its samples in its shuffle order, dealt by the sampler with stream's batch),
// so the run has as many steps as whole global batches it holds, and the
// positions after the last whole one are not placed (whole_global_batches
// cuts a run so there are none). The step modes:
// - in a compared run (stream gives Megatron's batch, as ComparedRun's does),
//   place the steps of compared_steps (plan/step/compared_steps.h): step t
//   holds exactly Megatron's global batch of positions (global_batch_positions)
//   taken from the run's stream in arrival order, a document across a step's
//   edge cut there and continued in the next step; the msd modes with
//   options.hold enabled hold through it. Every placement then has the same
//   steps with the same positions each. The pieces keep their documents' ids
//   and true begin offsets.
// - otherwise place each step of `steps` on its own (place_step), the msd
//   modes with options.hold as the outlier hold delivers them (hold_run).
// Plans' positions and costs are filled. The baselines ignore the hold.
// `held`, when given, gets the hold's delays. REQUIRES mode !=
// megatron_dynamic_cp.
std::vector<std::vector<BucketPlan>> place_run(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                               const PackOptions& options, const CostModel& cost = CostModel{},
                                               const StreamOptions& stream = StreamOptions{},
                                               HoldStats* held = nullptr);

// megatron_dynamic_cp's step (dynamic_cp_step over options.dp x options.cp
// ranks). Throws ConfigError as check_mode does, naming `what`.
std::vector<CpGroup> place_dynamic_cp(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                      const std::string& what = "mode");

// Megatron-style packing held to one step (colocated_tokens): the documents
// concatenated in the given order, cut at the seq_len sequence edges
// (document masking kept: each cut piece is its own segment); an image-text
// document is never cut (it starts a new sequence when it does not fit;
// longer than seq_len it keeps its patches and the text that fits).
std::vector<PackedSequence> pack_concatenated(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// An order-free digest of a placement's documents: the sum of mix64 over the
// documents that start in it (a piece with begin 0), keyed by `key_of(doc)`.
// Equal across modes iff they place the same multiset (with overwhelming
// probability). Pieces of one document placed twice count twice.
uint64_t documents_digest(const std::vector<BucketPlan>& buckets, const std::vector<uint64_t>& key_of_doc);

}  // namespace msd
