// What one source costs a loader: measured by the loaders while they serve
// (moving averages, reported to the planner) or offline by `msd-plan
// profile`, and used to size the loader pool (partition, online scaling).
// docs/scaling.md "Profiles" says how each number is measured.
#pragma once

#include <cstdint>

namespace msd {

struct SourceProfile {
  double seconds_per_sample = 0.0;  // read + transform of one sample, on one thread
  double bytes_per_sample = 0.0;    // transformed bytes placed in the window
  double open_bytes = 0.0;          // memory of the open source: index, buffers, decoder, vocabulary
  uint64_t samples_measured = 0;    // how many samples the averages cover (0: not measured)
  double positions_per_sample = 0.0;  // sequence positions (tokens + patches) of one transformed sample
  double patches_per_sample = 0.0;    // of those positions, image patches (the vision tower's input)
  // Of open_bytes, what the sources of one loader share (the tokenizer; the
  // image decoders): a loader holds it once, for the source that needs most.
  double shared_bytes = 0.0;
};

}  // namespace msd
