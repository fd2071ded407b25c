#include "source/jsonl/json.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "common/utf8.h"

namespace msd {

namespace {

void append_utf8(std::string& out, uint32_t code_point) {
  // Surrogates (unpaired escapes) take the 3-byte path on purpose: the result
  // is ill-formed UTF-8, which is exactly what the caller should get to see.
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonStatus& status() { return status_; }
  size_t position() const { return pos_; }

  bool fail(size_t offset, std::string message) {
    if (status_.ok) {
      status_.ok = false;
      status_.offset = offset;
      status_.message = std::move(message);
    }
    return false;
  }

  void skip_whitespace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  bool expect(char c, const char* what) {
    skip_whitespace();
    if (at_end()) return fail(pos_, str("unexpected end of input, expected ", what));
    if (text_[pos_] != c) return fail(pos_, str("expected ", what));
    ++pos_;
    return true;
  }

  bool finish() {
    skip_whitespace();
    if (!at_end()) return fail(pos_, "unexpected data after the JSON value");
    return true;
  }

  // The type a value starting at the current position would have (after
  // whitespace); used to name the type of a field that is not a string.
  const char* upcoming_type_name() {
    skip_whitespace();
    if (at_end()) return "nothing";
    switch (text_[pos_]) {
      case '{': return "object";
      case '[': return "array";
      case '"': return "string";
      case 't':
      case 'f': return "boolean";
      case 'n': return "null";
      default: return "number";
    }
  }

  // Parses one value. `out` null: validate and skip.
  bool parse_value(JsonValue* out, int depth) {
    skip_whitespace();
    if (at_end()) return fail(pos_, "unexpected end of input, expected a value");
    char c = text_[pos_];
    switch (c) {
      case '{': return parse_object(out, depth);
      case '[': return parse_array(out, depth);
      case '"':
        if (out != nullptr) {
          out->type = JsonType::string;
          out->string.clear();
          return parse_string(&out->string);
        }
        return parse_string(nullptr);
      case 't': return parse_literal("true", out, JsonType::boolean, true);
      case 'f': return parse_literal("false", out, JsonType::boolean, false);
      case 'n': return parse_literal("null", out, JsonType::null, false);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
        return fail(pos_, "expected a value");
    }
  }

  // Parses a string literal starting at the current '"'. `out` null: skip.
  bool parse_string(std::string* out) {
    if (at_end() || text_[pos_] != '"') return fail(pos_, "expected a string");
    ++pos_;
    std::string scratch;
    std::string& sink = out != nullptr ? *out : scratch;
    while (true) {
      if (at_end()) return fail(pos_, "unterminated string");
      if (text_[pos_] == '"') {
        ++pos_;
        return true;
      }
      if (!decode_unit(sink)) return false;
      if (out == nullptr) scratch.clear();
    }
  }

  // Decodes one character unit of a string body at the current position (a
  // raw byte or an escape sequence) and appends it to `out`.
  bool decode_unit(std::string& out) {
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c < 0x20) return fail(pos_, "control character in string (must be escaped)");
    if (c != '\\') {
      out.push_back(static_cast<char>(c));
      ++pos_;
      return true;
    }
    size_t escape_start = pos_;
    if (pos_ + 1 >= text_.size()) return fail(pos_, "unterminated escape");
    char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': out.push_back('"'); return true;
      case '\\': out.push_back('\\'); return true;
      case '/': out.push_back('/'); return true;
      case 'b': out.push_back('\b'); return true;
      case 'f': out.push_back('\f'); return true;
      case 'n': out.push_back('\n'); return true;
      case 'r': out.push_back('\r'); return true;
      case 't': out.push_back('\t'); return true;
      case 'u': break;
      default: return fail(escape_start, str("invalid escape '\\", e, "'"));
    }
    uint32_t unit = 0;
    if (!read_hex4(escape_start, unit)) return false;
    if (unit >= 0xD800 && unit <= 0xDBFF && pos_ + 1 < text_.size() && text_[pos_] == '\\' &&
        text_[pos_ + 1] == 'u') {
      size_t low_start = pos_;
      pos_ += 2;
      uint32_t low = 0;
      if (!read_hex4(low_start, low)) return false;
      if (low >= 0xDC00 && low <= 0xDFFF) {
        append_utf8(out, 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
        return true;
      }
      // Not a pair: the high surrogate stands alone; the second escape is
      // decoded on its own at the next call.
      pos_ = low_start;
    }
    append_utf8(out, unit);
    return true;
  }

