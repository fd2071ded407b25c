#include "common/digest.h"

#include <cstring>

namespace msd {

void Digest::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += bytes;
  while (bytes >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    state_ = mix64(state_ ^ word) + 0x9e3779b97f4a7c15ULL;
    p += 8;
    bytes -= 8;
  }
  if (bytes > 0) {
    uint64_t word = 0;
    std::memcpy(&word, p, bytes);
    state_ = mix64(state_ ^ word ^ (uint64_t{bytes} << 56)) + 0x9e3779b97f4a7c15ULL;
  }
}

void Digest::update_u64(uint64_t value) { update(&value, sizeof value); }

uint64_t Digest::value() const { return mix64(state_ ^ length_); }

std::string hex64(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = digits[value & 15];
  return out;
}

std::string Digest::hex() const { return hex64(value()); }

}  // namespace msd
