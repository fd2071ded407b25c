#include "source/parquet/thrift.h"

namespace msd {

namespace {

// Nesting deeper than this is no Parquet metadata: a hostile footer could
// otherwise recurse without end in skip().
constexpr int kMaxDepth = 64;

const char* type_name(ThriftType type) {
  switch (type) {
    case ThriftType::stop: return "stop";
    case ThriftType::bool_true:
    case ThriftType::bool_false: return "bool";
    case ThriftType::i8: return "i8";
    case ThriftType::i16: return "i16";
    case ThriftType::i32: return "i32";
    case ThriftType::i64: return "i64";
    case ThriftType::dbl: return "double";
    case ThriftType::binary: return "binary";
    case ThriftType::list: return "list";
    case ThriftType::set: return "set";
    case ThriftType::map: return "map";
    case ThriftType::structure: return "struct";
  }
  return "unknown";
}

}  // namespace

void ThriftReader::fail(const std::string& why) const {
  throw ThriftError(str("malformed Thrift metadata at byte ", pos_, ": ", why));
}

uint8_t ThriftReader::byte() {
  if (pos_ >= bytes_.size()) fail("the bytes end inside a value");
  return bytes_[pos_++];
}

uint64_t ThriftReader::varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = byte();
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  fail("a varint longer than 10 bytes");
}

void ThriftReader::expect(ThriftType got, ThriftType want, const char* what) const {
  if (got != want) fail(str("a ", what, " field has type ", type_name(got)));
}

void ThriftReader::begin_struct() {
  if (last_ids_.size() >= kMaxDepth) fail("structs nested too deep");
  last_ids_.push_back(0);
}

bool ThriftReader::next_field(int16_t& id, ThriftType& type) {
  MSD_CHECK(!last_ids_.empty());
  const uint8_t header = byte();
  type = static_cast<ThriftType>(header & 0x0f);
  if (type == ThriftType::stop) {
    last_ids_.pop_back();
    return false;
  }
  if (type > ThriftType::structure) fail(str("unknown field type ", header & 0x0f));
  const int delta = header >> 4;
  const int64_t full = delta != 0 ? last_ids_.back() + delta : zigzag();
  if (full < INT16_MIN || full > INT16_MAX) fail("a field id out of range");
  id = static_cast<int16_t>(full);
  last_ids_.back() = id;
  return true;
}

int32_t ThriftReader::read_i32(ThriftType type) {
  if (type == ThriftType::i8) return static_cast<int8_t>(byte());
  if (type != ThriftType::i16 && type != ThriftType::i32) expect(type, ThriftType::i32, "i32");
  const int64_t value = zigzag();
  if (value < INT32_MIN || value > INT32_MAX) fail("an i32 out of range");
  return static_cast<int32_t>(value);
}

int64_t ThriftReader::read_i64(ThriftType type) {
  if (type == ThriftType::i16 || type == ThriftType::i32 || type == ThriftType::i8) return read_i32(type);
  expect(type, ThriftType::i64, "i64");
  return zigzag();
}

bool ThriftReader::read_bool(ThriftType type) {
  if (type != ThriftType::bool_true && type != ThriftType::bool_false) fail(str("a bool field has type ", type_name(type)));
  return type == ThriftType::bool_true;
}

std::string ThriftReader::read_string(ThriftType type) {
  expect(type, ThriftType::binary, "binary");
  return element_string();
}

