#include <turbojpeg.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/digest.h"
#include "common/error.h"
#include "common/files.h"
#include "common/utf8.h"
#include "datagen/datagen.h"
#include "datagen/random.h"
#include "datagen/text_gen.h"
#include "source/jsonl/json.h"
#include "source/format.h"
#include "source/source.h"
#include "source/wds/tar.h"
#include "transform/tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using namespace msd;
using namespace msd::datagen;

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = str(MSD_BINARY_DIR, "/test_datagen/", name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

DatagenOptions tiny(const std::string& dir, uint64_t seed) {
  DatagenOptions options;
  options.out_dir = dir;
  options.seed = seed;
  options.scale = "tiny";
  return options;
}

// Digest of every file the MANIFEST lists, and of the MANIFEST itself.
std::map<std::string, std::string> file_digests(const std::string& dir, const DatagenResult& result) {
  std::map<std::string, std::string> digests;
  for (const auto& file : result.files) {
    const auto bytes = read_file(join_path(dir, file.path));
    Digest digest;
    digest.update(bytes.data(), bytes.size());
    digests[file.path] = digest.hex();
  }
  const auto manifest = read_file(join_path(dir, "MANIFEST"));
  Digest digest;
  digest.update(manifest.data(), manifest.size());
  digests["MANIFEST"] = digest.hex();
  return digests;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::unique_ptr<Source> open(const std::string& name, const std::string& format, const std::string& path,
                             const std::string& cache_dir) {
  SourceConfig config;
  config.name = name;
  config.format = format_named(format);
  config.path = path;
  return open_source(config, SourceOptions{cache_dir});
}

template <typename T>
T quantile(std::vector<T> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1))];
}

size_t count_words(std::string_view text) {
  size_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

// Decodes a JPEG the way the image transform does: any warning is a failure.
bool jpeg_decodes(std::string_view jpeg) {
  tjhandle handle = tjInitDecompress();
  REQUIRE(handle != nullptr);
  const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  bool ok = tjDecompressHeader3(handle, data, jpeg.size(), &width, &height, &subsampling, &colorspace) == 0;
  if (ok) {
    std::vector<unsigned char> pixels(static_cast<size_t>(width) * height * 3);
    ok = tjDecompress2(handle, data, jpeg.size(), pixels.data(), width, 0, height, TJPF_RGB, TJFLAG_STOPONWARNING) == 0;
  }
  tjDestroy(handle);
  return ok;
}

}  // namespace

TEST_CASE("the generator's random numbers are fixed by the seed", "[datagen]") {
  // Values of the reference xoshiro256** seeded by splitmix64 (computed
  // independently): a change here changes every dataset a seed names.
  Rng rng(42);
  CHECK(rng.next() == 0x15780b2e0c2ec716ULL);
  CHECK(rng.below(1000) == 378);
  CHECK(derive_seed(1234, {1, 2}) == 0x9fa561c29a53bb76ULL);

  Rng draws(7);
  std::vector<uint64_t> lengths;
  const LengthDistribution distribution{.median = 200, .sigma = 0.7, .tail_share = 0.05, .tail_start = 600,
                                        .tail_alpha = 1.3, .minimum = 1, .maximum = 100000};
  for (int i = 0; i < 20000; ++i) lengths.push_back(distribution.draw(draws));
  CHECK(quantile(lengths, 0.5) > 180);
  CHECK(quantile(lengths, 0.5) < 225);
  CHECK(quantile(lengths, 0.99) > 8 * quantile(lengths, 0.5));
  CHECK(*std::max_element(lengths.begin(), lengths.end()) <= 100000);
}

