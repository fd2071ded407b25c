// Test helper: changes one stored value of an HDF5 file in place, below the
// formats' own writers (HDF5 calls on the stored bytes), the way a stray write or a hand edit would:
// a number attribute, or one field of one row of a dataset. Integrity tests
// use it to check that every single changed value is found.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/hdf5.h"

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
  h5::File file = h5::open_file(path, true);
  h5::Attribute attribute(MSD_H5(H5Aopen(file.get(), name.c_str(), H5P_DEFAULT), "poking " + name));
  h5::Datatype type(MSD_H5(H5Aget_type(attribute.get()), "poking " + name));
  std::vector<unsigned char> value(H5Tget_size(type.get()));
  MSD_H5(H5Aread(attribute.get(), type.get(), value.data()), "poking " + name);
  if (H5Tget_class(type.get()) == H5T_STRING) value[0] ^= 1;
  else poke_detail::add(value.data(), H5Tget_class(type.get()), value.size(), delta);
  MSD_H5(H5Awrite(attribute.get(), type.get(), value.data()), "poking " + name);
  file.close("closing " + path);
}

// Adds `delta` to row `row` of dataset `name`: to its compound member
// `member`, or, for a dataset of numbers (member empty), to the number.
inline void poke_dataset(const std::string& path, const std::string& name, uint64_t row, const std::string& member,
                         int64_t delta = 1) {
  h5::File file = h5::open_file(path, true);
  h5::Dataset dataset = h5::open_dataset(file.get(), name);
  h5::Datatype type(MSD_H5(H5Dget_type(dataset.get()), "poking " + name));
  h5::Dataspace space(MSD_H5(H5Dget_space(dataset.get()), "poking " + name));
  const size_t rows = static_cast<size_t>(H5Sget_simple_extent_npoints(space.get()));
  poke_detail::check(row < rows, "row " + std::to_string(row) + " of " + name);
  const size_t size = H5Tget_size(type.get());
  std::vector<unsigned char> data(rows * size);
  MSD_H5(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), "poking " + name);
  unsigned char* at = data.data() + row * size;
  if (member.empty()) {
    poke_detail::add(at, H5Tget_class(type.get()), size, delta);
  } else {
    const int index = MSD_H5(H5Tget_member_index(type.get(), member.c_str()), "member " + member);
    h5::Datatype member_type(MSD_H5(H5Tget_member_type(type.get(), static_cast<unsigned>(index)), "poking " + name));
    poke_detail::add(at + H5Tget_member_offset(type.get(), static_cast<unsigned>(index)),
                     H5Tget_class(member_type.get()), H5Tget_size(member_type.get()), delta);
  }
  MSD_H5(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), "poking " + name);
  file.close("closing " + path);
}

}  // namespace msd::test
