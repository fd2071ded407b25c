#include "inspect/inspect.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <ostream>
#include <set>

#include "common/error.h"
#include "common/files.h"
#include "source/format.h"
#include "source/parquet/parquet_source.h"
#include "transform/image/image.h"
#include "transform/tokenizer/tokenizer.h"
#include "transform/transform.h"

namespace msd {

namespace {

// At most `max_chars` bytes of `text`, cut back to a UTF-8 character boundary,
// with control characters shown as escapes so one sample stays on few lines.
std::string preview(const std::string& text, size_t max_chars) {
  size_t end = std::min(text.size(), max_chars);
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string shown;
  for (size_t i = 0; i < end; ++i) {
    char c = text[i];
    if (c == '\n') shown += "\\n";
    else if (c == '\t') shown += "\\t";
    else if (c == '\r') shown += "\\r";
    else shown.push_back(c);
  }
  if (end < text.size()) shown += str("... (", text.size() - end, " more bytes)");
  return shown;
}

void print_ids(std::ostream& out, const std::vector<int32_t>& ids, size_t max_ids = 64) {
  out << "  token ids (" << ids.size() << "):";
  for (size_t i = 0; i < ids.size() && i < max_ids; ++i) out << ' ' << ids[i];
  if (ids.size() > max_ids) out << " ...";
  out << '\n';
}

// How the source was indexed, a Parquet source's row groups and codecs, and
// the order its stream takes (shuffle_order).
void print_index(std::ostream& out, const Source& source, const SourceConfig& config, const std::vector<std::string>& files) {
  if (auto* parquet = dynamic_cast<const ParquetSource*>(&source)) {
    size_t groups = 0;
    uint64_t stored = 0, decoded = 0;
    std::set<std::string> codecs;
    for (size_t f = 0; f < parquet->file_count(); ++f)
      for (size_t g = 0; g < parquet->row_groups(f); ++g, ++groups) {
        const ParquetChunk& chunk = parquet->text_chunk(f, g);
        stored += chunk.compressed_bytes;
        decoded += chunk.uncompressed_bytes;
        codecs.insert(parquet_codec_name(chunk.codec));
      }
    std::string names;
    for (const std::string& codec : codecs) names += (names.empty() ? "" : ", ") + codec;
    out << "row groups: " << groups << " (" << (groups > 0 ? source.size() / groups : 0) << " rows each on average); column '"
        << (config.image_field.empty() ? config.text_field : config.caption_field) << "': " << stored << " bytes stored, "
        << decoded << " decoded, codec " << names << '\n';
  }
  if (format_spec(config).index_caches) {
    const IndexCounts counts = source.index_counts();
    out << "index: " << counts.scanned << " file(s) scanned, " << counts.cached << " from cache\n";
  }
  const ShuffleOrder order = shuffle_order(config, files);
  out << "order: "
      << (order.blocks ? str("block (", order.block_records, " records a block, ", order.window_blocks, " blocks a window)")
                       : std::string("uniform"))
      << '\n';
}

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, double fraction) {
  auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

SourceConfig parse_source_spec(const std::string& spec, const InspectOptions& options) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw ConfigError(str("--source: expected FORMAT:PATH_OR_GLOB (e.g. jsonl:data/*.jsonl), got '", spec, "'"));
  SourceConfig config;
  config.name = "inspect";
  config.format = format_named(spec.substr(0, colon));
  if (!config.format)
    throw ConfigError(str("--source: unknown format '", spec.substr(0, colon), "' (expected ", format_names(), ")"));
  config.path = spec.substr(colon + 1);
  config.text_field = options.text_field;
  config.caption_field = options.caption_field;
  config.image_field = options.image_field;
  return config;
}

LengthStats length_stats(const Source& source, uint64_t max_samples) {
  LengthStats stats;
  uint64_t n = source.size();
  if (n == 0 || max_samples == 0) return stats;
  uint64_t count = std::min(n, max_samples);
  std::vector<uint64_t> lengths;
  lengths.reserve(count);
  double sum = 0.0;
  for (uint64_t k = 0; k < count; ++k) {
    // Evenly spaced over [0, n); every index when count == n.
    uint64_t index = count == n ? k : static_cast<uint64_t>((static_cast<long double>(k) * n) / count);
    lengths.push_back(source.length_hint(index));
    sum += static_cast<double>(lengths.back());
  }
  std::sort(lengths.begin(), lengths.end());
  stats.count = count;
  stats.min = lengths.front();
  stats.max = lengths.back();
  stats.mean = sum / static_cast<double>(count);
  stats.p50 = nearest_rank(lengths, 0.50);
  stats.p90 = nearest_rank(lengths, 0.90);
  stats.p99 = nearest_rank(lengths, 0.99);
  return stats;
}

const char* length_unit(SampleKind kind) { return kind == SampleKind::tokens ? "tokens" : "bytes"; }

void run_inspect(const InspectOptions& options, std::ostream& out) {
  SourceConfig config = parse_source_spec(options.source, options);
  // Globs are expanded here first so a typo is reported against --source.
  std::vector<std::string> files = expand_globs(config.path, "--source");
  std::unique_ptr<Source> source = open_source(config, SourceOptions{options.cache_dir});

  out << "source: " << format_name(*config.format) << ':' << config.path << '\n';
  out << "files: " << files.size() << '\n';
  out << "samples: " << source->size() << '\n';
  LengthStats stats = length_stats(*source);
  const char* unit = length_unit(source->kind());
  out << "length (" << unit << (stats.count < source->size() ? str(", ", stats.count, " evenly spaced samples") : "")
      << "): min " << stats.min << "  mean " << std::fixed << std::setprecision(1) << stats.mean << "  p50 "
      << stats.p50 << "  p90 " << stats.p90 << "  p99 " << stats.p99 << "  max " << stats.max << '\n';
  print_index(out, *source, config, files);
  out << "open state: " << source->state_bytes() << " bytes\n";

  if (options.sample >= source->size())
    throw ConfigError(str("--sample: ", options.sample, " is out of range (the source has ", source->size(),
                          " samples)"));
  RawSample raw;
  source->read(options.sample, raw);
  const bool rows = dynamic_cast<const ParquetSource*>(source.get()) != nullptr;  // locate() gives a row there
  out << "sample " << options.sample << ": " << raw.where.file << (rows ? " row " : " offset ") << raw.where.offset << '\n';
  if (raw.bad != BadKind::none) {
    out << "bad sample: " << bad_kind_name(raw.bad) << ": " << raw.reason << '\n';
    return;
  }
  if (raw.kind != SampleKind::tokens)
    out << "  " << (raw.kind == SampleKind::image_text ? "caption" : "text") << " (" << raw.text.size()
        << " bytes): " << preview(raw.text, options.max_text_chars) << '\n';

  ImageOptions image_options{options.max_side, options.patch};
  if (raw.kind == SampleKind::image_text) {
    ImageTransform image(image_options);
    uint32_t width = 0, height = 0;
    std::string error;
    out << "  image: " << raw.image.size() << " bytes";
    if (image.probe(raw.image, width, height, error)) {
      ImageSize resized = resized_size(image_options, width, height);
      uint32_t patches = (resized.width / options.patch) * (resized.height / options.patch);
      out << ", stored " << width << 'x' << height << ", resized " << resized.width << 'x' << resized.height
          << ", " << patches << " patches of " << options.patch << 'x' << options.patch << '\n';
    } else {
      out << '\n';
    }
  }

  // The loader's verdict: the same transform it would apply.
  std::unique_ptr<Tokenizer> tokenizer;
  if (!options.vocab.empty()) {
    TokenizerOptions tokenizer_options;
    tokenizer_options.pattern = options.pattern;
    tokenizer = std::make_unique<Tokenizer>(options.vocab, tokenizer_options);
  }
  if (raw.kind != SampleKind::tokens && tokenizer == nullptr) {
    // Without a vocabulary only the image can be checked.
    if (raw.kind == SampleKind::image_text) {
      ImageTransform image(image_options);
      PatchedImage patched;
      std::string error;
      if (!image.apply(raw.image, patched, error)) {
        out << "bad sample: " << bad_kind_name(BadKind::corrupt_jpeg) << ": " << error << '\n';
        return;
      }
    }
    out << "  (no --vocab: text not tokenized)\n";
    return;
  }
  SampleTransform transform(tokenizer.get(), image_options);
  TransformedSample transformed;
  std::string reason;
  BadKind verdict = transform.apply(raw, transformed, reason);
  if (verdict != BadKind::none) {
    out << "bad sample: " << bad_kind_name(verdict) << ": " << reason << '\n';
    return;
  }
  print_ids(out, transformed.tokens);
  if (tokenizer != nullptr && raw.kind == SampleKind::tokens) {
    // Pre-tokenized ids decode only when the vocabulary covers them.
    bool covered = std::all_of(transformed.tokens.begin(), transformed.tokens.end(),
                               [&](int32_t id) { return id >= 0 && id < tokenizer->vocab_size(); });
    if (covered) out << "  decoded: " << preview(tokenizer->decode(transformed.tokens), options.max_text_chars) << '\n';
  }
  out << "  positions: " << transformed.positions() << " (" << transformed.image.patches << " patches + "
      << transformed.tokens.size() << " tokens)\n";
}

}  // namespace msd