TEST_CASE("synthetic text looks like text and is valid UTF-8", "[datagen]") {
  const TextGenerator text(5);
  CHECK(text.lexicon_size() == 4000);
  Rng rng(9);
  std::string web, book;
  text.document(rng, TextStyle::web, 20000, web);
  text.document(rng, TextStyle::book, 20000, book);
  for (const std::string* doc : {&web, &book}) {
    CHECK(is_valid_utf8(*doc));
    const size_t non_ascii = std::count_if(doc->begin(), doc->end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    CHECK(non_ascii > 100);
    CHECK(non_ascii < doc->size() / 20);
    CHECK(std::count(doc->begin(), doc->end(), '.') > 800);
    CHECK(std::count(doc->begin(), doc->end(), '\n') > 20);
    CHECK(std::count_if(doc->begin(), doc->end(), [](char c) { return c >= 'A' && c <= 'Z'; }) > 1000);
    CHECK(std::count_if(doc->begin(), doc->end(), [](char c) { return c >= '0' && c <= '9'; }) > 500);
    // Dates and "14 March 2021" add words beyond the requested count; never many.
    CHECK(count_words(*doc) >= 20000);
    CHECK(count_words(*doc) < 21500);
  }
  CHECK(web.find("https://") != std::string::npos);
  CHECK(book.find("https://") == std::string::npos);
  CHECK(book.find("Chapter 2\n") != std::string::npos);
}

TEST_CASE("a tiny dataset is a pure function of its options", "[datagen]") {
  const std::string dir_a = fresh_dir("same_a"), dir_b = fresh_dir("same_b"), dir_c = fresh_dir("other_seed");
  DatagenOptions options_a = tiny(dir_a, 11);
  options_a.threads = 1;
  DatagenOptions options_b = tiny(dir_b, 11);
  options_b.threads = 3;  // the thread count must not change a byte
  const auto result_a = generate_dataset(options_a);
  const auto result_b = generate_dataset(options_b);
  const auto result_c = generate_dataset(tiny(dir_c, 12));
  CHECK_FALSE(result_a.reused);

  const auto digests_a = file_digests(dir_a, result_a);
  const auto digests_b = file_digests(dir_b, result_b);
  const auto digests_c = file_digests(dir_c, result_c);
  CHECK(digests_a.size() == 15);  // 4 web, 2 books, 2 images, 2x2 corpus, vocab, bad list, MANIFEST
  CHECK(digests_a == digests_b);
  for (const auto& [path, digest] : digests_a) {
    INFO(path);
    // Every data file depends on the seed (bad_samples.txt is empty at tiny scale).
    if (path != "bad_samples.txt") CHECK(digests_c.at(path) != digest);
  }

  // What a tiny scale promises: every part present, in several shards.
  std::map<std::string, uint64_t> samples;
  for (const auto& file : result_a.files) samples[file.path.substr(0, file.path.find('/'))] += file.samples;
  CHECK(samples["web"] == 300);
  CHECK(samples["books"] == 24);
  CHECK(samples["images"] == 64);
  CHECK(samples["corpus"] == 200);
  CHECK(fs::exists(join_path(dir_a, "web/web-0003.jsonl")));
  CHECK(fs::exists(join_path(dir_a, "images/images-0001.tar")));
  CHECK(fs::exists(join_path(dir_a, "corpus/corpus-0001.idx")));
  const std::string listing = format_listing(result_a);
  CHECK(listing.find("web") != std::string::npos);
  CHECK(listing.find("total") != std::string::npos);
}

TEST_CASE("a complete dataset is reused, a different one refused, --force regenerates", "[datagen]") {
  const std::string dir = fresh_dir("reuse");
  DatagenOptions options = tiny(dir, 3);
  options.web_docs = 40;
  options.images = 8;
  options.indexed_docs = 10;
  options.long_docs = 4;
  const auto first = generate_dataset(options);
  const auto stamp = file_stamp(join_path(dir, "web/web-0000.jsonl"));

  const auto again = generate_dataset(options);
  CHECK(again.reused);
  CHECK(again.files.size() == first.files.size());
  CHECK(file_stamp(join_path(dir, "web/web-0000.jsonl")) == stamp);

  DatagenOptions other = options;
  other.seed = 4;
  CHECK_THROWS_AS(generate_dataset(other), ConfigError);

  // A dataset damaged after the fact is not complete any more.
  fs::remove(join_path(dir, "images/images-0001.tar"));
  const auto repaired = generate_dataset(options);
  CHECK_FALSE(repaired.reused);
  CHECK(fs::exists(join_path(dir, "images/images-0001.tar")));

  other.force = true;
  const auto forced = generate_dataset(other);
  CHECK_FALSE(forced.reused);
  CHECK(lines_of(join_path(dir, "MANIFEST")).at(1) == "seed 4");
}

TEST_CASE("a tiny dataset reads back through the sources, bad records exactly where listed", "[datagen]") {
  const std::string dir = fresh_dir("read_back");
  const std::string cache = fresh_dir("read_back_cache");
  DatagenOptions options = tiny(dir, 21);
  options.bad_samples = 6;
  const auto result = generate_dataset(options);

  // bad_samples.txt: one record per injected damage, tab-separated.
  REQUIRE(result.bad_records.size() == 6);
  std::multiset<std::string> listed_kinds;
  std::map<std::string, std::set<uint64_t>> listed_offsets;  // file -> offsets
  for (const auto& line : lines_of(join_path(dir, "bad_samples.txt"))) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string source, file, offset, kind;
    std::getline(fields, source, '\t');
    std::getline(fields, file, '\t');
    std::getline(fields, offset, '\t');
    std::getline(fields, kind, '\t');
    listed_kinds.insert(source + ":" + kind);
    listed_offsets[file].insert(std::stoull(offset));
  }
  CHECK(listed_kinds == std::multiset<std::string>{"web:invalid_json", "web:invalid_utf8", "books:missing_field",
                                                   "images:corrupt_jpeg", "images:corrupt_jpeg",
                                                   "images:missing_member"});

  SECTION("jsonl lines parse, but for the listed ones") {
    std::vector<size_t> web_words;
    size_t bad_lines = 0;
    for (const std::string part : {"web", "books"}) {
      for (const auto& path : expand_globs(join_path(dir, part + "/*.jsonl"), part)) {
        const std::string relative = path.substr(dir.size() + 1);
        const auto bytes = read_file(path);
        const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        for (size_t offset = 0; offset < all.size();) {
          const size_t end = all.find('\n', offset);
          REQUIRE(end != std::string_view::npos);
          std::string text;
          JsonStatus status;
          const auto field = extract_string_field(all.substr(offset, end - offset), "text", text, status);
          const bool listed = listed_offsets[relative].contains(offset);
          INFO(relative << " offset " << offset << ": " << status.message);
          CHECK((field == JsonFieldResult::ok) != listed);
          bad_lines += listed;
          if (part == "web" && field == JsonFieldResult::ok) web_words.push_back(count_words(text));
          offset = end + 1;
        }
      }
    }
    CHECK(bad_lines == 3);
    REQUIRE(web_words.size() == 298);
    // Long-tailed: the 99th percentile is many medians, the largest far more.
    const size_t median = quantile(web_words, 0.5);
    CHECK(median > 80);
    CHECK(median < 220);
    CHECK(quantile(web_words, 0.99) > 5 * median);
  }

  SECTION("images decode, but for the listed ones") {
    size_t pairs = 0, failed = 0, gray = 0;
    std::set<std::pair<int, int>> sizes;
    for (const auto& path : expand_globs(join_path(dir, "images/*.tar"), "images")) {
      const std::string relative = path.substr(dir.size() + 1);
      MappedFile tar(path);
      TarScanner scanner(tar.bytes());
      TarMember member;
      while (scanner.next(member)) {
        CHECK_FALSE(member.truncated);
        const std::string_view data(reinterpret_cast<const char*>(tar.bytes().data() + member.data_offset), member.size_bytes);
        if (!member.name.ends_with(".jpg")) {
          CHECK(is_valid_utf8(data));
          ++pairs;
          continue;
        }
        const bool decodes = jpeg_decodes(data);
        INFO(member.name);
        CHECK(decodes != listed_offsets[relative].contains(member.header_offset));
        failed += !decodes;
        if (decodes) {
          tjhandle handle = tjInitDecompress();
          int width = 0, height = 0, subsampling = 0, colorspace = 0;
          tjDecompressHeader3(handle, reinterpret_cast<const unsigned char*>(data.data()), data.size(), &width, &height,
                              &subsampling, &colorspace);
          tjDestroy(handle);
          gray += colorspace == TJCS_GRAY;
          sizes.insert({width, height});
          CHECK(std::min(width, height) >= 48);
          CHECK(std::max(width, height) <= 1600);
        }
      }
      CHECK(scanner.stop() == TarScanner::Stop::end);
    }
    CHECK(pairs == 64);  // every sample has its caption, the one without an image too
    CHECK(failed == 2);
    CHECK(gray > 0);
    CHECK(sizes.size() > 40);
  }

  SECTION("the sources count exactly the listed bad records") {
    std::multiset<std::string> found;
    for (const auto& [name, format, glob] : {std::tuple{"web", "jsonl", "web/*.jsonl"},
                                             std::tuple{"books", "jsonl", "books/*.jsonl"},
                                             std::tuple{"images", "wds", "images/*.tar"}}) {
      auto source = open(name, format, join_path(dir, glob), cache);
      RawSample sample;
      for (uint64_t i = 0; i < source->size(); ++i) {
        source->read(i, sample);
        if (sample.bad == BadKind::none) continue;
        found.insert(str(name, ":", bad_kind_name(sample.bad)));
        // The reader reports the place bad_samples.txt names: the line, or the sample's first member.
        const std::string relative = sample.where.file.substr(sample.where.file.rfind('/', sample.where.file.rfind('/') - 1) + 1);
        INFO(sample.where.file << " offset " << sample.where.offset);
        CHECK(listed_offsets[relative].contains(sample.where.offset));
      }
    }
    // JPEG damage is found by the image transform, not by the tar reader.
    CHECK(found == std::multiset<std::string>{"web:invalid_json", "web:invalid_utf8", "books:missing_field",
                                              "images:missing_member"});
  }

  SECTION("the corpus validates and decodes with the vocabulary") {
    auto corpus = open("corpus", "indexed", join_path(dir, "corpus/*.idx"), cache);
    REQUIRE(corpus->size() == 200);
    Tokenizer tokenizer(join_path(dir, "vocab.tiktoken"), TokenizerOptions{});
    CHECK(tokenizer.vocab_size() == 2048);
    std::vector<uint64_t> lengths;
    RawSample sample;
    for (uint64_t i = 0; i < corpus->size(); ++i) {
      lengths.push_back(corpus->length_hint(i));
      corpus->read(i, sample);
      REQUIRE(sample.bad == BadKind::none);
      REQUIRE(sample.tokens.size() == lengths.back());
      CHECK(*std::max_element(sample.tokens.begin(), sample.tokens.end()) < 2048);
      if (i % 50 == 0) {
        const std::string text = tokenizer.decode(sample.tokens);
        CHECK(is_valid_utf8(text));
        CHECK(tokenizer.encode(text) == sample.tokens);
      }
    }
    const uint64_t median = quantile(lengths, 0.5);
    CHECK(median > 300);
    CHECK(quantile(lengths, 0.99) > 5 * median);
    // uint16 ids: the .bin holds two bytes per token.
    uint64_t tokens = 0, bin_bytes = 0;
    for (auto length : lengths) tokens += length;
    for (const auto& file : result.files) {
      if (file.path.starts_with("corpus/") && file.path.ends_with(".bin")) bin_bytes += file.bytes;
    }
    CHECK(bin_bytes == 2 * tokens);
  }
}

