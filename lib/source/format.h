// The registry of source formats: what each format (one folder under
// lib/source/) is to the rest of msd. Every decision that depends on a
// source's format goes through its entry's properties here, never through
// its name; the name is read once, by configuration (source.NAME.format).
// Adding a format: docs/formats.md "Adding a format".
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "msd/source_config.h"
#include "source/source.h"

namespace msd {

// What most entries take (FormatSpec's defaults): the files config.path's
// globs match; `file` alone; the uniform order under shuffle = auto; no
// cache of decoded blocks.
std::vector<std::string> glob_files(const SourceConfig& config, const std::string& path_option);
std::vector<std::string> only_file(const std::string& file);
inline bool never(const std::vector<std::string>&) { return false; }
inline bool no_block_cache(const ShuffleOrder&) { return false; }

// One format's entry, defined in its folder (<format>/<format>_format.cc)
// and listed in format.cc's table; an entry names what differs from the
// defaults.
struct FormatSpec {
  SourceFormat format;
  const char* name;                // as source.NAME.format spells it
  bool needs_tokenizer = true;     // its records are text the tokenizer turns into ids
  bool reads_image_field = false;  // source.NAME.image_field makes its records image-text ones
  bool always_images = false;      // every record carries an image
  bool index_caches = true;        // it builds per-file index caches (index_cache.h)
  // The files `config.path`'s globs name for it, sorted (path_option: the
  // option to name when a glob matches nothing).
  std::vector<std::string> (*files)(const SourceConfig& config, const std::string& path_option) = glob_files;
  // The files record bytes of `file` (one of files()) live in, `file` first:
  // what fingerprints cover.
  std::vector<std::string> (*data_files)(const std::string& file) = only_file;
  // shuffle = auto: whether the block order suits a source over `files`.
  bool (*blocks_by_default)(const std::vector<std::string>& files) = never;
  // Whether a source under `order` keeps a cache of decoded blocks
  // (source.NAME.cache_mib).
  bool (*caches_blocks)(const ShuffleOrder& order) = no_block_cache;
  // Opens a source over `files` (files(), as this process listed them);
  // cache_bytes: its cache of decoded blocks (0: none).
  std::unique_ptr<Source> (*open)(const SourceConfig& config, std::vector<std::string> files,
                                  const SourceOptions& options, uint64_t cache_bytes) = nullptr;
};

// Every registered entry, in registration order.
std::span<const FormatSpec* const> registered_formats();
// The entry of `format`.
const FormatSpec& format_spec(SourceFormat format);
// The entry of `config`'s format; throws ConfigError naming
// source.NAME.format when it is unset.
const FormatSpec& format_spec(const SourceConfig& config);
// The format named `name`, if one is registered by that name.
std::optional<SourceFormat> format_named(const std::string& name);
const char* format_name(SourceFormat format);
// The registered formats' names, in registration order, joined by `separator`.
std::string format_names(const char* separator = " | ");

// Whether a source of `config` needs the tokenizer; whether any of `sources` does.
bool needs_tokenizer(const SourceConfig& config);
bool needs_tokenizer(std::span<const SourceConfig> sources);
// Whether records of a source of `config` carry images.
bool has_images(const SourceConfig& config);

}  // namespace msd
