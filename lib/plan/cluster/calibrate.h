// calibrate: fitting the planner's cost model (plan/step/cost.h) to a device's
// measured micro-batch times, as one profiles a GPU before a run. The
// planner's cost of a micro-batch is linear in its two free constants,
//   cost = a * linear + quadratic + vision_scale * vision
// (linear: positions computed, padding included; quadratic: the L^2 terms of
// its segments; vision: the vision tower's term over patches), so timing a
// set of probe micro-batches and fitting
//   seconds = c0 + c1 * linear + c2 * quadratic + c3 * vision
// by least squares gives a = c1 / c2 and vision_scale = c3 / c2. The planner
// keeps its own shape of cost: only these two numbers come from the
// measurement, never the device's formula. docs/cost-and-balance.md
// "Calibration". MPI-free; no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/step/cost.h"
#include "plan/cluster/device_model.h"

namespace msd {

// The planner's cost of a micro-batch, split by the constant each part is
// multiplied by. Under CP each part is taken on its own (the busiest CP
// rank's share of each): an approximation, since the busiest rank of the sum
// may differ.
struct CostFeatures {
  double linear = 0.0;     // multiplied by a
  double quadratic = 0.0;  // multiplied by 1
  double vision = 0.0;     // multiplied by vision_scale
};
CostFeatures cost_features(const CostModel& cost, const MicroBatchShape& micro_batch, uint32_t cp);

struct Calibration {
  double a = 0.0;             // the fitted CostModel::a
  double vision_scale = 0.0;  // the fitted CostModel::vision_scale (0 when probes had no patches)
  double seconds_per_unit = 0.0;  // c2: seconds of one unit of cost
  double overhead_seconds = 0.0;  // c0: seconds a micro-batch costs whatever it holds
  // Of the fit, on the probes: R^2 of seconds, and the largest
  // |predicted - measured| / measured.
  double r_squared = 0.0;
  double max_relative_error = 0.0;
  uint64_t probes = 0;
};

// Least squares of `seconds` on the features (relative error weighted:
// each probe counts by 1 / seconds^2, so short micro-batches matter as much
// as long ones). A vision coefficient that comes out negative (patches cost
// the device no more than text) is dropped and the fit redone without it.
// Throws ConfigError when fewer than 4 probes are given or the fit has no
// positive linear or quadratic coefficient (times that do not grow with
// positions and with segment length cannot be expressed as a*L + L^2).
Calibration fit_cost_model(std::span<const CostFeatures> features, std::span<const double> seconds);

// `count` probe micro-batches for sequences of `seq_len` positions,
// deterministic in `seed`: 1 or 2 sequences each, filled 40-100% with one
// kind of segment per micro-batch (one long document, short web documents,
// image-text samples of 64..1024 patches, or a mix), so the fit sees the
// whole range of the two terms; the rest of each sequence is padding.
// REQUIRES seq_len divisible by 2 * cp.
std::vector<MicroBatchShape> probe_micro_batches(uint32_t seq_len, uint32_t cp, uint32_t count, uint64_t seed);

// Fits `cost`'s constants to probes timed elsewhere (seconds[i] for
// probes[i], e.g. on a real trainer). Throws as fit_cost_model.
Calibration calibrate(std::span<const MicroBatchShape> probes, std::span<const double> seconds, const CostModel& cost,
                      uint32_t cp);

// The fit's seconds for a micro-batch of these features: overhead +
// seconds_per_unit * (a * linear + quadratic + vision_scale * vision).
double predicted_seconds(const Calibration& calibration, const CostFeatures& features);

// The fit judged on micro-batches it was not fitted on (another seed's):
// |predicted - measured| / measured, its median and 90th percentile.
struct HeldOutError {
  uint64_t micro_batches = 0;
  double median_abs_error = 0.0, p90_abs_error = 0.0;
};
// Throws ConfigError when the counts differ or there are none.
HeldOutError held_out_error(const Calibration& calibration, std::span<const MicroBatchShape> shapes,
                            std::span<const double> seconds, const CostModel& cost, uint32_t cp);

// One probe as a JSON object, for timing on a trainer:
// {"sequences":[{"segments":[...],"patches":[...],"padding":N},...]}
// (segments in position order; patches[i]: leading image patches of segment i).
std::string probe_json(const MicroBatchShape& probe);

// Times probe_micro_batches(seq_len, parallel.cp, count, seed) with
// micro_batch_seconds on `device` (standing in for the GPU) and fits them
// against `cost`'s features.
Calibration calibrate_on_device(const DeviceModel& device, const Parallel& parallel, const CostModel& cost,
                                uint32_t seq_len, uint32_t count = 256, uint64_t seed = 1);

// `cost` with the calibration's a, vision_scale and micro-batch cost.
CostModel calibrated(CostModel cost, const Calibration& calibration);

// The fit's constant in units of cost (model.cost_micro_batch):
// overhead_seconds / seconds_per_unit, 0 when the constant comes out negative.
double micro_batch_units(const Calibration& calibration);

}  // namespace msd
