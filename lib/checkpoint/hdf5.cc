#include "checkpoint/hdf5.h"

#include <mutex>

namespace msd::h5 {

namespace {

// One message on one line. A failed system call's ("file write failed:
// time = ..., errno = 28, error message = 'No space left on device', ...")
// keeps what failed and why.
std::string one_message(const H5E_error2_t* error) {
  std::string desc = error->desc ? error->desc : "(no description)";
  const size_t cause = desc.find("error message = '");
  if (cause != std::string::npos) {
    const size_t from = cause + 17, to = desc.find('\'', from);
    desc = str(desc.substr(0, desc.find(':')), ": ", desc.substr(from, to == std::string::npos ? to : to - from));
  }
  for (char& c : desc)
    if (c == '\n' || c == '\r') c = ' ';
  return str(error->func_name ? error->func_name : "?", ": ", desc);
}

herr_t collect_message(unsigned, const H5E_error2_t* error, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(one_message(error));
  return 0;
}

// The outermost messages say what HDF5 was doing, the innermost what failed
// (a write's errno: "No space left on device"): the first three and the last
// two of a deep stack.
std::string stack_text(const std::vector<std::string>& messages) {
  std::string text;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 3 && messages.size() > 5) {
      text += str("; (", messages.size() - 5, " more)");
      i = messages.size() - 2;
    }
    text += (text.empty() ? "" : "; ") + messages[i];
  }
  return text;
}

Dataspace simple_space(size_t rows, bool extendable, const std::string& hint) {
  const hsize_t dims[1] = {rows};
  const hsize_t unlimited[1] = {H5S_UNLIMITED};
  return Dataspace(MSD_H5(H5Screate_simple(1, dims, extendable ? unlimited : nullptr), hint));
}

size_t extent_of(hid_t dataset, const std::string& hint) {
  Dataspace space(MSD_H5(H5Dget_space(dataset), hint));
  const int rank = MSD_H5(H5Sget_simple_extent_ndims(space.get()), hint);
  if (rank != 1) throw IoError(str(hint, ": expected a 1-D dataset, found ", rank, " dimensions"));
  hsize_t dims[1] = {0};
  MSD_H5(H5Sget_simple_extent_dims(space.get(), dims, nullptr), hint);
  return static_cast<size_t>(dims[0]);
}

}  // namespace

// "<what> in <file>": the file an object lives in, so that a message about a
// damaged file says which one (H5Fget_name works on any object of an open file).
std::string in_file(hid_t object, const std::string& what) {
  const ssize_t length = H5Fget_name(object, nullptr, 0);
  if (length <= 0) return what;
  std::string name(static_cast<size_t>(length) + 1, '\0');
  if (H5Fget_name(object, name.data(), name.size()) < 0) return what;
  name.resize(static_cast<size_t>(length));
  return str(what, " in ", name);
}

void quiet_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

void fail(const char* call, const std::string& hint) {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  const std::string stack = stack_text(messages);
  throw IoError(str(hint, ": ", call, " failed", stack.empty() ? "" : ": ", stack));
}

PropertyList file_access(std::optional<MPI_Comm> comm) {
  quiet_errors();
  PropertyList access(MSD_H5(H5Pcreate(H5P_FILE_ACCESS), "creating file access properties"));
  // The 1.8 format exactly: dense storage for large attributes, and a
  // version-2 superblock, which has no "open for writing" flags (a file image
  // taken from an open file, and a file a killed writer left, read as they are).
  MSD_H5(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), "choosing the HDF5 file format");
  if (comm) MSD_H5(H5Pset_fapl_mpio(access.get(), *comm, MPI_INFO_NULL), "selecting MPI-IO for a shared file");
  return access;
}

File create_file(const std::string& path, hid_t access, bool exclusive) {
  quiet_errors();
  return File(MSD_H5(H5Fcreate(path.c_str(), exclusive ? H5F_ACC_EXCL : H5F_ACC_TRUNC, H5P_DEFAULT, access),
                     str("creating ", path)));
}

File open_file(const std::string& path, bool writable, hid_t access) {
  quiet_errors();
  return File(MSD_H5(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, access),
                     str("opening ", path, " (not an HDF5 file, or torn)")));
}

