// Checked HDF5: every call goes through MSD_H5(call, hint), which turns a
// failure into an IoError carrying the call, the caller's hint and the messages
// of HDF5's error stack (the library's own printing to stderr is turned off).
// Handles are owned by move-only guards that close them on destruction; a
// file that must be known to be on disk is closed with File::close(), which
// checks. Helpers cover what the checkpoint and trace formats need: 1-D arrays
// of fixed-width numbers, string and number attributes, fixed tables of
// compound rows, and extendable chunked 1-D datasets that grow by appends.
//
// Not thread-safe (the HDF5 library is built without its thread-safety
// option): one thread of a process uses HDF5 at a time.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"

namespace msd::h5 {

// Turns off HDF5's automatic error printing (once per process); every entry
// point that opens or creates a file calls it.
void quiet_errors();

// Throws IoError "<hint>: <call> failed: <HDF5 error stack>".
[[noreturn]] void fail(const char* call, const std::string& hint);

template <typename T>
T check(T rc, const char* call, const std::string& hint) {
  if (rc < 0) fail(call, hint);
  return rc;
}
// Booleans (htri_t) are checked the same way: negative is an error.
#define MSD_H5(call, hint) ::msd::h5::check((call), #call, (hint))

// "<what> in <file>": the file `object` lives in, for hints about a damaged
// file (any object of an open file will do); `what` alone when it has none.
std::string in_file(hid_t object, const std::string& what);

// An owned hid_t. Close is the matching H5?close; a failed close in the
// destructor cannot be reported and is ignored (File::close reports it).
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports a failure (for files: the last writes land here).
  void close(const std::string& hint) {
    if (id_ < 0) return;
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    check(Close(id), "H5?close", hint);
  }

 private:
  void reset() {
    if (id_ >= 0) Close(std::exchange(id_, H5I_INVALID_HID));
  }
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using PropertyList = Handle<H5Pclose>;
using Attribute = Handle<H5Aclose>;

// File access properties: the HDF5 1.8 file format (large attributes in dense
// storage; readable by HDF5 1.8 and later), and, when `comm` is given, MPI-IO
// over that communicator.
PropertyList file_access(std::optional<MPI_Comm> comm = std::nullopt);

// H5F_ACC_TRUNC create (for a temporary file; `exclusive`: H5F_ACC_EXCL, an
// existing file is an error and left whole); open read-only or read-write.
// Throws IoError naming the path.
File create_file(const std::string& path, hid_t access = H5P_DEFAULT, bool exclusive = false);
File open_file(const std::string& path, bool writable, hid_t access = H5P_DEFAULT);

Group create_group(hid_t parent, const std::string& name);
Group open_group(hid_t parent, const std::string& name);
Dataset open_dataset(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& name);

// The native HDF5 type of a fixed-width number.
template <typename T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else static_assert(sizeof(T) == 0, "no HDF5 type for this number type");
}

// Rows of `type` (an HDF5 type describing T: a native number type, or a
// compound built by the caller) as a contiguous 1-D dataset `name`.
void write_rows(hid_t parent, const std::string& name, hid_t type, const void* rows, size_t count);
// Reads every row of dataset `name` as `type` into rows sized by the caller
// from rows_of(). Throws IoError when the dataset is missing or not 1-D.
size_t rows_of(hid_t parent, const std::string& name);
void read_rows(hid_t parent, const std::string& name, hid_t type, void* rows, size_t count);

template <typename T>
void write_array(hid_t parent, const std::string& name, std::span<const T> values) {
  write_rows(parent, name, native_type<T>(), values.data(), values.size());
}
template <typename T>
std::vector<T> read_array(hid_t parent, const std::string& name) {
  std::vector<T> values(rows_of(parent, name));
  read_rows(parent, name, native_type<T>(), values.data(), values.size());
  return values;
}
// Rows of a compound: `type` describes T's layout (H5Tinsert with offsetof).
template <typename T>
void write_table(hid_t parent, const std::string& name, hid_t type, std::span<const T> rows) {
  write_rows(parent, name, type, rows.data(), rows.size());
}
template <typename T>
std::vector<T> read_table(hid_t parent, const std::string& name, hid_t type) {
  std::vector<T> rows(rows_of(parent, name));
  read_rows(parent, name, type, rows.data(), rows.size());
  return rows;
}

// Attributes on a file, group or dataset. Strings are fixed-length, NUL-padded
// (a reader gets the text back without padding); numbers are scalars.
void write_attribute(hid_t object, const std::string& name, const std::string& value);
void write_attribute(hid_t object, const std::string& name, uint64_t value);
std::string read_string_attribute(hid_t object, const std::string& name);
// A list of strings as one string attribute, one item a line (items hold no
// newline).
void write_lines_attribute(hid_t object, const std::string& name, const std::vector<std::string>& lines);
std::vector<std::string> read_lines_attribute(hid_t object, const std::string& name);
uint64_t read_u64_attribute(hid_t object, const std::string& name);

// Builds a compound type of `size` bytes: add(name, offset, member type).
class CompoundType {
 public:
  explicit CompoundType(size_t size);
  CompoundType& add(const char* name, size_t offset, hid_t member);
  hid_t get() const { return type_.get(); }

 private:
  Datatype type_;
};

// A 1-D dataset of unlimited extent, chunked, that grows by appends and can be
// cut back (truncate) — the trace's tables. Rows are of `type`, which the
// caller keeps alive for the object's lifetime.
class AppendableDataset {
 public:
  AppendableDataset() = default;
  static AppendableDataset create(hid_t parent, const std::string& name, hid_t type, size_t chunk_rows);
  static AppendableDataset open(hid_t parent, const std::string& name, hid_t type);

  size_t size() const { return rows_; }
  void append(const void* rows, size_t count);
  void truncate(size_t rows);  // REQUIRES rows <= size()
  void read(size_t first, size_t count, void* rows) const;

 private:
  Dataset dataset_;
  hid_t type_ = H5I_INVALID_HID;
  size_t rows_ = 0;
  std::string name_;
};

}  // namespace msd::h5
