#include "checkpoint/data_record.h"

#include "checkpoint/hdf5.h"
#include "common/error.h"

namespace msd {

void write_data_fingerprint(hid_t root, const DataFingerprint& fingerprint) {
  std::vector<std::string> paths;
  std::vector<uint32_t> sources;
  std::vector<uint64_t> bytes, digests, samples;
  for (const auto& f : fingerprint.files) {
    paths.push_back(f.path);
    sources.push_back(f.source);
    bytes.push_back(f.bytes);
    digests.push_back(f.digest);
    samples.push_back(f.samples);
  }
  h5::write_lines_attribute(root, "data_files", paths);
  h5::write_array<uint32_t>(root, "data_file_sources", sources);
  h5::write_array<uint64_t>(root, "data_file_bytes", bytes);
  h5::write_array<uint64_t>(root, "data_file_digests", digests);
  h5::write_array<uint64_t>(root, "data_file_samples", samples);
  h5::write_attribute(root, "vocabulary", fingerprint.vocabulary);
  h5::write_attribute(root, "vocabulary_bytes", fingerprint.vocabulary_bytes);
  h5::write_attribute(root, "vocabulary_digest", fingerprint.vocabulary_digest);
}

DataFingerprint read_data_fingerprint(hid_t root, const std::string& path) {
  const std::vector<std::string> paths = h5::read_lines_attribute(root, "data_files");
  const auto sources = h5::read_array<uint32_t>(root, "data_file_sources");
  const auto bytes = h5::read_array<uint64_t>(root, "data_file_bytes");
  const auto digests = h5::read_array<uint64_t>(root, "data_file_digests");
  if (paths.size() != sources.size() || bytes.size() != sources.size() || digests.size() != sources.size())
    throw IoError(str(path, ": the data fingerprint's rows disagree (", paths.size(), " paths, ", sources.size(),
                      " sources, ", bytes.size(), " sizes, ", digests.size(), " digests)"));
  // Older files lack the samples (their runs did not record them): 0, unknown.
  std::vector<uint64_t> samples(paths.size(), 0);
  if (h5::exists(root, "data_file_samples")) samples = h5::read_array<uint64_t>(root, "data_file_samples");
  if (samples.size() != paths.size())
    throw IoError(str(path, ": the data fingerprint holds ", samples.size(), " sample counts for ", paths.size(), " files"));
  DataFingerprint fingerprint;
  for (size_t i = 0; i < paths.size(); ++i)
    fingerprint.files.push_back({sources[i], paths[i], bytes[i], digests[i], samples[i]});
  fingerprint.vocabulary = h5::read_string_attribute(root, "vocabulary");
  fingerprint.vocabulary_bytes = h5::read_u64_attribute(root, "vocabulary_bytes");
  fingerprint.vocabulary_digest = h5::read_u64_attribute(root, "vocabulary_digest");
  return fingerprint;
}

}  // namespace msd