Group create_group(hid_t parent, const std::string& name) {
  return Group(MSD_H5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      in_file(parent, str("creating group ", name))));
}

Group open_group(hid_t parent, const std::string& name) {
  return Group(MSD_H5(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), in_file(parent, str("opening group ", name))));
}

Dataset open_dataset(hid_t parent, const std::string& name) {
  return Dataset(MSD_H5(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), in_file(parent, str("opening dataset ", name))));
}

bool exists(hid_t parent, const std::string& name) {
  return MSD_H5(H5Lexists(parent, name.c_str(), H5P_DEFAULT), in_file(parent, str("looking for ", name))) > 0;
}

void write_rows(hid_t parent, const std::string& name, hid_t type, const void* rows, size_t count) {
  const std::string hint = in_file(parent, str("writing dataset ", name));
  Dataspace space = simple_space(count, false, hint);
  Dataset dataset(MSD_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         hint));
  if (count > 0) MSD_H5(H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), hint);
}

size_t rows_of(hid_t parent, const std::string& name) {
  const std::string hint = in_file(parent, str("reading dataset ", name));
  Dataset dataset = open_dataset(parent, name);
  return extent_of(dataset.get(), hint);
}

void read_rows(hid_t parent, const std::string& name, hid_t type, void* rows, size_t count) {
  const std::string hint = in_file(parent, str("reading dataset ", name));
  Dataset dataset = open_dataset(parent, name);
  const size_t stored = extent_of(dataset.get(), hint);
  if (stored != count) throw IoError(str(hint, ": ", stored, " rows, expected ", count));
  if (count > 0) MSD_H5(H5Dread(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), hint);
}

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  const std::string hint = in_file(object, str("writing attribute ", name));
  Datatype type(MSD_H5(H5Tcopy(H5T_C_S1), hint));
  // A fixed-length string type cannot be empty: an empty value is one NUL.
  MSD_H5(H5Tset_size(type.get(), std::max<size_t>(value.size(), 1)), hint);
  MSD_H5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), hint);
  Dataspace space(MSD_H5(H5Screate(H5S_SCALAR), hint));
  Attribute attribute(MSD_H5(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), hint));
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  MSD_H5(H5Awrite(attribute.get(), type.get(), padded.data()), hint);
}

void write_attribute(hid_t object, const std::string& name, uint64_t value) {
  const std::string hint = in_file(object, str("writing attribute ", name));
  Dataspace space(MSD_H5(H5Screate(H5S_SCALAR), hint));
  Attribute attribute(
      MSD_H5(H5Acreate2(object, name.c_str(), H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), hint));
  MSD_H5(H5Awrite(attribute.get(), H5T_NATIVE_UINT64, &value), hint);
}

std::string read_string_attribute(hid_t object, const std::string& name) {
  const std::string hint = in_file(object, str("reading attribute ", name));
  Attribute attribute(MSD_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT), hint));
  Datatype stored(MSD_H5(H5Aget_type(attribute.get()), hint));
  if (MSD_H5(H5Tget_class(stored.get()), hint) != H5T_STRING || MSD_H5(H5Tis_variable_str(stored.get()), hint) > 0)
    throw IoError(str(hint, ": not a fixed-length string"));
  const size_t size = H5Tget_size(stored.get());
  if (size == 0) fail("H5Tget_size", hint);
  Datatype memory(MSD_H5(H5Tcopy(H5T_C_S1), hint));
  MSD_H5(H5Tset_size(memory.get(), size), hint);
  MSD_H5(H5Tset_strpad(memory.get(), H5T_STR_NULLPAD), hint);
  std::string value(size, '\0');
  MSD_H5(H5Aread(attribute.get(), memory.get(), value.data()), hint);
  value.resize(value.find_last_not_of('\0') == std::string::npos ? 0 : value.find_last_not_of('\0') + 1);
  return value;
}

void write_lines_attribute(hid_t object, const std::string& name, const std::vector<std::string>& lines) {
  std::string joined;
  for (const auto& line : lines) joined += (joined.empty() ? "" : "\n") + line;
  write_attribute(object, name, joined);
}

