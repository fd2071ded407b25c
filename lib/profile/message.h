// The message a loader sends the planner with its sources' profiles
// (kTagProfile, at most once a second; docs/wire.md). It lives with the
// profiles rather than in transport/wire.h, so that the wire stays below the
// planning math: wire.h knows how to lay out fields, this file knows which.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "plan/pool/profile.h"
#include "transport/wire.h"

namespace msd {

struct ProfileMessage {
  std::vector<std::pair<uint32_t, SourceProfile>> sources;  // (source id, profile)
};
inline auto wire_fields(SourceProfile& p) {
  return std::tie(p.read_seconds_per_sample, p.transform_seconds_per_sample, p.bytes_per_sample, p.open_bytes,
                  p.samples_measured, p.positions_per_sample, p.shared_bytes, p.patches_per_sample);
}
inline auto wire_fields(ProfileMessage& m) { return std::tie(m.sources); }

std::vector<uint8_t> encode(const ProfileMessage& m);
// Throws ProtocolError on a short, long or malformed message.
ProfileMessage decode_profile(std::span<const uint8_t> bytes);

}  // namespace msd
