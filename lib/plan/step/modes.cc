#include "plan/step/modes.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "common/digest.h"
#include "common/error.h"
#include "plan/step/baseline.h"
#include "plan/step/compared_steps.h"

namespace msd {
namespace {

// Positions and costs of each micro-batch and bucket, as pack_step fills
// them: a row costs row_cost under the mode's attention, plus its padding in
// fixed rows (variable-length rows compute none).
using FixedById = std::unordered_map<uint32_t, uint32_t>;  // a document's `fixed`, by id

FixedById fixed_by_id(const std::vector<PlanDoc>& docs) {
  FixedById fixed_of;
  for (const PlanDoc& doc : docs) fixed_of[doc.id] = doc.fixed;
  return fixed_of;
}

void fill_costs(std::vector<BucketPlan>& buckets, const FixedById& fixed_of, const PackOptions& options,
                const CostModel& cost, TrainingMode mode) {
  const bool varlen = varlen_rows(mode, options.varlen);
  const RowAttention attention = row_attention(mode, varlen);
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
        for (const Piece& p : seq.pieces) {
          const uint32_t fixed = fixed_of.at(p.doc);
          lengths.push_back(p.length);
          patches.push_back(p.begin < fixed ? std::min(fixed - p.begin, p.length) : 0);
        }
        const uint64_t row = row_positions(seq, options.seq_len, varlen, options.cp);
        mb.positions += seq.used;
        mb.cost += row_cost(cost, lengths, patches, static_cast<uint32_t>(row), options.cp, attention);
        if (!varlen) mb.cost += cost.padding(options.seq_len - seq.used);
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

// One step of documents, all its sequences dealt (colocated_tokens).
std::vector<BucketPlan> place_sequences(const std::vector<PlanDoc>& docs, const PackOptions& options) {
  const std::vector<PackedSequence> sequences = pack_concatenated(docs, options.seq_len);
  return deal_sequences(sequences, 0, sequences.size(), options);
}

// The stream modes: GPTDataset's samples of the run's stream, dealt by the sampler.
std::vector<std::vector<BucketPlan>> place_stream(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                                  const PackOptions& options, const CostModel& cost,
                                                  const StreamOptions& stream) {
  std::vector<PlanDoc> run;
  uint64_t positions = 0;
  for (const std::vector<PlanDoc>& step : steps)
    for (const PlanDoc& doc : step) {
      run.push_back(doc);
      positions += doc.positions;
    }
  std::vector<PlanDoc> ordered;
  for (uint32_t i : gpt_document_order(stream.seed, checked_cast<uint32_t>(run.size()))) ordered.push_back(run[i]);
  const std::vector<PackedSequence> samples = gpt_samples(ordered, options.seq_len);
  const StreamOptions batch = stream.micro_batch_size > 0 && stream.micro_batches > 0
                                  ? stream
                                  : megatron_batch(positions, steps.size(), options, stream.seed);
  std::vector<std::vector<BucketPlan>> out =
      deal_gpt_samples(samples, gpt_sample_order(stream.seed, checked_cast<uint32_t>(samples.size())),
                       batch.micro_batch_size, batch.micro_batches, options.dp);
  const FixedById fixed_of = fixed_by_id(run);
  for (std::vector<BucketPlan>& step : out) fill_costs(step, fixed_of, options, cost, mode);
  return out;
}

}  // namespace

TrainingMode parse_training_mode(const std::string& name, const std::string& balance, const std::string& what,
                                 bool evaluation) {
  if (name == kDisaggregated) return msd_mode(parse_balance_method(balance, "job.balance"));
  if (const auto mode = find_option_value<TrainingMode>(name)) {  // a mode's name, or the alias colocated
    if (!evaluation && !is_job_mode(*mode)) throw ConfigError(str(what, ": '", name, "' ", kBaselineOnly));
    return *mode;
  }
  throw ConfigError(str(what, ": '", name, "' is not a mode (colocated_samples, colocated_tokens, ",
                        evaluation ? "megatron, megatron_docmask, megatron_dp_balanced, megatron_dynamic_cp, " : "",
                        "msd_tokens, msd_greedy, msd_kk, or the aliases colocated and disaggregated)"));
}

bool is_baseline(TrainingMode mode) { return !mode_balance(mode); }

bool is_stream_mode(TrainingMode mode) {
  return mode == TrainingMode::megatron || mode == TrainingMode::megatron_docmask;
}

bool varlen_rows(TrainingMode mode, bool varlen) {
  return mode == TrainingMode::megatron_dp_balanced || mode == TrainingMode::megatron_dynamic_cp ||
         (varlen && !is_baseline(mode));
}

void check_mode(TrainingMode mode, const PackOptions& options, const std::string& what) {
  if (mode != TrainingMode::megatron_dynamic_cp) return;
  const uint64_t ranks = uint64_t{options.dp} * options.cp;
  if (options.cp <= 1)
    throw ConfigError(str(what, ": megatron_dynamic_cp (Megatron's hybrid context parallelism) needs context "
                          "parallelism: cp > 1"));
  if (options.pp > 1)
    throw ConfigError(str(what, ": megatron_dynamic_cp runs without pipeline parallelism (Megatron's hybrid context "
                          "parallelism asserts pp 1), pp is ", options.pp));
  if ((ranks & (ranks - 1)) != 0)
    throw ConfigError(str(what, ": megatron_dynamic_cp needs dp x cp a power of two (Megatron's hybrid CP groups are "
                          "powers of two), dp x cp is ", ranks));
}

RowAttention row_attention(TrainingMode mode, bool varlen) {
  if (mode == TrainingMode::megatron) return RowAttention::row;
  if (mode == TrainingMode::megatron_docmask || varlen_rows(mode, varlen)) return RowAttention::thd;
  return RowAttention::segments;
}

const char* attention_name(TrainingMode mode) {
  return row_attention(mode, false) == RowAttention::row ? "row" : "document";
}

double row_cost(const CostModel& cost, std::span<const uint32_t> lengths, std::span<const uint32_t> patches,
                uint32_t row_positions, uint32_t cp, RowAttention attention) {
  MSD_CHECK_EQ(lengths.size(), patches.size());
  if (attention == RowAttention::segments || (attention == RowAttention::thd && cp <= 1))
    return cost.zigzag_sequence(lengths, patches, row_positions, cp);
  double total = 0.0;
  if (attention == RowAttention::row) {
    uint32_t used = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      used += lengths[i];
      total += cost.document(lengths[i], patches[i]) - cost.document(lengths[i], 0);  // the vision term
    }
    const uint32_t one[] = {used}, none[] = {0};
    return total + cost.zigzag_sequence(one, none, row_positions, cp);
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    const uint32_t padded = (lengths[i] + 2 * cp - 1) / (2 * cp) * (2 * cp);
    total += cost.zigzag_sequence(lengths.subspan(i, 1), patches.subspan(i, 1), padded, cp);
  }
  return total;
}

StreamOptions megatron_batch(uint64_t positions, size_t steps, const PackOptions& options, uint64_t seed) {
  StreamOptions batch;
  batch.seed = seed;
  const uint64_t samples = positions / options.seq_len, most = std::max<uint64_t>(1, samples / options.dp);
  const double raw = static_cast<double>(samples) / (static_cast<double>(std::max<size_t>(steps, 1)) * options.dp);
  const uint64_t per_rank = std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(raw)), 1, most);
  if (per_rank < options.micro_batches) {
    batch.micro_batch_size = 1;
    batch.micro_batches = static_cast<uint32_t>(per_rank);
    return batch;
  }
  batch.micro_batches = options.micro_batches;
  uint64_t size = std::max<uint64_t>(1, std::llround(static_cast<double>(per_rank) / options.micro_batches));
  while (size > 1 && size * options.micro_batches > most) --size;
  batch.micro_batch_size = static_cast<uint32_t>(size);
  return batch;
}

