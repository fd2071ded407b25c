// Tokenizer tests: ids equal the tiktoken reference's (goldens made by
// tools/reference/make_goldens.sh), decode inverts encode, BPE training is
// deterministic, malformed vocabularies and options fail with a clear error.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/utf8.h"
#include "source/jsonl/json.h"
#include "transform/tokenizer/tokenizer.h"
#include "unit/skip.h"
#include "unit/transform/random_text.h"

namespace {

using msd_test::append_utf8;
using msd_test::random_code_point;
using msd_test::random_split_text;

const std::string kData = std::string(MSD_TEST_DATA) + "/tokenizer";
const std::string kSmallVocab = kData + "/small.tiktoken";

// Where tools/reference/install.sh puts the bundled OpenAI vocabularies:
// $MSD_REFERENCE_DIR, else <source dir>/.cache/node. Empty when absent.
std::string reference_vocab(const std::string& name) {
  std::filesystem::path dir;
  if (const char* env = std::getenv("MSD_REFERENCE_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    dir = std::filesystem::path(MSD_TEST_DATA).parent_path().parent_path() / ".cache" / "node";
  }
  const auto path = dir / "node_modules" / "gpt-tokenizer" / "data" / (name + "_base.tiktoken");
  return std::filesystem::exists(path) ? path.string() : std::string();
}

struct GoldenCase {
  std::string text;
  std::map<std::string, std::vector<int32_t>> ids;  // by encoding name
};

std::vector<GoldenCase> load_goldens() {
  std::ifstream in(kData + "/golden.jsonl");
  REQUIRE(in.good());
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    msd::JsonValue record;
    const msd::JsonStatus status = msd::parse_json(line, record);
    REQUIRE(status.ok);
    GoldenCase golden;
    for (const auto& [name, value] : record.object) {
      if (name == "text") {
        golden.text = value.string;
      } else {
        auto& ids = golden.ids[name];
        for (const auto& id : value.array) ids.push_back(static_cast<int32_t>(id.number));
      }
    }
    cases.push_back(std::move(golden));
  }
  REQUIRE(cases.size() > 50);
  return cases;
}

void check_goldens(const std::string& vocab, const std::string& pattern, const std::string& encoding) {
  msd::Tokenizer tokenizer(vocab, {.pattern = pattern});
  for (const GoldenCase& golden : load_goldens()) {
    INFO(encoding << " text: '" << golden.text << "'");
    REQUIRE(golden.ids.count(encoding) == 1);
    const std::vector<int32_t>& expected = golden.ids.at(encoding);
    CHECK(tokenizer.encode(golden.text) == expected);
    CHECK(tokenizer.decode(expected) == golden.text);
  }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(MSD_BINARY_DIR) / ("test_tokenizer_" + name)).string();
}

