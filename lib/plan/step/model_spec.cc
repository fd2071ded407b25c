#include "plan/step/model_spec.h"

#include "common/error.h"

namespace msd {

double ModelSpec::params_per_layer() const {
  const double h = hidden, kv = static_cast<double>(kv_heads) * head_dim();
  const double attention = 2.0 * h * h + 2.0 * h * kv;  // q, o; k, v
  const double mlp = (gated_mlp ? 3.0 : 2.0) * h * ffn;
  return attention + mlp;
}

double ModelSpec::params() const {
  return layers * params_per_layer() + 2.0 * static_cast<double>(vocab) * hidden;
}

ModelSpec model_spec_preset(const std::string& name, const std::string& what) {
  // Llama 3 (Grattafiori et al. 2024, arXiv:2407.21783, Table 3); ViT-L/14
  // (Dosovitskiy et al. 2021, Table 1; CLIP's tower).
  if (name == "llama3-8b") return {name, 32, 4096, 14336, true, 32, 8, 128256, true};
  if (name == "llama3-70b") return {name, 80, 8192, 28672, true, 64, 8, 128256, true};
  if (name == "vit-l") return {name, 24, 1024, 4096, false, 16, 16, 0, false};
  throw ConfigError(str(what, ": '", name, "' is not a model; give llama3-8b, llama3-70b or vit-l"));
}

}  // namespace msd
