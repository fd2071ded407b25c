// The device model on hand-computed cases: padding costs GEMM time,
// attention is quadratic within a segment and linear across segments, 1F1B
// schedules, TP and CP shares, and the cost-model fit.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/error.h"
#include "plan/cluster/device_model.h"

using namespace msd;

namespace {

DeviceModel llama8b() {
  DeviceModel m;
  m.model = model_spec_preset("llama3-8b");
  m.device = device_spec_preset("h100");
  return m;
}

MicroBatchShape padding_only(uint32_t positions) { return {SequenceShape{{}, positions, {}}}; }
MicroBatchShape one_sequence(std::vector<uint32_t> segments, uint32_t padding = 0) {
  return {SequenceShape{std::move(segments), padding, {}}};
}

// Attention's share of a micro-batch: its time less that of padding alone
// over the same positions (GEMMs, elementwise work and overhead are the same).
double attention_of(const DeviceModel& m, const Parallel& p, const MicroBatchShape& shape) {
  uint64_t positions = 0;
  for (const auto& s : shape) positions += s.positions();
  return micro_batch_seconds(m, p, shape) - micro_batch_seconds(m, p, padding_only(static_cast<uint32_t>(positions)));
}

}  // namespace

TEST_CASE("presets carry the published shapes", "[device_model]") {
  const ModelSpec m8 = model_spec_preset("llama3-8b");
  CHECK(m8.params() == Approx(8.03e9).epsilon(0.01));
  CHECK(model_spec_preset("llama3-70b").params() == Approx(70.6e9).epsilon(0.01));
  CHECK(model_spec_preset("vit-l").params() == Approx(302e6).epsilon(0.02));  // no patch embedding
  CHECK(device_spec_preset("h200").hbm_bytes_per_s > device_spec_preset("h100").hbm_bytes_per_s);
  CHECK_THROWS_WITH(model_spec_preset("gpt5"), Catch::Matchers::StartsWith("model.preset: 'gpt5'"));
  CHECK_THROWS_WITH(device_spec_preset("tpu"), Catch::Matchers::StartsWith("device.preset: 'tpu'"));
}

TEST_CASE("a padding-only sequence costs GEMM time", "[device_model]") {
  const DeviceModel m = llama8b();
  const ModelSpec& s = m.model;
  const DeviceSpec& d = m.device;
  const double n = 8192;
  const double gemm = 6.0 * n * (s.layers * s.params_per_layer() + double(s.vocab) * s.hidden) /
                      (d.peak_flops * d.gemm_efficiency);
  const double elementwise = n * s.layers * 102.0 * s.hidden / d.hbm_bytes_per_s;
  CHECK(micro_batch_seconds(m, {}, padding_only(8192)) ==
        Approx(gemm + elementwise + d.micro_batch_overhead_s).epsilon(1e-12));
  // About 65 us of GEMMs per position of an 8B model on an H100 (6 * 7.5e9 FLOPs at 693 TFLOP/s).
  CHECK(gemm / n == Approx(65e-6).epsilon(0.01));
  CHECK(micro_batch_seconds(m, {}, {}) == 0.0);
}

TEST_CASE("attention is quadratic within a segment, linear across segments", "[device_model]") {
  const DeviceModel m = llama8b();
  const Parallel p;
  // At >= 16k the published efficiency is flat: pure L^2.
  const double one = attention_of(m, p, one_sequence({16384}));
  const double twice_as_long = attention_of(m, p, one_sequence({32768}));
  CHECK(twice_as_long / one == Approx(4.0).epsilon(1e-3));
  // Two 16k documents in one 32k sequence: twice one, not four times.
  CHECK(attention_of(m, p, one_sequence({16384, 16384})) == Approx(2 * one).epsilon(1e-9));
  // Fwd causal at 16k: 616 TFLOP/s; bwd 561 * 616/648. FLOPs 4 * pairs * hidden.
  const double pairs = 16384.0 * 16385 / 2;
  const double f = 4.0 * pairs * 4096;
  const double expected = 32 * (f / 616e12 + 2.5 * f / (561e12 * 616 / 648));
  CHECK(one == Approx(expected).epsilon(1e-9));
  // Short segments run below peak: 64 segments of 256 cost more per pair than one of 16k.
  const double short_pairs = 64 * 256.0 * 257 / 2;
  CHECK(attention_of(m, p, one_sequence(std::vector<uint32_t>(64, 256))) / short_pairs > 1.5 * one / pairs);
}

