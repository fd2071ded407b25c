// msd/options.h — the values of the configuration's enumerated options, and
// the names an INI file writes them with. lib/config parses each option once
// into its enum (an unknown name is refused there, naming the option and the
// file); everything else works with the enum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace msd {

// How one step's documents are placed on the data-parallel ranks: the one
// vocabulary of modes, for job.mode, the evaluations (msd-plan, msd-bench)
// and the summaries. plan/step/modes.h says how each mode places; every mode
// places the same documents. A job runs the colocated and msd modes
// (kTrainingModes); the megatron modes are Megatron-LM's placements, the
// baselines the evaluations compare.
enum class TrainingMode {
  colocated_samples,     // equal samples per DP rank, next-fit packing in arrival order: the trainers load
  colocated_tokens,      // Megatron's packing held to one step's documents
  megatron,              // Megatron-LM as it runs over the run's stream (fixed rows, full causal attention)
  megatron_docmask,      // the same rows, document-masked attention
  megatron_dp_balanced,  // Megatron core's DpBalancedScheduler over one step
  megatron_dynamic_cp,   // Megatron core's hybrid context parallelism (cp > 1)
  msd_tokens,            // disaggregated, balancing positions only (BalanceMethod::tokens)
  msd_greedy,            // disaggregated, LPT on cost (BalanceMethod::greedy)
  msd_kk,                // disaggregated, Karmarkar-Karp on cost (BalanceMethod::karmarkar_karp)
};

// The modes a job runs (job.mode): every mode but Megatron's.
inline constexpr TrainingMode kTrainingModes[] = {TrainingMode::colocated_samples, TrainingMode::colocated_tokens,
                                                  TrainingMode::msd_tokens, TrainingMode::msd_greedy,
                                                  TrainingMode::msd_kk};
constexpr bool is_job_mode(TrainingMode mode) {
  for (TrainingMode m : kTrainingModes)
    if (m == mode) return true;
  return false;
}

// job.long_docs: a document longer than seq_len is cut into pieces of at
// most seq_len, or truncated to seq_len.
enum class LongDocs { split, truncate };

// job.balance: how the planner balances DP buckets and micro-batches
// (plan/step/balance.h; docs/cost-and-balance.md compares them).
enum class BalanceMethod {
  // Even split by positions (tokens + patches), blind to attention's L^2: LPT
  // on positions over buckets, contiguous runs of sequences as micro-batches.
  // Kept as the comparison point.
  tokens,
  // LPT on cost: items heaviest first, each to the lightest bin so far.
  // max <= (4/3 - 1/(3k)) * optimum; within one item of the mean.
  greedy,
  // Largest differencing (Karmarkar-Karp generalized to k bins): repeatedly
  // combine the two partial partitions whose heaviest and lightest bins
  // differ most, heaviest bins of one with lightest of the other.
  karmarkar_karp,
};

// job.micro_batch_shape: [sequences, seq_len] padded rows, or one row of
// its positions (packed THD attention; docs/batch.md).
enum class RowShape { fixed, varlen };

// job.cuts: where the planner may cut a document (docs/cost-and-balance.md
// "Cut-aware packing"). whole: only a document longer than seq_len, at
// seq_len edges (job.long_docs); balance: a long document into near-equal
// pieces, and more cuts where they even out the DP ranks, never more pieces
// than Megatron's cut of the step's documents makes.
enum class Cuts { whole, balance };

// job.micro_batch_count: fixed, job.micro_batches per rank; variable, as many
// as a rank's positions need under job.max_positions_per_micro_batch (at
// least job.micro_batches), so the ranks' token counts may differ.
enum class MicroBatchCount { fixed, variable };

// mix.schedule: how a source's weight moves between the points of its
// curve (source.NAME.weight; plan/step/mix.h).
enum class ScheduleKind { constant, piecewise, linear };

// One point of a source's weight schedule: from `step` on, weight `weight`
// (piecewise), or the value reached exactly at `step` (linear).
struct WeightPoint {
  uint64_t step = 0;
  double weight = 0.0;
};

// topology.broadcast_at: tp, one rank per TP group fetches and shares the
// batch; none, every TP rank fetches.
enum class BroadcastAt { tp, none };

// topology.network_reads: how a client reads a loader window that is not
// node-shared. two_sided: one request per loader and step, answered by one
// message (the loader's CPU sends it); one_sided: MPI_Get per piece (no
// loader CPU on RDMA networks; over TCP every get waits for the loader).
// docs/multi-node.md, "Handoff speed".
enum class NetworkReads { two_sided, one_sided };

// topology.data_ranks: where the planner and the loaders sit. first: world
// ranks 1..L (the planner is 0); per_node: spread evenly over the nodes,
// first ranks of each node; dedicated_nodes: nodes of their own (the data
// ranks must fill whole nodes). The planner is world rank 0 in every
// placement. docs/layout.md has pictures.
enum class DataRanks { first, per_node, dedicated_nodes };

// topology.scaling: how sources are given to loader ranks. fixed (written
// "static"): by peak weight (runtime/assignment.h); partition: by the
// partition plan; online: loader ranks move between sources as the mix
// changes (docs/scaling.md).
enum class Scaling { fixed, partition, online };

// source.NAME.shuffle: the order of a source's stream within an epoch
// (docs/formats.md "The locality order"). uniform: any record may follow any
// other; block: blocks of consecutive records are permuted and the records of
// a window of blocks shuffled together, so compressed restart intervals and
// Parquet row groups are decoded about once per epoch; automatic (written
// "auto"): block for the sources whose reads decode whole blocks (parquet, or
// a jsonl source with a compressed file), uniform for the others.
enum class Shuffle { automatic, uniform, block };