  std::string_view text() const { return text_; }
  void set_position(size_t pos) { pos_ = pos; }

 private:
  bool read_hex4(size_t escape_start, uint32_t& value) {
    if (pos_ + 4 > text_.size()) return fail(escape_start, "truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hex_digit(text_[pos_ + i]);
      if (digit < 0) return fail(escape_start, "invalid \\u escape (needs 4 hex digits)");
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    pos_ += 4;
    return true;
  }

  bool parse_literal(std::string_view word, JsonValue* out, JsonType type, bool value) {
    if (text_.substr(pos_, word.size()) != word) return fail(pos_, "expected a value");
    pos_ += word.size();
    if (out != nullptr) {
      out->type = type;
      out->boolean = value;
    }
    return true;
  }

  bool parse_number(JsonValue* out) {
    size_t start = pos_;
    auto digit = [&](size_t i) { return i < text_.size() && text_[i] >= '0' && text_[i] <= '9'; };
    if (text_[pos_] == '-') ++pos_;
    if (!digit(pos_)) return fail(pos_, "expected a digit");
    if (text_[pos_] == '0') {
      ++pos_;
      if (digit(pos_)) return fail(pos_, "leading zero in number");
    } else {
      while (digit(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digit(pos_)) return fail(pos_, "expected a digit after '.'");
      while (digit(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digit(pos_)) return fail(pos_, "expected a digit in the exponent");
      while (digit(pos_)) ++pos_;
    }
    if (out != nullptr) {
      out->type = JsonType::number;
      double value = 0.0;
      auto result = std::from_chars(text_.data() + start, text_.data() + pos_, value);
      if (result.ec == std::errc::result_out_of_range) {
        // The grammar allows any magnitude; like strtod, overflow gives
        // infinity and underflow zero.
        bool negative = text_[start] == '-';
        size_t e = text_.find_first_of("eE", start);
        bool tiny = e < pos_ && text_[e + 1] == '-';
        value = tiny ? (negative ? -0.0 : 0.0)
                     : (negative ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity());
      }
      out->number = value;
    }
    return true;
  }

  bool parse_array(JsonValue* out, int depth) {
    if (depth >= json_max_depth) return fail(pos_, str("nesting deeper than ", json_max_depth));
    ++pos_;
    if (out != nullptr) {
      out->type = JsonType::array;
      out->array.clear();
    }
    skip_whitespace();
    if (!at_end() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      JsonValue* element = nullptr;
      if (out != nullptr) element = &out->array.emplace_back();
      if (!parse_value(element, depth + 1)) return false;
      skip_whitespace();
      if (at_end()) return fail(pos_, "unexpected end of input in array");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail(pos_, "expected ',' or ']'");
    }
  }

  bool parse_object(JsonValue* out, int depth) {
    if (depth >= json_max_depth) return fail(pos_, str("nesting deeper than ", json_max_depth));
    ++pos_;
    if (out != nullptr) {
      out->type = JsonType::object;
      out->object.clear();
    }
    skip_whitespace();
    if (!at_end() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    std::string key;
    while (true) {
      skip_whitespace();
      if (at_end()) return fail(pos_, "unexpected end of input in object");
      if (text_[pos_] != '"') return fail(pos_, "expected a member name");
      key.clear();
      if (!parse_string(&key)) return false;
      if (!expect(':', "':'")) return false;
      JsonValue* member = nullptr;
      if (out != nullptr) {
        auto& entry = out->object.emplace_back(key, JsonValue{});
        member = &entry.second;
      }
      if (!parse_value(member, depth + 1)) return false;
      skip_whitespace();
      if (at_end()) return fail(pos_, "unexpected end of input in object");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail(pos_, "expected ',' or '}'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  JsonStatus status_;
};

// Offset in `text` of the unit of the string literal at `quote` whose decoding
// produced output byte `output_offset`.
size_t source_offset_of(std::string_view text, size_t quote, size_t output_offset) {
  Parser parser(text);
  parser.set_position(quote + 1);
  std::string decoded;
  while (parser.position() < text.size() && text[parser.position()] != '"') {
    size_t unit_start = parser.position();
    if (!parser.decode_unit(decoded)) return unit_start;
    if (decoded.size() > output_offset) return unit_start;
  }
  return parser.position();
}

}  // namespace

const char* json_type_name(JsonType type) {
  switch (type) {
    case JsonType::null: return "null";
    case JsonType::boolean: return "boolean";
    case JsonType::number: return "number";
    case JsonType::string: return "string";
    case JsonType::array: return "array";
    case JsonType::object: return "object";
  }
  return "unknown";
}

const JsonValue* JsonValue::find(std::string_view name) const {
  for (auto it = object.rbegin(); it != object.rend(); ++it)
    if (it->first == name) return &it->second;
  return nullptr;
}

JsonStatus parse_json(std::string_view text, JsonValue& out) {
  Parser parser(text);
  out = JsonValue{};
  if (parser.parse_value(&out, 0)) parser.finish();
  return parser.status();
}

JsonStatus validate_json(std::string_view text) {
  Parser parser(text);
  if (parser.parse_value(nullptr, 0)) parser.finish();
  return parser.status();
}

JsonFieldResult extract_string_field(std::string_view text, std::string_view field, std::string& out,
                                     JsonStatus& status) {
  out.clear();
  Parser parser(text);
  status = JsonStatus{};
  parser.skip_whitespace();
  if (parser.at_end() || parser.peek() != '{') {
    if (parser.parse_value(nullptr, 0) && parser.finish())
      parser.fail(0, "not a JSON object");
    status = parser.status();
    return JsonFieldResult::invalid_json;
  }
  // The top-level object, walked by hand so that only `field` is decoded.
  parser.set_position(parser.position() + 1);
  bool found_string = false;
  const char* other_type = nullptr;
  size_t string_quote = 0;
  std::string key;
  bool ok = true;
  parser.skip_whitespace();
  if (!parser.at_end() && parser.peek() == '}') {
    parser.set_position(parser.position() + 1);
  } else {
    while (ok) {
      parser.skip_whitespace();
      if (parser.at_end()) {
        ok = parser.fail(parser.position(), "unexpected end of input in object");
        break;
      }
      if (parser.peek() != '"') {
        ok = parser.fail(parser.position(), "expected a member name");
        break;
      }
      key.clear();
      if (!(ok = parser.parse_string(&key))) break;
      if (!(ok = parser.expect(':', "':'"))) break;
      if (key == field) {
        const char* type = parser.upcoming_type_name();
        if (!parser.at_end() && parser.peek() == '"') {
          string_quote = parser.position();
          out.clear();
          if (!(ok = parser.parse_string(&out))) break;
          found_string = true;
          other_type = nullptr;
        } else {
          if (!(ok = parser.parse_value(nullptr, 1))) break;
          found_string = false;
          other_type = type;
        }
      } else {
        if (!(ok = parser.parse_value(nullptr, 1))) break;
      }
      parser.skip_whitespace();
      if (parser.at_end()) {
        ok = parser.fail(parser.position(), "unexpected end of input in object");
        break;
      }
      if (parser.peek() == ',') {
        parser.set_position(parser.position() + 1);
        continue;
      }
      if (parser.peek() == '}') {
        parser.set_position(parser.position() + 1);
        break;
      }
      ok = parser.fail(parser.position(), "expected ',' or '}'");
    }
  }
  if (ok) parser.finish();
  status = parser.status();
  if (!status.ok) {
    out.clear();
    return JsonFieldResult::invalid_json;
  }
  if (!found_string) {
    out.clear();
    if (other_type != nullptr) {
      status.message = str("field '", field, "' is a ", other_type, ", not a string");
      return JsonFieldResult::not_string;
    }
    status.message = str("no field '", field, "'");
    return JsonFieldResult::missing;
  }
  size_t bad = first_invalid_utf8(out);
  if (bad < out.size()) {
    status.offset = source_offset_of(text, string_quote, bad);
    status.message = str("field '", field, "' is not valid UTF-8 (byte ", bad, " of the value)");
    return JsonFieldResult::invalid_utf8;
  }
  return JsonFieldResult::ok;
}

}  // namespace msd
