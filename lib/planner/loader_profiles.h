// What each source costs a loader, as the loaders report it (kTagProfile, at
// most once a second per loader; docs/scaling.md "Profiles"). No MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "plan/pool/profile.h"

namespace msd {

class LoaderProfiles {
 public:
  using Report = std::vector<std::pair<uint32_t, SourceProfile>>;  // (source, profile)

  // `rank`'s latest report replaces its previous one.
  void record(int rank, Report report) { latest_[rank] = std::move(report); }
  // Per source of `sources`: the mean over the loaders serving it weighted by
  // the samples each measured (open_bytes, shared_bytes: over those that
  // opened it); samples_measured is their sum. All zero before any report.
  // A report of a source past `sources` is a ProtocolError.
  std::vector<SourceProfile> average(size_t sources) const;

 private:
  std::map<int, Report> latest_;  // by loader rank
};

}  // namespace msd
