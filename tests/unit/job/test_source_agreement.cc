// Start-up's agreement on the sources (job/source_agreement.h): loaders
// that matched other files, or counted other samples, are refused with a
// message naming the option, both loaders and the files.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "job/source_agreement.h"

using namespace msd;

namespace {

Config two_sources() {
  Config config;
  config.sources.resize(2);
  config.sources[0].name = "web";
  config.sources[1].name = "code";
  return config;
}

SourceInfo web(std::vector<SourceFile> files, uint64_t samples = 10) { return {0, samples, 100, std::move(files), {}}; }

std::string refusal(const std::vector<LoaderHello>& hellos) {
  try {
    agree_on_sources(hellos, two_sources());
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("loaders that saw the same files agree; each source is kept once", "[agreement]") {
  const std::vector<SourceFile> files{{"/d/a.jsonl", 5}, {"/d/b.jsonl", 6}};
  const std::vector<LoaderHello> hellos{{1, 0, {"", {web(files)}}},
                                        {2, 1, {"", {{1, 4, 50, {{"/c/x.jsonl", 3}}, {}}}}},
                                        {3, 2, {"", {web(files), {1, 4, 50, {{"/c/x.jsonl", 3}}, {}}}}}};
  const auto infos = agree_on_sources(hellos, two_sources());
  REQUIRE(infos.size() == 2);
  REQUIRE(infos[0].source == 0);
  REQUIRE(infos[0].files == files);
  REQUIRE(infos[1].samples == 4);
}

TEST_CASE("loaders that matched other files are refused, naming them", "[agreement]") {
  const std::vector<SourceFile> files{{"/d/a.jsonl", 5}, {"/d/b.jsonl", 6}};
  SECTION("a file one loader lacks") {
    const std::string why = refusal({{1, 0, {"", {web(files)}}}, {3, 2, {"", {web({files[0]})}}}});
    REQUIRE_THAT(why, Catch::Contains("source.web.path: loader 0 (world rank 1) and loader 2 (world rank 3)"));
    REQUIRE_THAT(why, Catch::Contains("only the first sees: /d/b.jsonl"));
  }
  SECTION("a file of another size") {
    const std::string why = refusal({{1, 0, {"", {web(files)}}}, {2, 1, {"", {web({files[0], {"/d/b.jsonl", 8}})}}}});
    REQUIRE_THAT(why, Catch::Contains("sizes differ: /d/b.jsonl (6 vs 8 bytes)"));
  }
  SECTION("many extra files are counted past the first three") {
    std::vector<SourceFile> more = files;
    for (int i = 0; i < 5; ++i) more.push_back({"/d/z" + std::to_string(i), 1});
    const std::string why = refusal({{1, 0, {"", {web(files)}}}, {2, 1, {"", {web(more)}}}});
    REQUIRE_THAT(why, Catch::Contains("only the second sees: /d/z0, /d/z1, /d/z2 and 2 more"));
  }
  SECTION("the same files, counted differently") {
    const std::string why = refusal({{1, 0, {"", {web(files, 10)}}}, {2, 1, {"", {web(files, 12)}}}});
    REQUIRE_THAT(why, Catch::Contains("loader 0 (world rank 1) counts 10 samples and loader 1 (world rank 2) 12"));
  }
}

TEST_CASE("the same files with another file's count are refused, naming the file", "[agreement]") {
  const std::vector<SourceFile> files{{"/d/a.jsonl", 5, 4}, {"/d/b.jsonl", 6, 6}};
  const std::vector<SourceFile> other{{"/d/a.jsonl", 5, 3}, {"/d/b.jsonl", 6, 7}};
  const std::string why = refusal({{1, 0, {"", {web(files)}}}, {2, 1, {"", {web(other)}}}});
  REQUIRE_THAT(why, Catch::Contains("(/d/a.jsonl: 4 and 3)"));
}

TEST_CASE("the data's fingerprint is assembled from the loaders' shares", "[agreement]") {
  const std::vector<SourceFile> files{{"/d/a.jsonl", 5, 4}, {"/d/b.jsonl", 6, 6}, {"/d/c.jsonl", 7, 1}};
  SourceInfo first = web(files, 11), second = web(files, 11);
  first.fingerprints = {{0, "/d/a.jsonl", 5, 0xa}, {2, "/d/c.jsonl", 7, 0xc}};  // files 0 and 2: position 0 of 2
  second.fingerprints = {{1, "/d/b.jsonl", 6, 0xb}};
  SourceInfo code{1, 2, 50, {{"/c/x.idx", 30, 2}}, {{0, "/c/x.idx", 30, 0x1}, {0, "/c/x.bin", 90, 0x2}}};
  const std::vector<LoaderHello> hellos{{1, 0, {"", {first}}}, {2, 1, {"", {second, code}}}};
  const DataFingerprint data = fingerprint_of_sources(hellos, agree_on_sources(hellos, two_sources()));
  REQUIRE(data.files.size() == 5);
  CHECK(data.files[0] == FileFingerprint{0, "/d/a.jsonl", 5, 0xa, 4});
  CHECK(data.files[1] == FileFingerprint{0, "/d/b.jsonl", 6, 0xb, 6});
  CHECK(data.files[2] == FileFingerprint{0, "/d/c.jsonl", 7, 0xc, 1});
  CHECK(data.files[3] == FileFingerprint{1, "/c/x.idx", 30, 0x1, 2});
  CHECK(data.files[4] == FileFingerprint{1, "/c/x.bin", 90, 0x2, 0});  // an index's samples are its .idx's
  // A file no loader fingerprinted is a protocol error, not a silent gap.
  second.fingerprints.clear();
  const std::vector<LoaderHello> short_of_one{{1, 0, {"", {first}}}, {2, 1, {"", {second, code}}}};
  CHECK_THROWS_AS(fingerprint_of_sources(short_of_one, agree_on_sources(short_of_one, two_sources())), ProtocolError);
}
