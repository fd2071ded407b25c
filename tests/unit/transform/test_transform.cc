// SampleTransform: each sample kind's path, the bad-sample verdicts (invalid
// UTF-8, corrupt JPEG, empty) returned as values, and apply_batch giving
// exactly apply's results.
#include <turbojpeg.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/error.h"
#include "profile/meter.h"
#include "transform/transform.h"

namespace {

using msd::BadKind;
using msd::RawSample;
using msd::SampleKind;
using msd::SampleTransform;
using msd::TransformedSample;

std::string base64(std::string_view bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += alphabet[(v >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// A byte-level vocabulary without merges: every byte is its own token, so the
// ids of a text are its bytes, whatever the pre-tokenization pattern.
std::string write_byte_vocabulary() {
  const auto path =
      std::filesystem::temp_directory_path() / ("msd_test_transform_" + std::to_string(::getpid()) + ".tiktoken");
  std::ofstream out(path);
  for (int b = 0; b < 256; ++b) out << base64(std::string(1, static_cast<char>(b))) << ' ' << b << '\n';
  return path.string();
}

std::string small_jpeg(uint32_t width, uint32_t height) {
  std::vector<uint8_t> rgb(size_t{width} * height * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 13);
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, rgb.data(), static_cast<int>(width), 0, static_cast<int>(height), TJPF_RGB, &jpeg, &size,
                      TJSAMP_420, 90, 0) == 0);
  std::string out(reinterpret_cast<const char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(handle);
  return out;
}

std::vector<int32_t> bytes_of(std::string_view text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

}  // namespace

TEST_CASE("pre-tokenized samples pass through without a tokenizer", "[transform]") {
  SampleTransform transform(nullptr, msd::ImageOptions{});
  RawSample raw;
  raw.kind = SampleKind::tokens;
  raw.tokens = {5, 6, 7, 100000};
  TransformedSample out;
  std::string reason;
  REQUIRE(transform.apply(raw, out, reason) == BadKind::none);
  CHECK(out.kind == SampleKind::tokens);
  CHECK(out.tokens == raw.tokens);
  CHECK(out.image.patches == 0);
  CHECK(out.positions() == 4);

  raw.tokens.clear();
  CHECK(transform.apply(raw, out, reason) == BadKind::empty);
  CHECK_FALSE(reason.empty());
  CHECK(out.positions() == 0);
}

TEST_CASE("a sample the reader rejected keeps its verdict", "[transform]") {
  SampleTransform transform(nullptr, msd::ImageOptions{});
  RawSample raw;
  raw.kind = SampleKind::text;
  raw.bad = BadKind::missing_field;
  raw.reason = "no \"text\" field";
  TransformedSample out;
  std::string reason;
  CHECK(transform.apply(raw, out, reason) == BadKind::missing_field);
  CHECK(reason == raw.reason);
}

TEST_CASE("text and captions without a tokenizer are a configuration error", "[transform]") {
  SampleTransform transform(nullptr, msd::ImageOptions{});
  TransformedSample out;
  std::string reason;
  RawSample raw;
  raw.kind = SampleKind::text;
  raw.text = "hello";
  CHECK_THROWS_AS(transform.apply(raw, out, reason), msd::ConfigError);
  raw.kind = SampleKind::image_text;
  raw.image = small_jpeg(32, 32);
  CHECK_THROWS_WITH(transform.apply(raw, out, reason), Catch::Contains("tokenizer.vocab"));
}

TEST_CASE("text and image-text through a real tokenizer", "[transform]") {
  const std::string vocab = write_byte_vocabulary();
  msd::Tokenizer tokenizer(vocab, msd::TokenizerOptions{});
  SampleTransform transform(&tokenizer, msd::ImageOptions{64, 16});
  TransformedSample out;
  std::string reason;

  SECTION("text is tokenized") {
    RawSample raw;
    raw.kind = SampleKind::text;
    raw.text = "Grüße, world 123!";
    REQUIRE(transform.apply(raw, out, reason) == BadKind::none);
    CHECK(out.kind == SampleKind::text);
    CHECK(out.tokens == bytes_of(raw.text));
    CHECK(out.tokens == tokenizer.encode(raw.text));
    CHECK(out.positions() == raw.text.size());
  }
  SECTION("invalid UTF-8 is a bad sample naming the offset") {
    RawSample raw;
    raw.kind = SampleKind::text;
    raw.text = std::string("abc\xC3", 4) + "(";  // a lead byte without its continuation
    CHECK(transform.apply(raw, out, reason) == BadKind::invalid_utf8);
    CHECK_THAT(reason, Catch::Contains("byte 3"));
    raw.text = "ok\xED\xA0\x80";  // an encoded surrogate
    CHECK(transform.apply(raw, out, reason) == BadKind::invalid_utf8);
    CHECK_THAT(reason, Catch::Contains("byte 2"));
  }
  SECTION("empty text is an empty sample") {
    RawSample raw;
    raw.kind = SampleKind::text;
    CHECK(transform.apply(raw, out, reason) == BadKind::empty);
  }
  SECTION("image-text: patches and the caption's tokens, buffers reused") {
    RawSample raw;
    raw.kind = SampleKind::image_text;
    raw.text = "a cat";
    raw.image = small_jpeg(128, 64);
    REQUIRE(transform.apply(raw, out, reason) == BadKind::none);
    CHECK(out.kind == SampleKind::image_text);
    CHECK(out.image.width == 64);
    CHECK(out.image.height == 32);
    CHECK(out.image.patches == 8);
    CHECK(out.image.pixels.size() == 8u * 16 * 16 * 3);
    CHECK(out.tokens == bytes_of("a cat"));
    CHECK(out.positions() == 8 + 5);

    // A caption alone still has positions from its image.
    raw.text.clear();
    REQUIRE(transform.apply(raw, out, reason) == BadKind::none);
    CHECK(out.positions() == 8);

    raw.image = raw.image.substr(0, raw.image.size() / 2);
    raw.text = "a cut cat";
    CHECK(transform.apply(raw, out, reason) == BadKind::corrupt_jpeg);
    CHECK_FALSE(reason.empty());

    raw.image = "not a jpeg at all";
    CHECK(transform.apply(raw, out, reason) == BadKind::corrupt_jpeg);

    raw.image = small_jpeg(20, 20);
    raw.text = "bad \xFF caption";
    CHECK(transform.apply(raw, out, reason) == BadKind::invalid_utf8);
    CHECK_THAT(reason, Catch::Contains("caption"));

    // A text sample after an image one carries no stale image.
    RawSample text;
    text.kind = SampleKind::text;
    text.text = "hi";
    REQUIRE(transform.apply(text, out, reason) == BadKind::none);
    CHECK(out.image.patches == 0);
    CHECK(out.image.pixels.empty());
    CHECK(out.positions() == 2);
  }
  CHECK(transform.state_bytes() > 0);
  std::filesystem::remove(vocab);
}

namespace {

// Every field of the result, so that a difference says which.
void check_same(const TransformedSample& got, const TransformedSample& expected) {
  CHECK(got.kind == expected.kind);
  CHECK(got.tokens == expected.tokens);
  CHECK(got.image.width == expected.image.width);
  CHECK(got.image.height == expected.image.height);
  CHECK(got.image.source_width == expected.image.source_width);
  CHECK(got.image.source_height == expected.image.source_height);
  CHECK(got.image.patches == expected.image.patches);
  CHECK(got.image.decode_scale_num == expected.image.decode_scale_num);
  CHECK(got.image.decode_scale_denom == expected.image.decode_scale_denom);
  CHECK(got.image.decoded_width == expected.image.decoded_width);
  CHECK(got.image.decoded_height == expected.image.decoded_height);
  CHECK(got.image.pixels == expected.image.pixels);
}

// A shuffled mix of every path through the transform: text (short, long,
// multilingual), image-text, pre-tokenized, and each kind of bad sample.
std::vector<RawSample> mixed_samples() {
  std::mt19937 rng(17);
  const std::string jpeg = small_jpeg(96, 40);
  const std::vector<std::string> words = {"the ", "cat ", "Grüße ", "世界 ", "  ", "\n", "123 ", "don't ", "🙂 "};
  auto random_text = [&](size_t count) {
    std::string text;
    for (size_t k = 0; k < count; ++k) text += words[rng() % words.size()];
    return text;
  };
  std::vector<RawSample> samples;
  for (int i = 0; i < 120; ++i) {
    RawSample raw;
    switch (i % 10) {
      case 0:
      case 1:
      case 2:
        raw.kind = SampleKind::text;
        raw.text = random_text(i % 3 == 0 ? 2000 : rng() % 40);
        break;
      case 3:
        raw.kind = SampleKind::image_text;
        raw.text = random_text(rng() % 12);  // sometimes empty: the image still has positions
        raw.image = jpeg;
        break;
      case 4:
        raw.kind = SampleKind::tokens;
        raw.tokens.assign(rng() % 30, static_cast<int32_t>(i));  // sometimes empty
        break;
      case 5:
        raw.kind = SampleKind::text;
        raw.text = random_text(5) + "\xC3(";  // invalid UTF-8
        break;
      case 6:
        raw.kind = SampleKind::image_text;
        raw.text = "a cut picture";
        raw.image = jpeg.substr(0, jpeg.size() / 3);  // corrupt
        break;
      case 7:
        raw.kind = SampleKind::image_text;
        raw.text = "bad \xFF caption";
        raw.image = jpeg;
        break;
      case 8:
        raw.kind = SampleKind::text;  // empty
        break;
      default:
        raw.kind = i % 2 == 0 ? SampleKind::text : SampleKind::image_text;
        raw.bad = BadKind::truncated_member;
        raw.reason = "cut short at " + std::to_string(i);
    }
    samples.push_back(std::move(raw));
  }
  std::shuffle(samples.begin(), samples.end(), rng);
  return samples;
}

}  // namespace

TEST_CASE("apply_batch gives exactly apply's results on any number of threads", "[transform][batch]") {
  // A vocabulary with merges, so that tokenization is real work.
  const std::string vocab = std::string(MSD_TEST_DATA) + "/tokenizer/small.tiktoken";
  const msd::ImageOptions image{64, 16};
  msd::Tokenizer reference_tokenizer(vocab, msd::TokenizerOptions{});
  SampleTransform reference(&reference_tokenizer, image);
  const std::vector<RawSample> samples = mixed_samples();
  std::vector<TransformedSample> expected(samples.size());
  std::vector<BadKind> expected_verdicts(samples.size());
  std::vector<std::string> expected_reasons(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    expected_verdicts[i] = reference.apply(samples[i], expected[i], expected_reasons[i]);
  }
  // Every path is taken.
  for (const BadKind kind : {BadKind::none, BadKind::invalid_utf8, BadKind::corrupt_jpeg, BadKind::empty,
                             BadKind::truncated_member}) {
    CHECK(std::count(expected_verdicts.begin(), expected_verdicts.end(), kind) > 0);
  }

  msd::Tokenizer tokenizer(vocab, msd::TokenizerOptions{});
  SampleTransform transform(&tokenizer, image);
  std::vector<const RawSample*> raws;
  for (const RawSample& raw : samples) raws.push_back(&raw);
  // The outputs are reused across batches, as a loader's slots are: nothing
  // of a previous batch may remain.
  std::vector<TransformedSample> outs(samples.size());
  std::vector<TransformedSample*> out_pointers;
  for (TransformedSample& out : outs) out_pointers.push_back(&out);
  for (const unsigned threads : {1u, 2u, 4u}) {
    std::vector<BadKind> verdicts(samples.size(), BadKind::read_error);
    std::vector<std::string> reasons(samples.size());
    transform.apply_batch(raws, out_pointers, verdicts, reasons, threads);
    for (size_t i = 0; i < samples.size(); ++i) {
      INFO(threads << " threads, sample " << i << " (" << expected_reasons[i] << ")");
      CHECK(verdicts[i] == expected_verdicts[i]);
      CHECK(reasons[i] == expected_reasons[i]);
      check_same(outs[i], expected[i]);
    }
    // Reversed, so that each slot now holds another kind of sample.
    std::reverse(raws.begin(), raws.end());
    transform.apply_batch(raws, out_pointers, verdicts, reasons, threads);
    for (size_t i = 0; i < samples.size(); ++i) {
      const size_t source = samples.size() - 1 - i;
      INFO(threads << " threads, reversed, sample " << source);
      CHECK(verdicts[i] == expected_verdicts[source]);
      check_same(outs[i], expected[source]);
    }
    std::reverse(raws.begin(), raws.end());
  }
}

TEST_CASE("transform_measured: apply_batch's results, each source's samples in its profile", "[transform][batch]") {
  // The loaders' and msd-plan profile's one measuring path (profile/meter.h).
  const std::string vocab = std::string(MSD_TEST_DATA) + "/tokenizer/small.tiktoken";
  const msd::ImageOptions image{64, 16};
  msd::Tokenizer reference_tokenizer(vocab, msd::TokenizerOptions{});
  SampleTransform reference(&reference_tokenizer, image);
  const std::vector<RawSample> samples = mixed_samples();
  const size_t n = samples.size();
  std::vector<TransformedSample> expected(n);
  std::vector<BadKind> expected_verdicts(n);
  std::vector<std::string> expected_reasons(n);
  for (size_t i = 0; i < n; ++i) expected_verdicts[i] = reference.apply(samples[i], expected[i], expected_reasons[i]);
  msd::Tokenizer tokenizer(vocab, msd::TokenizerOptions{});
  SampleTransform transform(&tokenizer, image);
  // Sources by kind, interleaved in the batch as a loader's requests are; source 3 has none.
  std::vector<uint32_t> sources;
  std::vector<const RawSample*> raws;
  for (const RawSample& raw : samples) {
    raws.push_back(&raw);
    sources.push_back(static_cast<uint32_t>(raw.kind));
  }
  const std::vector<double> reads(n, 0.001);
  std::vector<TransformedSample> outs(n);
  std::vector<TransformedSample*> out_pointers;
  for (TransformedSample& out : outs) out_pointers.push_back(&out);
  std::vector<BadKind> verdicts(n, BadKind::read_error);
  std::vector<std::string> reasons(n);
  msd::ProfileMeter meter(4);
  auto slot_bytes = [](const TransformedSample& s) { return 32 + 4 * s.tokens.size() + s.image.pixels.size(); };
  msd::transform_measured(transform, raws, sources, reads, out_pointers, verdicts, reasons, 2, slot_bytes, meter);
  std::vector<uint64_t> count(4, 0);
  std::vector<double> positions(4, 0.0), patches(4, 0.0), bytes(4, 0.0);
  for (size_t i = 0; i < n; ++i) {
    INFO("sample " << i << " (" << expected_reasons[i] << ")");
    CHECK(verdicts[i] == expected_verdicts[i]);
    if (verdicts[i] != BadKind::none) CHECK(reasons[i] == expected_reasons[i]);
    check_same(outs[i], expected[i]);
    ++count[sources[i]];
    if (expected_verdicts[i] == BadKind::none) {
      positions[sources[i]] += expected[i].positions();
      patches[sources[i]] += expected[i].image.patches;
      bytes[sources[i]] += static_cast<double>(slot_bytes(expected[i]));
    }
  }
  for (uint32_t s = 0; s < 4; ++s) {
    const msd::SourceProfile& p = meter.profiles()[s];
    INFO("source " << s);
    CHECK(p.samples_measured == count[s]);
    if (count[s] == 0) continue;
    CHECK(p.read_seconds_per_sample == Approx(0.001));  // the reads as the caller timed them
    CHECK(p.transform_seconds_per_sample > 0.0);         // and the transform's share
    CHECK(p.positions_per_sample == Approx(positions[s] / count[s]));
    CHECK(p.patches_per_sample == Approx(patches[s] / count[s]));
    CHECK(p.bytes_per_sample == Approx(bytes[s] / count[s]));
  }
}

TEST_CASE("apply_batch without a tokenizer: tokens pass, text is a configuration error", "[transform][batch]") {
  SampleTransform transform(nullptr, msd::ImageOptions{});
  RawSample tokens;
  tokens.kind = SampleKind::tokens;
  tokens.tokens = {1, 2, 3};
  RawSample text;
  text.kind = SampleKind::text;
  text.text = "hello";
  TransformedSample a, b;
  std::vector<const RawSample*> raws = {&tokens, &tokens};
  std::vector<TransformedSample*> outs = {&a, &b};
  std::vector<BadKind> verdicts(2, BadKind::read_error);
  std::vector<std::string> reasons(2);
  transform.apply_batch(raws, outs, verdicts, reasons, 4);
  CHECK(verdicts == std::vector<BadKind>{BadKind::none, BadKind::none});
  CHECK(b.tokens == tokens.tokens);
  raws[1] = &text;
  CHECK_THROWS_AS(transform.apply_batch(raws, outs, verdicts, reasons, 4), msd::ConfigError);
}
