#include "plan/step/modes.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "common/digest.h"
#include "common/error.h"
#include "plan/step/baseline.h"

namespace msd {
namespace {

// Positions and costs of each micro-batch and bucket, as pack_step fills
// them: a sequence costs the sum of its pieces' document costs, or under CP
// cp times its busiest rank's zigzag share, plus its padding.
using FixedById = std::unordered_map<uint32_t, uint32_t>;  // a document's `fixed`, by id

FixedById fixed_by_id(const std::vector<PlanDoc>& docs) {
  FixedById fixed_of;
  for (const PlanDoc& doc : docs) fixed_of[doc.id] = doc.fixed;
  return fixed_of;
}

void fill_costs(std::vector<BucketPlan>& buckets, const FixedById& fixed_of, const PackOptions& options,
                const CostModel& cost) {
  std::vector<uint32_t> lengths, patches;
  for (BucketPlan& bucket : buckets) {
    bucket.positions = 0;
    bucket.cost = 0.0;
    for (MicroBatchPlan& mb : bucket.micro_batches) {
      mb.positions = 0;
      mb.cost = 0.0;
      for (const PackedSequence& seq : mb.sequences) {
        lengths.clear();
        patches.clear();
        double sum = 0.0;
        for (const Piece& p : seq.pieces) {
          const uint32_t fixed = fixed_of.at(p.doc);
          const uint32_t in_piece = p.begin < fixed ? std::min(fixed - p.begin, p.length) : 0;
          lengths.push_back(p.length);
          patches.push_back(in_piece);
          sum += cost.document(p.length, in_piece);
        }
        mb.positions += seq.used;
        mb.cost += options.cp > 1 ? cost.zigzag_sequence(lengths, patches, options.seq_len, options.cp) : sum;
        mb.cost += cost.padding(options.seq_len - seq.used);
      }
      bucket.positions += mb.positions;
      bucket.cost += mb.cost;
    }
  }
}

std::vector<BucketPlan> place_samples(const std::vector<PlanDoc>& docs, const PackOptions& options) {
  std::vector<BucketPlan> buckets(options.dp);
  const uint32_t n = checked_cast<uint32_t>(docs.size());
  for (uint32_t rank = 0; rank < options.dp; ++rank) {
    std::vector<PlanDoc> share;
    for (uint32_t i : sample_share(n, options.dp, rank)) share.push_back(docs[i]);
    buckets[rank].micro_batches = baseline_micro_batches(share, options.micro_batches, options.seq_len, options.long_docs);
  }
  return buckets;
}

// Contiguous runs of floor or ceil(count / parts) (the first count % parts
// runs take one more): [begin of run i, begin of run i + 1).
size_t run_begin(size_t count, size_t parts, size_t i) {
  return i * (count / parts) + std::min(i, count % parts);
}

// Sequences [begin, end) dealt to the DP ranks: a contiguous run of floor or
// ceil(count / dp) each, cut into micro-batches of floor or ceil sequences.
std::vector<BucketPlan> deal_sequences(const std::vector<PackedSequence>& sequences, size_t begin, size_t end,
                                       const PackOptions& options) {
  std::vector<BucketPlan> buckets(options.dp);
  const size_t step_count = end - begin;
  for (uint32_t rank = 0; rank < options.dp; ++rank) {
    const size_t first = begin + run_begin(step_count, options.dp, rank);
    const size_t count = begin + run_begin(step_count, options.dp, rank + 1) - first;
    buckets[rank].micro_batches.resize(options.micro_batches);
    for (uint32_t m = 0; m < options.micro_batches; ++m) {
      const size_t from = first + run_begin(count, options.micro_batches, m);
      const size_t to = first + run_begin(count, options.micro_batches, m + 1);
      for (size_t s = from; s < to; ++s) buckets[rank].micro_batches[m].sequences.push_back(sequences[s]);
    }
  }
  return buckets;
}

// A stream mode's sequences of `docs` in order: cut (megatron) or whole (megatron_varlen).
std::vector<PackedSequence> stream_sequences(TrainingMode mode, const std::vector<PlanDoc>& docs, uint32_t seq_len) {
  return mode == TrainingMode::megatron_varlen ? pack_whole(docs, seq_len) : pack_concatenated(docs, seq_len);
}

// One step of documents, all its sequences dealt (colocated_tokens; a stream mode's one step).
std::vector<BucketPlan> place_sequences(TrainingMode mode, const std::vector<PlanDoc>& docs,
                                        const PackOptions& options) {
  const std::vector<PackedSequence> sequences = stream_sequences(mode, docs, options.seq_len);
  return deal_sequences(sequences, 0, sequences.size(), options);
}

std::vector<std::vector<BucketPlan>> place_stream(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                                  const PackOptions& options, const CostModel& cost) {
  std::vector<PlanDoc> stream;
  for (const std::vector<PlanDoc>& step : steps) stream.insert(stream.end(), step.begin(), step.end());
  const std::vector<PackedSequence> sequences = stream_sequences(mode, stream, options.seq_len);
  const size_t per_step = stream_sequences_per_step(sequences.size(), steps.size(), options.dp);
  const FixedById fixed_of = fixed_by_id(stream);
  std::vector<std::vector<BucketPlan>> out;
  for (size_t begin = 0; begin < sequences.size(); begin += per_step) {
    out.push_back(deal_sequences(sequences, begin, std::min(sequences.size(), begin + per_step), options));
    fill_costs(out.back(), fixed_of, options, cost);
  }
  return out;
}

}  // namespace

const char* training_mode_name(TrainingMode mode) {
  switch (mode) {
    case TrainingMode::colocated_samples: return "colocated_samples";
    case TrainingMode::colocated_tokens: return "colocated_tokens";
    case TrainingMode::megatron: return "megatron";
    case TrainingMode::megatron_varlen: return "megatron_varlen";
    case TrainingMode::msd_tokens: return "msd_tokens";
    case TrainingMode::msd_greedy: return "msd_greedy";
    case TrainingMode::msd_kk: return "msd_kk";
  }
  return "?";
}

TrainingMode parse_training_mode(const std::string& name, const std::string& balance, const std::string& what,
                                 bool stream) {
  for (TrainingMode mode : kEvaluationModes) {
    if (name != training_mode_name(mode)) continue;
    if (is_stream_mode(mode) && !stream)
      throw ConfigError(str(what, ": '", name, "' places a whole run's token stream: it is a baseline of the "
                            "evaluations (msd-plan simulate --compare, msd-bench sweep, tools/bench-trainer.sh), "
                            "not a mode a job runs"));
    return mode;
  }
  if (name == "colocated" || name == "disaggregated")
    return training_mode(*find_option_value<JobMode>(name), parse_balance_method(balance, "job.balance"));
  throw ConfigError(str(what, ": '", name, "' is not a mode (colocated_samples, colocated_tokens, ",
                        stream ? "megatron, megatron_varlen, " : "",
                        "msd_tokens, msd_greedy, msd_kk, or the aliases colocated and disaggregated)"));
}

TrainingMode training_mode(JobMode mode, BalanceMethod balance) {
  switch (mode) {
    case JobMode::colocated:
    case JobMode::colocated_samples: return TrainingMode::colocated_samples;
    case JobMode::colocated_tokens: return TrainingMode::colocated_tokens;
    case JobMode::msd_tokens: return TrainingMode::msd_tokens;
    case JobMode::msd_greedy: return TrainingMode::msd_greedy;
    case JobMode::msd_kk: return TrainingMode::msd_kk;
    case JobMode::disaggregated: break;
  }
  switch (balance) {
    case BalanceMethod::tokens: return TrainingMode::msd_tokens;
    case BalanceMethod::greedy: return TrainingMode::msd_greedy;
    case BalanceMethod::karmarkar_karp: return TrainingMode::msd_kk;
  }
  return TrainingMode::msd_greedy;
}

TrainingMode training_mode(const JobConfig& job) { return training_mode(job.mode, job.balance); }

bool is_baseline(TrainingMode mode) {
  return mode == TrainingMode::colocated_samples || mode == TrainingMode::colocated_tokens || is_stream_mode(mode);
}

bool is_stream_mode(TrainingMode mode) {
  return mode == TrainingMode::megatron || mode == TrainingMode::megatron_varlen;
}

bool varlen_rows(TrainingMode mode, bool varlen) {
  return mode == TrainingMode::megatron_varlen || (varlen && !is_baseline(mode));
}

bool loads_on_trainers(TrainingMode mode) { return mode == TrainingMode::colocated_samples; }

std::vector<uint32_t> arrival_order(uint64_t seed, uint64_t step, uint32_t n) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  uint64_t rng = mix64(seed ^ mix64(step * 0x9e3779b97f4a7c15ULL + 0x5eed));
  for (size_t i = order.size(); i > 1; --i) {
    rng = mix64(rng + 0x9e3779b97f4a7c15ULL);
    std::swap(order[i - 1], order[rng % i]);
  }
  return order;
}

