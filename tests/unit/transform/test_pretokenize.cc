// Pre-tokenizer tests: the hand-written cl100k, o200k and Qwen 2 splitters give ICU's
// regex splits on every code point, on random multilingual text and on invalid
// UTF-8 (every byte covered).
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8.h"
#include "transform/tokenizer/pretokenize.h"
#include "transform/tokenizer/tokenizer.h"
#include "unit/transform/random_text.h"

namespace {

using msd_test::append_utf8;
using msd_test::random_split_text;

// (start, end) byte offsets of every piece.
std::vector<std::pair<size_t, size_t>> pieces(msd::PreTokenizer& splitter, std::string_view text) {
  std::vector<std::pair<size_t, size_t>> out;
  splitter.split(text, [&](std::string_view piece) {
    const auto start = static_cast<size_t>(piece.data() - text.data());
    out.emplace_back(start, start + piece.size());
  });
  return out;
}

// The code points of `text` around byte `at`, as U+XXXX, for a failure message.
std::string describe_around(std::string_view text, size_t at) {
  std::string out;
  const size_t from = at > 24 ? at - 24 : 0;
  size_t i = from;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  char buffer[16];
  for (; i < text.size() && i < at + 24; ++i) {
    if (i == at) out += "| ";
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0) == 0x80) continue;
    char32_t cp = byte;
    size_t more = byte < 0x80 ? 0 : byte < 0xE0 ? 1 : byte < 0xF0 ? 2 : 3;
    if (more > 0) cp = byte & (0x3F >> more);
    for (size_t k = 1; k <= more && i + k < text.size(); ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
    std::snprintf(buffer, sizeof buffer, "U+%04X ", static_cast<unsigned>(cp));
    out += buffer;
  }
  return out;
}

// Both splitters over `text`; on a difference, where and what.
void check_same_split(msd::PreTokenizer& fast, msd::PreTokenizer& icu, std::string_view text) {
  const auto expected = pieces(icu, text);
  const auto got = pieces(fast, text);
  if (got == expected) return;
  size_t k = 0;
  while (k < got.size() && k < expected.size() && got[k] == expected[k]) ++k;
  const size_t at = k < expected.size() ? expected[k].first : got[k].first;
  INFO("piece " << k << ": ICU [" << (k < expected.size() ? expected[k].first : 0) << ", "
                << (k < expected.size() ? expected[k].second : 0) << "), hand-written ["
                << (k < got.size() ? got[k].first : 0) << ", " << (k < got.size() ? got[k].second : 0)
                << "); text around: " << describe_around(text, at));
  CHECK(got == expected);
}

}  // namespace


TEST_CASE("hand-written splits equal ICU's for every code point in many contexts", "[tokenizer][split]") {
  for (const std::string& name : {std::string("cl100k"), std::string("o200k"), std::string(msd::kQwen2SplitRegex)}) {
    msd::PreTokenizer fast(name, "test");
    msd::PreTokenizer icu(name, "test", msd::SplitEngine::regex);
    REQUIRE(fast.named() != msd::NamedSplit::none);
    REQUIRE(icu.named() == msd::NamedSplit::none);
    // Each code point at the start of a piece, after a space, an apostrophe,
    // letters of each case, digits, marks, before letters and white space.
    static constexpr std::string_view kContexts[] = {
        "'", " ", "A", "a", "'l", "'r", "1", "\xCC\x81", "Ab", "\n", "  ", "\xE4\xB8\x96", "x'", "\t"};
    std::string text;
    // Every code point of planes 0-3 and 14 (where all assigned characters
    // outside private use are), a sample of the rest.
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const char32_t plane = cp >> 16;
      if (plane >= 4 && plane != 14 && cp % 61 != 0 && (cp & 0xFFFF) < 0xFFFE) continue;
      for (const std::string_view context : kContexts) {
        text += context;
        append_utf8(text, cp);
      }
      append_utf8(text, cp);
      if (text.size() > (64 << 10) || cp == 0x10FFFF) {
        INFO(name << ", code points up to U+" << std::hex << static_cast<uint32_t>(cp));
        check_same_split(fast, icu, text);
        text.clear();
      }
    }
  }
}