std::string ThriftReader::element_string() {
  const uint64_t length = varint();
  if (length > bytes_.size() - pos_) fail(str("a binary value of ", length, " bytes runs past the end"));
  std::string value(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
  pos_ += length;
  return value;
}

int32_t ThriftReader::element_i32() {
  const int64_t value = zigzag();
  if (value < INT32_MIN || value > INT32_MAX) fail("an i32 out of range");
  return static_cast<int32_t>(value);
}

uint32_t ThriftReader::begin_list(ThriftType type, ThriftType& element) {
  if (type != ThriftType::list && type != ThriftType::set) fail(str("a list field has type ", type_name(type)));
  const uint8_t header = byte();
  element = static_cast<ThriftType>(header & 0x0f);
  uint64_t size = header >> 4;
  if (size == 15) size = varint();
  if (size > bytes_.size() - pos_) fail(str("a list of ", size, " elements in ", bytes_.size() - pos_, " bytes"));
  return static_cast<uint32_t>(size);
}

void ThriftReader::skip(ThriftType type) { skip_value(type, 0); }

void ThriftReader::skip_value(ThriftType type, int depth) {
  if (depth > kMaxDepth) fail("values nested too deep");
  switch (type) {
    case ThriftType::bool_true:
    case ThriftType::bool_false: return;
    case ThriftType::i8: byte(); return;
    case ThriftType::i16:
    case ThriftType::i32:
    case ThriftType::i64: varint(); return;
    case ThriftType::dbl:
      if (bytes_.size() - pos_ < 8) fail("the bytes end inside a double");
      pos_ += 8;
      return;
    case ThriftType::binary: element_string(); return;
    case ThriftType::list:
    case ThriftType::set: {
      ThriftType element;
      const uint32_t size = begin_list(type, element);
      for (uint32_t i = 0; i < size; ++i) {
        // Inside collections a bool is a byte of its own.
        if (element == ThriftType::bool_true || element == ThriftType::bool_false) byte();
        else skip_value(element, depth + 1);
      }
      return;
    }
    case ThriftType::map: {
      const uint64_t size = varint();
      if (size == 0) return;
      if (size > bytes_.size() - pos_) fail("a map larger than the bytes left");
      const uint8_t types = byte();
      for (uint64_t i = 0; i < size; ++i) {
        skip_value(static_cast<ThriftType>(types >> 4), depth + 1);
        skip_value(static_cast<ThriftType>(types & 0x0f), depth + 1);
      }
      return;
    }
    case ThriftType::structure: {
      begin_struct();
      int16_t id;
      ThriftType field;
      while (next_field(id, field)) skip_value(field, depth + 1);
      return;
    }
    case ThriftType::stop: break;
  }
  fail(str("cannot skip a value of type ", static_cast<int>(type)));
}

void ThriftWriter::varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void ThriftWriter::field_header(int16_t id, ThriftType type) {
  MSD_CHECK(!last_ids_.empty());
  const int delta = id - last_ids_.back();
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>(delta << 4 | static_cast<int>(type)));
  } else {
    out_.push_back(static_cast<char>(type));
    zigzag(id);
  }
  last_ids_.back() = id;
}

void ThriftWriter::end_struct() {
  MSD_CHECK(!last_ids_.empty());
  out_.push_back(0);
  last_ids_.pop_back();
}

void ThriftWriter::field_i32(int16_t id, int32_t value) {
  field_header(id, ThriftType::i32);
  zigzag(value);
}

void ThriftWriter::field_i64(int16_t id, int64_t value) {
  field_header(id, ThriftType::i64);
  zigzag(value);
}

void ThriftWriter::field_bool(int16_t id, bool value) {
  field_header(id, value ? ThriftType::bool_true : ThriftType::bool_false);
}

void ThriftWriter::field_string(int16_t id, std::string_view value) {
  field_header(id, ThriftType::binary);
  element_string(value);
}

void ThriftWriter::element_string(std::string_view value) {
  varint(value.size());
  out_.append(value);
}

void ThriftWriter::field_struct(int16_t id) {
  field_header(id, ThriftType::structure);
  begin_struct();
}

void ThriftWriter::field_list(int16_t id, ThriftType element, uint32_t size) {
  field_header(id, ThriftType::list);
  if (size < 15) {
    out_.push_back(static_cast<char>(size << 4 | static_cast<uint32_t>(element)));
  } else {
    out_.push_back(static_cast<char>(0xf0 | static_cast<int>(element)));
    varint(size);
  }
}

}  // namespace msd
