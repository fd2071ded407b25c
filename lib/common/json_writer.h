// A small JSON writer for summaries and reports: objects and arrays nest by
// explicit begin/end calls; strings are escaped; doubles print with 12 significant digits.
#pragma once

#include <cstdint>
#include <string>
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
  // Elements of an array: pass an empty key.
  const std::string& str() const { return out_; }

 private:
  void key(const std::string& k);
  std::string out_;
  std::vector<bool> first_{true};
};

std::string json_escape(const std::string& s);

}  // namespace msd
