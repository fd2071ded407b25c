// Megatron-LM's data placements as it runs them, re-implemented from their
// algorithms (docs/evaluation.md names the source each follows): GPTDataset's
// samples dealt by MegatronPretrainingSampler over a run's stream, and Megatron
// core's two packing schedulers over one step's documents (DpBalancedScheduler,
// and BalancedCPScheduler of hybrid context parallelism). The training modes
// megatron, megatron_docmask, megatron_dp_balanced and megatron_dynamic_cp
// (plan/step/modes.h) place through here. MPI-free; pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step/pack.h"

namespace msd {

// A seeded permutation of [0, n): a pure function of (key, n) (Fisher-Yates
// driven by mix64).
std::vector<uint32_t> seeded_permutation(uint64_t key, uint32_t n);

// GPTDataset's document_index for one epoch: the order the run's `n`
// documents are concatenated in, a seeded permutation (pure function of `seed`).
std::vector<uint32_t> gpt_document_order(uint64_t seed, uint32_t n);
// GPTDataset's shuffle_index: the order its `n` samples are read in.
std::vector<uint32_t> gpt_sample_order(uint64_t seed, uint32_t n);

// GPTDataset's samples over `docs` concatenated in the given order: sample i
// holds the stream's input positions [i*S, i*S + S) (S = seq_len) as pieces,
// cut wherever the edge falls (inside a document, inside an image's patches:
// the stream is tokens). Sample i reads tokens [i*S, i*S + S + 1): its S
// labels are the next tokens, so consecutive samples overlap by one token. The
// T positions of `docs` and the one token after them (a label only: the
// corpus's next token) are GPTDataset's T + 1 tokens: floor(T / S) samples,
// every one full; the last partial sample is dropped.
std::vector<PackedSequence> gpt_samples(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// MegatronPretrainingSampler over the samples in `order` (gpt_sample_order):
// consecutive blocks of micro_batch_size x dp samples, DP rank r taking slice
// [r * micro_batch_size, (r + 1) * micro_batch_size) of each block as one
// micro-batch; a step is `micro_batches` blocks (the global batch); the
// samples after the last whole step are dropped. Plans' costs are not filled.
std::vector<std::vector<BucketPlan>> deal_gpt_samples(const std::vector<PackedSequence>& samples,
                                                      const std::vector<uint32_t>& order, uint32_t micro_batch_size,
                                                      uint32_t micro_batches, uint32_t dp);

// The pieces of a step's documents (in the given order) as the packing
// schedulers take them: a document longer than seq_len cut into seq_len
// pieces and a shorter last one; an image-text document longer than seq_len
// keeps its patches and the text that fits (as every mode does).
std::vector<Piece> step_pieces(const std::vector<PlanDoc>& docs, uint32_t seq_len);

// DpBalancedScheduler, for variable-length (THD) rows: the step's pieces in
// order packed next-fit into packs of at most seq_len positions
// (max_seqlen_per_dp_cp_rank x cp); while the pack count is not a multiple of
// dp, the last piece of the last pack holding more than one is split off as a
// pack of its own, appended at the end (the first pack is never split; where
// Megatron would stop, "not enough samples to move", the last ranks get an
// empty micro-batch instead). Pack i * dp + j is DP rank j's micro-batch i:
// every rank gets the same count, each micro-batch one row. Costs not filled.
std::vector<BucketPlan> dp_balanced_step(const std::vector<PlanDoc>& docs, uint32_t seq_len, uint32_t dp);

// Hybrid (dynamic) context parallelism: ranks [first_rank, first_rank + ranks)
// of the dp x cp domain compute `samples` one after another, each a row of
// its own split over those ranks (its CP size).
struct CpTeam {
  uint32_t first_rank = 0;
  uint32_t ranks = 1;
  std::vector<Piece> samples;
};
// One of BalancedCPScheduler's groups: teams over disjoint ranks covering the
// whole domain, in rank order. A rank runs its groups in order; a team starts
// when all its ranks have finished their previous group.
using CpGroup = std::vector<CpTeam>;

// The CP size BalancedCPScheduler gives a sample of `length` positions: the
// next power of two of length / max_per_rank (at least 1).
uint32_t cp_ranks_needed(uint64_t length, uint64_t max_per_rank);

// BalancedCPScheduler over the step's pieces (step_pieces, in order) on a
// domain of dp x cp ranks, max_seqlen_per_dp_cp_rank = seq_len / cp; a sample
// costs L^2 / its CP size. Samples longest first (ties in order). Each group:
// the samples are cut into consecutive buckets of about equal work, as many
// as there are distinct CP sizes; then, bucket by bucket, the first sample
// that can go is placed: on a new team of the lowest free ranks when enough
// ranks are free, else on the least-loaded team of its CP size; once a sample
// needs fewer ranks than the group's first did, the group closes as soon as
// its ranks' loads are within 5% of the largest (or when nothing left can be
// placed). The most-loaded team then gives back its last sample while that
// narrows the spread, and while ranks stay empty the first team of the
// smallest CP size doubles (its samples then run on twice the ranks, the
// teams after it move up). What is left starts the next group.
// REQUIRES dp x cp a power of two, seq_len % cp == 0.
std::vector<CpGroup> dynamic_cp_step(const std::vector<PlanDoc>& docs, uint32_t seq_len, uint32_t dp, uint32_t cp);

}  // namespace msd
