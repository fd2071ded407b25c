// The outlier hold (job.hold_above, job.hold_steps; docs/cost-and-balance.md
// "Outlier delay"): a document longer than a threshold is not placed in the
// step whose stream took it but waits, at most K steps, until enough such
// documents are waiting that every DP rank can take one; the run's last step
// delivers whatever still waits. Every document is delivered exactly once.
// It decides from metadata only (lengths, stream positions), so the batch
// stream stays a pure function of (configuration, seed, step). The planner,
// msd-replay and place_run (msd-plan place, simulate) all hold through this
// class. MPI-free; its state is plain data (held()), which the planner's
// checkpoint records.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/step/pack.h"

namespace msd {

// A document in the hold: where the stream took it (source, cursor: its
// identity), what the placement needs of it, and the step that took it.
struct HeldDoc {
  uint32_t source = 0;
  uint64_t cursor = 0;
  uint32_t positions = 0;
  uint32_t patches = 0;
  uint64_t since = 0;
  bool operator==(const HeldDoc&) const = default;
};

// Not thread-safe. Deterministic: a step's decision depends on the
// arrivals' (source, cursor, positions, patches), not on their order.
class OutlierHold {
 public:
  explicit OutlierHold(HoldOptions options = {});

  struct Decision {
    std::vector<bool> held;          // per arrival, in the order given: it waits
    std::vector<HeldDoc> released;   // documents of earlier steps delivered now, oldest first
  };
  // Step `step` took `arrivals` (their `since` is ignored; (source, cursor)
  // unique). The arrivals over the threshold join the waiting ones; then the
  // step releases every waiting document at step >= last_step, else those
  // that waited max_steps, then the oldest `release` while that many wait.
  // An arrival released at once is not held. REQUIRES steps in increasing
  // order.
  Decision step(uint64_t step, std::span<const HeldDoc> arrivals);

  // The token-exact steps of a comparison (compared_steps.h) take their
  // documents one by one: step(step, {}) first releases, then each document
  // the step's stream reaches joins here. True when `doc` waits (over the
  // threshold, before last_step; its `since` is set to `step`), false when
  // the step places it. A document that joins waits at least one step.
  // REQUIRES steps in increasing order.
  bool join(uint64_t step, const HeldDoc& doc);
  // The oldest waiting document, delivered now: a comparison's stream ran
  // out before the hold released it. REQUIRES held() not empty.
  HeldDoc release_oldest();

  // The waiting documents, oldest first (by since, then source and cursor).
  const std::vector<HeldDoc>& held() const { return held_; }
  // Continues from a state held() returned (a checkpoint's).
  void restore(std::vector<HeldDoc> held) { held_ = std::move(held); }
  const HoldOptions& options() const { return options_; }

 private:
  HoldOptions options_;
  std::vector<HeldDoc> held_;
};

// The delays of the documents a run held: how many, and over how many
// steps each waited (histogram[d]: documents delivered d steps late).
struct HoldStats {
  uint64_t held = 0;
  uint64_t delay_sum = 0;
  uint64_t max_delay = 0;
  std::vector<uint64_t> histogram;
  void add(uint64_t step, const std::vector<HeldDoc>& released);
  double mean_delay() const { return held > 0 ? static_cast<double>(delay_sum) / static_cast<double>(held) : 0.0; }
};

// A run of steps through the hold (place_run's): steps[t] holds step t's
// documents in arrival order, ids unique over the run. Returns each step's
// documents as delivered: its own that do not wait, in order, then those it
// releases, oldest first; every document lands in exactly one step (the
// last releases what still waits). `stats`, when given, gains the delays.
std::vector<std::vector<PlanDoc>> hold_run(const std::vector<std::vector<PlanDoc>>& steps, HoldOptions options,
                                           HoldStats* stats = nullptr);

}  // namespace msd
