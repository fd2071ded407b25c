// What msd-plan calibrate reads and writes: micro-batch shapes as JSON lines
// (probe_json's), measured seconds one per line, and the fit as text or JSON
// (docs/cost-and-balance.md "Calibration"). Errors name the option and the
// file's line.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "plan/cluster/calibrate.h"

namespace msd {

// Seconds, one per line ('#' starts a comment), from `path`; `option` names
// it in errors (ConfigError).
std::vector<double> read_times(const std::string& path, const std::string& option = "--times");

// Micro-batch shapes, one JSON object a line, from `path`.
std::vector<MicroBatchShape> read_shapes(const std::string& path, const std::string& option);

// The shapes as JSON lines to `path` (`option` names it in errors).
void write_shapes(const std::string& path, const std::vector<MicroBatchShape>& shapes, const std::string& option);

// What the device model says each shape takes on `parallel`'s mesh;
// `timed_on`: which model and device, for the report.
std::vector<double> device_model_seconds(const DeviceModel& device, const Parallel& parallel,
                                         const std::vector<MicroBatchShape>& shapes, std::string& timed_on);

// The fit as the lines to put in the configuration, and the held-out error
// when there is one.
void print_calibration(const Calibration& c, const HeldOutError& held, const std::string& timed_on, std::ostream& out);
std::string calibration_json(const Calibration& c, const HeldOutError& held);

}  // namespace msd
