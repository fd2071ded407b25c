#include "fuzz/mutator.h"

#include <algorithm>
#include <cstring>

namespace msd::fuzz {

namespace {

constexpr unsigned char kInterestingBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '\n', '"', '\\', '=', '[', ' ', '0', '9'};
constexpr int64_t kInterestingValues[] = {0, 1, -1, 2, 255, 256, 0x7fff, 0x8000, 0xffff, 0x7fffffff, -0x80000000ll,
                                          0xffffffffll, 0x100000000ll, 0x7fffffffffffffffll};
constexpr const char* kInterestingNumbers[] = {"0", "-1", "1", "4294967295", "4294967296", "2147483648",
                                               "99999999999999999999999", "77777777777", "1e308", "-0", "nan"};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Bytes Mutator::mutate(const Bytes& input, std::span<const Bytes> donors) {
  Bytes data = input;
  const int rounds = 1 + static_cast<int>(rng_.below(4));
  for (int i = 0; i < rounds || (data == input && !input.empty() && i < 16); ++i) mutate_once(data, donors);
  return data;
}

void Mutator::mutate_once(Bytes& data, std::span<const Bytes> donors) {
  if (data.empty()) return insert(data);
  switch (rng_.below(10)) {
    case 0: case 1: return flip_bits(data);
    case 2: return set_byte(data);
    case 3: return truncate(data);
    case 4: return insert(data);
    case 5: return erase(data);
    case 6: return splice(data, donors);
    case 7: case 8: return tweak_length_field(data);
    default: return rewrite_number(data);
  }
}

size_t Mutator::position(const Bytes& data) {
  // Half the time within the first 1 KiB: headers, magic numbers, counts.
  const size_t span = rng_.chance(0.5) ? std::min<size_t>(data.size(), 1024) : data.size();
  return rng_.below(span);
}

void Mutator::flip_bits(Bytes& data) {
  for (uint64_t n = 1 + rng_.below(4); n > 0; --n) data[position(data)] ^= static_cast<char>(1u << rng_.below(8));
}

void Mutator::set_byte(Bytes& data) {
  const unsigned char value = rng_.chance(0.7) ? kInterestingBytes[rng_.below(std::size(kInterestingBytes))]
                                               : static_cast<unsigned char>(rng_.below(256));
  data[position(data)] = static_cast<char>(value);
}

void Mutator::truncate(Bytes& data) { data.resize(rng_.below(data.size())); }

void Mutator::insert(Bytes& data) {
  const size_t at = data.empty() ? 0 : rng_.below(data.size() + 1);
  Bytes chunk;
  if (!data.empty() && rng_.chance(0.5)) {  // repeat a piece of the input itself
    const size_t from = rng_.below(data.size());
    chunk = data.substr(from, 1 + rng_.below(std::min<size_t>(64, data.size() - from)));
  } else {
    for (uint64_t n = 1 + rng_.below(16); n > 0; --n) chunk += static_cast<char>(rng_.below(256));
  }
  data.insert(at, chunk);
}

void Mutator::erase(Bytes& data) {
  const size_t at = rng_.below(data.size());
  data.erase(at, 1 + rng_.below(std::min<size_t>(512, data.size() - at)));
}

void Mutator::splice(Bytes& data, std::span<const Bytes> donors) {
  if (donors.empty()) return insert(data);
  const Bytes& donor = donors[rng_.below(donors.size())];
  if (donor.empty()) return erase(data);
  const size_t from = rng_.below(donor.size());
  const size_t bytes = 1 + rng_.below(std::min<size_t>(1024, donor.size() - from));
  const size_t at = rng_.below(data.size());
  if (rng_.chance(0.5)) {
    data.replace(at, std::min(bytes, data.size() - at), donor, from, bytes);
  } else {
    data = data.substr(0, at) + donor.substr(from);  // this input's head, the donor's tail
  }
}

void Mutator::tweak_length_field(Bytes& data) {
  const size_t width = rng_.chance(0.5) ? 8 : 4;
  if (data.size() < width) return flip_bits(data);
  const size_t at = rng_.below(data.size() - width + 1) / width * width;
  int64_t value = 0;
  std::memcpy(&value, data.data() + at, width);  // little-endian host
  if (rng_.chance(0.5)) {
    value += rng_.between(-16, 16);
  } else {
    value = kInterestingValues[rng_.below(std::size(kInterestingValues))];
  }
  std::memcpy(data.data() + at, &value, width);
}

// Rewrites a run of digits (decimal or octal text) with a boundary value.
void Mutator::rewrite_number(Bytes& data) {
  size_t at = position(data);
  while (at < data.size() && !is_digit(data[at])) ++at;
  if (at == data.size()) return set_byte(data);
  size_t end = at;
  while (end < data.size() && is_digit(data[end])) ++end;
  Bytes number = kInterestingNumbers[rng_.below(std::size(kInterestingNumbers))];
  if (rng_.chance(0.3)) number.resize(std::min(number.size(), end - at), '0');  // keep fixed-width fields aligned
  data.replace(at, end - at, number);
}

}  // namespace msd::fuzz
