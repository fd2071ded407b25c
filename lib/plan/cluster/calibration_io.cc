#include "plan/cluster/calibration_io.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "common/json_writer.h"
#include "plan/cluster/device_model.h"
#include "source/jsonl/json.h"

namespace msd {
namespace {

// One micro-batch shape from a probe_json line: {"sequences":[{"segments":
// [...],"patches":[...],"padding":N},...]}.
MicroBatchShape parse_shape(const std::string& line, const std::string& where) {
  JsonValue value;
  const JsonStatus status = parse_json(line, value);
  if (!status.ok) throw ConfigError(str(where, ": not JSON (", status.message, " at byte ", status.offset, ")"));
  const JsonValue* sequences = value.type == JsonType::object ? value.find("sequences") : nullptr;
  if (!sequences || sequences->type != JsonType::array)
    throw ConfigError(where + ": expected an object with a \"sequences\" array");
  auto count = [&](const JsonValue& v, const char* what) {
    if (v.type != JsonType::number || v.number < 0 || v.number > 1e9 || v.number != std::floor(v.number))
      throw ConfigError(str(where, ": ", what, " must be a whole number of positions"));
    return static_cast<uint32_t>(v.number);
  };
  MicroBatchShape shape;
  for (const JsonValue& item : sequences->array) {
    SequenceShape sequence;
    const JsonValue* segments = item.type == JsonType::object ? item.find("segments") : nullptr;
    const JsonValue* patches = item.type == JsonType::object ? item.find("patches") : nullptr;
    const JsonValue* padding = item.type == JsonType::object ? item.find("padding") : nullptr;
    if (!segments || segments->type != JsonType::array)
      throw ConfigError(where + ": a sequence needs a \"segments\" array");
    for (const JsonValue& v : segments->array) sequence.segments.push_back(count(v, "a segment"));
    if (patches && patches->type == JsonType::array)
      for (const JsonValue& v : patches->array) sequence.patches.push_back(count(v, "patches"));
    sequence.patches.resize(sequence.segments.size(), 0);
    sequence.padding = padding ? count(*padding, "padding") : 0;
    shape.push_back(std::move(sequence));
  }
  return shape;
}

}  // namespace

// Seconds, one per line ('#' starts a comment), from `path`.
std::vector<double> read_times(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw ConfigError(option + ": cannot open " + path);
  std::vector<double> seconds;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    size_t used = 0;
    double value = 0.0;
    try {
      value = std::stod(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || line.find_first_not_of(" \t\r", used) != std::string::npos || !(value > 0.0))
      throw ConfigError(str(path, ":", number, ": '", line, "' is not a time in seconds > 0"));
    seconds.push_back(value);
  }
  return seconds;
}

// Micro-batch shapes, one JSON object a line, from `path` (`option` names it in errors).
std::vector<MicroBatchShape> read_shapes(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw ConfigError(option + ": cannot open " + path);
  std::vector<MicroBatchShape> shapes;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number)
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      shapes.push_back(parse_shape(line, str(option, " ", path, ":", number)));
  return shapes;
}

void write_shapes(const std::string& path, const std::vector<MicroBatchShape>& shapes, const std::string& option) {
  std::ofstream out(path);
  for (const MicroBatchShape& shape : shapes) out << probe_json(shape) << '\n';
  if (!out) throw IoError(option + ": cannot write " + path);
}

std::vector<double> device_model_seconds(const DeviceModel& device, const Parallel& parallel,
                                         const std::vector<MicroBatchShape>& shapes, std::string& timed_on) {
  std::vector<double> seconds;
  for (const MicroBatchShape& shape : shapes) seconds.push_back(micro_batch_seconds(device, parallel, shape));
  timed_on = "the device model (" + device.model.name + " on " + device.device.name + ")";
  return seconds;
}

void print_calibration(const Calibration& c, const HeldOutError& held, const std::string& timed_on, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-plan calibrate: %llu probe micro-batches timed on %s\n"
                "fit: seconds = %.4g + %.4g * (a*L + L^2 + vision_scale*V) per micro-batch; R^2 %.5f, largest "
                "error %.2f%%\n"
                "put in the configuration:\n[model]\ncost_a = %.6g\ncost_micro_batch = %.6g\n",
                static_cast<unsigned long long>(c.probes), timed_on.c_str(), c.overhead_seconds, c.seconds_per_unit,
                c.r_squared, 100 * c.max_relative_error, c.a, micro_batch_units(c));
  out << line;
  // model.cost_vision_scale = 0 means "derive it", not "patches cost no more than text".
  if (c.vision_scale > 0.0)
    out << "cost_vision_scale = " << c.vision_scale << '\n';
  else
    out << "# the times show no vision-tower cost beyond text; cost_vision_scale has no value for that (0 derives it)\n";
  if (held.micro_batches == 0) return;
  std::snprintf(line, sizeof line, "# held out: %llu micro-batches, median error %.2f%%, 90th percentile %.2f%%\n",
                static_cast<unsigned long long>(held.micro_batches), 100 * held.median_abs_error,
                100 * held.p90_abs_error);
  out << line;
}

std::string calibration_json(const Calibration& c, const HeldOutError& held) {
  JsonWriter w;
  w.begin_object().value("probes", c.probes).value("cost_a", c.a).value("cost_vision_scale", c.vision_scale);
  w.value("seconds_per_unit", c.seconds_per_unit).value("overhead_seconds", c.overhead_seconds);
  w.value("cost_micro_batch", micro_batch_units(c));
  w.value("r_squared", c.r_squared).value("max_relative_error", c.max_relative_error);
  if (held.micro_batches > 0) {
    w.value("held_out_micro_batches", held.micro_batches);
    w.value("median_abs_error", held.median_abs_error).value("p90_abs_error", held.p90_abs_error);
  }
  w.end_object();
  return w.str();
}

}  // namespace msd
