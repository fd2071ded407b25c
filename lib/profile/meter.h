// How profiles are measured, the one mechanism shared by the loaders (while
// they serve) and `msd-plan profile` (offline, profiler.h): a batch's samples
// are read on the loader's threads, then transformed together one source at a
// time on the same number of threads, and each source's moving averages take
// that batch's per-thread read and transform seconds, bytes and positions.
// docs/scaling.md "Profiles".
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/worker_pool.h"
#include "plan/pool/profile.h"
#include "source/source.h"
#include "transform/transform.h"

namespace msd {

// Moving averages of each source's cost. A batch of n samples moves an
// average by n / min(samples so far, horizon) of the way to the batch's mean:
// the plain mean until `horizon_samples` samples, then an exponential moving
// average that forgets with a time constant of about that many samples. Not
// thread-safe.
class ProfileMeter {
 public:
  static constexpr uint64_t kDefaultHorizon = 1024;
  explicit ProfileMeter(size_t sources = 0, uint64_t horizon_samples = kDefaultHorizon);

  // `samples` samples of `source` took `read_seconds` to read on the
  // loader's thread and `transform_thread_seconds` to transform on one
  // thread (transform_thread_seconds()), all of them together, placed
  // `bytes` bytes in the window and `positions` sequence positions,
  // `patches` of them image patches. REQUIRES source < sources(); nothing
  // for samples == 0.
  void add(uint32_t source, uint64_t samples, double read_seconds, double transform_thread_seconds, double bytes,
           double positions, double patches = 0.0);
  // The memory the open source holds now, and the part of it shared with
  // the loader's other sources (open_bytes(), shared_open_bytes()).
  void set_open_bytes(uint32_t source, double bytes, double shared_bytes = 0.0);

  size_t sources() const { return profiles_.size(); }
  const std::vector<SourceProfile>& profiles() const { return profiles_; }

 private:
  uint64_t horizon_;
  std::vector<SourceProfile> profiles_;
};

// One thread's seconds for transforming a batch of `samples` together in
// `transform_wall_seconds` on up to `threads` threads: wall x min(threads,
// samples). It charges every thread the batch could use, so an imperfect
// parallel speed-up shows as a higher cost per sample, never a lower one.
// (The reads before it are timed one by one on the thread that ran each,
// read_measured, and counted as they are timed.)
double transform_thread_seconds(double transform_wall_seconds, unsigned threads, uint64_t samples);

// Calls read(i) for every i in [0, read_seconds.size()) on up to `threads`
// threads (the calling thread and `pool`'s workers, started as needed), and
// sets read_seconds[i] to the wall time of read(i) on the thread that ran
// it: what one sample's read costs one thread, whatever the threads. read
// must be safe to call concurrently for distinct i (Source::read is).
// Throws what read throws (the first; the other reads are then unspecified)
// and Error when a worker cannot be started.
void read_measured(WorkerPool& pool, unsigned threads, std::span<double> read_seconds,
                   const std::function<void(size_t)>& read);

// The memory an open source costs its loader: the reader's state (index,
// buffers: Source::state_bytes), plus the tokenizer's vocabulary and scratch
// for a source with text or captions, plus the image decoders and their
// buffers for image-text.
double open_bytes(const Source& source, const Tokenizer* tokenizer, const SampleTransform& transform);
// The part of open_bytes a loader holds once for all its sources: the
// tokenizer's and the transform's bytes. What sources need is nested (pre-
// tokenized: none; text: the tokenizer; image-text: both), so a loader's
// memory is the sum of the rest plus the largest shared part.
double shared_open_bytes(const Source& source, const Tokenizer* tokenizer, const SampleTransform& transform);

// SampleTransform::apply_batch over a batch of samples of several sources,
// one call per source (outputs exactly as one call over the whole batch
// gives), timing each call and adding each source's samples to `meter`:
// their read seconds (`read_seconds[i]`, from the caller) and the call's
// wall time as transform_thread_seconds charges it; bytes from `slot_bytes` for a
// good sample, 0 for a bad one. `sources[i]` is raws[i]'s source. Spans of
// equal size; throws what apply_batch throws.
void transform_measured(SampleTransform& transform, std::span<const RawSample* const> raws,
                        std::span<const uint32_t> sources, std::span<const double> read_seconds,
                        std::span<TransformedSample* const> outs, std::span<BadKind> verdicts,
                        std::span<std::string> reasons, unsigned threads,
                        const std::function<uint64_t(const TransformedSample&)>& slot_bytes, ProfileMeter& meter);

}  // namespace msd
