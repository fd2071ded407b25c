#include "checkpoint/integrity.h"

#include <algorithm>
#include <vector>

#include "checkpoint/hdf5.h"
#include "common/digest.h"
#include "common/error.h"

namespace msd {

namespace {

// docs/checkpoint.md, "Integrity": the record's own items.
constexpr const char* kItemsAttribute = "integrity_items";
constexpr const char* kDigestsDataset = "integrity_digests";
constexpr const char* kRootAttribute = "integrity_digest";

struct Item {
  std::string name;  // "@attribute" or "/dataset"
  uint64_t digest = 0;
};

herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

// Names of the root's links in name order (H5Lget_name_by_idx is the same in
// every HDF5 API version, unlike H5Literate's callback).
std::vector<std::string> link_names(hid_t root) {
  H5G_info_t info{};
  MSD_H5(H5Gget_info(root, &info), h5::in_file(root, "listing the root's datasets"));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length =
        MSD_H5(H5Lget_name_by_idx(root, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT),
               h5::in_file(root, "naming a link"));
    std::string name(static_cast<size_t>(length) + 1, '\0');
    MSD_H5(H5Lget_name_by_idx(root, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT),
           h5::in_file(root, "naming a link"));
    name.resize(static_cast<size_t>(length));
    names.push_back(std::move(name));
  }
  return names;
}

// The in-memory type values are digested as: native numbers, compounds packed.
h5::Datatype canonical_type(hid_t stored, const std::string& hint) {
  const H5T_class_t type_class = MSD_H5(H5Tget_class(stored), hint);
  if (type_class == H5T_STRING) {
    if (MSD_H5(H5Tis_variable_str(stored), hint) > 0)
      throw IoError(str(hint, ": variable-length strings are not sealed"));
    return h5::Datatype(MSD_H5(H5Tcopy(stored), hint));
  }
  h5::Datatype native(MSD_H5(H5Tget_native_type(stored, H5T_DIR_ASCEND), hint));
  if (type_class == H5T_COMPOUND) MSD_H5(H5Tpack(native.get()), hint);
  return native;
}

// Digest of a type and `count` values read into `buffer` by the caller.
uint64_t digest_values(hid_t type, uint64_t count, const std::vector<unsigned char>& buffer, const std::string& hint) {
  Digest digest;
  digest.update_u64(static_cast<uint64_t>(MSD_H5(H5Tget_class(type), hint)));
  digest.update_u64(H5Tget_size(type));
  digest.update_u64(count);
  if (H5Tget_class(type) == H5T_COMPOUND) {
    const int members = MSD_H5(H5Tget_nmembers(type), hint);
    for (int m = 0; m < members; ++m) {
      char* name = H5Tget_member_name(type, static_cast<unsigned>(m));
      if (name == nullptr) h5::fail("H5Tget_member_name", hint);
      digest.update(name, std::char_traits<char>::length(name) + 1);
      H5free_memory(name);
    }
  }
  digest.update(buffer.data(), buffer.size());
  return digest.value();
}

uint64_t attribute_digest(hid_t root, const std::string& name) {
  const std::string hint = h5::in_file(root, str("digesting attribute @", name));
  h5::Attribute attribute(MSD_H5(H5Aopen(root, name.c_str(), H5P_DEFAULT), hint));
  h5::Datatype stored(MSD_H5(H5Aget_type(attribute.get()), hint));
  h5::Datatype type = canonical_type(stored.get(), hint);
  h5::Dataspace space(MSD_H5(H5Aget_space(attribute.get()), hint));
  const uint64_t count = static_cast<uint64_t>(MSD_H5(H5Sget_simple_extent_npoints(space.get()), hint));
  std::vector<unsigned char> buffer(checked_mul(count, H5Tget_size(type.get()), hint.c_str()), 0);
  if (!buffer.empty()) MSD_H5(H5Aread(attribute.get(), type.get(), buffer.data()), hint);
  return digest_values(type.get(), count, buffer, hint);
}

uint64_t dataset_digest(hid_t root, const std::string& name) {
  const std::string hint = h5::in_file(root, str("digesting dataset /", name));
  h5::Dataset dataset = h5::open_dataset(root, name);
  h5::Datatype stored(MSD_H5(H5Dget_type(dataset.get()), hint));
  h5::Datatype type = canonical_type(stored.get(), hint);
  h5::Dataspace space(MSD_H5(H5Dget_space(dataset.get()), hint));
  const uint64_t count = static_cast<uint64_t>(MSD_H5(H5Sget_simple_extent_npoints(space.get()), hint));
  std::vector<unsigned char> buffer(checked_mul(count, H5Tget_size(type.get()), hint.c_str()), 0);
  // HDF5 allocates and clears its type-conversion buffer (1 MiB by default)
  // on every converting read: sized to the data, a small table costs
  // microseconds instead of a millisecond.
  h5::PropertyList transfer(MSD_H5(H5Pcreate(H5P_DATASET_XFER), hint));
  const size_t largest = std::max(H5Tget_size(type.get()), H5Tget_size(stored.get()));
  const size_t bytes = std::clamp<size_t>(checked_mul(count, largest, hint.c_str()), 4096, 1 << 20);
  MSD_H5(H5Pset_buffer(transfer.get(), bytes, nullptr, nullptr), hint);
  if (!buffer.empty())
    MSD_H5(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, transfer.get(), buffer.data()), hint);
  return digest_values(type.get(), count, buffer, hint);
}

