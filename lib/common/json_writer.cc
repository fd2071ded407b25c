#include "common/json_writer.h"

#include <cmath>
#include <cstdio>

namespace msd {

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void JsonWriter::key(const std::string& k) {
  if (!first_.back()) out_ += ",";
  first_.back() = false;
  if (!k.empty()) out_ += "\"" + json_escape(k) + "\":";
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
  out_ += "\"" + json_escape(v) + "\"";
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& k, double v) {
  key(k);
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", v);
    out_ += buf;
  }
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
