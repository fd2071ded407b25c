#include "plan/step/cost.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "plan/step/model_spec.h"

namespace msd {

// Per layer, a document of L positions costs about 24*h^2*L FLOPs in its linear
// layers and 4*h*L^2 in attention under document masking: 4h * (6h*L + L^2).
// Forward and backward together are three times the forward.
CostModel CostModel::from(const CostOptions& model, double a_override, double vision_scale_override) {
  if (!std::isfinite(a_override) || a_override < 0.0)
    throw ConfigError(str("model.cost_a: ", a_override, " is not a weight; give a value > 0, or 0 to use 6 * hidden"));
  if (!std::isfinite(vision_scale_override) || vision_scale_override < 0.0)
    throw ConfigError(str("model.cost_vision_scale: ", vision_scale_override,
                          " is not a weight; give a value > 0, or 0 to derive it"));
  CostModel cost;
  const double h = model.hidden;
  const double hv = model.vision_hidden;
  cost.a = a_override > 0.0 ? a_override : 6.0 * h;
  cost.vision_a = 6.0 * hv;
  cost.flops_per_unit = 12.0 * h * model.layers;
  // A vision-encoder unit (vision_a*P + P^2) costs 12*hv*layers_v FLOPs; in LM
  // units that is this ratio.
  cost.vision_scale = cost.flops_per_unit > 0 ? 12.0 * hv * model.vision_layers / cost.flops_per_unit : 0.0;
  if (vision_scale_override > 0.0) cost.vision_scale = vision_scale_override;
  return cost;
}

double CostModel::document(uint32_t length, uint32_t patches) const {
  const double l = length;
  const double p = patches;
  double total = a * l + l * l;
  if (patches > 0) total += vision_scale * (vision_a * p + p * p);
  return total;
}

double CostModel::zigzag_sequence(std::span<const uint32_t> lengths, std::span<const uint32_t> patches,
                                  uint32_t seq_len, uint32_t cp) const {
  MSD_CHECK_EQ(lengths.size(), patches.size());
  if (cp <= 1) {
    double total = 0.0;
    for (size_t i = 0; i < lengths.size(); ++i) total += document(lengths[i], patches[i]);
    return total;
  }
  MSD_CHECK_EQ(seq_len % (2 * cp), 0u);
  const uint64_t chunk = seq_len / (2 * cp);
  // Positions [x, y) of a segment: a*(y - x) + y^2 - x^2, plus the vision
  // term over its patches.
  auto share = [&](uint64_t x, uint64_t y, uint64_t p) {
    const double dx = static_cast<double>(x), dy = static_cast<double>(y);
    double c = a * (dy - dx) + dy * dy - dx * dx;
    if (x < p) {
      const double dp = static_cast<double>(std::min(y, p));
      c += vision_scale * (vision_a * (dp - dx) + dp * dp - dx * dx);
    }
    return c;
  };
  double busiest = 0.0;
  for (uint32_t r = 0; r < cp; ++r) {
    double load = 0.0;
    for (const uint64_t k : {uint64_t{r}, uint64_t{2 * cp - 1 - r}}) {
      uint64_t offset = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        const uint64_t lo = std::max(offset, k * chunk), hi = std::min(offset + lengths[i], (k + 1) * chunk);
        if (lo < hi) load += share(lo - offset, hi - offset, patches[i]);
        offset += lengths[i];
      }
    }
    busiest = std::max(busiest, load);
  }
  return busiest * cp;
}

double CostModel::seconds(double units, double tflops) const {
  MSD_CHECK_LT(0.0, tflops);
  return units * flops_per_unit / (tflops * 1e12);
}

CostModel make_cost_model(const CostOptions& options) {
  // A preset names the model's shape; the planner learns its hidden size and
  // depth from it, nothing of the device model.
  CostOptions model = options;
  if (!model.preset.empty()) {
    const ModelSpec spec = model_spec_preset(model.preset);
    model.hidden = spec.hidden;
    model.layers = spec.layers;
  }
  CostModel cost = CostModel::from(model, options.cost_a, options.cost_vision_scale);
  cost.micro_batch = options.cost_micro_batch;
  return cost;
}

}  // namespace msd