std::string write_temp(const std::string& name, const std::string& content) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// The 256 single-byte lines of a valid vocabulary, base64 by hand.
std::string byte_lines() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (int byte = 0; byte < 256; ++byte) {
    out += kAlphabet[byte >> 2];
    out += kAlphabet[(byte & 3) << 4];
    out += "== " + std::to_string(byte) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("small vocabulary: ids equal the reference's under each pattern", "[tokenizer]") {
  check_goldens(kSmallVocab, "cl100k", "small");
  check_goldens(kSmallVocab, "o200k", "small_o200k");
  check_goldens(kSmallVocab, "gpt2", "small_gpt2");
}

// Both vocabularies come from the same npm package: when one is missing, the
// case skips (reported as skipped by ctest's test_tokenizer.reference).
TEST_CASE("cl100k_base and o200k_base: ids equal the reference's", "[tokenizer][reference]") {
  for (const std::string name : {"cl100k", "o200k"}) {
    const std::string vocab = reference_vocab(name);
    if (vocab.empty()) {
      MSD_SKIP(name << "_base.tiktoken not found (run tools/reference/install.sh or set MSD_REFERENCE_DIR)");
    }
    check_goldens(vocab, name, name);
    msd::Tokenizer tokenizer(vocab, {.pattern = name});
    CHECK(tokenizer.vocab_size() == (name == "cl100k" ? 100256 : 199998));
  }
}

TEST_CASE("decode inverts encode on random valid UTF-8", "[tokenizer]") {
  std::mt19937 rng(20240601);
  msd::Tokenizer cl100k_split(kSmallVocab, {.pattern = "cl100k"});
  msd::Tokenizer o200k_split(kSmallVocab, {.pattern = "o200k"});
  std::vector<int32_t> ids;
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    const size_t code_points = rng() % (i % 50 == 0 ? 400 : 40);  // some long enough for long pieces
    for (size_t k = 0; k < code_points; ++k) append_utf8(text, random_code_point(rng));
    REQUIRE(msd::is_valid_utf8(text));
    msd::Tokenizer& tokenizer = i % 2 == 0 ? cl100k_split : o200k_split;
    ids.clear();
    tokenizer.encode(text, ids);
    REQUIRE(tokenizer.decode(ids) == text);
    for (const int32_t id : ids) REQUIRE((id >= 0 && id < tokenizer.vocab_size()));
  }
}

TEST_CASE("ids from the piece cache equal those of a fresh tokenizer", "[tokenizer]") {
  // Far more distinct merged pieces than the cache has entries, so entries are
  // replaced often; each document's ids must not depend on what came before.
  std::mt19937 rng(31);
  std::vector<std::string> documents;
  for (int i = 0; i < 200; ++i) documents.push_back(random_split_text(rng, 40 + rng() % 200));
  for (const std::string pattern : {"cl100k", "o200k"}) {
    msd::Tokenizer warm(kSmallVocab, {.pattern = pattern});
    for (int pass = 0; pass < 2; ++pass) {
      for (const std::string& document : documents) warm.encode(document);
    }
    for (const std::string& document : documents) {
      msd::Tokenizer fresh(kSmallVocab, {.pattern = pattern});
      INFO(pattern << " text: '" << document << "'");
      REQUIRE(warm.encode(document) == fresh.encode(document));
      REQUIRE(warm.decode(warm.encode(document)) == document);
    }
  }
}

TEST_CASE("encode_batch gives encode's ids with any number of threads", "[tokenizer][batch]") {
  // Random multilingual documents of very different lengths (some with
  // pieces long enough for the heap merge), empty ones, and the goldens.
  std::mt19937 rng(4242);
  std::vector<std::string> documents;
  for (int i = 0; i < 300; ++i) {
    documents.push_back(random_split_text(rng, i % 37 == 0 ? 3000 : rng() % 200));
    if (i % 50 == 0) documents.emplace_back();
    if (i % 60 == 0) documents.push_back(std::string(300 + rng() % 300, 'z') + " end");
  }
  for (const GoldenCase& golden : load_goldens()) documents.push_back(golden.text);
  const std::vector<std::string_view> texts(documents.begin(), documents.end());

  struct Setting {
    std::string pattern, normalize;
  };
  // The hand-written splitters, ICU's regex (a matcher per worker), and
  // normalization (a buffer per worker).
  for (const Setting& setting : {Setting{"cl100k", "none"}, Setting{"o200k", "none"}, Setting{"gpt2", "none"},
                                 Setting{"cl100k", "nfkc"}}) {
    INFO(setting.pattern << ", normalize " << setting.normalize);
    const msd::TokenizerOptions options{.pattern = setting.pattern, .normalize = setting.normalize};
    msd::Tokenizer single(kSmallVocab, options);
    std::vector<std::vector<int32_t>> expected;
    for (const std::string_view text : texts) expected.push_back(single.encode(text));

    msd::Tokenizer batch(kSmallVocab, options);
    std::vector<std::vector<int32_t>> out(3, std::vector<int32_t>{-1, -2});  // stale content is replaced
    // The pool grows, is reused by fewer threads, and survives a move.
    for (const unsigned threads : {1u, 2u, 4u, 3u, 8u, 1u, 0u, 4u}) {
      INFO(threads << " threads");
      batch.encode_batch(texts, out, threads);
      REQUIRE(out.size() == texts.size());
      for (size_t i = 0; i < texts.size(); ++i) {
        INFO("document " << i);
        REQUIRE(out[i] == expected[i]);
      }
      // A batch smaller than the pool, and a batch of one.
      batch.encode_batch(std::span(texts).subspan(7, 3), out, threads);
      REQUIRE(out.size() == 3);
      for (size_t i = 0; i < 3; ++i) REQUIRE(out[i] == expected[7 + i]);
      batch.encode_batch(std::span(texts).subspan(0, 1), out, threads);
      REQUIRE(out == std::vector<std::vector<int32_t>>{expected[0]});
    }
    msd::Tokenizer moved = std::move(batch);
    moved.encode_batch(texts, out, 4);
    CHECK(out == expected);
    moved.encode_batch({}, out, 4);
    CHECK(out.empty());
  }
}

