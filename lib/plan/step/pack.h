// distribute + balance + pack: pack a step's documents into seq_len sequences
// and split them across DP buckets and their micro-batches so that every
// bucket costs about the same, padding included. MPI-free; the planner
// calls it, tests and `msd-plan simulate` call it directly.
// docs/cost-and-balance.md explains the objectives and the methods.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "msd/batch.h"
#include "plan/step/balance.h"
#include "msd/options.h"
#include "plan/step/cost.h"

namespace msd {

// A document of the step as the planner sees it: metadata only.
struct PlanDoc {
  uint32_t id = 0;          // index into the step's sample table
  uint32_t positions = 0;   // sequence positions it needs (tokens + patches)
  uint32_t fixed = 0;       // leading positions that cannot be split (image patches)
  double cost = 0.0;        // cost(model) of the whole document (informational: pieces are costed on their own)
};

// A contiguous part of a document placed in a sequence: positions
// [begin, begin + length) of document `doc`.
struct Piece {
  uint32_t doc = 0;
  uint32_t begin = 0;
  uint32_t length = 0;
};

struct PackedSequence {
  std::vector<Piece> pieces;
  uint32_t used = 0;  // sum of piece lengths <= seq_len
};

struct MicroBatchPlan {
  std::vector<PackedSequence> sequences;
  uint64_t positions = 0;  // tokens + patches placed
  double cost = 0.0;       // its sequences' costs: pieces (or CP zigzag) + CostModel::padding over the unused positions
};

// The plan of one DP bucket for one step.
struct BucketPlan {
  std::vector<MicroBatchPlan> micro_batches;
  uint64_t positions = 0;  // tokens + patches placed
  double cost = 0.0;       // sum of its micro-batches' costs
};

// The outlier hold (outlier_hold.h, job.hold_above, job.hold_steps): which
// documents wait for later steps and for how long. Read by place_run (a
// run's steps) and the planner, never by pack_step (one step).
struct HoldOptions {
  // A document of more positions waits. 0: none does (no hold).
  uint32_t above = 0;
  // K: a document is delivered at most this many steps after the step that
  // took it. 0: none waits.
  uint32_t max_steps = 8;
  // Waiting documents are delivered together once this many wait, oldest
  // first: one for each DP rank. At least 1.
  uint32_t release = 1;
  // This step delivers every waiting document (the run's last, job.steps - 1).
  uint64_t last_step = std::numeric_limits<uint64_t>::max();

