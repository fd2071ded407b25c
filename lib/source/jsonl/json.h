// A strict JSON parser (RFC 8259): objects, arrays, strings with every escape
// (\uXXXX surrogate pairs included), numbers, true/false/null. Errors are
// values carrying the byte offset of the first offending byte, so a reader can
// report a malformed record without throwing on the hot path.
//
// Strings are byte strings. Bytes >= 0x80 inside a string are passed through
// unchanged, and an unpaired surrogate escape is written as its 3-byte
// (CESU-style) form: neither is rejected by the parser, so that a caller can
// tell "not JSON" from "JSON whose text is not valid UTF-8" (common/utf8.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace msd {

// Outcome of a parse: ok, or what went wrong and where (byte offset into the
// parsed text).
struct JsonStatus {
  bool ok = true;
  size_t offset = 0;
  std::string message;
};

enum class JsonType : uint8_t { null, boolean, number, string, array, object };
const char* json_type_name(JsonType type);

// A parsed JSON document. Object members keep their order; duplicate names are
// kept too, and find() returns the last one (what Python's json does).
struct JsonValue {
  JsonType type = JsonType::null;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  const JsonValue* find(std::string_view name) const;  // objects only; null when absent
};

// Parses `text` as exactly one JSON value with optional surrounding whitespace.
// Nesting deeper than json_max_depth is an error (it bounds the stack).
constexpr int json_max_depth = 512;
JsonStatus parse_json(std::string_view text, JsonValue& out);

// Validates `text` as JSON without building a document.
JsonStatus validate_json(std::string_view text);

// Result of extract_string_field.
enum class JsonFieldResult : uint8_t {
  ok,
  invalid_json,  // `text` is not JSON, or not a JSON object (status says where)
  missing,       // no member `field` at the top level
  not_string,    // the member exists but is not a string (status.message names its type)
  invalid_utf8,  // the unescaped string is not valid UTF-8 (status.offset: where in `text`)
};

// The common case of a JSON-lines reader: validates the whole of `text` as one
// JSON object and copies the unescaped value of its top-level string member
// `field` into `out` (the last one if the name repeats). Nested objects are
// validated but not built. On invalid_utf8 `out` holds the unescaped bytes and
// status.offset is the offset in `text` of the escape or byte that produced
// the first ill-formed sequence.
JsonFieldResult extract_string_field(std::string_view text, std::string_view field, std::string& out,
                                     JsonStatus& status);

}  // namespace msd
