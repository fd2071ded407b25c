// The reader interface every source format implements (one folder per format
// under lib/source/, each with the same file set: <format>_source.h/.cc plus,
// where the format needs one, a helper such as jsonl/json.h or wds/tar.h).
// A reader gives raw records by file-order index: the files of a source in
// sorted order, concatenated. The shuffled order is the permutation's business
// (permutation.h). Index caches: index_cache.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "msd/source_config.h"
#include "source/index_cache.h"
#include "source/permutation.h"

namespace msd {

enum class SampleKind : uint8_t { text = 0, image_text = 1, tokens = 2 };

// Why a sample could not be used. A bad sample is a value: the planner replaces
// it with the next sample of the same source, counts it by kind and logs where.
enum class BadKind : uint8_t {
  none = 0,
  invalid_json,      // jsonl line that is not a JSON object
  missing_field,     // JSON object without the text/caption field (or not a string)
  invalid_utf8,      // text that is not valid UTF-8
  corrupt_jpeg,      // JPEG that libjpeg-turbo cannot decode
  truncated_member,  // tar member cut short by the end of the shard
  missing_member,    // wds sample without an image or without a caption
  empty,             // zero tokens after the transform
  too_large,         // bigger than a loader's whole window, or stored bigger than source.NAME.max_read_bytes
  read_error,        // the storage failed for this record
  count_             // number of kinds; not a kind
};
const char* bad_kind_name(BadKind kind);
constexpr int bad_kind_count = static_cast<int>(BadKind::count_);

// Where a record lives, for messages: "web: data/web-0001.jsonl offset 1234".
struct SampleLocation {
  std::string file;
  uint64_t offset = 0;
};

// One record as stored, before any transform.
struct RawSample {
  SampleKind kind = SampleKind::text;
  std::string text;                // jsonl: the text field; wds: the caption
  std::string image;               // wds: the JPEG bytes
  std::vector<int32_t> tokens;     // indexed: the token ids
  BadKind bad = BadKind::none;     // set instead of throwing
  std::string reason;              // detail when bad
  SampleLocation where;

  void clear();
};

// A source of samples in file order. Opening builds or loads the format's
// index; reading is by index in [0, size()). Thread-safety: read() may be
// called from several threads at once, each into its own RawSample (a loader
// reads a batch's samples on its loader.threads threads); every format reads
// its data with pread through a shared FileReader (common/storage.h) and keeps
// nothing else that a read changes. A new format must keep that promise. The
// other calls are const and safe beside reads. Readers throw
// ConfigError/IoError only for whole-source problems (missing or unreadable
// files, an index that contradicts its data); a single unusable record comes
// back as RawSample::bad.
class Source {
 public:
  virtual ~Source() = default;

  virtual SampleKind kind() const = 0;
  virtual uint64_t size() const = 0;
  // Size of record `index` known from the index alone, without reading it:
  // tokens for `indexed`, stored bytes for `jsonl` and `wds`.
  virtual uint64_t length_hint(uint64_t index) const = 0;
  virtual void read(uint64_t index, RawSample& out) = 0;
  virtual SampleLocation locate(uint64_t index) const = 0;
  // Samples of each of its files, in its files' order (they sum to size()):
  // what a resume over added or removed files maps its old file-order
  // indexes through (docs/checkpoint.md, "Resume with a changed mixture").
  virtual std::vector<uint64_t> file_samples() const = 0;
  // Bytes this reader keeps resident for its open state (indexes, buffers).
  virtual uint64_t state_bytes() const = 0;
  // How its per-file indexes were obtained when it opened: built by reading
  // the data, or read from their caches (index_cache.h). Zero for a format
  // whose files are their own index.
  virtual IndexCounts index_counts() const { return {}; }
};

struct SourceOptions {
  // Where index caches go. Default empty: beside the data when its directory
  // is writable, else $HOME/.cache/msd (index_cache.h).
  std::string cache_dir;
  // The shares the source's files were indexed in (file i in share
  // i % index_shares, loader/index_sharing.h), each share's caches in one
  // bundle (index_cache.h): opening reads those bundles before any cache
  // file. Default 1: one share, every file; opening then writes the bundle
  // when a cache came from anywhere else.
  size_t index_shares = 1;
};

// Opens a source of `config.format` (its entry in the registry, format.h)
// over the files its comma-separated globs match (for indexed the globs name
// the .idx files). Throws ConfigError naming `source.<name>.format` when it is
// unset, and naming `source.<name>.path` for a glob that matches nothing or
// files that hold no sample at all; IoError for unreadable or inconsistent
// files. A zero-length file contributes no samples (with a warning).
std::unique_ptr<Source> open_source(const SourceConfig& config, const SourceOptions& options);

// The files open_source reads for `config`, sorted: its globs expanded (the
// .idx files for indexed). Throws as open_source does for a bad format or
// path.
std::vector<std::string> source_files(const SourceConfig& config);
// open_source over `files` (source_files(config), as this process saw them).
std::unique_ptr<Source> open_source(const SourceConfig& config, std::vector<std::string> files,
                                    const SourceOptions& options);

// The order `config.shuffle` gives a source over `files` (source_files(),
// as the process that opened it saw them): auto is block for a parquet
// source and for a jsonl source any of whose files is compressed (.zst, .gz),
// uniform for the others. A pure function of the configuration and the
// files' names, so every role that maps cursors to records agrees
// (the planner from its loaders' file lists, msd-replay from the trace's).
ShuffleOrder shuffle_order(const SourceConfig& config, const std::vector<std::string>& files);

// Builds (or finds valid) the index caches of `files` of a source of
// `config`'s format, as opening them would, and keeps nothing: a loader's
// share of a source's files, indexed before it opens the whole source, whose
// other files' indexes then come from the caches its peers wrote
// (docs/scaling.md, "Start-up"). Returns how the indexes were obtained; zero
// for a format whose files are their own index. Throws as open_source does
// for unreadable or inconsistent files (an empty `files` is no error).
IndexCounts build_index_caches(const SourceConfig& config, std::vector<std::string> files, const SourceOptions& options);

// source.read(index, out) after the source's emulated storage latency
// (config.read_delay_us): how loaders, colocated ranks and msd-plan profile
// all read, so the latency is part of every read's cost. A record stored
// bigger than config.max_read_bytes is not read: `out` is bad as too_large.
// Thread-safe as Source::read is.
void read_sample(Source& source, const SourceConfig& config, uint64_t index, RawSample& out);

}  // namespace msd
