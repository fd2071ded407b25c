// `msd-plan simulate --compare` and `msd-bench sweep`: every training mode
// (plan/step/modes.h) on the same synthetic steps, timed by the device model
// (plan/cluster/device_model.h), for clusters up to thousands of GPUs. MPI-free.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/json_writer.h"
#include "plan/cluster/calibrate.h"
#include "plan/cluster/compare.h"
#include "plan/cluster/simulate.h"

namespace msd {

struct CompareOptions {
  std::string model_preset = "llama3-8b";  // the language model (model_spec_preset)
  std::string vision_preset = "vit-l";     // the vision tower for image patches; "none": patches run as text
  std::string device_preset = "h100";      // device_spec_preset
  // The modes to evaluate. Empty (the default): every mode of
  // kEvaluationModes that places under the options (megatron_dynamic_cp where
  // cp > 1, pp is 1 and dp x cp a power of two); a mode named here that
  // cannot place is a ConfigError naming --cp.
  std::vector<TrainingMode> modes;
  // The planner's cost model: calibrated (its a and vision_scale fitted to
  // probe micro-batches timed on the device model, plan/cluster/calibrate.h, as one
  // profiles a GPU before a run) or analytic (a = 6 * hidden, or
  // SimulateOptions::cost_a). Default: calibrated.
  bool calibrate = true;
  // Where the calibration's micro-batches come from: 0, probe micro-batches
  // (calibrate_on_device); otherwise the micro-batches of `steps` synthetic
  // steps of this seed (not the judged one), placed by colocated_tokens and
  // msd_tokens and timed on the device model: a fit held out from the steps
  // it is judged on.
  uint64_t calibration_seed = 0;
  // A fit already made for these options (another row shape of the same
  // steps): used as it is instead of fitting again.
  std::optional<Calibration> calibration;
  // Device sensitivity: the GEMM efficiency times this, and which
  // FlashAttention's tables time attention (2 or 3).
  double gemm_efficiency_scale = 1.0;
  uint32_t flash_attention = 3;
};

struct CompareReport {
  SimulateOptions options;
  CompareOptions compare;
  uint32_t dp = 0;
  CostModel cost;           // the planner's, as the modes placed by it
  Calibration calibration;  // how it was fitted (probes == 0: analytic)
  // The run every mode placed: the synthetic steps cut at Megatron's whole
  // global batches (whole_global_batches), and the batch the megatron modes
  // ran with (micro_batch_size and micro_batches).
  uint64_t positions = 0, dropped_positions = 0;
  StreamOptions megatron;
  std::vector<ModeEvaluation> modes;  // in the order evaluated (modes_of: compare.modes, or kEvaluationModes)
};

// "varlen" (true) or "fixed" (false); ConfigError naming `what` otherwise.
bool parse_micro_batch_shape(const std::string& name, const std::string& what);

// "calibrated" (true) or "analytic" (false); ConfigError naming `what` otherwise.
bool parse_cost_model(const std::string& name, const std::string& what);

// The device model of `compare` (presets by name; ConfigError for an unknown one).
DeviceModel compare_device_model(const CompareOptions& compare);

// Every mode on options.steps synthetic steps (synthetic_step, arrival order
// by seed and step), cut at Megatron's whole global batches so every mode
// places the same positions. Throws ConfigError like simulate() does, and
// for a mode that cannot place (check_mode).
CompareReport compare_modes(const SimulateOptions& options, const CompareOptions& compare);

// msd mode's tokens/s over a baseline's (0 when the baseline has none).
double speedup(const CompareReport& report, TrainingMode mode, TrainingMode baseline);

// One line naming the planner's cost model: analytic, or calibrated with the fit's quality.
std::string cost_model_line(const CompareReport& report);
// The "cost_model" object: calibrated, a, vision_scale (and the fit's probes, r_squared, max_relative_error).
void write_cost_model(JsonWriter& json, const CostModel& cost, const Calibration& calibration);

void print_compare(const CompareReport& report, std::ostream& out);
std::string compare_json(const CompareReport& report);

}  // namespace msd
