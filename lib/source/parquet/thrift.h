// Apache Thrift's compact protocol, as much of it as Parquet's metadata (the
// footer's FileMetaData, every page's PageHeader) needs: a reader over bytes
// held in memory and a writer. The reader checks every length and count
// against the bytes left, so a damaged or hostile footer ends in an error,
// never in a read past the end or an allocation it cannot back.
//
// The encoding (Thrift's doc/specs/thrift-compact-protocol.md): a struct is a
// series of fields, each a header byte (the field id as a delta to the
// previous one in the high nibble, or 0 and a zigzag varint id after it; the
// type in the low nibble) and a value; a 0 byte ends it. Integers are zigzag
// varints, binary values a varint length and the bytes, lists a header byte
// (size in the high nibble, 15: a varint size follows; element type in the
// low nibble) and the elements. A bool field's value is its type (1 true,
// 2 false).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace msd {

// The compact protocol's type codes.
enum class ThriftType : uint8_t {
  stop = 0,
  bool_true = 1,
  bool_false = 2,
  i8 = 3,
  i16 = 4,
  i32 = 5,
  i64 = 6,
  dbl = 7,
  binary = 8,
  list = 9,
  set = 10,
  map = 11,
  structure = 12,
};

// A malformed encoding; the message says what and at which byte.
class ThriftError : public Error {
 public:
  using Error::Error;
};

// Reads one value after another. Typical use, for a struct:
//   reader.begin_struct();
//   int16_t id; ThriftType type;
//   while (reader.next_field(id, type)) {
//     if (id == 1) x = reader.read_i32(type); else reader.skip(type);
//   }
// Every read throws ThriftError when the bytes end early, a value has the
// wrong type, or a size is impossible. Not thread-safe.
class ThriftReader {
 public:
  explicit ThriftReader(std::span<const unsigned char> bytes) : bytes_(bytes) {}

  void begin_struct();
  // The next field's id and type; false at the struct's end (which it consumes).
  bool next_field(int16_t& id, ThriftType& type);
  void skip(ThriftType type);

  int32_t read_i32(ThriftType type);
  int64_t read_i64(ThriftType type);
  bool read_bool(ThriftType type);
  std::string read_string(ThriftType type);
  // A list's element count and type (checked against the bytes left: every
  // element takes at least one byte).
  uint32_t begin_list(ThriftType type, ThriftType& element);
  // List elements (no field header).
  int32_t element_i32();
  std::string element_string();

  size_t position() const { return pos_; }

 private:
  uint8_t byte();
  uint64_t varint();
  int64_t zigzag() {
    const uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  [[noreturn]] void fail(const std::string& why) const;
  void expect(ThriftType got, ThriftType want, const char* what) const;
  void skip_value(ThriftType type, int depth);

  std::span<const unsigned char> bytes_;
  size_t pos_ = 0;
  std::vector<int16_t> last_ids_;  // the enclosing structs' last field ids
};

// Appends the compact encoding of values to a byte string. Fields must be
// written in the order a struct declares them (ascending ids, as Thrift's
// own writers do), each struct closed by end_struct().
class ThriftWriter {
 public:
  void begin_struct() { last_ids_.push_back(0); }
  void end_struct();
  void field_i32(int16_t id, int32_t value);
  void field_i64(int16_t id, int64_t value);
  void field_bool(int16_t id, bool value);
  void field_string(int16_t id, std::string_view value);
  // A struct-valued field: its header, then begin_struct().
  void field_struct(int16_t id);
  void field_list(int16_t id, ThriftType element, uint32_t size);
  void element_i32(int32_t value) { zigzag(value); }
  void element_string(std::string_view value);
  // A struct element of a list: begin_struct() without a field header.
  void element_struct() { begin_struct(); }

  const std::string& bytes() const { return out_; }

 private:
  void field_header(int16_t id, ThriftType type);
  void varint(uint64_t value);
  void zigzag(int64_t value) { varint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63)); }

  std::string out_;
  std::vector<int16_t> last_ids_;
};

}  // namespace msd
