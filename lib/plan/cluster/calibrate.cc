#include "plan/cluster/calibrate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "common/error.h"
#include "common/json_writer.h"

namespace msd {
namespace {

constexpr size_t kTerms = 4;  // c0 (overhead), c1 (linear), c2 (quadratic), c3 (vision)
using Row = std::array<double, kTerms>;

// Solves the normal equations of the rows (weighted) for the first `terms`
// coefficients, by Gaussian elimination with partial pivoting. Columns are
// scaled to unit mean magnitude first, so positions (~1e4) and squares
// (~1e9) do not ruin the conditioning. False when singular.
bool least_squares(std::span<const Row> rows, std::span<const double> y, std::span<const double> weight, size_t terms,
                   Row& solution) {
  Row scale{};
  for (const Row& row : rows)
    for (size_t j = 0; j < terms; ++j) scale[j] += std::abs(row[j]);
  for (size_t j = 0; j < terms; ++j) {
    if (scale[j] <= 0.0) return false;
    scale[j] /= static_cast<double>(rows.size());
  }
  std::array<std::array<double, kTerms + 1>, kTerms> m{};
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < terms; ++j) {
      for (size_t k = 0; k < terms; ++k) m[j][k] += weight[i] * rows[i][j] / scale[j] * rows[i][k] / scale[k];
      m[j][terms] += weight[i] * rows[i][j] / scale[j] * y[i];
    }
  for (size_t col = 0; col < terms; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < terms; ++r)
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    if (std::abs(m[pivot][col]) < 1e-12 * std::max(1.0, std::abs(m[col][col]))) return false;
    std::swap(m[col], m[pivot]);
    for (size_t r = 0; r < terms; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (size_t k = col; k <= terms; ++k) m[r][k] -= f * m[col][k];
    }
  }
  solution = {};
  for (size_t j = 0; j < terms; ++j) solution[j] = m[j][terms] / m[j][j] / scale[j];
  return true;
}

// R^2 and the largest relative error of `c` on the rows.
void score(std::span<const Row> rows, std::span<const double> y, const Row& c, Calibration& out) {
  double mean = 0.0;
  for (const double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  double residual = 0.0, total = 0.0;
  out.max_relative_error = 0.0;
  for (size_t i = 0; i < rows.size(); ++i) {
    double predicted = 0.0;
    for (size_t j = 0; j < kTerms; ++j) predicted += c[j] * rows[i][j];
    residual += (predicted - y[i]) * (predicted - y[i]);
    total += (y[i] - mean) * (y[i] - mean);
    out.max_relative_error = std::max(out.max_relative_error, std::abs(predicted - y[i]) / y[i]);
  }
  out.r_squared = total > 0.0 ? 1.0 - residual / total : 1.0;
}

// Segments of one probe sequence of `room` positions, by kind: 0 one long
// document, 1 short web documents, 2 image-text samples, 3 a mix.
void fill_sequence(SequenceShape& sequence, uint32_t room, int kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::lognormal_distribution<double> web(std::log(600.0), 1.0);
  std::uniform_int_distribution<uint32_t> patches(64, 1024);
  uint32_t used = 0;
  while (used < room) {
    const int this_kind = kind == 3 ? static_cast<int>(unit(rng) * 3) : kind;
    uint32_t length = 0, patch = 0;
    if (this_kind == 0) {
      length = room - used;
    } else if (this_kind == 1) {
      length = static_cast<uint32_t>(std::clamp(web(rng), 1.0, 16384.0));
    } else {
      patch = patches(rng);
      length = patch + 8 + static_cast<uint32_t>(unit(rng) * 64);
    }
    if (length > room - used) {
      if (patch > 0) break;  // an image-text sample is never cut
      length = room - used;
    }
    sequence.segments.push_back(length);
    sequence.patches.push_back(patch);
    used += length;
  }
}

}  // namespace

CostFeatures cost_features(const CostModel& cost, const MicroBatchShape& micro_batch, uint32_t cp) {
  CostModel unit = cost;
  unit.a = 0.0;
  unit.vision_scale = 0.0;
  CostFeatures f;
  f.quadratic = planner_cost(unit, micro_batch, cp);
  unit.a = 1.0;
  f.linear = planner_cost(unit, micro_batch, cp) - f.quadratic;
  unit.a = 0.0;
  unit.vision_scale = 1.0;
  f.vision = planner_cost(unit, micro_batch, cp) - f.quadratic;
  return f;
}

