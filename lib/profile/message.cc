#include "profile/message.h"

namespace msd {

std::vector<uint8_t> encode(const ProfileMessage& m) { return encode_fields(m); }

ProfileMessage decode_profile(std::span<const uint8_t> bytes) {
  ProfileMessage m;
  decode_fields(bytes, "profile", m);
  return m;
}

}  // namespace msd
