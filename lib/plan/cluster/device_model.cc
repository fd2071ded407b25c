#include "plan/cluster/device_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "common/error.h"

namespace msd {
namespace {

// FlashAttention-3 on H100 SXM5, BF16, head dim 128, batch x seqlen = 16k
// tokens (Shah et al. 2024, arXiv:2407.08608, Figures 5 and 6), TFLOP/s by
// sequence length. docs/device-model.md "Attention" cites them.
constexpr std::array<double, 6> kAttentionLengths = {512, 1024, 2048, 4096, 8192, 16384};
constexpr std::array<double, 6> kForwardCausal = {292, 423, 521, 579, 602, 616};
constexpr std::array<double, 6> kForwardFull = {467, 565, 625, 638, 646, 648};
constexpr std::array<double, 6> kBackwardFull = {316, 424, 501, 542, 559, 561};
// FlashAttention-2 in the same figures (same GPU, head dim, tokens).
constexpr std::array<double, 6> kForwardCausal2 = {191, 260, 298, 319, 333, 335};
constexpr std::array<double, 6> kForwardFull2 = {309, 350, 362, 368, 370, 370};
constexpr std::array<double, 6> kBackwardFull2 = {214, 260, 291, 310, 318, 322};

// Elementwise (norm, rotary, activation, residual, dropout-free) traffic per
// position and layer, forward + backward, in units of hidden * bytes: the 34
// s*b*h bytes of stored activations per layer (Korthikanti et al. 2022, eq. 1
// without attention dropout) written forward, read and matched by as many
// gradient bytes backward.
constexpr double kElementwiseBytesPerHidden = 3 * 34.0;
constexpr double kGradientBytes = 4.0;  // fp32 main gradients (Megatron's default)
constexpr double kActivationBytes = 2.0;  // bf16

// Throughput at segment length 2^x on `table`: linear in log2(length)
// between published points, flat beyond the last, and below the first
// extrapolated with the slope between the first two (short segments run far
// below peak; there is no published point under 512). kAttentionLengths are
// 2^9, 2^10, ...: point i at x = 9 + i.
double table_tflops(const std::array<double, 6>& table, double x) {
  constexpr double x0 = 9.0;  // log2(kAttentionLengths[0])
  static_assert(kAttentionLengths[0] == 512 && kAttentionLengths[5] == 16384);
  if (x <= x0) return table[0] * std::pow(table[1] / table[0], x - x0);
  const double above = x - x0;  // exact: within a factor 2 of x0 wherever it is used
  if (above > static_cast<double>(table.size() - 1)) return table.back();
  const size_t i = static_cast<size_t>(std::ceil(above));  // x in (point i - 1, point i]
  const double t = above - static_cast<double>(i - 1);
  return table[i - 1] + t * (table[i] - table[i - 1]);
}

// Seconds of attention (forward + backward) for `pairs` query-key pairs of
// one layer's heads, in a segment whose kernel tiles run at `length`'s
// efficiency. FlashAttention's own count: forward 4 * pairs * heads * d,
// backward 2.5 times that. The causal backward is not published; it takes
// the forward's causal/full ratio.
double attention_seconds(const ModelSpec& spec, const DeviceSpec& device, double pairs, double length, bool causal) {
  if (pairs <= 0) return 0.0;
  const double flops = 4.0 * pairs * spec.heads * spec.head_dim();
  const double scale = device.peak_flops / 989.4e12;  // the tables are an H100's
  const bool fa2 = device.flash_attention == 2;
  const double x = std::log2(std::max(length, 1.0));
  const double full_fwd = table_tflops(fa2 ? kForwardFull2 : kForwardFull, x);
  const double fwd = causal ? table_tflops(fa2 ? kForwardCausal2 : kForwardCausal, x) : full_fwd;
  const double bwd = table_tflops(fa2 ? kBackwardFull2 : kBackwardFull, x) * (fwd / full_fwd);
  return (flops / (fwd * 1e12) + 2.5 * flops / (bwd * 1e12)) / scale;
}

// Query-key pairs of positions [x, y) of a segment of `length`: causal, j + 1
// keys at position j; full, `length` keys each.
double pairs_of(uint64_t x, uint64_t y, uint64_t length, bool causal) {
  const double dx = static_cast<double>(x), dy = static_cast<double>(y);
  return causal ? (dy * (dy + 1) - dx * (dx + 1)) / 2 : (dy - dx) * static_cast<double>(length);
}

// The seconds of attention each CP rank spends on `segments` of a row of
// `total` positions (added to `per_rank`): rank r holds chunks r and
// 2cp-1-r of the row.
void add_row_attention(const DeviceModel& model, std::span<const uint32_t> segments, uint64_t total, uint32_t cp,
                       std::vector<double>& per_rank) {
  const uint64_t chunk = total / (2 * cp);
  const ModelSpec& spec = model.model;
  for (uint32_t r = 0; r < cp; ++r)
    for (const uint64_t k : {uint64_t{r}, uint64_t{2 * cp - 1 - r}}) {
      if (cp == 1 && k == 1) break;  // one chunk: the whole sequence
      const uint64_t lo_chunk = cp == 1 ? 0 : k * chunk, hi_chunk = cp == 1 ? total : (k + 1) * chunk;
      uint64_t offset = 0;
      for (const uint32_t length : segments) {
        const uint64_t lo = std::max(offset, lo_chunk), hi = std::min(offset + length, hi_chunk);
        if (lo < hi) {
          const double tile = cp == 1 ? length : std::min<double>(length, static_cast<double>(chunk));
          per_rank[r] += attention_seconds(spec, model.device, pairs_of(lo - offset, hi - offset, length, spec.causal),
                                           tile, spec.causal);
        }
        offset += length;
      }
    }
}

// The seconds of attention each CP rank spends on one sequence (added to
// `per_rank`), as its RowAttention lays it out.
void add_attention(const DeviceModel& model, const SequenceShape& sequence, uint32_t cp,
                   std::vector<double>& per_rank) {
  const uint64_t total = sequence.positions();
  if (sequence.attention == RowAttention::row) {
    const uint32_t used = static_cast<uint32_t>(total - sequence.padding);
    add_row_attention(model, std::span<const uint32_t>(&used, 1), total, cp, per_rank);
    return;
  }
  if (sequence.attention == RowAttention::segments || cp == 1) {
    add_row_attention(model, sequence.segments, total, cp, per_rank);
    return;
  }
  // THD: each segment cut into 2cp chunks of its own, rank r holding r and 2cp-1-r.
  const ModelSpec& spec = model.model;
  for (const uint32_t length : sequence.segments) {
    auto edge = [&](uint64_t k) { return k * length / (2 * cp); };
    const double tile = std::max(1.0, static_cast<double>(length) / (2 * cp));
    for (uint32_t r = 0; r < cp; ++r)
      for (const uint64_t k : {uint64_t{r}, uint64_t{2 * cp - 1 - r}})
        if (edge(k) < edge(k + 1))
          per_rank[r] += attention_seconds(spec, model.device, pairs_of(edge(k), edge(k + 1), length, spec.causal),
                                           tile, spec.causal);
  }
}

bool inside_node(const DeviceSpec& device, uint64_t span) { return span <= device.gpus_per_node; }

double link(const DeviceSpec& device, uint64_t span) {
  return inside_node(device, span) ? device.nvlink_bytes_per_s : device.ib_bytes_per_s;
}

// Vision tower seconds for the micro-batch's image patches, whole (not per
// rank): GEMMs over every patch and full attention within each image.
double vision_seconds(const DeviceModel& model, const MicroBatchShape& micro_batch) {
  const ModelSpec& v = model.vision;
  if (v.layers == 0) return 0.0;
  double patches = 0.0, attention = 0.0;
  for (const SequenceShape& sequence : micro_batch)
    for (const uint32_t p : sequence.patches) {
      if (p == 0) continue;
      patches += p;
      attention += attention_seconds(v, model.device, pairs_of(0, p, p, false), p, false);
    }
  const DeviceSpec& d = model.device;
  const double gemm = 6.0 * patches * v.layers * v.params_per_layer() / (d.peak_flops * d.gemm_efficiency);
  const double elementwise = patches * v.layers * kElementwiseBytesPerHidden * v.hidden / d.hbm_bytes_per_s;
  return gemm + attention * v.layers + elementwise;
}

}  // namespace

uint64_t SequenceShape::positions() const {
  return std::accumulate(segments.begin(), segments.end(), uint64_t{padding});
}

DeviceSpec device_spec_preset(const std::string& name, const std::string& what) {
  DeviceSpec d;  // the H100 SXM5 defaults
  if (name == "h100") return d;
  if (name == "h200") {
    d.name = name;
    d.hbm_bytes_per_s = 4.8e12;
    return d;
  }
  throw ConfigError(str(what, ": '", name, "' is not a device; give h100 or h200"));
}

DeviceModel make_device_model(const CostOptions& model, const std::string& device) {
  DeviceModel m;
  if (!model.preset.empty()) {
    m.model = model_spec_preset(model.preset);
  } else {
    const uint32_t h = model.hidden;
    m.model = {"custom", model.layers, h, 4 * h, false, std::max(1u, h / 128), std::max(1u, h / 128), 0, true};
  }
  if (model.vision_layers > 0 && m.model.name != "vit-l") {
    const uint32_t h = model.vision_hidden;
    m.vision = {"vision", model.vision_layers, h, 4 * h, false, std::max(1u, h / 64), std::max(1u, h / 64), 0, false};
  }
  m.device = device_spec_preset(device);
  return m;
}

double micro_batch_seconds(const DeviceModel& model, const Parallel& parallel, const MicroBatchShape& micro_batch) {
  if (micro_batch.empty()) return 0.0;
  const ModelSpec& spec = model.model;
  const DeviceSpec& d = model.device;
  const uint32_t cp = std::max(1u, parallel.cp), tp = std::max(1u, parallel.tp);
  const double stage = 1.0 / std::max(1u, parallel.pp);
  std::vector<double> attention(cp, 0.0);
  double positions = 0.0;
  for (const SequenceShape& sequence : micro_batch) {
    MSD_CHECK(cp == 1 || sequence.positions() % (2 * cp) == 0);
    positions += static_cast<double>(sequence.positions());
    add_attention(model, sequence, cp, attention);
  }
  const double local = positions / cp;  // positions this rank holds
  const double gemm_flops = 6.0 * local * (spec.layers * spec.params_per_layer() + static_cast<double>(spec.vocab) * spec.hidden);
  const double gemm = gemm_flops / (d.peak_flops * d.gemm_efficiency) / tp;
  const double attn = *std::max_element(attention.begin(), attention.end()) * spec.layers / tp;
  const double elementwise = local * spec.layers * kElementwiseBytesPerHidden * spec.hidden / tp / d.hbm_bytes_per_s;
  // TP with sequence parallelism: per layer 2 all-gathers and 2
  // reduce-scatters forward, as many backward, each moving (tp-1)/tp of the
  // layer's activations; exposed (not overlapped).
  const double activation_bytes = local * spec.hidden * kActivationBytes;
  const double tp_comm = tp == 1 ? 0.0 : 8.0 * spec.layers * (tp - 1.0) / tp * activation_bytes / link(d, tp);
  // CP ring: cp-1 steps passing the local K and V forward, K, V and their
  // gradients backward; overlapped with the attention it feeds.
  const double kv_bytes = 2.0 * local * spec.kv_heads * spec.head_dim() * kActivationBytes / tp;
  const double cp_comm = cp == 1 ? 0.0 : 3.0 * spec.layers * (cp - 1.0) * kv_bytes / link(d, uint64_t{tp} * cp);
  const double cp_exposed = std::max(0.0, cp_comm - attn);
  const double vision = vision_seconds(model, micro_batch) / (static_cast<double>(cp) * tp);
  return stage * (gemm + attn + elementwise + tp_comm + cp_exposed + vision) + d.micro_batch_overhead_s;
}

double one_f_one_b_seconds(std::span<const double> seconds, std::span<const double> hop_seconds, uint32_t stages) {
  MSD_CHECK_EQ(seconds.size(), hop_seconds.size());
  const size_t m = seconds.size(), p = std::max(1u, stages);
  if (m == 0) return 0.0;
  // ops[s]: stage s's order, +j+1 a forward of micro-batch j, -(j+1) a backward.
  std::vector<std::vector<int64_t>> ops(p);
  for (size_t s = 0; s < p; ++s) {
    const size_t warm = std::min(p - s - 1, m);
    for (size_t j = 0; j < warm; ++j) ops[s].push_back(static_cast<int64_t>(j) + 1);
    for (size_t k = 0; k + warm < m; ++k) {
      ops[s].push_back(static_cast<int64_t>(k + warm) + 1);
      ops[s].push_back(-static_cast<int64_t>(k) - 1);
    }
    for (size_t j = m - warm; j < m; ++j) ops[s].push_back(-static_cast<int64_t>(j) - 1);
  }
  const double nan = std::nan("");
  std::vector<std::vector<double>> fwd_end(p, std::vector<double>(m, nan)), bwd_end = fwd_end;
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  size_t done = 0;
  while (done < p * 2 * m) {
    const size_t before = done;
    for (size_t s = 0; s < p; ++s)
      while (next[s] < ops[s].size()) {
        const int64_t op = ops[s][next[s]];
        const size_t j = static_cast<size_t>(std::abs(op) - 1);
        const double dep = op > 0 ? (s == 0 ? 0.0 : fwd_end[s - 1][j] + hop_seconds[j])
                                  : (s + 1 == p ? fwd_end[s][j] : bwd_end[s + 1][j] + hop_seconds[j]);
        if (std::isnan(dep)) break;
        const double start = std::max(free_at[s], dep);
        free_at[s] = start + seconds[j] * (op > 0 ? 1.0 / 3 : 2.0 / 3);
        (op > 0 ? fwd_end : bwd_end)[s][j] = free_at[s];
        ++next[s];
        ++done;
      }
    MSD_CHECK_LT(before, done);  // 1F1B never deadlocks
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

double gradient_allreduce_seconds(const DeviceModel& model, const Parallel& parallel) {
  const uint32_t dp = std::max(1u, parallel.dp);
  if (dp == 1) return 0.0;
  const double shards = static_cast<double>(std::max(1u, parallel.pp)) * std::max(1u, parallel.tp);
  const double bytes = kGradientBytes * (model.model.params() + model.vision.params()) / shards;
  const uint64_t span = uint64_t{std::max(1u, parallel.tp)} * std::max(1u, parallel.cp) * dp;
  return 2.0 * (dp - 1.0) / dp * bytes / link(model.device, span);
}

RankTime rank_time(const DeviceModel& model, const Parallel& parallel,
                   const std::vector<MicroBatchShape>& micro_batches) {
  RankTime result;
  const uint32_t pp = std::max(1u, parallel.pp), tp = std::max(1u, parallel.tp), cp = std::max(1u, parallel.cp);
  // Stages are tp * cp * dp ranks apart (the "tp,cp,dp,pp" order).
  const uint64_t span = uint64_t{tp} * cp * std::max(1u, parallel.dp) * pp;
  std::vector<double> hops;
  for (const MicroBatchShape& mb : micro_batches) {
    double local = 0.0;
    for (const SequenceShape& sequence : mb) {
      result.padding += sequence.padding;
      result.positions += static_cast<double>(sequence.positions());
      local += static_cast<double>(sequence.positions()) / cp;
    }
    result.micro_batch_seconds.push_back(micro_batch_seconds(model, parallel, mb));
    hops.push_back(pp == 1 ? 0.0 : local * model.model.hidden * kActivationBytes / tp / link(model.device, span));
  }
  result.seconds = one_f_one_b_seconds(result.micro_batch_seconds, hops, pp);
  const double busy = std::accumulate(result.micro_batch_seconds.begin(), result.micro_batch_seconds.end(), 0.0);
  // Clamped: with pp = 1 busy equals seconds, and rounding may leave -1e-17.
  result.bubble_fraction = result.seconds > 0 ? std::max(0.0, 1.0 - busy / result.seconds) : 0.0;
  return result;
}

StepTime step_time(const DeviceModel& model, const Parallel& parallel,
                   const std::vector<std::vector<MicroBatchShape>>& micro_batches_by_dp_rank) {
  StepTime result;
  Parallel shape = parallel;
  shape.dp = static_cast<uint32_t>(std::max<size_t>(1, micro_batches_by_dp_rank.size()));
  double padding = 0.0, positions = 0.0, bubble = 0.0, mb_max = 0.0, mb_sum = 0.0;
  size_t mb_count = 0;
  for (const auto& micro_batches : micro_batches_by_dp_rank) {
    const RankTime rank = rank_time(model, shape, micro_batches);
    padding += rank.padding;
    positions += rank.positions;
    bubble += rank.bubble_fraction;
    for (const double t : rank.micro_batch_seconds) mb_max = std::max(mb_max, t), mb_sum += t, ++mb_count;
    result.per_dp_rank_seconds.push_back(rank.seconds);
    result.micro_batch_seconds.push_back(rank.micro_batch_seconds);
  }
  const auto& per_rank = result.per_dp_rank_seconds;
  const size_t dp = per_rank.size();
  const double max = dp ? *std::max_element(per_rank.begin(), per_rank.end()) : 0.0;
  const double mean = dp ? std::accumulate(per_rank.begin(), per_rank.end(), 0.0) / dp : 0.0;
  result.allreduce_seconds = gradient_allreduce_seconds(model, shape);
  result.step_seconds = max + result.allreduce_seconds;
  result.bubble_fraction = dp ? bubble / dp : 0.0;
  result.dp_max_over_mean = mean > 0 ? max / mean : 1.0;
  result.microbatch_max_over_mean = mb_sum > 0 ? mb_max / (mb_sum / mb_count) : 1.0;
  result.padding_fraction = positions > 0 ? padding / positions : 0.0;
  return result;
}

MicroBatchShape shape_of(const MicroBatch& micro_batch) {
  MicroBatchShape shape(micro_batch.sequences);
  std::vector<uint32_t> used(micro_batch.sequences, 0);
  for (const DocSpan& doc : micro_batch.docs) {
    MSD_CHECK_LT(doc.sequence, micro_batch.sequences);
    SequenceShape& sequence = shape[doc.sequence];
    sequence.segments.push_back(doc.length);
    sequence.patches.push_back(doc.patches);
    used[doc.sequence] += doc.length;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    MSD_CHECK_LE(used[i], micro_batch.seq_len);
    shape[i].padding = micro_batch.seq_len - used[i];
    if (micro_batch.cp_by_segment) shape[i].attention = RowAttention::thd;
  }
  return shape;
}

MicroBatchShape shape_of(const MicroBatchPlan& plan, uint32_t seq_len, const std::vector<PlanDoc>& docs,
                         bool varlen, RowAttention attention, uint32_t cp) {
  MicroBatchShape shape;
  for (const PackedSequence& packed : plan.sequences) {
    SequenceShape sequence;
    for (const Piece& piece : packed.pieces) {
      MSD_CHECK_LT(piece.doc, docs.size());
      MSD_CHECK_EQ(docs[piece.doc].id, piece.doc);
      const uint32_t fixed = docs[piece.doc].fixed;
      sequence.segments.push_back(piece.length);
      sequence.patches.push_back(piece.begin < fixed ? std::min(fixed - piece.begin, piece.length) : 0);
    }
    const uint64_t row = row_positions(packed, seq_len, varlen, attention == RowAttention::thd ? cp : 1);
    MSD_CHECK_LE(packed.used, row);
    sequence.padding = static_cast<uint32_t>(row - packed.used);
    sequence.attention = attention;
    shape.push_back(std::move(sequence));
  }
  return shape;
}

namespace {

// Ranks 1..n, ties sharing their mean rank.
std::vector<double> ranks_of(std::span<const double> values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (static_cast<double>(i + j) + 2.0) / 2.0;
    i = j + 1;
  }
  return ranks;
}

// Pearson's correlation; 1 when both sides are constant, 0 when one is.
double correlation(std::span<const double> x, std::span<const double> y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  const double tiny = 1e-300;
  if (sxx <= tiny && syy <= tiny) return 1.0;
  if (sxx <= tiny || syy <= tiny) return 0.0;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

CostModelFit cost_model_fit(std::span<const double> predicted, std::span<const double> actual) {
  MSD_CHECK_EQ(predicted.size(), actual.size());
  CostModelFit fit;
  fit.points = predicted.size();
  if (predicted.size() < 2) return fit;
  const std::vector<double> rp = ranks_of(predicted), ra = ranks_of(actual);
  fit.spearman = correlation(rp, ra);
  const double r = correlation(predicted, actual);
  fit.r_squared = r * r;
  return fit;
}

double planner_cost(const CostModel& cost, const MicroBatchShape& micro_batch, uint32_t cp) {
  double total = 0.0;
  std::vector<uint32_t> patches;
  for (const SequenceShape& sequence : micro_batch) {
    patches = sequence.patches;
    patches.resize(sequence.segments.size(), 0);
    total += row_cost(cost, sequence.segments, patches, static_cast<uint32_t>(sequence.positions()), cp,
                      sequence.attention);
    total += cost.padding(sequence.padding);
  }
  return total;
}

SequenceShape cp_sample_shape(uint32_t length, uint32_t patches, uint32_t ranks) {
  const uint64_t align = std::max<uint64_t>(kVarlenAlign, 2 * uint64_t{ranks});
  SequenceShape shape;
  shape.segments = {length};
  shape.patches = {patches};
  shape.padding = static_cast<uint32_t>((length + align - 1) / align * align - length);
  shape.attention = RowAttention::thd;
  return shape;
}

StepTime dynamic_cp_step_time(const DeviceModel& model, const Parallel& parallel,
                              const std::vector<CpGroupShape>& groups) {
  const uint32_t domain = std::max(1u, parallel.dp) * std::max(1u, parallel.cp);
  StepTime result;
  std::vector<double>& finish = result.per_dp_rank_seconds;
  finish.assign(domain, 0.0);
  double padding = 0.0, positions = 0.0, mb_max = 0.0, mb_sum = 0.0;
  size_t mb_count = 0;
  for (const CpGroupShape& group : groups)
    for (const CpTeamShape& team : group) {
      MSD_CHECK_LE(uint64_t{team.first_rank} + team.ranks, domain);
      const auto first = finish.begin() + team.first_rank, last = first + team.ranks;
      double at = *std::max_element(first, last);
      const Parallel on_team{parallel.dp, 1, team.ranks, parallel.tp};
      for (const SequenceShape& sample : team.samples) {
        const double t = micro_batch_seconds(model, on_team, {sample});
        at += t;
        mb_max = std::max(mb_max, t), mb_sum += t, ++mb_count;
        padding += sample.padding;
        positions += static_cast<double>(sample.positions());
      }
      std::fill(first, last, at);
    }
  const double max = *std::max_element(finish.begin(), finish.end());
  const double mean = std::accumulate(finish.begin(), finish.end(), 0.0) / domain;
  result.allreduce_seconds = gradient_allreduce_seconds(model, parallel);
  result.step_seconds = max + result.allreduce_seconds;
  result.dp_max_over_mean = mean > 0 ? max / mean : 1.0;
  result.microbatch_max_over_mean = mb_sum > 0 ? mb_max / (mb_sum / mb_count) : 1.0;
  result.padding_fraction = positions > 0 ? padding / positions : 0.0;
  return result;
}

}  // namespace msd