bool excluded(const std::string& name, std::span<const std::string> unsealed) {
  return name == kItemsAttribute || name == kDigestsDataset || name == kRootAttribute ||
         std::find(unsealed.begin(), unsealed.end(), name) != unsealed.end();
}

// Every item at the root in the documented order: attributes, then datasets,
// each in name order.
std::vector<Item> current_items(hid_t root, std::span<const std::string> unsealed) {
  std::vector<std::string> attributes;
  hsize_t at = 0;
  MSD_H5(H5Aiterate2(root, H5_INDEX_NAME, H5_ITER_INC, &at, collect_name, &attributes),
         h5::in_file(root, "listing the root's attributes"));
  const std::vector<std::string> links = link_names(root);
  std::vector<Item> items;
  for (const auto& name : attributes)
    if (!excluded(name, unsealed)) items.push_back({"@" + name, attribute_digest(root, name)});
  for (const auto& name : links) {
    if (excluded(name, unsealed)) continue;
    const hid_t object = MSD_H5(H5Oopen(root, name.c_str(), H5P_DEFAULT), h5::in_file(root, str("opening /", name)));
    const H5I_type_t kind = H5Iget_type(object);
    H5Oclose(object);
    if (kind != H5I_DATASET) throw IoError(str("/", name, " is not a dataset; only datasets are sealed"));
    items.push_back({"/" + name, dataset_digest(root, name)});
  }
  return items;
}

uint64_t chain(const std::vector<std::string>& names, const std::vector<uint64_t>& digests) {
  Digest running;
  for (size_t i = 0; i < names.size(); ++i) {
    running.update(names[i].data(), names[i].size());
    running.update_u64(digests[i]);
  }
  return running.value();
}

std::string describe(const std::string& item) {
  return str(item.front() == '@' ? "attribute " : "dataset ", item);
}

}  // namespace

void seal_file(hid_t root, std::span<const std::string> unsealed) {
  const std::vector<Item> items = current_items(root, unsealed);
  std::vector<std::string> names;
  std::vector<uint64_t> digests;
  for (const auto& item : items) {
    names.push_back(item.name);
    digests.push_back(item.digest);
  }
  h5::write_lines_attribute(root, kItemsAttribute, names);
  h5::write_array<uint64_t>(root, kDigestsDataset, digests);
  h5::write_attribute(root, kRootAttribute, chain(names, digests));
}

uint64_t seal_digest(hid_t root) { return h5::read_u64_attribute(root, kRootAttribute); }

std::optional<std::string> check_seal(hid_t root, std::span<const std::string> unsealed) {
  if (!MSD_H5(H5Aexists(root, kRootAttribute), h5::in_file(root, "looking for the integrity record")) ||
      !MSD_H5(H5Aexists(root, kItemsAttribute), h5::in_file(root, "looking for the integrity record")) ||
      !h5::exists(root, kDigestsDataset))
    return std::string("the file has no integrity record (@integrity_digest, @integrity_items, /integrity_digests)");
  const std::vector<std::string> names = h5::read_lines_attribute(root, kItemsAttribute);
  const std::vector<uint64_t> digests = h5::read_array<uint64_t>(root, kDigestsDataset);
  if (names.size() != digests.size() || chain(names, digests) != seal_digest(root))
    return std::string("the integrity record itself (@integrity_items, /integrity_digests, @integrity_digest) "
                       "was changed");
  const std::vector<Item> items = current_items(root, unsealed);
  for (size_t i = 0; i < names.size(); ++i) {
    auto found = std::find_if(items.begin(), items.end(), [&](const Item& item) { return item.name == names[i]; });
    if (found == items.end())
      return str(describe(names[i]), ": recorded in the integrity record, missing from the file");
    if (found->digest != digests[i])
      return str(describe(names[i]), ": its contents differ from the integrity record (digest ", hex64(found->digest),
                 ", recorded ", hex64(digests[i]), ")");
  }
  for (const auto& item : items)
    if (std::find(names.begin(), names.end(), item.name) == names.end())
      return str(describe(item.name), ": not in the integrity record (added after the file was written)");
  return std::nullopt;
}

}  // namespace msd