TEST_CASE("state_bytes counts the shared vocabulary once and each worker's scratch", "[tokenizer][batch]") {
  msd::Tokenizer tokenizer(kSmallVocab, {});
  const std::vector<std::string_view> texts(16, "some text to encode");
  std::vector<std::vector<int32_t>> out;
  const uint64_t alone = tokenizer.state_bytes();
  tokenizer.encode_batch(texts, out, 1);  // inline: no worker
  CHECK(tokenizer.state_bytes() == alone);
  tokenizer.encode_batch(texts, out, 2);  // one worker
  const uint64_t per_worker = tokenizer.state_bytes() - alone;
  CHECK(per_worker > 0);
  CHECK(per_worker < alone);  // alone = vocabulary + one scratch: a worker adds no vocabulary
  tokenizer.encode_batch(texts, out, 4);  // three workers
  CHECK(tokenizer.state_bytes() == alone + 3 * per_worker);
  tokenizer.encode_batch(texts, out, 2);  // workers are kept
  CHECK(tokenizer.state_bytes() == alone + 3 * per_worker);
}

TEST_CASE("invalid UTF-8 still encodes every byte", "[tokenizer]") {
  // Outside the contract, but a caller's mistake must not crash or lose bytes.
  std::mt19937 rng(7);
  msd::Tokenizer tokenizer(kSmallVocab, {.pattern = "o200k"});
  constexpr std::string_view kPieces[] = {"a", "b", " ", "\xC3\xA9", "\xF0\x9F\x98\x80", "'", "\r", "\n", "1"};
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (uint32_t k = rng() % 30; k > 0; --k) {
      if (rng() % 4 == 0) {
        text += static_cast<char>(rng() % 256);
      } else {
        text += kPieces[rng() % std::size(kPieces)];
      }
    }
    REQUIRE(tokenizer.decode(tokenizer.encode(text)) == text);
  }
}

TEST_CASE("pieces long and short merge lowest rank first, leftmost on ties", "[tokenizer]") {
  // With "zz" (256) and "zzzz" (257), a run of n 'z' pairs up from the left,
  // then the pairs pair up from the left: n/4 x "zzzz", then "zz" if n%4 >= 2,
  // then "z" if n is odd. Runs of 128 bytes and more take the heap merge, the
  // shorter ones tiktoken's linear rescan; both must give this.
  const std::string path = write_temp("zz", byte_lines() + "eno= 256\nenp6eg== 257\n");
  msd::Tokenizer tokenizer(path, {.pattern = "z+"});
  for (const size_t length : {1u, 2u, 3u, 5u, 6u, 7u, 126u, 127u, 128u, 129u, 130u, 131u, 500u, 1001u, 4098u}) {
    std::vector<int32_t> expected(length / 4, 257);
    if (length % 4 >= 2) expected.push_back(256);
    if (length % 2 == 1) expected.push_back('z');
    INFO("run of " << length);
    CHECK(tokenizer.encode(std::string(length, 'z')) == expected);
  }
}

