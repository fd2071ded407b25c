// mix(schedule): per-source weights as a function of the step, and integer
// per-step quotas whose running totals track the weights exactly
// (largest remainder), so the realized mix never drifts.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "msd/options.h"

namespace msd {

// Per-source weight curves over steps. Immutable; thread-safe to share.
//
//   constant:  the first point's weight, at every step.
//   piecewise: a point's weight holds from its step until the next point's;
//              before the first point, the first point's weight.
//   linear:    interpolated between consecutive points; before the first
//              point the first weight, after the last the last weight.
class Schedule {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  // One weight curve per source (SourceConfig::weight). Throws ConfigError for
  // no source, or a curve that is empty, negative, not strictly increasing in
  // step, or zero for all sources at some step.
  Schedule(ScheduleKind kind, std::vector<std::vector<WeightPoint>> curves);

  size_t sources() const { return curves_.size(); }
  ScheduleKind kind() const { return kind_; }
  // Normalized weights at `step` (they sum to 1).
  std::vector<double> weights(uint64_t step) const;
  // The first step after `step` whose weights may differ from those at `step`
  // (kNever if none): weights(u) == weights(step) for every u in
  // [step, next_change(step)). Lets callers skip over constant stretches.
  uint64_t next_change(uint64_t step) const;

 private:
  double raw(size_t source, uint64_t step) const;
  ScheduleKind kind_;
  std::vector<std::vector<WeightPoint>> curves_;
};

// Quotas step after step. Deterministic: the quotas of step t are a pure
// function of (schedule, batch, t). Not thread-safe.
//
// The running target of source s after step t is
//   T_s(t) = sum over u <= t of batch * w_s(u),
// held exactly in fixed point (units of 2^-32 samples, within t * 2^-32 of the
// real-valued sum; see mix.cc), and R_s(t) is the sum of its quotas. Each step
// first tries quotas of floor(batch * w_s) or one more (the fractions' whole
// sum going to the sources furthest behind), and takes them if they leave
// every source within one sample of its target; otherwise it uses largest
// remainder against the targets: floor(T_s(t) - R_s(t-1)) clamped at 0, the
// rest to the largest remainders (ties: lower index). Guarantees, for every
// source and step:
//   * R_s(t) - T_s(t) < 1: no source is ever a whole sample ahead.
//   * T_s(t) - R_s(t) < 1 whenever no source starts the step ahead by more
//     than its increment batch * w_s(t) (so always when batch * w_s >= 1 for
//     every source). Otherwise quotas, which are never negative, cannot take
//     back what such a source holds: clamping may hand out more than the batch,
//     the excess is taken back from the sources that would end furthest ahead,
//     and a source can end behind by more than one sample — by less than the
//     sum of the others' leads, so always T_s(t) - R_s(t) < max(1, sources() - 1)
//     (tested; e.g. sources dropping to weight 0 while ahead).
//   * Each quota is within 1 of batch * w_s(t) whenever the first choice is
//     taken (in tests: at every step while the weights are constant), and
//     within 2 whenever both errors above are below 1.
class Mixer {
 public:
  // `batch` >= 1: samples per step.
  Mixer(Schedule schedule, uint32_t batch);

  // Quotas of the next step (steps are consumed in order: 0, 1, 2, ...). Every
  // quota is >= 0 and they sum to `batch`.
  std::vector<uint32_t> next();

  // Puts the mixer where it was after steps [0, step): the realized totals are
  // the checkpointed ones, the targets are recomputed from the schedule (in
  // O(stretches of constant weights + steps on linear ramps)). A restored
  // mixer then returns exactly the quotas the original did. Throws Error when
  // `realized` cannot come from this schedule and batch (wrong size, wrong
  // sum, or a source a whole sample ahead of its target).
  void restore(uint64_t step, const std::vector<uint64_t>& realized);
  // The same for a mixer whose targets restarted at `origin_step` from
  // `origin`, each source's realized total there (a resume that changed the
  // mix, docs/checkpoint.md "Resume with a changed mixture": no source starts
  // the new weights ahead or behind): T_s(t) = origin_s + the targets'
  // increments over steps [origin_step, t]. The realized totals then sum to
  // the origin's plus batch per step since. An empty `origin` with
  // origin_step 0 is restore(step, realized).
  void restore(uint64_t step, const std::vector<uint64_t>& realized, uint64_t origin_step,
               const std::vector<uint64_t>& origin);

  uint64_t step() const { return step_; }  // the step next() returns next
  // Running targets T_s(step() - 1), in samples (rounded from the exact state).
  const std::vector<double>& target() const { return target_; }
  const std::vector<uint64_t>& realized() const { return realized_; }  // running totals
  const Schedule& schedule() const { return schedule_; }
  uint32_t batch() const { return batch_; }

 private:
  // Target increments of `step` in fixed-point units; they sum to batch exactly.
  std::vector<uint64_t> increments(uint64_t step) const;
  std::vector<__int128> near_increment_quotas(const std::vector<uint64_t>& increment,
                                              const std::vector<__int128>& deficit) const;
  std::vector<__int128> largest_remainder_quotas(const std::vector<__int128>& deficit) const;
  void update_target_samples();

  Schedule schedule_;
  uint32_t batch_;
  uint64_t step_ = 0;
  std::vector<__int128> target_units_;  // exact T_s, in units of 2^-32 samples
  std::vector<double> target_;
  std::vector<uint64_t> realized_;
};

}  // namespace msd