ComparedRun whole_global_batches(const std::vector<std::vector<PlanDoc>>& steps, const PackOptions& options,
                                 uint64_t seed, const std::string& what) {
  ComparedRun run;
  uint64_t total = 0;
  for (const std::vector<PlanDoc>& step : steps) {
    run.steps.emplace_back();
    for (PlanDoc doc : step) {
      if (doc.fixed > 0) doc.positions = std::min(doc.positions, options.seq_len);
      total += doc.positions;
      run.steps.back().push_back(doc);
    }
  }
  run.stream = megatron_batch(total, steps.size(), options, seed);
  const uint64_t global = uint64_t{run.stream.micro_batch_size} * options.dp * run.stream.micro_batches * options.seq_len;
  run.positions = total / global * global;
  run.dropped_positions = total - run.positions;
  if (run.positions == 0)
    throw ConfigError(str(what, ": the run holds ", total, " positions, less than one global batch of Megatron's (",
                          global / options.seq_len, " samples of ", options.seq_len, "); give more steps"));
  uint64_t kept = 0;
  for (std::vector<PlanDoc>& step : run.steps) {
    std::vector<PlanDoc> left;
    for (PlanDoc& doc : step) {
      if (kept == run.positions) break;
      doc.positions = static_cast<uint32_t>(std::min<uint64_t>(doc.positions, run.positions - kept));
      doc.fixed = std::min(doc.fixed, doc.positions);
      kept += doc.positions;
      left.push_back(doc);
    }
    step = std::move(left);
  }
  while (!run.steps.empty() && run.steps.back().empty()) run.steps.pop_back();
  return run;
}

