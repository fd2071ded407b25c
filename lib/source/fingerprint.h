// Fingerprints of a run's data files and tokenizer vocabulary, so a resume (or
// msd-replay verify) can tell that the data under a checkpoint changed. Cheap
// by design (docs/checkpoint.md, "Data fingerprint"): per data file its size
// and a digest of its first and last kFingerprintBlockBytes (no mtime, so a
// copy or a touch is not a change); the vocabulary is digested whole.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "msd/source_config.h"

namespace msd {

// Bytes digested at each end of a data file.
inline constexpr uint64_t kFingerprintBlockBytes = 64 * 1024;

struct FileFingerprint {
  uint32_t source = 0;  // index in config.sources
  std::string path;     // as the source's globs resolve it
  uint64_t bytes = 0;
  uint64_t digest = 0;  // of the first and last kFingerprintBlockBytes (the whole file when smaller)
  // The reader's samples of the file (0 for an indexed source's .bin, and
  // when not known: fingerprint_data does not open the sources); not part of
  // fingerprint_differences or fingerprint_digest.
  uint64_t samples = 0;
  bool operator==(const FileFingerprint&) const = default;
};

struct DataFingerprint {
  // Source by source in config order, each source's files sorted as its
  // reader orders them; an `indexed` source lists each .idx, then its .bin.
  std::vector<FileFingerprint> files;
  std::string vocabulary;  // tokenizer.hf, else tokenizer.vocab; empty: none
  uint64_t vocabulary_bytes = 0;
  uint64_t vocabulary_digest = 0;  // of the whole file
  bool operator==(const DataFingerprint&) const = default;
};

// size + digest of the file's ends. Throws IoError naming the path.
FileFingerprint fingerprint_file(const std::string& path);
// Every data file of every source, and the tokenizer's vocabulary. Throws
// ConfigError for a glob that matches nothing, IoError for an unreadable file.
DataFingerprint fingerprint_data(std::span<const SourceConfig> sources, const TokenizerConfig& tokenizer);
// The vocabulary's part of `data` (tokenizer.hf, else tokenizer.vocab).
// Throws IoError for an unreadable file.
void fingerprint_vocabulary(const TokenizerConfig& tokenizer, DataFingerprint& data);

// One digest of a fingerprint, blind to paths as fingerprint_differences is:
// each file's source, position, size and digest, and the vocabulary's size
// and digest.
uint64_t fingerprint_digest(const DataFingerprint& data);

// What differs between the fingerprint recorded by a run and `now`, one line
// each, naming the source (by `sources`' names), the file and what changed
// (size, content digest, a file added or missing, the vocabulary). Files are
// matched by position within their source: data moved to another directory
// with the same content is no change. Empty: the same data.
std::vector<std::string> fingerprint_differences(const DataFingerprint& recorded, const DataFingerprint& now,
                                                 std::span<const SourceConfig> sources);

}  // namespace msd
