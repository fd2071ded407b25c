// Calibrating the planner's cost to timed micro-batches (plan/cluster/calibrate.h),
// and the 1F1B order of a bucket's micro-batches (order_for_pipeline).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "common/error.h"
#include "plan/cluster/calibrate.h"
#include "plan/cluster/simulate_compare.h"

using namespace msd;

namespace {

CostModel base_cost() { return CostModel::from(CostOptions{4096, 32, 1024, 24, 0.0, 0.0, ""}); }

// Times a made-up device whose seconds are exactly c0 + c2 * (a*lin + quad + vs*vis).
std::vector<double> exact_times(const std::vector<CostFeatures>& f, double a, double vs, double c0, double c2) {
  std::vector<double> seconds;
  for (const CostFeatures& x : f) seconds.push_back(c0 + c2 * (a * x.linear + x.quadratic + vs * x.vision));
  return seconds;
}

std::vector<CostFeatures> probe_features(uint32_t seq_len, uint32_t cp, uint32_t count) {
  std::vector<CostFeatures> features;
  for (const MicroBatchShape& shape : probe_micro_batches(seq_len, cp, count, 7))
    features.push_back(cost_features(base_cost(), shape, cp));
  return features;
}

}  // namespace

TEST_CASE("cost features split the planner's cost by its constants", "[calibrate]") {
  CostModel cost = base_cost();
  const MicroBatchShape shape{SequenceShape{{1000, 300}, 700, {200, 0}}, SequenceShape{{2048}, 0, {0}}};
  const CostFeatures f = cost_features(cost, shape, 1);
  CHECK(f.linear == Approx(1000 + 300 + 700 + 2048));  // padding costs the linear term
  CHECK(f.quadratic == Approx(1000.0 * 1000 + 300.0 * 300 + 2048.0 * 2048));
  CHECK(f.vision == Approx(cost.vision_a * 200 + 200.0 * 200));
  for (const double a : {1.0, 5000.0, 70000.0}) {
    cost.a = a;
    cost.vision_scale = 0.3;
    CHECK(planner_cost(cost, shape, 1) == Approx(a * f.linear + f.quadratic + 0.3 * f.vision));
  }
}

TEST_CASE("the fit recovers a and vision_scale from exact times", "[calibrate]") {
  const std::vector<CostFeatures> f = probe_features(16384, 1, 64);
  const Calibration c = fit_cost_model(f, exact_times(f, 41234.0, 0.37, 2e-3, 3e-12));
  CHECK(c.a == Approx(41234.0).epsilon(1e-6));
  CHECK(c.vision_scale == Approx(0.37).epsilon(1e-6));
  CHECK(c.overhead_seconds == Approx(2e-3).epsilon(1e-6));
  CHECK(c.seconds_per_unit == Approx(3e-12).epsilon(1e-6));
  CHECK(c.r_squared == Approx(1.0));
  CHECK(c.max_relative_error < 1e-9);
  CHECK(c.probes == 64);
}

TEST_CASE("noise and a device patches cost nothing on", "[calibrate]") {
  const std::vector<CostFeatures> f = probe_features(8192, 1, 256);
  std::vector<double> t = exact_times(f, 20000.0, 0.0, 1e-3, 1e-11);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 0.01);
  for (double& x : t) x *= 1.0 + noise(rng);
  const Calibration c = fit_cost_model(f, t);
  CHECK(c.a == Approx(20000.0).epsilon(0.05));
  CHECK(c.vision_scale >= 0.0);  // a negative fit is dropped, never kept
  CHECK(c.vision_scale < 0.05);
  CHECK(c.r_squared > 0.99);
  CHECK(c.max_relative_error > 0.0);
}

TEST_CASE("times the cost model cannot express are refused", "[calibrate]") {
  const std::vector<CostFeatures> f = probe_features(8192, 1, 32);
  std::vector<double> flat(f.size(), 0.01);
  CHECK_THROWS_AS(fit_cost_model(f, flat), ConfigError);  // nothing grows with positions
  std::vector<double> shrinking;
  for (const CostFeatures& x : f) shrinking.push_back(1.0 - 1e-12 * x.quadratic);
  CHECK_THROWS_AS(fit_cost_model(f, shrinking), ConfigError);
  CHECK_THROWS_AS(fit_cost_model(std::span(f).first(3), std::span(flat).first(3)), ConfigError);
}

TEST_CASE("probes span both terms, each sequence seq_len positions with padding", "[calibrate]") {
  const std::vector<MicroBatchShape> probes = probe_micro_batches(32768, 4, 64, 1);
  REQUIRE(probes.size() == 64);
  double ratio_min = 1e30, ratio_max = 0;
  bool patches = false;
  for (const MicroBatchShape& mb : probes) {
    REQUIRE(!mb.empty());
    for (const SequenceShape& s : mb) {
      CHECK(s.positions() == 32768);
      patches = patches || std::any_of(s.patches.begin(), s.patches.end(), [](uint32_t p) { return p > 0; });
    }
    const CostFeatures f = cost_features(base_cost(), mb, 1);
    ratio_min = std::min(ratio_min, f.quadratic / f.linear);
    ratio_max = std::max(ratio_max, f.quadratic / f.linear);
  }
  CHECK(patches);
  CHECK(ratio_max > 20 * ratio_min);  // short documents and whole-sequence ones
  // Deterministic in the seed, and the seed matters.
  const std::vector<MicroBatchShape> again = probe_micro_batches(32768, 4, 64, 1);
  const std::vector<MicroBatchShape> other = probe_micro_batches(32768, 4, 64, 2);
  size_t same = 0, differ = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    same += probe_json(again[i]) == probe_json(probes[i]);
    differ += probe_json(other[i]) != probe_json(probes[i]);
  }
  CHECK(same == probes.size());
  CHECK(differ > 0);
}