Calibration fit_cost_model(std::span<const CostFeatures> features, std::span<const double> seconds) {
  MSD_CHECK_EQ(features.size(), seconds.size());
  if (features.size() < kTerms)
    throw ConfigError(str("cost calibration: ", features.size(), " timed micro-batches; it needs at least ", kTerms));
  std::vector<Row> rows;
  std::vector<double> weight;
  for (size_t i = 0; i < features.size(); ++i) {
    if (!(seconds[i] > 0.0)) throw ConfigError(str("cost calibration: micro-batch ", i, " took ", seconds[i], " s"));
    rows.push_back({1.0, features[i].linear, features[i].quadratic, features[i].vision});
    weight.push_back(1.0 / (seconds[i] * seconds[i]));
  }
  Row c{};
  bool solved = least_squares(rows, seconds, weight, kTerms, c);
  if (!solved || c[3] < 0.0) {
    solved = least_squares(rows, seconds, weight, kTerms - 1, c);
    c[3] = 0.0;
  }
  if (!solved || !(c[1] > 0.0) || !(c[2] > 0.0))
    throw ConfigError(str("cost calibration: the times do not fit a*L + L^2 with a, and the attention term, > 0 "
                          "(fitted seconds per position ", c[1], ", per squared position ", c[2], ")"));
  Calibration out;
  out.a = c[1] / c[2];
  out.vision_scale = c[3] / c[2];
  out.seconds_per_unit = c[2];
  out.overhead_seconds = c[0];
  out.probes = features.size();
  score(rows, seconds, c, out);
  return out;
}

std::vector<MicroBatchShape> probe_micro_batches(uint32_t seq_len, uint32_t cp, uint32_t count, uint64_t seed) {
  MSD_CHECK_EQ(seq_len % (2 * std::max(1u, cp)), 0u);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0xCA11B);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<MicroBatchShape> probes(count);
  for (uint32_t i = 0; i < count; ++i) {
    const int kind = static_cast<int>(i % 4);
    const uint32_t sequences = 1 + static_cast<uint32_t>(unit(rng) * 2);
    for (uint32_t s = 0; s < sequences; ++s) {
      SequenceShape sequence;
      const uint32_t room = std::max(1u, static_cast<uint32_t>(seq_len * (0.4 + 0.6 * unit(rng))));
      fill_sequence(sequence, room, kind, rng);
      const uint64_t used = sequence.positions();
      sequence.padding = seq_len - static_cast<uint32_t>(used);
      probes[i].push_back(std::move(sequence));
    }
  }
  return probes;
}

Calibration calibrate(std::span<const MicroBatchShape> probes, std::span<const double> seconds, const CostModel& cost,
                      uint32_t cp) {
  if (probes.size() != seconds.size())
    throw ConfigError(str("cost calibration: ", seconds.size(), " times for ", probes.size(), " probe micro-batches"));
  std::vector<CostFeatures> features;
  for (const MicroBatchShape& probe : probes) features.push_back(cost_features(cost, probe, cp));
  return fit_cost_model(features, seconds);
}

double predicted_seconds(const Calibration& c, const CostFeatures& f) {
  return c.overhead_seconds + c.seconds_per_unit * (c.a * f.linear + f.quadratic + c.vision_scale * f.vision);
}

HeldOutError held_out_error(const Calibration& calibration, std::span<const MicroBatchShape> shapes,
                            std::span<const double> seconds, const CostModel& cost, uint32_t cp) {
  if (shapes.size() != seconds.size() || shapes.empty())
    throw ConfigError(str("held-out check: ", seconds.size(), " times for ", shapes.size(), " micro-batches"));
  std::vector<double> errors;
  for (size_t i = 0; i < shapes.size(); ++i)
    errors.push_back(std::abs(predicted_seconds(calibration, cost_features(cost, shapes[i], cp)) - seconds[i]) /
                     seconds[i]);
  std::sort(errors.begin(), errors.end());
  auto at = [&](double q) { return errors[static_cast<size_t>(q * static_cast<double>(errors.size() - 1) + 0.5)]; };
  return {errors.size(), at(0.5), at(0.9)};
}

std::string probe_json(const MicroBatchShape& probe) {
  JsonWriter json;
  json.begin_object();
  json.begin_array("sequences");
  for (const SequenceShape& sequence : probe) {
    json.begin_object();
    json.begin_array("segments");
    for (const uint32_t length : sequence.segments) json.value("", length);
    json.end_array();
    json.begin_array("patches");
    for (const uint32_t patches : sequence.patches) json.value("", patches);
    json.end_array();
    json.value("padding", sequence.padding);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str();
}

Calibration calibrate_on_device(const DeviceModel& device, const Parallel& parallel, const CostModel& cost,
                                uint32_t seq_len, uint32_t count, uint64_t seed) {
  const std::vector<MicroBatchShape> probes = probe_micro_batches(seq_len, parallel.cp, count, seed);
  std::vector<double> seconds;
  for (const MicroBatchShape& probe : probes) seconds.push_back(micro_batch_seconds(device, parallel, probe));
  return calibrate(probes, seconds, cost, parallel.cp);
}

CostModel calibrated(CostModel cost, const Calibration& calibration) {
  cost.a = calibration.a;
  cost.vision_scale = calibration.vision_scale;
  cost.micro_batch = micro_batch_units(calibration);
  return cost;
}

double micro_batch_units(const Calibration& calibration) {
  if (calibration.seconds_per_unit <= 0.0 || calibration.overhead_seconds <= 0.0) return 0.0;
  return calibration.overhead_seconds / calibration.seconds_per_unit;
}

}  // namespace msd