TEST_CASE("1F1B on hand-computed schedules", "[device_model]") {
  // Uniform, free transfers: (m + p - 1) * t.
  const std::vector<double> uniform(8, 3.0), none(8, 0.0), hop(8, 0.5);
  CHECK(one_f_one_b_seconds(uniform, none, 4) == Approx(11 * 3.0));
  CHECK(one_f_one_b_seconds(uniform, none, 1) == Approx(24.0));
  // Transfers of 0.5, two stages, two micro-batches of 3: stage 0 F0 [0,1],
  // F1 [1,2], B0 [5,7], B1 [8,10]; stage 1 F0 [1.5,2.5], B0 [2.5,4.5], F1
  // [4.5,5.5], B1 [5.5,7.5].
  CHECK(one_f_one_b_seconds(std::vector<double>{3, 3}, std::vector<double>{0.5, 0.5}, 2) == Approx(10.0));
  // In the steady state every forward waits on a round trip: more than 2 (p - 1) hops.
  CHECK(one_f_one_b_seconds(uniform, hop, 4) > 11 * 3.0 + 6 * 0.5);
  // Two stages, micro-batches of 3 and 6 (forward a third): stage 0 runs F0
  // [0,1], F1 [1,3], B0 [4,6], B1 [10,14]; stage 1 F0 [1,2], B0 [2,4], F1
  // [4,6], B1 [6,10].
  const std::vector<double> uneven = {3.0, 6.0}, zero = {0.0, 0.0};
  CHECK(one_f_one_b_seconds(uneven, zero, 2) == Approx(14.0));
  CHECK(one_f_one_b_seconds({}, {}, 4) == 0.0);
}

TEST_CASE("step time: bubbles, DP imbalance, all-reduce, padding", "[device_model]") {
  DeviceModel m = llama8b();
  m.device.micro_batch_overhead_s = 0.0;
  const Parallel p{2, 4, 1, 1};
  const MicroBatchShape full = one_sequence({4096});
  const MicroBatchShape half = one_sequence({2048}, 2048);
  const StepTime t = step_time(m, p, {{full, full, full, full}, {half, half, half, half}});
  const double tf = micro_batch_seconds(m, p, full);
  REQUIRE(t.per_dp_rank_seconds.size() == 2);
  const double hop_nv = 4096.0 * 4096 * 2 / 450e9;  // dp 2 x pp 4 = 8 ranks: one node
  const std::vector<double> four(4, tf), hops(4, hop_nv);
  CHECK(t.per_dp_rank_seconds[0] == Approx(one_f_one_b_seconds(four, hops, 4)));
  CHECK(t.per_dp_rank_seconds[0] > 7 * tf);
  CHECK(t.bubble_fraction == Approx(1 - 4 * tf / t.per_dp_rank_seconds[0]).epsilon(0.05));
  CHECK(t.dp_max_over_mean > 1.0);
  CHECK(t.padding_fraction == Approx(2048.0 * 4 / (4096 * 8)));
  // Ring all-reduce of fp32 gradients of a quarter of the model over 2 ranks, inside a node.
  CHECK(t.allreduce_seconds == Approx(2.0 * 0.5 * 4 * m.model.params() / 4 / 450e9));
  CHECK(t.step_seconds == Approx(t.per_dp_rank_seconds[0] + t.allreduce_seconds));
  CHECK(t.microbatch_max_over_mean == Approx(tf / ((tf + micro_batch_seconds(m, p, half)) / 2)));
}