TEST_CASE("calibrated on the device model, the planner's cost predicts micro-batch times", "[calibrate]") {
  DeviceModel device;
  device.model = model_spec_preset("llama3-8b");
  device.vision = model_spec_preset("vit-l");
  device.device = device_spec_preset("h100");
  const Parallel parallel{8, 1, 1, 8};
  const Calibration c = calibrate_on_device(device, parallel, base_cost(), 32768);
  CHECK(c.r_squared > 0.99);
  CHECK(c.max_relative_error < 0.05);
  // Held-out shapes, another seed: the calibrated cost tracks device time
  // better than the analytic one does.
  const CostModel fitted = calibrated(base_cost(), c);
  double error_fitted = 0, error_analytic = 0;
  std::vector<double> analytic_cost, fitted_cost, seconds;
  for (const MicroBatchShape& shape : probe_micro_batches(32768, 1, 128, 99)) {
    seconds.push_back(micro_batch_seconds(device, parallel, shape));
    fitted_cost.push_back(planner_cost(fitted, shape, 1));
    analytic_cost.push_back(planner_cost(base_cost(), shape, 1));
  }
  // Each against the device by its best scale (least squares through 0).
  for (auto [costs, error] : {std::pair{&fitted_cost, &error_fitted}, std::pair{&analytic_cost, &error_analytic}}) {
    const double k = std::inner_product(costs->begin(), costs->end(), seconds.begin(), 0.0) /
                     std::inner_product(costs->begin(), costs->end(), costs->begin(), 0.0);
    for (size_t i = 0; i < seconds.size(); ++i) *error = std::max(*error, std::abs(k * (*costs)[i] - seconds[i]) / seconds[i]);
  }
  CHECK(error_fitted < error_analytic);
}

TEST_CASE("simulate --compare names the cost model it placed with", "[calibrate]") {
  SimulateOptions sim;
  sim.dp = 8;
  sim.seq_len = 8192;
  sim.steps = 1;
  CompareOptions compare;
  compare.modes = {TrainingMode::msd_greedy};
  const CompareReport calibrated_report = compare_modes(sim, compare);
  CHECK(calibrated_report.calibration.probes > 0);
  CHECK(calibrated_report.cost.a == calibrated_report.calibration.a);
  CHECK(cost_model_line(calibrated_report).find("calibrated") != std::string::npos);
  compare.calibrate = false;
  const CompareReport analytic_report = compare_modes(sim, compare);
  CHECK(analytic_report.calibration.probes == 0);
  CHECK(analytic_report.cost.a == 6.0 * 4096);
  CHECK(compare_json(analytic_report).find("\"calibrated\":false") != std::string::npos);
  CHECK(parse_cost_model("analytic", "--cost-model") == false);
  CHECK_THROWS_AS(parse_cost_model("fitted", "--cost-model"), ConfigError);
}

TEST_CASE("order_for_pipeline: light at both ends, heaviest in the middle, empty last", "[calibrate]") {
  std::vector<MicroBatchPlan> mbs(7);
  const double costs[] = {5, 1, 0, 3, 4, 2, 6};
  for (size_t i = 0; i < mbs.size(); ++i) {
    mbs[i].cost = costs[i];
    mbs[i].positions = costs[i] > 0 ? 10 : 0;
  }
  order_for_pipeline(mbs);
  std::vector<double> order;
  for (const MicroBatchPlan& mb : mbs) order.push_back(mb.cost);
  CHECK(order == std::vector<double>{1, 3, 5, 6, 4, 2, 0});
}

TEST_CASE("for pp > 1 the pipeline order shortens 1F1B against heaviest first", "[calibrate]") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> spread(0.0, 0.35);
  double heaviest_first = 0, ordered = 0;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<MicroBatchPlan> mbs(8);
    for (MicroBatchPlan& mb : mbs) mb.cost = spread(rng), mb.positions = 1;
    std::sort(mbs.begin(), mbs.end(), [](const auto& x, const auto& y) { return x.cost > y.cost; });
    auto makespan = [&] {
      std::vector<double> seconds, hops(mbs.size(), 0.0);
      for (const MicroBatchPlan& mb : mbs) seconds.push_back(mb.cost);
      return one_f_one_b_seconds(seconds, hops, 4);
    };
    heaviest_first += makespan();
    order_for_pipeline(mbs);
    ordered += makespan();
  }
  CHECK(ordered < 0.95 * heaviest_first);
}
