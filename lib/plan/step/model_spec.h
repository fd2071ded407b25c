// A transformer's shape (layers, widths, heads, vocabulary) and the presets
// msd knows by name. The planner's cost (cost.h) takes a preset's depth and
// width; the device model (cluster/device_model.h) its whole shape.
// MPI-free; no state; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace msd {

// A transformer's shape. Presets (model_spec_preset): "llama3-8b",
// "llama3-70b" (Llama 3 paper, Table 3), "vit-l" (ViT-L/14, a vision tower).
struct ModelSpec {
  std::string name = "custom";
  uint32_t layers = 8;
  uint32_t hidden = 1024;
  uint32_t ffn = 4096;        // MLP inner width
  bool gated_mlp = false;     // SwiGLU (3 matrices) rather than GELU (2)
  uint32_t heads = 8;         // query heads; head_dim = hidden / heads
  uint32_t kv_heads = 8;      // key/value heads (GQA when < heads)
  uint32_t vocab = 0;         // output projection width; 0: none (a vision tower)
  bool causal = true;         // causal (LM) or bidirectional (ViT) attention

  uint32_t head_dim() const { return hidden / heads; }
  // Weights of one layer (attention + MLP; norms are negligible).
  double params_per_layer() const;
  // All weights: layers, embedding and output projection (untied).
  double params() const;
};

// Presets by name; throw ConfigError naming `what` for an unknown name.
ModelSpec model_spec_preset(const std::string& name, const std::string& what = "model.preset");

}  // namespace msd
