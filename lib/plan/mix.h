// mix(schedule): per-source weights as a function of the step, and integer
// per-step quotas whose running totals track the weights exactly
// (largest remainder), so the realized mix never drifts.
#pragma once

#include <cstdint>
#include <vector>

#include "msd/config.h"

namespace msd {

class Schedule {
 public:
  // One weight curve per source (SourceConfig::weight). Throws ConfigError for
  // a curve that is empty, negative, not sorted by step, or zero for all
  // sources at some step.
  Schedule(ScheduleKind kind, std::vector<std::vector<WeightPoint>> curves);

  size_t sources() const { return curves_.size(); }
  // Normalized weights at `step` (they sum to 1).
  std::vector<double> weights(uint64_t step) const;

 private:
  double raw(size_t source, uint64_t step) const;
  ScheduleKind kind_;
  std::vector<std::vector<WeightPoint>> curves_;
};

// Quotas step after step. State (the running targets and realized totals) is
// small and is what a checkpoint saves.
class Mixer {
 public:
  Mixer(Schedule schedule, uint32_t batch);

  // Quotas of the next step (steps are consumed in order: 0, 1, 2, ...). Every
  // quota is >= 0, they sum to `batch`, and after every step the realized total
  // of each source differs from its running target by less than one sample.
  std::vector<uint32_t> next();

  uint64_t step() const { return step_; }  // the step next() returns next
  const std::vector<double>& target() const { return target_; }      // running targets
  const std::vector<uint64_t>& realized() const { return realized_; }  // running totals
  const Schedule& schedule() const { return schedule_; }

 private:
  Schedule schedule_;
  uint32_t batch_;
  uint64_t step_ = 0;
  std::vector<double> target_;
  std::vector<uint64_t> realized_;
};

}  // namespace msd
