// Online scaling (topology.scaling = online): which loader ranks to move
// from one source to another while the job runs, so the loader pool follows
// the mix. A pure function of what the planner knows at a step: the current
// assignment, what a sample of each source costs (SourceProfile), the
// schedule's weights now and a few steps ahead, and how far each source's
// loaders are behind. No MPI, no clock: unit-testable (docs/scaling.md,
// "Online scaling").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/pool/profile.h"

namespace msd {

enum class MoveReason : uint8_t {
  proactive = 0,  // the schedule and the profiles call for it (a weight rises within the lookahead)
  reactive = 1,   // a source's loaders fall behind (backlog) more than the profiles predicted
};
const char* move_reason_name(MoveReason why);

// One loader as the policy sees it.
struct ScalingLoader {
  std::vector<uint32_t> sources;  // the sources it serves now
  bool movable = true;            // false: a shadow that took over, or a loader mid-move
  unsigned threads = 1;           // its threads: they share its reads and its transforms
};

struct ScalingInput {
  std::vector<ScalingLoader> loaders;
  std::vector<SourceProfile> profiles;  // per source; samples_measured == 0: not known yet
  std::vector<double> weights_now;      // normalized schedule weights at the next step to plan
  std::vector<double> weights_ahead;    // ... at that step + the lookahead
  // Per source: requests its loaders have not answered, in steps of the
  // source's current quota (0 when the loaders keep up).
  std::vector<double> backlog_steps;
  uint64_t steps_since_last_move = UINT64_MAX;  // since the last move started
};

struct ScalingOptions {
  // No move within this many steps of the previous one (topology.scaling_interval_steps).
  uint64_t min_interval_steps = 4;
  // A move must lower the busiest loader's load by at least this fraction:
  // small gains are not worth a drain and a reopen, and two sources of
  // similar demand never trade a loader back and forth.
  double min_gain = 0.15;
  // A source whose backlog exceeds this many steps of its quota counts as
  // under-served by that factor in the reactive pass.
  double backlog_threshold_steps = 1.0;
};

// A loader (index into ScalingInput::loaders) stops serving `from` and starts
// serving `to`.
struct LoaderMove {
  size_t loader = 0;
  uint32_t from = 0;
  uint32_t to = 0;
  MoveReason why = MoveReason::proactive;
  bool operator==(const LoaderMove&) const = default;
};

// The moves to start now (often none). A loader's load is the sum, over the
// sources it serves, of weight x its seconds per sample on the loader's
// threads (SourceProfile::seconds_on: read and transform spread over the
// threads) / loaders of that source, with weight = max(now,
// ahead): a source whose weight will rise is served
// for its coming share before the rise, and one whose weight will fall keeps
// its loaders until it has fallen. Moves are taken greedily, each the one
// that lowers the busiest loader's load most, while each lowers it by
// min_gain; every source keeps at least one loader. When that finds none
// and some source's backlog exceeds backlog_threshold_steps, the same search
// runs with that source's demand scaled by its backlog (reactive). Sources
// not yet measured cost the mean of the measured ones (1 s when none is:
// then only weights and threads decide).
std::vector<LoaderMove> plan_moves(const ScalingInput& input, const ScalingOptions& options = {});

// Loaders per source for `loaders` loaders, in the proportions of
// `counts` (each source at least one when loaders >= sources, largest
// remainder): how a recorded assignment carries over to another pool size.
std::vector<size_t> rescale_counts(const std::vector<size_t>& counts, size_t loaders);

}  // namespace msd