TEST_CASE("--compress writes the web text compressed, with the same records and bad-record offsets", "[datagen]") {
  const std::string plain_dir = fresh_dir("compress_none");
  DatagenOptions options = tiny(plain_dir, 31);
  options.bad_samples = 6;
  options.images = 4;
  options.indexed_docs = 4;
  generate_dataset(options);
  SourceConfig config;
  config.name = "web";
  config.format = SourceFormat::jsonl;
  config.path = join_path(plain_dir, "web/*.jsonl");
  auto plain = open_source(config, {});
  for (const std::string compress : {"zst", "gz"}) {
    INFO(compress);
    const std::string dir = fresh_dir("compress_" + compress);
    options.out_dir = dir;
    options.compress = compress;
    const auto result = generate_dataset(options);
    CHECK(fs::exists(join_path(dir, "web/web-0000.jsonl." + compress)));
    CHECK(fs::exists(join_path(dir, "books/books-0000.jsonl")));  // only the web text
    CHECK(lines_of(join_path(dir, "MANIFEST")).at(8) == "web_compression " + std::string(compress == "zst" ? "zstd" : "gzip"));
    CHECK(generate_dataset(options).reused);
    DatagenOptions uncompressed = options;
    uncompressed.compress = "none";
    CHECK_THROWS_AS(generate_dataset(uncompressed), ConfigError);  // another dataset: refused, not reused

    config.path = join_path(dir, "web/*.jsonl*");
    auto source = open_source(config, {});
    REQUIRE(source->size() == plain->size());
    RawSample expected, got;
    for (uint64_t i = 0; i < source->size(); ++i) {
      plain->read(i, expected);
      source->read(i, got);
      REQUIRE(got.bad == expected.bad);
      CHECK(got.text == expected.text);
    }
    // Each listed web record is bad where bad_samples.txt says (a decompressed offset).
    size_t web_bad = 0;
    for (const auto& bad : result.bad_records) {
      if (bad.source != "web") continue;
      ++web_bad;
      bool found = false;
      for (uint64_t i = 0; i < source->size() && !found; ++i) {
        const SampleLocation where = source->locate(i);
        if (where.file != join_path(dir, bad.file) || where.offset != bad.offset) continue;
        source->read(i, got);
        found = got.bad == bad.kind;
      }
      CHECK(found);
    }
    CHECK(web_bad == 2);
  }
  options.compress = "lz4";
  CHECK_THROWS_WITH(generate_dataset(options), Catch::Contains("--compress") && Catch::Contains("lz4"));
}
