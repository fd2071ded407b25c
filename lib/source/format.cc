#include "source/format.h"

#include <algorithm>

#include "common/error.h"
#include "common/files.h"

namespace msd {

// The registered formats: msd/source_formats.h lists them; the entries live
// in their folders (docs/formats.md "Adding a format").
#define MSD_SOURCE_FORMAT_ENTRY(value, entry) extern const FormatSpec entry;
MSD_SOURCE_FORMATS(MSD_SOURCE_FORMAT_ENTRY)
#undef MSD_SOURCE_FORMAT_ENTRY
#define MSD_SOURCE_FORMAT_POINTER(value, entry) &entry,
static const FormatSpec* const kFormats[] = {MSD_SOURCE_FORMATS(MSD_SOURCE_FORMAT_POINTER)};
#undef MSD_SOURCE_FORMAT_POINTER

std::vector<std::string> glob_files(const SourceConfig& config, const std::string& path_option) {
  return expand_globs(config.path, path_option);
}

std::vector<std::string> only_file(const std::string& file) { return {file}; }

std::span<const FormatSpec* const> registered_formats() { return kFormats; }

const FormatSpec& format_spec(SourceFormat format) {
  for (const FormatSpec* spec : kFormats)
    if (spec->format == format) return *spec;
  throw ConfigError(str("source format ", static_cast<int>(format), " has no entry in lib/source/format.cc"));
}

const FormatSpec& format_spec(const SourceConfig& config) {
  if (!config.format) throw ConfigError(str("source.", config.name, ".format: missing (expected ", format_names(), ")"));
  return format_spec(*config.format);
}

std::optional<SourceFormat> format_named(const std::string& name) {
  for (const FormatSpec* spec : kFormats)
    if (name == spec->name) return spec->format;
  return std::nullopt;
}

const char* format_name(SourceFormat format) { return format_spec(format).name; }

std::string format_names(const char* separator) {
  std::string out;
  for (const FormatSpec* spec : kFormats) out += (out.empty() ? "" : separator) + std::string(spec->name);
  return out;
}

bool needs_tokenizer(const SourceConfig& config) { return format_spec(config).needs_tokenizer; }

bool needs_tokenizer(std::span<const SourceConfig> sources) {
  return std::any_of(sources.begin(), sources.end(), [](const SourceConfig& s) { return needs_tokenizer(s); });
}

bool has_images(const SourceConfig& config) {
  const FormatSpec& spec = format_spec(config);
  return spec.always_images || (spec.reads_image_field && !config.image_field.empty());
}

}  // namespace msd
