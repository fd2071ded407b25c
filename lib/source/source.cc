#include "source/source.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/error.h"
#include "common/files.h"
#include "common/log.h"
#include "source/format.h"

namespace msd {

const char* bad_kind_name(BadKind kind) {
  switch (kind) {
    case BadKind::none: return "none";
    case BadKind::invalid_json: return "invalid_json";
    case BadKind::missing_field: return "missing_field";
    case BadKind::invalid_utf8: return "invalid_utf8";
    case BadKind::corrupt_jpeg: return "corrupt_jpeg";
    case BadKind::truncated_member: return "truncated_member";
    case BadKind::missing_member: return "missing_member";
    case BadKind::empty: return "empty";
    case BadKind::too_large: return "too_large";
    case BadKind::read_error: return "read_error";
    case BadKind::count_: break;
  }
  return "unknown";
}

void RawSample::clear() {
  kind = SampleKind::text;
  text.clear();
  image.clear();
  tokens.clear();
  bad = BadKind::none;
  reason.clear();
  where.file.clear();
  where.offset = 0;
}

std::vector<std::string> source_files(const SourceConfig& config) {
  return format_spec(config).files(config, str("source.", config.name, ".path"));
}

ShuffleOrder shuffle_order(const SourceConfig& config, const std::vector<std::string>& files) {
  bool blocks = config.shuffle == Shuffle::block;
  if (config.shuffle == Shuffle::automatic) blocks = format_spec(config).blocks_by_default(files);
  if (!blocks) return {};
  return {true, config.shuffle_block_records, config.shuffle_window_blocks};
}

namespace {

// Under the block order a window's records are read together: their blocks
// must fit the cache of decoded blocks, or blocks are decoded again before
// all their records are read. Warns when the window's bytes (by the records'
// mean stored size, over up to 1000 evenly spaced ones) exceed it.
void warn_window_past_cache(const Source& source, const SourceConfig& config, const ShuffleOrder& order) {
  if (!order.blocks || !format_spec(config).caches_blocks(order) || source.kind() == SampleKind::tokens) return;
  const uint64_t n = source.size(), probes = std::min<uint64_t>(n, 1000);
  double sum = 0.0;
  for (uint64_t k = 0; k < probes; ++k) sum += static_cast<double>(source.length_hint(k * n / probes));
  const double window = sum / static_cast<double>(probes) * static_cast<double>(order.block_records) *
                        static_cast<double>(std::min(order.window_blocks, n / order.block_records + 1));
  if (window > static_cast<double>(config.cache_mib << 20))
    log_warn("source.", config.name, ": a window of the block order holds about ", static_cast<uint64_t>(window / 1e6),
             " MB (shuffle_block_records x shuffle_window_blocks records), more than source.", config.name,
             ".cache_mib = ", config.cache_mib, ": blocks are decoded again before their records are all read; raise "
             "cache_mib or make the window smaller (docs/formats.md \"The locality order\")");
}

// Files i of `files` with i % shares == share.
std::vector<std::string> share_of(const std::vector<std::string>& files, size_t share, size_t shares) {
  std::vector<std::string> out;
  for (size_t i = share; i < files.size(); i += shares) out.push_back(files[i]);
  return out;
}

}  // namespace

std::unique_ptr<Source> open_source(const SourceConfig& config, std::vector<std::string> files,
                                    const SourceOptions& options) {
  const size_t file_count = files.size();
  IndexCacheScope caches;
  const size_t shares = std::max<size_t>(options.index_shares, 1);
  std::string bundle;  // the one bundle of every file, when there is one share
  const FormatSpec& spec = format_spec(config);
  if (spec.index_caches)
    for (size_t share = 0; share < shares; ++share) {
      const std::string path = index_bundle_path(share_of(files, share, shares), options.cache_dir);
      caches.read_bundle(path);
      if (shares == 1) bundle = path;
    }
  const ShuffleOrder order = shuffle_order(config, files);
  std::unique_ptr<Source> source =
      spec.open(config, std::move(files), options, spec.caches_blocks(order) ? config.cache_mib << 20 : 0);
  if (source->size() == 0)
    throw ConfigError(str("source.", config.name, ".path: the ", file_count, " file(s) matched by '", config.path,
                          "' hold no samples"));
  if (caches.outside_bundles() > 0) caches.write_bundle(bundle);
  warn_window_past_cache(*source, config, order);
  return source;
}

IndexCounts build_index_caches(const SourceConfig& config, std::vector<std::string> files, const SourceOptions& options) {
  const FormatSpec& spec = format_spec(config);
  if (!spec.index_caches || files.empty()) return {};
  IndexCacheScope caches;
  const std::string bundle = index_bundle_path(files, options.cache_dir);
  caches.read_bundle(bundle);
  const IndexCounts counts = spec.open(config, std::move(files), options, 0)->index_counts();
  if (caches.outside_bundles() > 0) caches.write_bundle(bundle);
  return counts;
}

std::unique_ptr<Source> open_source(const SourceConfig& config, const SourceOptions& options) {
  return open_source(config, source_files(config), options);
}

void read_sample(Source& source, const SourceConfig& config, uint64_t index, RawSample& out) {
  if (config.read_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(config.read_delay_us));
  const uint64_t hint = source.length_hint(index);
  const uint64_t bytes = source.kind() == SampleKind::tokens ? checked_mul(hint, sizeof(int32_t), "a sequence's ids") : hint;
  if (config.max_read_bytes == 0 || bytes <= config.max_read_bytes) return source.read(index, out);
  out.clear();
  out.kind = source.kind();
  out.where = source.locate(index);
  out.bad = BadKind::too_large;
  out.reason = str("stored as ", bytes, " bytes, more than source.", config.name, ".max_read_bytes = ", config.max_read_bytes,
                   "; not read");
}

}  // namespace msd
