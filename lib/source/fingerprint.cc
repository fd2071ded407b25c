#include "source/fingerprint.h"

#include <map>

#include "common/digest.h"
#include "common/error.h"
#include "common/files.h"
#include "source/format.h"

namespace msd {

namespace {

// Reads `bytes` at `offset` of an open file into the digest.
void digest_range(const ReadableFile& file, uint64_t offset, uint64_t bytes, Digest& digest) {
  std::vector<char> buffer(bytes);
  if (file.read_at(offset, buffer.data(), buffer.size()) != buffer.size())
    throw IoError(str(file.path(), ": cannot read ", bytes, " bytes at offset ", offset,
                      " for its fingerprint: the file ends before them"));
  digest.update(buffer.data(), buffer.size());
}

std::string source_name(std::span<const SourceConfig> sources, uint32_t source) {
  return source < sources.size() ? sources[source].name : str("#", source);
}

std::string vocabulary_difference(const DataFingerprint& recorded, const DataFingerprint& now) {
  if (recorded.vocabulary_bytes != now.vocabulary_bytes)
    return str("tokenizer.vocab: ", now.vocabulary, " holds ", now.vocabulary_bytes, " bytes, the recorded vocabulary ",
               recorded.vocabulary, " held ", recorded.vocabulary_bytes);
  if (recorded.vocabulary_digest != now.vocabulary_digest)
    return str("tokenizer.vocab: ", now.vocabulary, " has the recorded size (", now.vocabulary_bytes,
               " bytes) but other contents (digest ", hex64(now.vocabulary_digest), ", recorded ",
               hex64(recorded.vocabulary_digest), ")");
  return "";
}

// " (recorded as PATH)" when the file was at another path.
std::string recorded_as(const FileFingerprint& before, const FileFingerprint& after) {
  return before.path == after.path ? "" : str(" (recorded as ", before.path, ")");
}

}  // namespace

FileFingerprint fingerprint_file(const std::string& path) {
  std::unique_ptr<ReadableFile> in;
  try {
    in = default_storage().open(path);
  } catch (const IoError& error) {
    throw IoError(str(path, ": cannot open it for its fingerprint (", error.what(), ")"));
  }
  FileFingerprint f;
  f.path = path;
  f.bytes = in->size();
  Digest digest;
  digest.update_u64(f.bytes);
  const uint64_t head = std::min(f.bytes, kFingerprintBlockBytes);
  digest_range(*in, 0, head, digest);
  if (f.bytes > head) {
    const uint64_t tail = std::min(f.bytes - head, kFingerprintBlockBytes);
    digest_range(*in, f.bytes - tail, tail, digest);
  }
  f.digest = digest.value();
  return f;
}

DataFingerprint fingerprint_data(std::span<const SourceConfig> sources, const TokenizerConfig& tokenizer) {
  DataFingerprint fingerprint;
  for (uint32_t s = 0; s < sources.size(); ++s) {
    const SourceConfig& source = sources[s];
    for (const auto& path : expand_globs(source.path, str("source.", source.name, ".path"))) {
      for (const auto& file : format_spec(source).data_files(path)) {
        FileFingerprint f = fingerprint_file(file);
        f.source = s;
        fingerprint.files.push_back(std::move(f));
      }
    }
  }
  fingerprint_vocabulary(tokenizer, fingerprint);
  return fingerprint;
}

void fingerprint_vocabulary(const TokenizerConfig& tokenizer, DataFingerprint& data) {
  // The file the ids come from: a tokenizer.json holds its vocabulary too.
  const std::string& file = tokenizer.hf.empty() ? tokenizer.vocab : tokenizer.hf;
  if (file.empty()) return;
  const std::vector<unsigned char> bytes = default_storage().read_all(file);
  Digest digest;
  digest.update(bytes.data(), bytes.size());
  data.vocabulary = file;
  data.vocabulary_bytes = bytes.size();
  data.vocabulary_digest = digest.value();
}

uint64_t fingerprint_digest(const DataFingerprint& data) {
  Digest digest;
  for (const auto& file : data.files) {
    digest.update_u64(file.source);
    digest.update_u64(file.bytes);
    digest.update_u64(file.digest);
  }
  digest.update_u64(data.vocabulary_bytes);
  digest.update_u64(data.vocabulary_digest);
  return digest.value();
}

std::vector<std::string> fingerprint_differences(const DataFingerprint& recorded, const DataFingerprint& now,
                                                 std::span<const SourceConfig> sources) {
  std::map<uint32_t, std::pair<std::vector<const FileFingerprint*>, std::vector<const FileFingerprint*>>> by_source;
  for (const auto& f : recorded.files) by_source[f.source].first.push_back(&f);
  for (const auto& f : now.files) by_source[f.source].second.push_back(&f);
  std::vector<std::string> differences;
  for (const auto& [source, files] : by_source) {
    const auto& [before, after] = files;
    const std::string where = str("source ", source_name(sources, source));
    for (size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
      if (i >= after.size()) {
        differences.push_back(str(where, ": file ", before[i]->path, " (", before[i]->bytes, " bytes) is missing now"));
      } else if (i >= before.size()) {
        differences.push_back(str(where, ": file ", after[i]->path, " (", after[i]->bytes, " bytes) is new"));
      } else if (before[i]->bytes != after[i]->bytes) {
        differences.push_back(str(where, ": file ", after[i]->path, " holds ", after[i]->bytes, " bytes, it held ",
                                  before[i]->bytes, recorded_as(*before[i], *after[i])));
      } else if (before[i]->digest != after[i]->digest) {
        differences.push_back(str(where, ": file ", after[i]->path, " has its recorded size (", after[i]->bytes,
                                  " bytes) but other contents at its start or end", recorded_as(*before[i], *after[i])));
      }
    }
  }
  const bool had_vocabulary = !recorded.vocabulary.empty(), has_vocabulary = !now.vocabulary.empty();
  if (had_vocabulary != has_vocabulary)
    differences.push_back(str("tokenizer.vocab: ", had_vocabulary ? "recorded as " + recorded.vocabulary : "none recorded",
                              ", ", has_vocabulary ? now.vocabulary : "none", " now"));
  else if (const std::string v = vocabulary_difference(recorded, now); !v.empty())
    differences.push_back(v);
  return differences;
}

}  // namespace msd
