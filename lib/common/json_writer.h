// msd's one JSON writer, for summaries, reports, exports and generated data:
// objects and arrays nest by explicit begin/end calls; doubles print with 12
// significant digits (non-finite ones as null).
//
// Strings are escaped so the output is valid JSON for any bytes: '"', '\\'
// and control characters are escaped (\b \f \n \r \t, others \u00XX),
// well-formed UTF-8 passes through unchanged, and each byte of an ill-formed
// UTF-8 sequence is written as \u00XX of the byte's value (so 0xFF reads back
// as U+00FF: the text stays valid and the byte stays visible).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

class JsonWriter {
 public:
  JsonWriter& begin_object(const std::string& key = {});
  JsonWriter& end_object();
  JsonWriter& begin_array(const std::string& key = {});
  JsonWriter& end_array();
  JsonWriter& value(const std::string& key, const std::string& v);
  JsonWriter& value(const std::string& key, const char* v) { return value(key, std::string(v)); }
  JsonWriter& value(const std::string& key, double v);
  JsonWriter& value(const std::string& key, uint64_t v);
  JsonWriter& value(const std::string& key, int64_t v);
  JsonWriter& value(const std::string& key, int v) { return value(key, static_cast<int64_t>(v)); }
  JsonWriter& value(const std::string& key, uint32_t v) { return value(key, static_cast<uint64_t>(v)); }
  JsonWriter& value(const std::string& key, bool v);
  // All 17 significant digits: reads back to the same double (null if not finite).
  JsonWriter& exact_value(const std::string& key, double v);
  // Elements of an array: pass an empty key.
  const std::string& str() const { return out_; }

 private:
  void key(const std::string& k);
  void number(double v, const char* format);
  std::string out_;
  std::vector<bool> first_{true};
};

// `s` escaped as above, without quotes.
std::string json_escape(std::string_view s);
// Appends `s` to `out` as a JSON string literal (quotes included).
void append_json_string(std::string& out, std::string_view s);

}  // namespace msd