TEST_CASE("normalization is applied before splitting", "[tokenizer]") {
  msd::Tokenizer plain(kSmallVocab, {.pattern = "cl100k"});
  msd::Tokenizer nfc(kSmallVocab, {.pattern = "cl100k", .normalize = "nfc"});
  msd::Tokenizer nfkc(kSmallVocab, {.pattern = "cl100k", .normalize = "nfkc"});
  msd::Tokenizer nfd(kSmallVocab, {.pattern = "cl100k", .normalize = "nfd"});
  CHECK(nfc.encode("cafe\xCC\x81" /* e + U+0301 */) == plain.encode("caf\xC3\xA9"));  // U+00E9
  CHECK(nfd.encode("caf\xC3\xA9") == plain.encode("cafe\xCC\x81"));
  CHECK(nfkc.encode("\xEF\xBC\x91\xEF\xBC\x92") == plain.encode("12"));  // fullwidth digits
  CHECK(nfc.encode("already normal") == plain.encode("already normal"));
}

TEST_CASE("named patterns resolve to tiktoken's regexes", "[tokenizer]") {
  CHECK(msd::resolve_pattern("cl100k").starts_with("(?i:'s|'t|'re|'ve|'m|'ll|'d)|"));
  CHECK(msd::resolve_pattern("o200k").find("[\\r\\n/]*") != std::string::npos);
  CHECK(msd::resolve_pattern("gpt2") == msd::resolve_pattern("r50k"));
  CHECK(msd::resolve_pattern("p50k") == msd::resolve_pattern("r50k"));
  CHECK(msd::resolve_pattern("cl100k_base") == msd::resolve_pattern("cl100k"));
  CHECK(msd::resolve_pattern("\\S+") == "\\S+");
  // A custom regex: whitespace-separated words, spaces dropped.
  msd::Tokenizer words(kSmallVocab, {.pattern = "\\S+"});
  msd::Tokenizer plain(kSmallVocab, {.pattern = "cl100k"});
  CHECK(words.encode("the  data") == plain.encode("thedata"));
}

