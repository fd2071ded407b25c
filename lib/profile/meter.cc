#include "profile/meter.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace msd {

ProfileMeter::ProfileMeter(size_t sources, uint64_t horizon_samples)
    : horizon_(std::max<uint64_t>(horizon_samples, 1)), profiles_(sources) {}

void ProfileMeter::add(uint32_t source, uint64_t samples, double read_seconds, double transform_thread_seconds,
                       double bytes, double positions, double patches) {
  MSD_CHECK(source < profiles_.size());
  if (samples == 0) return;
  SourceProfile& p = profiles_[source];
  p.samples_measured += samples;
  const double n = static_cast<double>(samples);
  const double weight = std::min(1.0, n / static_cast<double>(std::min(p.samples_measured, horizon_)));
  p.read_seconds_per_sample += weight * (read_seconds / n - p.read_seconds_per_sample);
  p.transform_seconds_per_sample += weight * (transform_thread_seconds / n - p.transform_seconds_per_sample);
  p.bytes_per_sample += weight * (bytes / n - p.bytes_per_sample);
  p.positions_per_sample += weight * (positions / n - p.positions_per_sample);
  p.patches_per_sample += weight * (patches / n - p.patches_per_sample);
}

void ProfileMeter::set_open_bytes(uint32_t source, double bytes, double shared_bytes) {
  MSD_CHECK(source < profiles_.size());
  profiles_[source].open_bytes = bytes;
  profiles_[source].shared_bytes = shared_bytes;
}

double transform_thread_seconds(double transform_wall_seconds, unsigned threads, uint64_t samples) {
  const uint64_t used = std::min<uint64_t>(std::max(threads, 1u), std::max<uint64_t>(samples, 1));
  return transform_wall_seconds * static_cast<double>(used);
}

void read_measured(WorkerPool& pool, unsigned threads, std::span<double> read_seconds,
                   const std::function<void(size_t)>& read) {
  using Clock = std::chrono::steady_clock;
  auto timed = [&](size_t, size_t i) {
    const auto start = Clock::now();
    read(i);
    read_seconds[i] = std::chrono::duration<double>(Clock::now() - start).count();
  };
  const size_t helpers = std::min<size_t>(std::max(threads, 1u), std::max<size_t>(read_seconds.size(), 1)) - 1;
  if (helpers == 0) {
    for (size_t i = 0; i < read_seconds.size(); ++i) timed(0, i);
    return;
  }
  pool.grow(helpers);
  pool.run(helpers, read_seconds.size(), timed);
}

double open_bytes(const Source& source, const Tokenizer* tokenizer, const SampleTransform& transform) {
  return static_cast<double>(source.state_bytes()) + shared_open_bytes(source, tokenizer, transform);
}

double shared_open_bytes(const Source& source, const Tokenizer* tokenizer, const SampleTransform& transform) {
  double bytes = 0.0;
  if (source.kind() != SampleKind::tokens && tokenizer != nullptr) bytes += static_cast<double>(tokenizer->state_bytes());
  if (source.kind() == SampleKind::image_text) bytes += static_cast<double>(transform.state_bytes());
  return bytes;
}

void transform_measured(SampleTransform& transform, std::span<const RawSample* const> raws,
                        std::span<const uint32_t> sources, std::span<const double> read_seconds,
                        std::span<TransformedSample* const> outs, std::span<BadKind> verdicts,
                        std::span<std::string> reasons, unsigned threads,
                        const std::function<uint64_t(const TransformedSample&)>& slot_bytes, ProfileMeter& meter) {
  MSD_CHECK(sources.size() == raws.size() && read_seconds.size() == raws.size() && outs.size() == raws.size());
  MSD_CHECK(verdicts.size() == raws.size() && reasons.size() == raws.size());
  using Clock = std::chrono::steady_clock;
  std::vector<uint32_t> order(sources.begin(), sources.end());
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  std::vector<const RawSample*> group_raws;
  std::vector<TransformedSample*> group_outs;
  std::vector<size_t> members;
  for (const uint32_t source : order) {
    members.clear();
    group_raws.clear();
    group_outs.clear();
    double read = 0.0;
    for (size_t i = 0; i < raws.size(); ++i) {
      if (sources[i] != source) continue;
      members.push_back(i);
      group_raws.push_back(raws[i]);
      group_outs.push_back(outs[i]);
      read += read_seconds[i];
    }
    std::vector<BadKind> group_verdicts(members.size());
    std::vector<std::string> group_reasons(members.size());
    const auto start = Clock::now();
    transform.apply_batch(group_raws, group_outs, group_verdicts, group_reasons, threads);
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    double bytes = 0.0, positions = 0.0, patches = 0.0;
    for (size_t k = 0; k < members.size(); ++k) {
      const size_t i = members[k];
      verdicts[i] = group_verdicts[k];
      // apply_batch leaves a good sample's reason alone; so does this.
      if (verdicts[i] != BadKind::none) reasons[i] = std::move(group_reasons[k]);
      if (verdicts[i] != BadKind::none) continue;
      bytes += static_cast<double>(slot_bytes(*outs[i]));
      positions += outs[i]->positions();
      patches += outs[i]->image.patches;
    }
    meter.add(source, members.size(), read, transform_thread_seconds(wall, threads, members.size()), bytes, positions,
              patches);
  }
}

}  // namespace msd