TEST_CASE("TP and CP shares", "[device_model]") {
  DeviceModel m = llama8b();
  m.device.micro_batch_overhead_s = 0.0;
  const MicroBatchShape seq = one_sequence({65536});
  const double alone = micro_batch_seconds(m, {}, seq);
  // TP 2: compute halves, plus 8 collectives per layer of half the activations at NVLink speed.
  const double tp_comm = 8.0 * 32 * 0.5 * 65536.0 * 4096 * 2 / 450e9;
  CHECK(micro_batch_seconds(m, {1, 1, 1, 2}, seq) == Approx(alone / 2 + tp_comm).epsilon(1e-9));
  // CP 2 on one document filling the sequence: zigzag splits it evenly (chunks
  // of 16k, flat efficiency), and the KV ring hides behind attention.
  CHECK(micro_batch_seconds(m, {1, 1, 2, 1}, seq) == Approx(alone / 2).epsilon(1e-3));
  // Short documents at the start of the sequence and a long one at its end:
  // the rank holding the end does most of the attention.
  const MicroBatchShape skewed = one_sequence({8192, 8192, 16384, 32768});
  const double cp1 = attention_of(m, {}, skewed);
  const double cp2 = attention_of(m, {1, 1, 2, 1}, skewed);
  CHECK(cp2 > 0.5 * cp1 * 1.05);
  CHECK(cp2 < cp1);
}

TEST_CASE("row attention is one causal span over the row; THD splits each segment over CP ranks", "[device_model]") {
  const DeviceModel m = llama8b();
  const Parallel p;
  // Megatron's default rows: two 16k documents in a 32k row attend as one 32k span.
  MicroBatchShape row = one_sequence({16384, 16384});
  row[0].attention = RowAttention::row;
  CHECK(attention_of(m, p, row) == Approx(attention_of(m, p, one_sequence({32768}))).epsilon(1e-9));
  MicroBatchShape thd = one_sequence({16384, 16384});
  thd[0].attention = RowAttention::thd;
  CHECK(attention_of(m, p, thd) == Approx(attention_of(m, p, one_sequence({16384, 16384}))).epsilon(1e-9));
  // Under CP 2 the row split puts the short documents on one chunk and the
  // long one's end on the other; THD splits every segment evenly: less
  // attention on the busiest rank.
  MicroBatchShape skewed = one_sequence({8192, 8192, 16384, 32768});
  const double split_row = attention_of(m, {1, 1, 2, 1}, skewed);
  skewed[0].attention = RowAttention::thd;
  const double split_segments = attention_of(m, {1, 1, 2, 1}, skewed);
  CHECK(split_segments < split_row);
  CHECK(split_segments > 0.5 * attention_of(m, {}, skewed) * 0.99);
}

TEST_CASE("a dynamic-CP step: teams wait for their ranks, samples run one after another", "[device_model]") {
  DeviceModel m = llama8b();
  const Parallel p{2, 1, 2, 1};  // a domain of 4 ranks
  const SequenceShape big = cp_sample_shape(65536, 0, 2), small = cp_sample_shape(1000, 0, 1);
  CHECK(small.positions() == 1024);  // rounded up to kVarlenAlign
  CHECK(cp_sample_shape(100, 0, 64).positions() == 128);  // and to 2 x ranks
  const double t_big = micro_batch_seconds(m, {2, 1, 2, 1}, {big});
  const double t_small = micro_batch_seconds(m, {2, 1, 1, 1}, {small});
  // Group 0: the big sample on ranks 0-1, two small ones on rank 2, one on 3.
  // Group 1: one small sample on ranks 1-2 (CP 2) waits for rank 1's big one.
  const std::vector<CpGroupShape> groups = {
      {{0, 2, {big}}, {2, 1, {small, small}}, {3, 1, {small}}},
      {{0, 1, {small}}, {1, 2, {cp_sample_shape(1000, 0, 2)}}, {3, 1, {small}}}};
  const StepTime t = dynamic_cp_step_time(m, p, groups);
  const double t_small2 = micro_batch_seconds(m, {2, 1, 2, 1}, {cp_sample_shape(1000, 0, 2)});
  REQUIRE(t.per_dp_rank_seconds.size() == 4);
  CHECK(t.per_dp_rank_seconds[0] == Approx(t_big + t_small));
  CHECK(t.per_dp_rank_seconds[1] == Approx(t_big + t_small2));
  CHECK(t.per_dp_rank_seconds[2] == Approx(t_big + t_small2));
  CHECK(t.per_dp_rank_seconds[3] == Approx(2 * t_small));
  CHECK(t.step_seconds == Approx(t_big + std::max(t_small, t_small2) + gradient_allreduce_seconds(m, p)));
  CHECK(t.allreduce_seconds == Approx(gradient_allreduce_seconds(m, p)));
}

