// Training modes: how one step's documents are placed on the data-parallel
// ranks. Every mode places the SAME documents (the one global mixer's step,
// docs/evaluation.md); only where they go differs. MPI-free: the planner, the
// colocated client, the simulator and the benchmarks all place through here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/pack.h"

namespace msd {

enum class TrainingMode {
  // Equal samples per DP rank (DistributedSampler: rank r takes every dp-th
  // document in arrival order), micro-batches by sample count, next-fit
  // packing in arrival order: many multimodal trainers' practice.
  colocated_samples,
  // Megatron-LM's GPT practice: the step's documents, concatenated in arrival
  // order, are cut into seq_len sequences at the sequence edges (document
  // masking kept: each cut piece is its own segment); an image-text document
  // is never cut (it starts a new sequence when it does not fit, longer than
  // seq_len it keeps its patches and the text that fits). Each rank takes a
  // contiguous run of floor or ceil(sequences / dp) sequences, cut into
  // micro-batches of equal sequence count.
  colocated_tokens,
  msd_tokens,  // disaggregated, balancing positions only (BalanceMethod::tokens)
  msd_greedy,  // disaggregated, LPT on cost
  msd_kk,      // disaggregated, Karmarkar-Karp on cost
};

inline constexpr TrainingMode kTrainingModes[] = {TrainingMode::colocated_samples, TrainingMode::colocated_tokens,
                                                  TrainingMode::msd_tokens, TrainingMode::msd_greedy,
                                                  TrainingMode::msd_kk};

const char* training_mode_name(TrainingMode mode);
// A mode name above, or the aliases "colocated" (colocated_samples) and
// "disaggregated" (msd with `balance`: tokens, greedy or karmarkar_karp).
// Throws ConfigError naming `what` for anything else.
TrainingMode parse_training_mode(const std::string& name, const std::string& balance = "greedy",
                                 const std::string& what = "job.mode");
bool is_baseline(TrainingMode mode);  // colocated_samples, colocated_tokens
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
// (colocated_tokens may leave some empty when a rank has fewer sequences);
// the plans' positions and costs are filled. `options.balance` is ignored:
// the mode says how to balance.
std::vector<BucketPlan> place_step(TrainingMode mode, const std::vector<PlanDoc>& docs, const PackOptions& options,
                                   const CostModel& cost = CostModel{});

// Megatron GPTDataset-style packing of documents in the given order into
// seq_len sequences (colocated_tokens above).
std::vector<PackedSequence> pack_concatenated(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// An order-free digest of a placement's documents: the sum of mix64 over the
// documents that start in it (a piece with begin 0), keyed by `key_of(doc)`.
// Equal across modes iff they place the same multiset (with overwhelming
// probability). Pieces of one document placed twice count twice.
uint64_t documents_digest(const std::vector<BucketPlan>& buckets, const std::vector<uint64_t>& key_of_doc);

}  // namespace msd
