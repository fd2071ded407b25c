// What one source costs a loader: measured by the loaders while they serve
// (moving averages, reported to the planner) or offline by `msd-plan
// profile`, and used to size the loader pool (partition, online scaling).
// docs/scaling.md "Profiles" says how each number is measured.
#pragma once

#include <cstdint>

namespace msd {

// A loader reads a batch's samples on its loader.threads threads and then
// transforms them on as many (lib/loader/loader.cc; every source format
// reads concurrently, source/source.h). Both parts are measured as what one
// sample costs one thread, and kept apart for the reader of a profile (a
// read-bound source behind storage latency, a decode-bound one): on `t`
// threads a sample takes (read + transform) / t of the loader's time
// (seconds_on).
struct SourceProfile {
  double read_seconds_per_sample = 0.0;       // read of one sample, on one thread (storage latency included)
  double transform_seconds_per_sample = 0.0;  // transform of one sample, on one thread
  double bytes_per_sample = 0.0;    // transformed bytes placed in the window
  double open_bytes = 0.0;          // memory of the open source: index, buffers, decoder, vocabulary
  uint64_t samples_measured = 0;    // how many samples the averages cover (0: not measured)
  double positions_per_sample = 0.0;  // sequence positions (tokens + patches) of one transformed sample
  double patches_per_sample = 0.0;    // of those positions, image patches (the vision tower's input)
  // Of open_bytes, what the sources of one loader share (the tokenizer; the
  // image decoders): a loader holds it once, for the source that needs most.
  double shared_bytes = 0.0;

  // Read + transform on one thread: the figure before the two were split.
  double seconds_per_sample() const { return read_seconds_per_sample + transform_seconds_per_sample; }
  // The loader's seconds per sample when it reads and transforms on
  // `threads` threads (at least 1): both spread over them.
  double seconds_on(unsigned threads) const {
    return seconds_per_sample() / static_cast<double>(threads > 0 ? threads : 1);
  }
};

}  // namespace msd