  bool enabled() const { return above > 0 && max_steps > 0; }
};

struct PackOptions {
  uint32_t seq_len = 2048;                          // positions per packed sequence
  uint32_t dp = 1;                                  // DP buckets
  uint32_t micro_batches = 1;                       // micro-batches per bucket
  LongDocs long_docs = LongDocs::split;             // documents longer than seq_len. Default: split
  BalanceMethod balance = BalanceMethod::greedy;    // how pieces are balanced. Default: greedy (LPT on cost)
  // Context-parallel ranks per sequence: a packed sequence then costs cp x
  // its busiest CP rank's share (CostModel::zigzag_sequence), in micro-batch
  // and bucket costs and the order of micro-batches. Default: 1.
  uint32_t cp = 1;
  // Variable-length micro-batches (job.micro_batch_shape = varlen): the
  // trainer computes each micro-batch as one row of its positions, rounded up
  // to kVarlenAlign (packed "THD" attention), not as [sequences, seq_len].
  // Padding then costs nothing, the plan's micro-batches hold one sequence
  // each (the packed sequences concatenated, in order), and the
  // padding-aware bound does not apply (PlanStats keeps the piece bounds).
  // Pieces are still at most seq_len. Under context parallelism (cp > 1) each
  // piece of a row is split over the CP ranks on its own (Transformer
  // Engine's THD layout; MicroBatch::cp_by_segment), so every CP rank does
  // the same share of every piece and a row costs the sum of its pieces:
  // pack_step places as for cp = 1. Default: false.
  bool varlen = false;
  // Pipeline stages each micro-batch passes through (1F1B). For pp > 1 each
  // bucket's micro-batches with work are ordered lightest at both ends and
  // heaviest in the middle (order_for_pipeline): the warm-up and cool-down,
  // when stages wait on each other, then run the light ones. Default: 1
  // (heaviest first, empty ones last, as for pp = 1).
  uint32_t pp = 1;
  // The activation-memory budget: no micro-batch holds more positions
  // (tokens + patches, padding not counted) than this. 0: micro_batch_budget's
  // default, seq_len x the sequences one micro-batch gets under an equal token
  // split of the step, ceil(positions / (dp * micro_batches * seq_len)).
  // The cost methods balance within it (pack_step, step 2); what still does
  // not fit is repaired after balancing (step 3).
  uint64_t max_positions_per_micro_batch = 0;
  // Whether pack_step computes the padding-aware lower bound (plan/step/bound.h,
  // step_bound; PlanStats::min_sequences, bound_cost, max_over_bound and
  // what it adds to lower_bound and pigeonhole_bound). It changes no plan;
  // about 2.5-3 ms CPU a step at 512 DP ranks. The planner places without it
  // (it reads only the budget flags of PlanStats); msd-plan simulate, the
  // benchmarks and the tests keep it. Off: those fields hold plan_stats'
  // piece bounds (largest piece, mean, piece pigeonhole), min_sequences 0,
  // max_over_bound over those.
  bool lower_bound = true;
  // Where documents may be cut (job.cuts). whole: a document longer than
  // seq_len into seq_len pieces (long_docs), nothing else. balance: such a
  // document into ceil(L / seq_len) near-equal pieces, and then more cuts
  // where they lower the heaviest rank, never more pieces in all than
  // Megatron's cut of the step's documents (megatron_piece_count, cuts.h)
  // makes: the spread placement (spread.h). REQUIRES varlen. Default: whole.
  Cuts cuts = Cuts::whole;
  // Variable micro-batches per rank (job.micro_batch_count = variable): the
  // spread placement (spread.h); a rank's positions may differ from the
  // others' and take as many micro-batches (variable-length rows) as they
  // need under the budget (max_positions_per_micro_batch, resolved as
  // micro_batch_budget does), at least micro_batches. REQUIRES varlen.
  // Default: false (micro_batches per rank).
  bool variable_micro_batches = false;
  // The outlier hold over a run's steps: place_run holds by it (the msd
  // modes); pack_step, which places one step, ignores it. Default: none.
  HoldOptions hold;
};

// Whether pack_step places by the spread placement (spread.h): cut-aware
// cuts or variable micro-batches.
inline bool spreads(const PackOptions& options) {
  return options.cuts == Cuts::balance || options.variable_micro_batches;
}

// The two balance objectives of a step, measured on its plan. "Cost" is
// CostModel::document summed over pieces. Ratios are 1 when there is no cost.
struct PlanStats {
  // Over DP buckets: the step waits for the slowest data-parallel rank.
  double mean_cost = 0.0;
  double max_cost = 0.0;
  double imbalance = 1.0;     // max_cost / mean_cost
  double largest_piece_cost = 0.0;
  // No partition of these pieces does better than this imbalance:
  // max(largest_piece_cost, mean_cost) / mean_cost.
  double lower_bound = 1.0;
  // A tighter bound when pieces are few and coarse (pigeonhole): of the
  // t*dp + 1 heaviest pieces some bucket holds t + 1, so the heaviest bucket
  // is at least the sum of the t + 1 lightest of them, for every t >= 1.
  // max(that, largest_piece_cost, mean_cost) / mean_cost >= lower_bound.
  double pigeonhole_bound = 1.0;
  // Per micro-batch index i, over DP buckets: pipeline stages wait for the
  // slowest rank's micro-batch i.
  std::vector<double> micro_batch_mean_cost;
  std::vector<double> micro_batch_max_cost;
  std::vector<double> micro_batch_imbalance;  // max / mean per index
  double worst_micro_batch_imbalance = 1.0;   // the largest of micro_batch_imbalance
  // max(largest_piece_cost, total / (dp * micro_batches)) over the latter.
  double micro_batch_lower_bound = 1.0;
  // The padding-aware bound (plan/step/bound.h, step_bound): no placement of
  // these pieces within the budget has a lighter heaviest bucket. The
  // largest of: the mean over buckets with the fewest sequences any packing
  // needs (min_sequences = ceil(positions / min(seq_len, budget))), the
  // bucket holding ceil(min_sequences / dp) of them, the heaviest piece in a
  // sequence of its own, padding-aware pigeonhole sums, the piece pigeonhole
  // sums above, and the sequence-class bound (buckets classed by their whole
  // sequences; an LP dual proves a maximum unreachable). The budget here is
  // the one the plan was held to (raised to the even share when the step
  // exceeds it); it can only raise the optimum, so the bound stays a lower
  // bound. lower_bound and pigeonhole_bound are at least bound_cost over this
  // plan's mean. max_over_bound = max_cost / bound_cost: 1 is optimal; the
  // bound is not tight, so no plan may reach 1.
  uint64_t sequences = 0;      // packed sequences placed
  uint64_t min_sequences = 0;  // the fewest any packing of these pieces within the budget needs
  double bound_cost = 0.0;
  double max_over_bound = 1.0;
  // Positions over DP buckets (memory, not time): max / mean.
  double positions_imbalance = 1.0;
  // The memory budget (PackOptions::max_positions_per_micro_batch, resolved),
  // the fullest micro-batch, whether the repair had to move pieces (the cost
  // methods already balance within the budget where whole sequences fit), and whether
  // the step could not be held within it (more positions than the budget
  // times the micro-batches, or an image that fits nowhere): then it rose to
  // the step's even share, and the fullest micro-batch may exceed it.
  uint64_t positions_budget = 0;
  uint64_t max_micro_batch_positions = 0;
  bool budget_binding = false;
  bool budget_exceeded = false;
  // Document pieces placed, and the pieces Megatron's cut of the step's
  // documents makes (megatron_piece_count; 0 unless cuts = balance): with
  // cuts = balance pieces <= megatron_pieces.
  uint64_t pieces = 0;
  uint64_t megatron_pieces = 0;
  uint64_t max_micro_batches = 0;  // the most micro-batches a bucket has (with work)
};

// Positions a trainer computes for a row holding `used`: seq_len for fixed
// rows, `used` rounded up to kVarlenAlign (msd/batch.h: tile and
// tensor-parallel divisibility, at most 63 positions of padding a row) for
// variable-length ones.
uint64_t row_positions(uint64_t used, uint32_t seq_len, bool varlen);
// The same for a whole row: a variable-length row split per piece over cp > 1
// context-parallel ranks (THD, MicroBatch::cp_by_segment) computes its pieces
// each padded to 2 x cp, rounded up to thd_row_positions.
uint64_t row_positions(const PackedSequence& row, uint32_t seq_len, bool varlen, uint32_t cp);

// A bucket's micro-batches in 1F1B order: those with work by cost, the
// lightest first, then alternately at the back and the front, so cost rises
// towards the middle (ties keep their order); empty ones stay last. With
// uneven micro-batches this shortens the schedule's warm-up and cool-down:
// over random micro-batches at pp 4 it comes within 1% of the best order,
// where heaviest-first is 9% longer (docs/cost-and-balance.md).
void order_for_pipeline(std::vector<MicroBatchPlan>& micro_batches);

struct PackedStep {
  std::vector<BucketPlan> buckets;  // one per DP rank
  PlanStats stats;
};

// Plans one step. Deterministic: the result depends only on the documents'
// (id, positions, fixed) multiset and the options, not on their order in
// `docs` (ids are unique within a step).
//
// 1. Pieces. A document of at most seq_len positions is one piece. A longer
//    one is cut into pieces of at most seq_len (long_docs = split) or keeps
//    its first seq_len positions (truncate). Its `fixed` leading positions
//    (image patches) are never split: an image-text document longer than
//    seq_len keeps its patches and the text that fits, in both modes.
//    A piece costs cost.document(length, patches in it).
//    REQUIRES: 0 < positions, fixed <= min(positions, seq_len) (configuration
//    validation guarantees the second).
// 2. greedy / karmarkar_karp, padding-aware. A packed sequence costs its
//    pieces plus CostModel::padding over its unused positions (its GEMMs
//    run over all seq_len of them), or under CP its zigzag cost plus that.
//    Three placements over the `dp` buckets are made, none putting more than
//    micro_batches x budget positions in a bucket (balance_within):
//    a. sequences first: all pieces packed first-fit decreasing (longest
//       first; ties: doc, begin) into as few sequences as it finds, the
//       sequences (heaviest first; ties: first piece) balanced by cost with
//       the method;
//    b. pieces first by cost: pieces, heaviest first (ties: doc id, then
//       begin), balanced by cost with the method, each bucket with room for
//       ceil(ceil(positions / seq_len) / dp) sequences; each bucket's pieces
//       then packed first-fit decreasing;
//    c. pieces first by positions: as b, longest first to the bucket with
//       the fewest positions (the tokens split below), no room cap.
//    The placement whose heaviest bucket costs least is kept (ties: the
//    earlier). A fourth, the sequence placement, is made beside it: pieces,
//    heaviest first, each where they leave their bucket lightest (into a
//    sequence with room for their extra, or a new sequence for their cost
//    plus its padding), no bucket over micro_batches x floor(budget /
//    seq_len) sequences. With cp = 1 and a budget of at least seq_len, a
//    refiner then moves pieces out of the heaviest bucket of each of the
//    two, and exchanges them for short pieces of light buckets, while that
//    lowers it (padding-aware; no bucket over micro_batches x floor(budget /
//    seq_len) sequences or micro_batches x budget positions; bounded
//    rounds), and the lighter result is kept (ties: the former; under CP
//    the sequence placement is kept when lighter). Once a placement reaches
//    the heaviest piece in a sequence of its own, no later one is made; with
//    cp = 1 the sequence placement is not made when the refined plan is
//    flat (its heaviest bucket within 0.1% of its mean: a plan lighter by
//    more needs fewer sequences). With cp = 1 a fifth placement follows the
//    sequence placement: the same, each piece where it leaves its bucket
//    heaviest without passing a target cost (best fit), the target bisected
//    between the step's cheap lower bound (step_bound without the classes)
//    and the lightest plan so far (at most 4 placements, the first 1.5%
//    below that plan); the lightest that fits is refined and kept when
//    lighter. Each bucket's whole sequences are then balanced by cost over
//    `micro_batches` bins, none over the budget, and
//    the bins ordered heaviest first (ties: lower bin), so micro-batch i is
//    the i-th heaviest on every rank. A micro-batch is empty only when its bucket has fewer
//    sequences than micro-batches; a micro-batch never adds a sequence.
//    tokens (the position-count split, for comparison):
//    a. Pieces go to buckets longest first, each to the bucket with the
//       fewest positions so far (ties: lower index).
//    b. Each bucket's pieces fill sequences first-fit decreasing.
//    c. The sequences (in packing order) are cut into `micro_batches`
//       contiguous runs minimizing the largest run's positions; a run is
//       empty only when the bucket has fewer sequences than runs.
//    Within a sequence pieces are ordered by (doc, begin).
// 3. The memory budget (PackOptions::max_positions_per_micro_batch): the
//    cost methods already place whole sequences within it where they fit;
//    when a micro-batch still holds more positions, it gives up its shortest pieces; they
//    go, longest first, to the micro-batch with the most room (any bucket),
//    a text piece longer than that room cut at it; changed micro-batches are
//    repacked first-fit decreasing, and (cost methods) each bucket's
//    micro-batches reordered heaviest first. A plan within the budget is
//    unchanged. PlanStats says whether the budget bound.
//
// O(pieces * log(pieces) * log(dp)) time for karmarkar_karp, O(pieces *
// log(pieces)) otherwise, plus the swaps' bounded rounds (balance.h); no pass
// over all buckets per piece; the refiner's rounds each touch at most 64
// buckets; best fit under a target at most 4 placements. About 6-8 ms CPU
// a step at 512 DP ranks x 32k (4096 documents; about 50M instructions)
// without the statistics' sequence-class bound (PackOptions::lower_bound;
// 2-3 ms more with it) and about 3 ms at 4096 ranks (8192 documents: the
// first placement is already optimal) on one core.
// The budget of a step of `total_positions` (pieces, after long_docs).
uint64_t micro_batch_budget(uint64_t total_positions, const PackOptions& options);

PackedStep pack_step(const std::vector<PlanDoc>& docs, const PackOptions& options, const CostModel& cost = CostModel{});

// pack_step(...).buckets: the planner's call.
std::vector<BucketPlan> distribute_and_pack(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                            const CostModel& cost = CostModel{});

// The statistics of a plan whose pieces cost `piece_costs` (heaviest first).
// Per micro-batch index, a bucket with fewer micro-batches counts as 0 there
// (variable micro-batches).
PlanStats plan_stats(const std::vector<BucketPlan>& buckets, std::span<const double> piece_costs);

}  // namespace msd
