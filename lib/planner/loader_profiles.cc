#include "planner/loader_profiles.h"

#include "common/error.h"

namespace msd {

std::vector<SourceProfile> LoaderProfiles::average(size_t sources) const {
  std::vector<SourceProfile> out(sources);
  std::vector<uint64_t> opened(sources, 0);
  for (const auto& [rank, reported] : latest_) {
    for (const auto& [source, p] : reported) {
      if (source >= out.size()) throw ProtocolError(str("loader rank ", rank, " reported a profile of source ", source));
      SourceProfile& sum = out[source];
      const double n = static_cast<double>(p.samples_measured);
      sum.read_seconds_per_sample += n * p.read_seconds_per_sample;
      sum.transform_seconds_per_sample += n * p.transform_seconds_per_sample;
      sum.bytes_per_sample += n * p.bytes_per_sample;
      sum.positions_per_sample += n * p.positions_per_sample;
      sum.patches_per_sample += n * p.patches_per_sample;
      sum.samples_measured += p.samples_measured;
      sum.open_bytes += p.open_bytes;
      sum.shared_bytes += p.shared_bytes;
      ++opened[source];
    }
  }
  for (size_t s = 0; s < out.size(); ++s) {
    const double n = static_cast<double>(out[s].samples_measured);
    if (n > 0) {
      out[s].read_seconds_per_sample /= n;
      out[s].transform_seconds_per_sample /= n;
      out[s].bytes_per_sample /= n;
      out[s].positions_per_sample /= n;
      out[s].patches_per_sample /= n;
    }
    if (opened[s] > 0) {
      out[s].open_bytes /= static_cast<double>(opened[s]);
      out[s].shared_bytes /= static_cast<double>(opened[s]);
    }
  }
  return out;
}

}  // namespace msd
