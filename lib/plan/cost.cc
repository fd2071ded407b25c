#include "plan/cost.h"

#include <cmath>

#include "common/error.h"

namespace msd {

// Per layer, a document of L positions costs about 24*h^2*L FLOPs in its linear
// layers and 4*h*L^2 in attention under document masking: 4h * (6h*L + L^2).
// Forward and backward together are three times the forward.
CostModel CostModel::from(const ModelConfig& model, double a_override) {
  if (!std::isfinite(a_override) || a_override < 0.0)
    throw ConfigError(str("model.cost_a: ", a_override, " is not a weight; give a value > 0, or 0 to use 6 * hidden"));
  CostModel cost;
  const double h = model.hidden;
  const double hv = model.vision_hidden;
  cost.a = a_override > 0.0 ? a_override : 6.0 * h;
  cost.vision_a = 6.0 * hv;
  cost.flops_per_unit = 12.0 * h * model.layers;
  // A vision-encoder unit (vision_a*P + P^2) costs 12*hv*layers_v FLOPs; in LM
  // units that is this ratio.
  cost.vision_scale = cost.flops_per_unit > 0 ? 12.0 * hv * model.vision_layers / cost.flops_per_unit : 0.0;
  return cost;
}

double CostModel::document(uint32_t length, uint32_t patches) const {
  const double l = length;
  const double p = patches;
  double total = a * l + l * l;
  if (patches > 0) total += vision_scale * (vision_a * p + p * p);
  return total;
}

double CostModel::seconds(double units, double tflops) const {
  MSD_CHECK_LT(0.0, tflops);
  return units * flops_per_unit / (tflops * 1e12);
}

CostModel make_cost_model(const Config& config) { return CostModel::from(config.model, config.model.cost_a); }

}  // namespace msd
