// cost(model): the compute a document costs a training step, from metadata.
// Text: a*L + L^2 per document under document masking, with a = 6 * hidden
// (linear layers against attention) or a value given directly; image-text adds
// the vision encoder's cost on its patch count. docs/cost-and-balance.md
// derives it. The trainer emulator does not sleep it: it sleeps the device
// model (plan/cluster/device_model.h), so benchmarks do not score the planner by its
// own objective.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace msd {

// What a job's cost model is made from (model.*; lib/config/part_options.h
// makes it from the configuration): the model's shape, or a preset naming
// it, and the cost model's own weights. The device model
// (plan/cluster/device_model.h) reads the same shape.
struct CostOptions {
  uint32_t hidden = 1024;  // hidden size: a = 6 * hidden
  uint32_t layers = 8;
  uint32_t vision_hidden = 768;  // vision encoder, for image patches' cost
  uint32_t vision_layers = 4;
  double cost_a = 0.0;             // the linear weight a; 0: 6 * hidden
  double cost_vision_scale = 0.0;  // a vision-encoder unit in LM units; 0: derived
  // llama3-8b | llama3-70b | vit-l (model_spec.h): replaces hidden and
  // layers. Empty: hidden x layers.
  std::string preset;
  double cost_micro_batch = 0.0;  // CostModel::micro_batch
};

// Immutable after construction; thread-safe to share.
struct CostModel {
  double a = 6.0 * 1024;         // linear-term weight per position. Default: 6 * hidden
  double vision_a = 6.0 * 768;   // vision encoder's linear-term weight per patch. Default: 6 * vision_hidden
  double vision_scale = 0.0;     // a vision-encoder unit in LM units. Default: 0 (patches cost like text)
  double flops_per_unit = 0.0;   // FLOPs of one unit of cost (all layers, fwd + bwd). Default: 0 (unset)
  // What one micro-batch costs whatever it holds (kernel launches, optimizer
  // hooks, the pipeline's per-micro-batch sends), in units of cost: the
  // constant term of a calibration (c0 / c2, msd-plan calibrate) or
  // model.cost_micro_batch. The spread placement (spread.h) charges it per
  // micro-batch so that it splits no work into needless micro-batches.
  // Default: 0 (none).
  double micro_batch = 0.0;

  // The model's cost: a = 6 * hidden, or `a_override` when it is > 0 (a
  // measured or fitted linear weight, e.g. for a model whose MLP is not 4x
  // hidden or that has MoE layers). 0 means derive. The override changes only
  // the ratio of linear to attention work: flops_per_unit (set by the
  // attention term, 12 * hidden * layers) is the same either way.
  // Throws ConfigError when a_override is negative or not finite.
  // vision_scale_override > 0 replaces the derived vision_scale likewise.
  static CostModel from(const CostOptions& model, double a_override = 0.0, double vision_scale_override = 0.0);

  // Cost of a document (or of one piece of a split document: each piece is
  // its own document under document masking) of `length` positions of which
  // the first `patches` are image patches:
  //   a*L + L^2 + vision_scale * (vision_a*P + P^2).
  double document(uint32_t length, uint32_t patches) const;

  // Padding positions of a fixed-shape (seq_len) sequence: the linear layers
  // compute them like any position (a each); attention masks them. A
  // sequence costs its documents plus this over its padding.
  // Zero when the trainer computes no padding (`padded` false: variable-length
  // micro-batches, PackOptions::varlen).
  double padding(uint64_t positions) const { return padded ? a * static_cast<double>(positions) : 0.0; }
  bool padded = true;
  // This cost for variable-length rows: padding costs nothing.
  CostModel unpadded() const {
    CostModel c = *this;
    c.padded = false;
    return c;
  }

  // A packed sequence of seq_len positions under context parallelism: its
  // segments (document pieces in position order, `lengths[i]` positions of
  // which the first `patches[i]` are patches) are split zigzag over `cp`
  // ranks, rank r holding chunks r and 2cp-1-r of seq_len/(2cp) positions.
  // Position j of a segment costs a + 2j + 1 (+ vision_scale * (vision_a +
  // 2j + 1) on a patch): a causal query at j attends j + 1 keys, and the
  // shares sum to document(). Returns cp times the busiest rank's share, the
  // time the CP group takes in units of one rank; >= the sum of document()
  // over the segments, equal for cp = 1.
  // REQUIRES seq_len % (2 * cp) == 0 when cp > 1, segments within seq_len.
  double zigzag_sequence(std::span<const uint32_t> lengths, std::span<const uint32_t> patches, uint32_t seq_len,
                         uint32_t cp) const;

  // Seconds `units` of cost take on a device sustaining `tflops` (1e12 FLOP/s):
  // units * flops_per_unit / (tflops * 1e12). REQUIRES tflops > 0.
  double seconds(double units, double tflops) const;
};

// The cost model of a job: `model`'s shape with its cost_a, cost_vision_scale
// and cost_micro_batch; its preset, when set, gives hidden and layers.
CostModel make_cost_model(const CostOptions& model);

}  // namespace msd