// Every value of an enumerated option with its name, in the order --help
// lists them.
template <typename E>
struct OptionNames;

// Each mode's name, then the alias colocated (= colocated_samples). The
// other alias, disaggregated, names no mode alone: the msd mode job.balance
// names (msd_mode below; JobConfig::mode).
template <>
struct OptionNames<TrainingMode> {
  static constexpr std::pair<TrainingMode, const char*> values[] = {
      {TrainingMode::colocated_samples, "colocated_samples"},
      {TrainingMode::colocated_tokens, "colocated_tokens"},
      {TrainingMode::megatron, "megatron"},
      {TrainingMode::megatron_docmask, "megatron_docmask"},
      {TrainingMode::megatron_dp_balanced, "megatron_dp_balanced"},
      {TrainingMode::megatron_dynamic_cp, "megatron_dynamic_cp"},
      {TrainingMode::msd_tokens, "msd_tokens"},
      {TrainingMode::msd_greedy, "msd_greedy"},
      {TrainingMode::msd_kk, "msd_kk"},
      {TrainingMode::colocated_samples, "colocated"}};
};
inline constexpr const char* kDisaggregated = "disaggregated";
// Why job.mode refuses a megatron mode.
inline constexpr const char* kBaselineOnly =
    "is Megatron-LM's placement: a baseline of the evaluations (msd-plan simulate --compare, msd-plan place, "
    "msd-bench sweep), not a mode a job runs";
template <>
struct OptionNames<LongDocs> {
  static constexpr std::pair<LongDocs, const char*> values[] = {{LongDocs::split, "split"},
                                                                {LongDocs::truncate, "truncate"}};
};
template <>
struct OptionNames<BalanceMethod> {
  static constexpr std::pair<BalanceMethod, const char*> values[] = {{BalanceMethod::greedy, "greedy"},
                                                                     {BalanceMethod::karmarkar_karp, "karmarkar_karp"},
                                                                     {BalanceMethod::tokens, "tokens"}};
};
template <>
struct OptionNames<RowShape> {
  static constexpr std::pair<RowShape, const char*> values[] = {{RowShape::fixed, "fixed"}, {RowShape::varlen, "varlen"}};
};
template <>
struct OptionNames<Cuts> {
  static constexpr std::pair<Cuts, const char*> values[] = {{Cuts::whole, "whole"}, {Cuts::balance, "balance"}};
};
template <>
struct OptionNames<MicroBatchCount> {
  static constexpr std::pair<MicroBatchCount, const char*> values[] = {{MicroBatchCount::fixed, "fixed"},
                                                                       {MicroBatchCount::variable, "variable"}};
};
template <>
struct OptionNames<BroadcastAt> {
  static constexpr std::pair<BroadcastAt, const char*> values[] = {{BroadcastAt::tp, "tp"},
                                                                   {BroadcastAt::none, "none"}};
};
template <>
struct OptionNames<NetworkReads> {
  static constexpr std::pair<NetworkReads, const char*> values[] = {{NetworkReads::two_sided, "two_sided"},
                                                                    {NetworkReads::one_sided, "one_sided"}};
};
template <>
struct OptionNames<DataRanks> {
  static constexpr std::pair<DataRanks, const char*> values[] = {{DataRanks::first, "first"},
                                                                 {DataRanks::per_node, "per_node"},
                                                                 {DataRanks::dedicated_nodes, "dedicated_nodes"}};
};

template <>
struct OptionNames<Scaling> {
  static constexpr std::pair<Scaling, const char*> values[] = {
      {Scaling::fixed, "static"}, {Scaling::partition, "partition"}, {Scaling::online, "online"}};
};

template <>
struct OptionNames<Shuffle> {
  static constexpr std::pair<Shuffle, const char*> values[] = {
      {Shuffle::automatic, "auto"}, {Shuffle::uniform, "uniform"}, {Shuffle::block, "block"}};
};

template <typename E>
constexpr const char* option_name(E value) {
  for (const auto& [v, name] : OptionNames<E>::values)
    if (v == value) return name;
  return "?";
}

template <typename E>
constexpr std::optional<E> find_option_value(std::string_view name) {
  for (const auto& [v, option] : OptionNames<E>::values)
    if (name == option) return v;
  return std::nullopt;
}

// "a | b | c": the names, for --help and errors.
template <typename E>
std::string option_names() {
  std::string out;
  for (const auto& [v, name] : OptionNames<E>::values) out += (out.empty() ? "" : " | ") + std::string(name);
  return out;
}

// The msd modes and the balance each places by: the one mapping between
// them, both ways.
inline constexpr std::pair<BalanceMethod, TrainingMode> kBalancedModes[] = {
    {BalanceMethod::tokens, TrainingMode::msd_tokens},
    {BalanceMethod::greedy, TrainingMode::msd_greedy},
    {BalanceMethod::karmarkar_karp, TrainingMode::msd_kk}};

// The msd mode that balances by `balance` (job.mode = disaggregated).
constexpr TrainingMode msd_mode(BalanceMethod balance) {
  for (const auto& [b, mode] : kBalancedModes)
    if (b == balance) return mode;
  return TrainingMode::msd_greedy;
}

// The balance an msd mode places by; none for the colocated and megatron
// modes (the baselines), which balance nothing.
constexpr std::optional<BalanceMethod> mode_balance(TrainingMode mode) {
  for (const auto& [balance, m] : kBalancedModes)
    if (m == mode) return balance;
  return std::nullopt;
}

// Whether training ranks load their own data, with no planner and no loader
// ranks (colocated_samples).
constexpr bool trainers_load(TrainingMode mode) { return mode == TrainingMode::colocated_samples; }

}  // namespace msd
