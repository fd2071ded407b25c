// The data fingerprint (source/fingerprint.h) as planner checkpoints and the
// trace's header store it (docs/checkpoint.md, "Data fingerprint"): attribute
// @data_files (the paths, one a line), datasets /data_file_sources,
// /data_file_bytes, /data_file_digests and /data_file_samples (one row per
// path; the samples since planner checkpoint version 5 and trace version 4,
// 0 when absent), attributes
// @vocabulary, @vocabulary_bytes and @vocabulary_digest.
#pragma once

#include <hdf5.h>

#include "source/fingerprint.h"

namespace msd {

void write_data_fingerprint(hid_t root, const DataFingerprint& fingerprint);
// Throws IoError when an item is missing or the per-file rows disagree.
DataFingerprint read_data_fingerprint(hid_t root, const std::string& path);

}  // namespace msd
