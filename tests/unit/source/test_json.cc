// The JSON parser that reads JSON lines, and the JSON writer.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/json_writer.h"
#include "common/utf8.h"
#include "source/jsonl/json.h"

using namespace msd;

TEST_CASE("json parses every value type and escape") {
  JsonValue value;
  auto status = parse_json(R"( {"a": [1, -2.5e-3, 0, true, false, null], "b": {"c": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}} )",
                           value);
  REQUIRE(status.ok);
  REQUIRE(value.type == JsonType::object);
  const JsonValue* a = value.find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->array.size() == 6);
  CHECK(a->array[0].number == 1.0);
  CHECK(a->array[1].number == Approx(-2.5e-3));
  CHECK(a->array[3].type == JsonType::boolean);
  CHECK(a->array[3].boolean);
  CHECK(a->array[5].type == JsonType::null);
  CHECK(value.find("b")->find("c")->string == "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(value.find("missing") == nullptr);
}

TEST_CASE("json rejects malformed text with the offset of the first error") {
  struct Case {
    const char* text;
    size_t offset;
  };
  for (auto [text, offset] : {Case{"{\"a\": 1,}", 8}, Case{"[1 2]", 3}, Case{"{\"a\" 1}", 5}, Case{"01", 1},
                              Case{"\"abc", 4}, Case{"\"a\\x\"", 2}, Case{"\"\\u12g4\"", 1}, Case{"tru", 0},
                              Case{"{} x", 3}, Case{"", 0}, Case{"1.", 2}, Case{"-", 1}, Case{"\"a\tb\"", 2},
                              Case{"[1e]", 3}}) {
    INFO(text);
    JsonValue value;
    auto status = parse_json(text, value);
    CHECK_FALSE(status.ok);
    CHECK(status.offset == offset);
    CHECK_FALSE(status.message.empty());
    CHECK_FALSE(validate_json(text).ok);
  }
  std::string deep(json_max_depth + 1, '[');
  deep += std::string(json_max_depth + 1, ']');
  CHECK_FALSE(validate_json(deep).ok);
  std::string ok_depth(100, '[');
  ok_depth += std::string(100, ']');
  CHECK(validate_json(ok_depth).ok);
}

TEST_CASE("extract_string_field classifies objects, fields and encodings") {
  std::string out;
  JsonStatus status;
  CHECK(extract_string_field(R"({"x": {"text": 1}, "text": "hi \u00e9", "y": []})", "text", out, status) ==
        JsonFieldResult::ok);
  CHECK(out == "hi \xc3\xa9");
  CHECK(extract_string_field(R"({"text": "a", "text": "b"})", "text", out, status) == JsonFieldResult::ok);
  CHECK(out == "b");
  CHECK(extract_string_field(R"({"other": "a"})", "text", out, status) == JsonFieldResult::missing);
  CHECK(extract_string_field(R"({"text": 12})", "text", out, status) == JsonFieldResult::not_string);
  CHECK(status.message.find("number") != std::string::npos);
  CHECK(extract_string_field(R"(["text"])", "text", out, status) == JsonFieldResult::invalid_json);
  CHECK(extract_string_field(R"({"text": "a"} {)", "text", out, status) == JsonFieldResult::invalid_json);
  CHECK(status.offset == 14);
  CHECK(extract_string_field(R"({"text": "a", "b": [1,}])", "text", out, status) == JsonFieldResult::invalid_json);
  // Raw invalid byte at offset 12 of the line.
  CHECK(extract_string_field("{\"text\": \"ab\xff\"}", "text", out, status) == JsonFieldResult::invalid_utf8);
  CHECK(status.offset == 12);
  // An unpaired surrogate escape cannot be UTF-8; the offset is the escape's.
  CHECK(extract_string_field(R"({"text": "ok \ud800 x"})", "text", out, status) == JsonFieldResult::invalid_utf8);
  CHECK(status.offset == 13);
  // A surrogate pair is fine.
  CHECK(extract_string_field(R"({"text": "\ud83d\ude00"})", "text", out, status) == JsonFieldResult::ok);
  CHECK(out == "\xf0\x9f\x98\x80");
}

TEST_CASE("append_json_string round-trips through the parser") {
  std::string value = std::string("quote\" back\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9", 34);
  std::string literal;
  append_json_string(literal, value);
  JsonValue parsed;
  REQUIRE(parse_json(literal, parsed).ok);
  CHECK(parsed.string == value);
}

TEST_CASE("the JSON writer writes valid JSON for bytes that are not UTF-8") {
  // A lone continuation byte, a lead byte before ASCII, 0xFF, a truncated
  // 3-byte sequence, an encoded surrogate and an overlong '/', between
  // well-formed text that must pass unchanged.
  const std::string bad = "ok \x80 \xC3( \xFF \xE2\x82 \xED\xA0\x80 \xC0\xAF \xc3\xa9\xe2\x82\xac";
  // Each byte of an ill-formed sequence becomes the code point of its value.
  const std::string read_back =
      "ok \xC2\x80 \xC3\x83( \xC3\xBF \xC3\xA2\xC2\x82 \xC3\xAD\xC2\xA0\xC2\x80 \xC3\x80\xC2\xAF \xc3\xa9\xe2\x82\xac";
  CHECK(json_escape("a\xFF\x80" "b") == "a\\u00ff\\u0080b");
  CHECK(json_escape("\xc3\xa9\xf0\x9f\x98\x80") == "\xc3\xa9\xf0\x9f\x98\x80");
  JsonWriter w;
  w.begin_object().value(bad, bad).begin_array("list").value("", bad).end_array().end_object();
  CHECK(is_valid_utf8(w.str()));  // the parser below passes any bytes through
  JsonValue parsed;
  const JsonStatus status = parse_json(w.str(), parsed);
  INFO(status.message);
  REQUIRE(status.ok);
  REQUIRE(parsed.type == JsonType::object);
  REQUIRE(parsed.object.size() == 2);
  CHECK(parsed.object[0].first == read_back);
  CHECK(parsed.object[0].second.string == read_back);
  CHECK(parsed.object[1].second.array.at(0).string == read_back);
}