std::vector<uint32_t> arrival_order(uint64_t seed, uint64_t step, uint32_t n) {
  return seeded_permutation(mix64(seed ^ mix64(step * 0x9e3779b97f4a7c15ULL + 0x5eed)), n);
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

uint64_t global_batch_positions(const StreamOptions& stream, const PackOptions& options) {
  return uint64_t{stream.micro_batch_size} * options.dp * stream.micro_batches * options.seq_len;
}

std::vector<std::vector<BucketPlan>> place_run(TrainingMode mode, const std::vector<std::vector<PlanDoc>>& steps,
                                               const PackOptions& options, const CostModel& cost,
                                               const StreamOptions& stream, HoldStats* held) {
  if (is_stream_mode(mode)) return place_stream(mode, steps, options, cost, stream);
  const bool holds = options.hold.enabled() && !is_baseline(mode);
  std::vector<std::vector<BucketPlan>> out;
  if (const uint64_t global = global_batch_positions(stream, options); global > 0) {
    const ComparedSteps run = compared_steps(steps, global, holds ? options.hold : HoldOptions{});
    for (const std::vector<PlanDoc>& step : run.steps) {
      out.push_back(place_step(mode, step, options, cost));
      restore_pieces(out.back(), run.origins);
    }
    if (held) *held = run.hold;
    return out;
  }
  HoldStats stats;
  const std::vector<std::vector<PlanDoc>> delivered = holds ? hold_run(steps, options.hold, &stats) : std::vector<std::vector<PlanDoc>>{};
  for (const std::vector<PlanDoc>& step : holds ? delivered : steps) out.push_back(place_step(mode, step, options, cost));
  if (held) *held = stats;
  return out;
}

std::vector<CpGroup> place_dynamic_cp(const std::vector<PlanDoc>& docs, const PackOptions& options,
                                      const std::string& what) {
  check_mode(TrainingMode::megatron_dynamic_cp, options, what);
  return dynamic_cp_step(docs, options.seq_len, options.dp, options.cp);
}

std::vector<BucketPlan> place_step(TrainingMode mode, const std::vector<PlanDoc>& docs, const PackOptions& options,
                                   const CostModel& cost) {
  MSD_CHECK_LE(1u, options.dp);
  MSD_CHECK_LE(1u, options.micro_batches);
  MSD_CHECK(!is_stream_mode(mode) && mode != TrainingMode::megatron_dynamic_cp);  // place_run, place_dynamic_cp
  std::vector<BucketPlan> buckets;
  PackOptions msd = options;
  switch (mode) {
    case TrainingMode::colocated_samples: buckets = place_samples(docs, options); break;
    case TrainingMode::colocated_tokens: buckets = place_sequences(docs, options); break;
    case TrainingMode::megatron_dp_balanced: buckets = dp_balanced_step(docs, options.seq_len, options.dp); break;
    case TrainingMode::msd_tokens:
    case TrainingMode::msd_greedy:
    case TrainingMode::msd_kk: msd.balance = *mode_balance(mode); return distribute_and_pack(docs, msd, cost);
    case TrainingMode::megatron:
    case TrainingMode::megatron_docmask:
    case TrainingMode::megatron_dynamic_cp: break;
  }
  fill_costs(buckets, fixed_by_id(docs), options, cost, mode);
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
