// cost(model): the compute a document costs a training step, from metadata.
// Text: a*L + L^2 per document under document masking, with a = 6 * hidden
// (linear layers against attention); image-text adds the vision encoder's
// cost on its patch count.
#pragma once

#include <cstdint>

#include "msd/config.h"

namespace msd {

struct CostModel {
  double a = 6.0 * 1024;         // linear-term weight per token
  double vision_a = 6.0 * 768;   // vision encoder's linear-term weight per patch
  double vision_scale = 0.0;     // vision encoder cost relative to the LM per unit

  static CostModel from(const ModelConfig& model);
  // Cost of a document of `length` positions of which `patches` are image patches.
  double document(uint32_t length, uint32_t patches) const;
  // FLOPs of one unit of cost for the emulated model (all layers, fwd + bwd).
  double flops_per_unit = 0.0;
};

}  // namespace msd