TEST_CASE("hand-written splits equal ICU's on random multilingual text", "[tokenizer][split]") {
  std::mt19937 rng(20240917);
  for (const std::string& name : {std::string("cl100k"), std::string("o200k"), std::string(msd::kQwen2SplitRegex)}) {
    msd::PreTokenizer fast(name, "test");
    msd::PreTokenizer icu(name, "test", msd::SplitEngine::regex);
    REQUIRE(fast.named() != msd::NamedSplit::none);
    for (int i = 0; i < 20000; ++i) {
      const std::string text = random_split_text(rng, rng() % (i % 100 == 0 ? 2000 : 80));
      REQUIRE(msd::is_valid_utf8(text));
      INFO(name << " case " << i);
      check_same_split(fast, icu, text);
    }
  }
}

TEST_CASE("the hand-written splitter is chosen by name or by the identical regex", "[tokenizer][split]") {
  CHECK(msd::PreTokenizer("cl100k", "test").named() == msd::NamedSplit::cl100k);
  CHECK(msd::PreTokenizer("cl100k_base", "test").named() == msd::NamedSplit::cl100k);
  CHECK(msd::PreTokenizer(msd::resolve_pattern("cl100k"), "test").named() == msd::NamedSplit::cl100k);
  CHECK(msd::PreTokenizer("o200k", "test").named() == msd::NamedSplit::o200k);
  CHECK(msd::PreTokenizer(msd::resolve_pattern("o200k"), "test").named() == msd::NamedSplit::o200k);
  CHECK(msd::PreTokenizer(std::string(msd::kQwen2SplitRegex), "test").named() == msd::NamedSplit::qwen2);
  CHECK(msd::PreTokenizer("gpt2", "test").named() == msd::NamedSplit::none);
  CHECK(msd::PreTokenizer(msd::resolve_pattern("cl100k") + "|x", "test").named() == msd::NamedSplit::none);
  // A hand-written splitter compiles no regex; its copies for other threads,
  // and a moved one, split as ICU does.
  msd::PreTokenizer named("o200k", "test");
  msd::PreTokenizer icu("o200k", "test", msd::SplitEngine::regex);
  msd::PreTokenizer shared = named.sharing_pattern();
  msd::PreTokenizer moved = std::move(named);
  const std::string text = "Hello, World's 12345 caf\xC3\xA9  \n\tdone";
  check_same_split(shared, icu, text);
  check_same_split(moved, icu, text);
  CHECK(shared.named() == msd::NamedSplit::o200k);
}

TEST_CASE("hand-written splits cover every byte of invalid UTF-8", "[tokenizer][split]") {
  std::mt19937 rng(99);
  constexpr std::string_view kPieces[] = {"a", "B", " ", "\xC3\xA9", "\xF0\x9F\x98\x80", "'", "\r", "\n", "1", "\xCC\x81"};
  for (const std::string& name : {std::string("cl100k"), std::string("o200k"), std::string(msd::kQwen2SplitRegex)}) {
    msd::PreTokenizer fast(name, "test");
    for (int i = 0; i < 3000; ++i) {
      std::string text;
      for (uint32_t k = rng() % 40; k > 0; --k) {
        if (rng() % 3 == 0) {
          text += static_cast<char>(rng() % 256);
        } else {
          text += kPieces[rng() % std::size(kPieces)];
        }
      }
      size_t covered = 0;
      fast.split(text, [&](std::string_view piece) {
        REQUIRE(!piece.empty());
        REQUIRE(piece.data() == text.data() + covered);
        covered += piece.size();
      });
      REQUIRE(covered == text.size());
    }
  }
}