TEST_CASE("bad options and vocabularies fail with a clear error", "[tokenizer]") {
  CHECK_THROWS_WITH(msd::Tokenizer(kSmallVocab, {.pattern = "(unclosed"}),
                    Catch::Contains("tokenizer.pattern") && Catch::Contains("(unclosed"));
  CHECK_THROWS_AS(msd::Tokenizer(kSmallVocab, {.pattern = "(unclosed"}), msd::ConfigError);
  CHECK_THROWS_AS(msd::Tokenizer(kSmallVocab, {.pattern = ""}), msd::ConfigError);
  CHECK_THROWS_WITH(msd::Tokenizer(kSmallVocab, {.pattern = "cl100K"}),
                    Catch::Contains("tokenizer.pattern") && Catch::Contains("not a known name"));
  CHECK_THROWS_AS(msd::resolve_pattern("o200"), msd::ConfigError);
  CHECK_THROWS_AS(msd::Tokenizer(kSmallVocab, {.normalize = "nfx"}), msd::ConfigError);
  CHECK_THROWS_WITH(msd::Tokenizer(kSmallVocab, {.normalize = "nfx"}), Catch::Contains("tokenizer.normalize"));
  CHECK_THROWS_AS(msd::Tokenizer(temp_path("does_not_exist"), {}), msd::IoError);

  const std::string bytes = byte_lines();
  const auto expect_io_error = [](const std::string& name, const std::string& content, const std::string& detail) {
    const std::string path = write_temp(name, content);
    INFO(name);
    CHECK_THROWS_AS(msd::Tokenizer(path, {}), msd::IoError);
    CHECK_THROWS_WITH(msd::Tokenizer(path, {}), Catch::Contains(path) && Catch::Contains(detail));
  };
  expect_io_error("empty", "", "no tokens");
  expect_io_error("bad_base64", bytes + "YW*i 256\n", ":257:");
  expect_io_error("bad_padding", bytes + "YWJ 256\n", ":257:");
  expect_io_error("no_rank", bytes + "YWJj\n", ":257:");
  expect_io_error("bad_rank", bytes + "YWJj 25x\n", ":257:");
  expect_io_error("negative_rank", bytes + "YWJj -1\n", ":257:");
  expect_io_error("huge_rank", bytes + "YWJj 99999999999\n", ":257:");
  expect_io_error("repeated_rank", bytes + "YWJj 256\nYWJk 256\n", ":258:");
  expect_io_error("repeated_bytes", bytes + "YWJj 256\nYWJj 257\n", "repeated");
  expect_io_error("missing_byte", bytes.substr(bytes.find('\n') + 1), "single byte 0");

  // Blank lines and '\r\n' endings are accepted, as tiktoken does.
  const std::string ok = write_temp("ok", "\n" + bytes + "YWJj 300\r\n\n");
  msd::Tokenizer tokenizer(ok, {});
  CHECK(tokenizer.vocab_size() == 301);
  CHECK(tokenizer.encode("abc") == std::vector<int32_t>{300});
  CHECK(tokenizer.decode(std::vector<int32_t>{300, 'd'}) == "abcd");
  CHECK_THROWS_AS(tokenizer.decode(std::vector<int32_t>{299}), msd::Error);  // a gap in the ranks
  CHECK_THROWS_AS(tokenizer.decode(std::vector<int32_t>{301}), msd::Error);
  CHECK_THROWS_AS(tokenizer.decode(std::vector<int32_t>{-1}), msd::Error);
  CHECK(tokenizer.state_bytes() > 259);
}

TEST_CASE("train_bpe is deterministic and its vocabulary round-trips", "[tokenizer][bpe]") {
  std::vector<std::string> documents;
  std::ifstream corpus(kData + "/corpus.txt");
  for (std::string line; std::getline(corpus, line);) documents.push_back(line);
  REQUIRE(documents.size() > 30);

  // The committed small vocabulary came from exactly this call
  // (tools/reference/make_goldens.sh --retrain).
  const std::string out = temp_path("trained.tiktoken");
  CHECK(msd::train_bpe(documents, {.vocab_size = 1024, .pattern = "cl100k"}, out) == 1024);
  CHECK(msd::read_file(out) == msd::read_file(kSmallVocab));

  msd::Tokenizer tokenizer(out, {});
  CHECK(tokenizer.vocab_size() == 1024);
  for (int byte = 0; byte < 256; ++byte) {
    CHECK(tokenizer.decode(std::vector<int32_t>{byte}) == std::string(1, static_cast<char>(byte)));
  }
  size_t bytes = 0, tokens = 0;
  for (const std::string& document : documents) {
    const std::vector<int32_t> ids = tokenizer.encode(document);
    CHECK(tokenizer.decode(ids) == document);
    bytes += document.size();
    tokens += ids.size();
  }
  CHECK(tokens * 2 < bytes);  // the merges were learned from this very text

  // A corpus with fewer pairs than requested stops early; a tiny one still
  // writes the 256 bytes; too small a vocabulary is a configuration error.
  const std::vector<std::string> tiny = {"abab abab", "ab"};
  CHECK(msd::train_bpe(tiny, {.vocab_size = 1000, .pattern = "cl100k"}, out) < 1000);
  msd::Tokenizer tiny_tokenizer(out, {});
  CHECK(tiny_tokenizer.encode(" abab") == std::vector<int32_t>{tiny_tokenizer.vocab_size() - 1});
  CHECK(msd::train_bpe(std::vector<std::string>{}, {.vocab_size = 300}, out) == 256);
  CHECK_THROWS_AS(msd::train_bpe(tiny, {.vocab_size = 255}, out), msd::ConfigError);
  CHECK_THROWS_AS(msd::train_bpe(tiny, {.vocab_size = 300, .pattern = "[oops"}, out), msd::ConfigError);
}

