// Test helper: changes one stored value of an HDF5 file in place, below the
// msd libraries (raw HDF5 calls), the way a stray write or a hand edit would:
// a number attribute, or one field of one row of a dataset. Integrity tests
// use it to check that every single changed value is found.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace msd::test {

namespace poke_detail {
inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("h5_poke: " + what + " failed");
}
// Adds `delta` to the number of class `type_class` and `size` bytes at `at`
// (little-endian, as stored on the machines msd runs on).
inline void add(unsigned char* at, H5T_class_t type_class, size_t size, int64_t delta) {
  if (type_class == H5T_FLOAT && size == 8) {
    double v;
    std::memcpy(&v, at, 8);
    v += static_cast<double>(delta) * 0.5;
    std::memcpy(at, &v, 8);
    return;
  }
  check(type_class == H5T_INTEGER && size <= 8, "poking a non-number");
  uint64_t v = 0;
  std::memcpy(&v, at, size);
  v += static_cast<uint64_t>(delta);
  std::memcpy(at, &v, size);
}
}  // namespace poke_detail

// Adds `delta` to the root's number attribute `name` (a string attribute
// gets its first byte changed).
inline void poke_attribute(const std::string& path, const std::string& name, int64_t delta = 1) {
  using poke_detail::check;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  check(file >= 0, "opening " + path);
  const hid_t attribute = H5Aopen(file, name.c_str(), H5P_DEFAULT);
  check(attribute >= 0, "opening attribute " + name);
  const hid_t type = H5Aget_type(attribute);
  const size_t size = H5Tget_size(type);
  std::vector<unsigned char> value(size);
  check(H5Aread(attribute, type, value.data()) >= 0, "reading " + name);
  if (H5Tget_class(type) == H5T_STRING) value[0] ^= 1;
  else poke_detail::add(value.data(), H5Tget_class(type), size, delta);
  check(H5Awrite(attribute, type, value.data()) >= 0, "writing " + name);
  H5Tclose(type);
  H5Aclose(attribute);
  check(H5Fclose(file) >= 0, "closing " + path);
}

// Adds `delta` to row `row` of dataset `name`: to its compound member
// `member`, or, for a dataset of numbers (member empty), to the number.
inline void poke_dataset(const std::string& path, const std::string& name, uint64_t row, const std::string& member,
                         int64_t delta = 1) {
  using poke_detail::check;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  check(file >= 0, "opening " + path);
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  check(dataset >= 0, "opening dataset " + name);
  const hid_t type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  const size_t rows = static_cast<size_t>(H5Sget_simple_extent_npoints(space));
  check(row < rows, "row " + std::to_string(row) + " of " + name);
  const size_t size = H5Tget_size(type);
  std::vector<unsigned char> data(rows * size);
  check(H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0, "reading " + name);
  unsigned char* at = data.data() + row * size;
  if (member.empty()) {
    poke_detail::add(at, H5Tget_class(type), size, delta);
  } else {
    const int index = H5Tget_member_index(type, member.c_str());
    check(index >= 0, "member " + member + " of " + name);
    const hid_t member_type = H5Tget_member_type(type, static_cast<unsigned>(index));
    poke_detail::add(at + H5Tget_member_offset(type, static_cast<unsigned>(index)), H5Tget_class(member_type),
                     H5Tget_size(member_type), delta);
    H5Tclose(member_type);
  }
  check(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0, "writing " + name);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(dataset);
  check(H5Fclose(file) >= 0, "closing " + path);
}

}  // namespace msd::test