TEST_CASE("shapes from the planner's and the runtime's micro-batches", "[device_model]") {
  MicroBatch mb;
  mb.sequences = 2;
  mb.seq_len = 100;
  mb.docs = {DocSpan{0, 0, 0, 60, 0, 0, 10}, DocSpan{0, 1, 0, 30, 0, 60, 0}, DocSpan{0, 2, 0, 100, 1, 0, 0}};
  const MicroBatchShape shape = shape_of(mb);
  REQUIRE(shape.size() == 2);
  CHECK(shape[0].segments == std::vector<uint32_t>{60, 30});
  CHECK(shape[0].patches == std::vector<uint32_t>{10, 0});
  CHECK(shape[0].padding == 10);
  CHECK(shape[1].padding == 0);

  MicroBatchPlan plan;
  plan.sequences = {PackedSequence{{Piece{1, 0, 40}, Piece{0, 96, 4}}, 44}};
  const std::vector<PlanDoc> docs = {{0, 100, 0, 0.0}, {1, 40, 16, 0.0}};
  const MicroBatchShape planned = shape_of(plan, 64, docs);
  REQUIRE(planned.size() == 1);
  CHECK(planned[0].segments == std::vector<uint32_t>{40, 4});
  CHECK(planned[0].patches == std::vector<uint32_t>{16, 0});
  CHECK(planned[0].padding == 20);
  // A variable-length row pads only to kVarlenAlign, whatever seq_len is.
  CHECK(shape_of(plan, 64, docs, true)[0].padding == kVarlenAlign - 44);
  plan.sequences[0].pieces.push_back(Piece{0, 0, 96});
  plan.sequences[0].used = 140;  // longer than seq_len: a row of a micro-batch's pieces
  CHECK(shape_of(plan, 64, docs, true)[0].positions() == 3 * kVarlenAlign);
}

TEST_CASE("cost_model_fit: Spearman and R^2", "[device_model]") {
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const std::vector<double> linear = {3, 5, 7, 9, 11}, reversed = {5, 4, 3, 2, 1}, monotone = {1, 4, 9, 16, 125};
  CHECK(cost_model_fit(x, linear).spearman == Approx(1.0));
  CHECK(cost_model_fit(x, linear).r_squared == Approx(1.0));
  CHECK(cost_model_fit(x, reversed).spearman == Approx(-1.0));
  CHECK(cost_model_fit(x, reversed).r_squared == Approx(1.0));
  CHECK(cost_model_fit(x, monotone).spearman == Approx(1.0));
  CHECK(cost_model_fit(x, monotone).r_squared < 0.9);
  const std::vector<double> ties = {1, 1, 2, 2, 3};
  CHECK(cost_model_fit(ties, x).spearman == Approx(0.9486832981).epsilon(1e-6));
  CHECK(cost_model_fit(std::vector<double>{1.0}, std::vector<double>{2.0}).points == 1);
}