std::vector<uint32_t> sample_share(uint32_t n, uint32_t dp, uint32_t rank) {
  MSD_CHECK_LT(rank, dp);
  std::vector<uint32_t> share;
  for (uint32_t i = rank; i < n; i += dp) share.push_back(i);
  return share;
}

std::vector<PackedSequence> pack_concatenated(const std::vector<PlanDoc>& docs, uint32_t seq_len) {
  std::vector<PackedSequence> out;
  auto room = [&] { return out.empty() ? 0u : seq_len - out.back().used; };
  auto place = [&](uint32_t doc, uint32_t begin, uint32_t length) {
    out.back().pieces.push_back({doc, begin, length});
    out.back().used += length;
  };
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LE(doc.fixed, seq_len);
    if (doc.fixed > 0) {
      // Never cut: a new sequence when it does not fit (the rest of the
      // current one is padding); patches and the text that fits when longer.
      const uint32_t length = std::min(doc.positions, seq_len);
      if (room() < length) out.emplace_back();
      place(doc.id, 0, length);
      continue;
    }
    for (uint32_t begin = 0; begin < doc.positions;) {
      if (room() == 0) out.emplace_back();
      const uint32_t length = std::min(room(), doc.positions - begin);
      place(doc.id, begin, length);
      begin += length;
    }
  }
  return out;
}