std::vector<std::string> read_lines_attribute(hid_t object, const std::string& name) {
  const std::string joined = read_string_attribute(object, name);
  std::vector<std::string> lines;
  for (size_t start = 0; start < joined.size();) {
    const size_t end = std::min(joined.find('\n', start), joined.size());
    lines.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

uint64_t read_u64_attribute(hid_t object, const std::string& name) {
  const std::string hint = in_file(object, str("reading attribute ", name));
  Attribute attribute(MSD_H5(H5Aopen(object, name.c_str(), H5P_DEFAULT), hint));
  uint64_t value = 0;
  MSD_H5(H5Aread(attribute.get(), H5T_NATIVE_UINT64, &value), hint);
  return value;
}

CompoundType::CompoundType(size_t size)
    : type_(MSD_H5(H5Tcreate(H5T_COMPOUND, size), "creating a compound type")) {}

CompoundType& CompoundType::add(const char* name, size_t offset, hid_t member) {
  MSD_H5(H5Tinsert(type_.get(), name, offset, member), str("adding member ", name, " to a compound type"));
  return *this;
}

AppendableDataset AppendableDataset::create(hid_t parent, const std::string& name, hid_t type, size_t chunk_rows) {
  const std::string hint = str("creating extendable dataset ", name);
  Dataspace space = simple_space(0, true, hint);
  PropertyList create(MSD_H5(H5Pcreate(H5P_DATASET_CREATE), hint));
  const hsize_t chunk[1] = {std::max<size_t>(chunk_rows, 1)};
  MSD_H5(H5Pset_chunk(create.get(), 1, chunk), hint);
  AppendableDataset result;
  result.dataset_ = Dataset(
      MSD_H5(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, create.get(), H5P_DEFAULT), hint));
  result.type_ = type;
  result.name_ = name;
  return result;
}

AppendableDataset AppendableDataset::open(hid_t parent, const std::string& name, hid_t type) {
  AppendableDataset result;
  result.dataset_ = open_dataset(parent, name);
  result.type_ = type;
  result.name_ = name;
  result.rows_ = extent_of(result.dataset_.get(), in_file(parent, str("opening extendable dataset ", name)));
  return result;
}

void AppendableDataset::append(const void* rows, size_t count) {
  if (count == 0) return;
  const std::string hint = in_file(dataset_.get(), str("appending ", count, " rows to ", name_));
  const hsize_t extent[1] = {rows_ + count};
  MSD_H5(H5Dset_extent(dataset_.get(), extent), hint);
  Dataspace file_space(MSD_H5(H5Dget_space(dataset_.get()), hint));
  const hsize_t start[1] = {rows_};
  const hsize_t block[1] = {count};
  MSD_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, block, nullptr), hint);
  Dataspace memory_space = simple_space(count, false, hint);
  MSD_H5(H5Dwrite(dataset_.get(), type_, memory_space.get(), file_space.get(), H5P_DEFAULT, rows), hint);
  rows_ += count;
}

void AppendableDataset::truncate(size_t rows) {
  MSD_CHECK_LE(rows, rows_);
  const hsize_t extent[1] = {rows};
  MSD_H5(H5Dset_extent(dataset_.get(), extent), str("truncating ", name_, " to ", rows, " rows"));
  rows_ = rows;
}

void AppendableDataset::read(size_t first, size_t count, void* rows) const {
  MSD_CHECK_LE(first + count, rows_);
  if (count == 0) return;
  const std::string hint =
      in_file(dataset_.get(), str("reading rows ", first, "..", first + count, " of ", name_));
  Dataspace file_space(MSD_H5(H5Dget_space(dataset_.get()), hint));
  const hsize_t start[1] = {first};
  const hsize_t block[1] = {count};
  MSD_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, block, nullptr), hint);
  Dataspace memory_space = simple_space(count, false, hint);
  MSD_H5(H5Dread(dataset_.get(), type_, memory_space.get(), file_space.get(), H5P_DEFAULT, rows), hint);
}

}  // namespace msd::h5
