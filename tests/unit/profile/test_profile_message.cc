#include <catch2/catch.hpp>

#include "common/error.h"
#include "profile/message.h"

using namespace msd;

TEST_CASE("profile round trip, little-endian, and its truncation") {
  ProfileMessage m;
  SourceProfile p;
  p.read_seconds_per_sample = 1.5e-4;
  p.transform_seconds_per_sample = 2.5e-5;
  p.bytes_per_sample = 2048.25;
  p.open_bytes = 1 << 20;
  p.samples_measured = 0x0102030405060708ULL;
  p.positions_per_sample = 700.5;
  p.shared_bytes = 4096;
  p.patches_per_sample = 640.25;
  m.sources = {{3, p}, {0, SourceProfile{}}};
  const auto bytes = encode(m);
  REQUIRE(bytes.size() == 1 + 4 + 2 * 68);
  CHECK(bytes[1] == 2);  // count, low byte first
  CHECK(bytes[5] == 3);  // first source id
  CHECK(bytes[5 + 4 + 32] == 0x08);  // samples_measured, low byte first
  const ProfileMessage back = decode_profile(bytes);
  REQUIRE(back.sources.size() == 2);
  CHECK(back.sources[0].first == 3);
  CHECK(back.sources[0].second.read_seconds_per_sample == p.read_seconds_per_sample);
  CHECK(back.sources[0].second.transform_seconds_per_sample == p.transform_seconds_per_sample);
  CHECK(back.sources[0].second.bytes_per_sample == p.bytes_per_sample);
  CHECK(back.sources[0].second.open_bytes == p.open_bytes);
  CHECK(back.sources[0].second.samples_measured == p.samples_measured);
  CHECK(back.sources[0].second.positions_per_sample == p.positions_per_sample);
  CHECK(back.sources[0].second.shared_bytes == p.shared_bytes);
  CHECK(back.sources[0].second.patches_per_sample == p.patches_per_sample);
  auto cut = bytes;
  cut.pop_back();
  CHECK_THROWS_AS(decode_profile(cut), ProtocolError);
}