std::vector<PackedSequence> pack_whole(const std::vector<PlanDoc>& docs, uint32_t seq_len) {
  std::vector<PackedSequence> out;
  auto place = [&](uint32_t doc, uint32_t begin, uint32_t length) {
    if (out.empty() || seq_len - out.back().used < length) out.emplace_back();
    out.back().pieces.push_back({doc, begin, length});
    out.back().used += length;
  };
  for (const PlanDoc& doc : docs) {
    MSD_CHECK_LE(doc.fixed, seq_len);
    const uint32_t length = doc.fixed > 0 ? std::min(doc.positions, seq_len) : doc.positions;
    uint32_t begin = 0;
    for (; length - begin > seq_len; begin += seq_len) place(doc.id, begin, seq_len);
    place(doc.id, begin, length - begin);
  }
  return out;
}

size_t stream_sequences_per_step(size_t sequences, size_t steps, uint32_t dp) {
  const double per_rank = static_cast<double>(sequences) / (static_cast<double>(std::max<size_t>(steps, 1)) * dp);
  return static_cast<size_t>(std::max(1.0, std::round(per_rank))) * dp;
}

std::vector<std::vector<BucketPlan>> place_run(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                               const PackOptions& options, const CostModel& cost) {
  if (is_stream_mode(mode)) return place_stream(mode, steps, options, cost);
  const bool holds = options.hold.enabled() && !is_baseline(mode);
  const std::vector<std::vector<PlanDoc>> held = holds ? hold_run(steps, options.hold) : std::vector<std::vector<PlanDoc>>{};
  std::vector<std::vector<BucketPlan>> out;
  for (const std::vector<PlanDoc>& step : holds ? held : steps) out.push_back(place_step(mode, step, options, cost));
  return out;
}

std::vector<BucketPlan> place_step(TrainingMode mode, const std::vector<PlanDoc>& docs, const PackOptions& options,
                                   const CostModel& cost) {
  MSD_CHECK_LE(1u, options.dp);
  MSD_CHECK_LE(1u, options.micro_batches);
  std::vector<BucketPlan> buckets;
  PackOptions msd = options;
  switch (mode) {
    case TrainingMode::colocated_samples: buckets = place_samples(docs, options); break;
    case TrainingMode::colocated_tokens:
    case TrainingMode::megatron:
    case TrainingMode::megatron_varlen: buckets = place_sequences(mode, docs, options); break;
    case TrainingMode::msd_tokens: msd.balance = BalanceMethod::tokens; return distribute_and_pack(docs, msd, cost);
    case TrainingMode::msd_greedy: msd.balance = BalanceMethod::greedy; return distribute_and_pack(docs, msd, cost);
    case TrainingMode::msd_kk:
      msd.balance = BalanceMethod::karmarkar_karp;
      return distribute_and_pack(docs, msd, cost);
  }
  fill_costs(buckets, fixed_by_id(docs), options, cost);
  return buckets;
}

uint64_t documents_digest(const std::vector<BucketPlan>& buckets, const std::vector<uint64_t>& key_of_doc) {
  uint64_t digest = 0;
  for (const BucketPlan& bucket : buckets)
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      for (const PackedSequence& seq : mb.sequences)
        for (const Piece& p : seq.pieces)
          if (p.begin == 0) digest += mix64(key_of_doc.at(p.doc) + 0x9e3779b97f4a7c15ULL);
  return digest;
}

}  // namespace msd
