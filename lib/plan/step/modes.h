// Training modes: how one step's documents are placed on the data-parallel
// ranks. Every mode places the SAME documents (the one global mixer's step,
// docs/evaluation.md); only where they go differs. MPI-free: the planner, the
// colocated client, the simulator and the benchmarks all place through here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"

namespace msd {

enum class TrainingMode {
  // Equal samples per DP rank (DistributedSampler: rank r takes every dp-th
  // document in arrival order), micro-batches by sample count, next-fit
  // packing in arrival order: many multimodal trainers' practice.
  colocated_samples,
  // Megatron's packing held to one step's documents (the published
  // system's second baseline, and what the colocated runtime can deliver):
  // the step's documents, concatenated in arrival order, are cut into
  // seq_len sequences (pack_concatenated); each rank takes a contiguous run
  // of floor or ceil(sequences / dp) sequences, cut into micro-batches of
  // equal sequence count.
  colocated_tokens,
  // Megatron-LM's GPTDataset exactly: the whole run's documents, one stream
  // in arrival order, are cut into seq_len sequences (pack_concatenated) and
  // every step takes the same number of them, an equal count per DP rank
  // (sequences carry over step edges). A stream mode: placed over a run of
  // steps (place_run), not one step. Fixed [sequences, seq_len] rows.
  megatron,
  // Megatron / Transformer Engine's packed-sequence (THD) path on the same
  // stream: whole documents packed next-fit in arrival order into rows of at
  // most seq_len positions (pack_whole), an equal count of rows per DP rank
  // and step, so about equal tokens per rank; no balancing. A stream mode;
  // variable-length rows (cu_seqlens, no padding computed).
  megatron_varlen,
  msd_tokens,  // disaggregated, balancing positions only (BalanceMethod::tokens)
  msd_greedy,  // disaggregated, LPT on cost
  msd_kk,      // disaggregated, Karmarkar-Karp on cost
};

// The modes a job runs (job.mode): every mode but the stream ones.
inline constexpr TrainingMode kTrainingModes[] = {TrainingMode::colocated_samples, TrainingMode::colocated_tokens,
                                                  TrainingMode::msd_tokens, TrainingMode::msd_greedy,
                                                  TrainingMode::msd_kk};
// Every mode, as the evaluations compare them (msd-plan simulate --compare).
inline constexpr TrainingMode kEvaluationModes[] = {
    TrainingMode::colocated_samples, TrainingMode::colocated_tokens, TrainingMode::megatron,
    TrainingMode::megatron_varlen,   TrainingMode::msd_tokens,       TrainingMode::msd_greedy,
    TrainingMode::msd_kk};

const char* training_mode_name(TrainingMode mode);
// A mode name of kTrainingModes (or, with `stream`, of kEvaluationModes), or the aliases "colocated" (colocated_samples) and
// "disaggregated" (msd with `balance`: tokens, greedy or karmarkar_karp).
// Throws ConfigError naming `what` for anything else.
TrainingMode parse_training_mode(const std::string& name, const std::string& balance = "greedy",
                                 const std::string& what = "job.mode", bool stream = false);
// The mode a job's job.mode places by: the aliases resolved, disaggregated
// by `balance`.
TrainingMode training_mode(JobMode mode, BalanceMethod balance);
TrainingMode training_mode(const JobConfig& job);
bool is_baseline(TrainingMode mode);  // colocated_samples, colocated_tokens, megatron, megatron_varlen
// megatron and megatron_varlen: placed over a run's stream (place_run).
bool is_stream_mode(TrainingMode mode);
// Whether `mode`'s micro-batches are variable-length rows: megatron_varlen
// always, the msd modes when `varlen` (PackOptions::varlen), the others never.
bool varlen_rows(TrainingMode mode, bool varlen);
// Whether training ranks load their own data (no planner, no loaders).
bool loads_on_trainers(TrainingMode mode);  // colocated_samples

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
// a stream mode's one step is its whole stream, all its sequences dealt as
// colocated_tokens deals them, place_run places a run);
// the plans' positions and costs are filled. `options.balance` is ignored:
// the mode says how to balance.
std::vector<BucketPlan> place_step(TrainingMode mode, const std::vector<PlanDoc>& docs, const PackOptions& options,
                                   const CostModel& cost = CostModel{});

// Places a run of steps: steps[t] holds step t's documents in arrival
// order, ids unique over the whole run. The step modes place each step on
// its own (place_step). The stream modes concatenate the run's documents in
// order and deal their sequences out: every step but the last takes
// stream_sequences_per_step of them, an equal run of each per DP rank, cut
// into micro-batches of floor or ceil count; the last step takes what is left,
// floor or ceil per rank (so every mode places every document). The run may
// then have fewer or more steps than `steps` (never more than the sequences).
// Plans' positions and costs are filled. With options.hold enabled the msd
// modes place the steps as the outlier hold delivers them (hold_run); the
// baselines ignore it.
std::vector<std::vector<BucketPlan>> place_run(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                               const PackOptions& options, const CostModel& cost = CostModel{});

// The sequences a stream mode's step takes: dp x the sequences per rank
// nearest to the run's sequences over its steps and ranks (at least one), so
// a step holds about as many tokens as the step modes' steps (Megatron's
// global batch, in sequences, chosen for a step's worth of tokens). Each
// rank's count is cut into micro-batches of floor or ceil sequences.
size_t stream_sequences_per_step(size_t sequences, size_t steps, uint32_t dp);

// Megatron GPTDataset-style packing of documents in the given order into
// seq_len sequences (colocated_tokens, megatron): the documents concatenated,
// cut at the sequence edges (document masking kept: each cut piece is its
// own segment); an image-text document is never cut (it starts a new
// sequence when it does not fit; longer than seq_len it keeps its patches
// and the text that fits).
std::vector<PackedSequence> pack_concatenated(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// Packed-sequence (THD) packing (megatron_varlen): whole documents next-fit
// in the given order into rows of at most seq_len positions; a document
// longer than seq_len is cut into seq_len pieces (its last piece packed like
// a document), an image-text one keeps its patches and the text that fits.
std::vector<PackedSequence> pack_whole(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// An order-free digest of a placement's documents: the sum of mix64 over the
// documents that start in it (a piece with begin 0), keyed by `key_of(doc)`.
// Equal across modes iff they place the same multiset (with overwhelming
// probability). Pieces of one document placed twice count twice.
uint64_t documents_digest(const std::vector<BucketPlan>& buckets, const std::vector<uint64_t>& key_of_doc);

}  // namespace msd
