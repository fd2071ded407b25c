#include "common/json_writer.h"

#include <cmath>
#include <cstdio>

#include "common/utf8.h"

namespace msd {

namespace {

// \u00XX of a byte.
void append_u00(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  out += "\\u00";
  out.push_back(hex[c >> 4]);
  out.push_back(hex[c & 0xF]);
}

// Escapes well-formed UTF-8 text: bytes >= 0x80 are copied.
void append_escaped_utf8(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) append_u00(out, c);
        else out.push_back(ch);
    }
  }
}

// Well-formed runs escaped as text; each byte that starts no well-formed
// sequence as \u00XX (first_invalid_utf8 stops at it, so this is linear).
void append_escaped(std::string& out, std::string_view s) {
  while (!s.empty()) {
    const size_t bad = first_invalid_utf8(s);
    append_escaped_utf8(out, s.substr(0, bad));
    if (bad == s.size()) return;
    append_u00(out, static_cast<unsigned char>(s[bad]));
    s.remove_prefix(bad + 1);
  }
}

}  // namespace

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_escaped(out, s);
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  append_escaped(out, s);
  out.push_back('"');
}

void JsonWriter::key(const std::string& k) {
  if (!first_.back()) out_ += ",";
  first_.back() = false;
  if (!k.empty()) {
    append_json_string(out_, k);
    out_ += ":";
  }
}

JsonWriter& JsonWriter::begin_object(const std::string& k) {
  if (!(out_.empty() && first_.size() == 1)) key(k);
  out_ += "{";
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  first_.pop_back();
  out_ += "}";
  return *this;
}

JsonWriter& JsonWriter::begin_array(const std::string& k) {
  key(k);
  out_ += "[";
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  first_.pop_back();
  out_ += "]";
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& k, const std::string& v) {
  key(k);
  append_json_string(out_, v);
  return *this;
}

void JsonWriter::number(double v, const char* format) {
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  out_ += buf;
}

JsonWriter& JsonWriter::value(const std::string& k, double v) {
  key(k);
  number(v, "%.12g");
  return *this;
}

JsonWriter& JsonWriter::exact_value(const std::string& k, double v) {
  key(k);
  number(v, "%.17g");
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& k, uint64_t v) {
  key(k);
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& k, int64_t v) {
  key(k);
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& k, bool v) {
  key(k);
  out_ += v ? "true" : "false";
  return *this;
}

}  // namespace msd