TEST_CASE("train_bpe breaks count ties by the pair's bytes", "[tokenizer][bpe]") {
  // "xy" and "ab" both occur twice; "ab" sorts first, so it is rank 256.
  const std::string out = temp_path("ties.tiktoken");
  CHECK(msd::train_bpe(std::vector<std::string>{"xy ab", "ab xy"}, {.vocab_size = 257, .pattern = "\\S+"}, out) ==
        257);
  msd::Tokenizer tokenizer(out, {.pattern = "\\S+"});
  CHECK(tokenizer.decode(std::vector<int32_t>{256}) == "ab");
}

TEST_CASE("is_valid_utf8 rejects every ill-formed sequence", "[tokenizer][utf8]") {
  using namespace std::string_literals;
  CHECK(msd::is_valid_utf8(""));
  CHECK(msd::is_valid_utf8("plain ASCII\n"));
  CHECK(msd::is_valid_utf8("\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xEF\xBF\xBF \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF"));
  CHECK(msd::is_valid_utf8("\xED\x9F\xBF \xEE\x80\x80"));  // U+D7FF and U+E000 surround the surrogates
  CHECK(msd::is_valid_utf8("nul \0 inside"s));
  // overlong forms
  CHECK_FALSE(msd::is_valid_utf8("\xC0\xAF"));
  CHECK_FALSE(msd::is_valid_utf8("\xC1\xBF"));
  CHECK_FALSE(msd::is_valid_utf8("\xE0\x80\xAF"));
  CHECK_FALSE(msd::is_valid_utf8("\xE0\x9F\xBF"));
  CHECK_FALSE(msd::is_valid_utf8("\xF0\x80\x80\xAF"));
  CHECK_FALSE(msd::is_valid_utf8("\xF0\x8F\xBF\xBF"));
  // surrogates, paired or not
  CHECK_FALSE(msd::is_valid_utf8("\xED\xA0\x80"));
  CHECK_FALSE(msd::is_valid_utf8("\xED\xBF\xBF"));
  CHECK_FALSE(msd::is_valid_utf8("\xED\xA0\xBD\xED\xB8\x80"));
  // beyond U+10FFFF
  CHECK_FALSE(msd::is_valid_utf8("\xF4\x90\x80\x80"));
  CHECK_FALSE(msd::is_valid_utf8("\xF5\x80\x80\x80"));
  CHECK_FALSE(msd::is_valid_utf8("\xF8\x88\x80\x80\x80"));
  CHECK_FALSE(msd::is_valid_utf8("\xFF"));
  // truncated sequences, at the end and in the middle
  CHECK_FALSE(msd::is_valid_utf8("\xC3"));
  CHECK_FALSE(msd::is_valid_utf8("\xE2\x82"));
  CHECK_FALSE(msd::is_valid_utf8("\xF0\x9F\x98"));
  CHECK_FALSE(msd::is_valid_utf8("ab\xE2\x82 cd"));
  // lone continuation bytes
  CHECK_FALSE(msd::is_valid_utf8("\x80"));
  CHECK_FALSE(msd::is_valid_utf8("abc\xBF"));
  // the offset of the first problem, past an ASCII run longer than a word
  CHECK(msd::first_invalid_utf8("0123456789abcdef\xC3(") == 16);
  CHECK(msd::first_invalid_utf8("ok \xE2\x82\xAC then \xED\xA0\x80") == 12);
}
