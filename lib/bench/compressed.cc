#include "bench/compressed.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <random>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "source/jsonl/compressed.h"
#include "source/jsonl/jsonl_source.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The work directory: the one given (kept), or a new one under /tmp removed
// with everything in it.
class WorkDir {
 public:
  explicit WorkDir(const std::string& given) : path_(given), owned_(given.empty()) {
    if (owned_) {
      std::string pattern = (std::filesystem::temp_directory_path() / "msd-bench-compressed-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) throw IoError(str("cannot create a temporary directory ", pattern));
      path_ = pattern;
    }
    std::error_code error;
    std::filesystem::create_directories(path_, error);
    if (error) throw IoError(str("cannot create ", path_, ": ", error.message()));
  }
  ~WorkDir() {
    std::error_code ignored;
    if (owned_) std::filesystem::remove_all(path_, ignored);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  // A fresh (emptied) folder `name` inside.
  std::string folder(const std::string& name) const {
    const std::string dir = join_path(path_, name);
    std::error_code error;
    std::filesystem::remove_all(dir, error);
    std::filesystem::create_directories(dir, error);
    if (error) throw IoError(str("cannot create ", dir, ": ", error.message()));
    return dir;
  }

 private:
  std::string path_;
  bool owned_;
};

uint64_t folder_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) bytes += entry.file_size();
  return bytes;
}

// Writes each input file compressed into `dir`; returns the copies' paths.
std::vector<std::string> write_copies(const std::vector<std::string>& inputs, const std::string& dir,
                                      const std::string& variant, const CompressedBenchOptions& options,
                                      CompressedVariant& out) {
  std::vector<std::string> paths;
  const auto start = Clock::now();
  for (const std::string& input : inputs) {
    const std::vector<unsigned char> bytes = read_file(input);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::string stored;
    std::string suffix = ".zst";
    if (variant == "zstd_frames") stored = zstd_compress_frames(text, options.frame_bytes, options.zstd_level);
    if (variant == "zstd_one_frame") stored = zstd_compress_frames(text, 0, options.zstd_level);
    if (variant == "gzip") stored = gzip_compress(text, options.gzip_level), suffix = ".gz";
    const std::string path = join_path(dir, std::filesystem::path(input).filename().string() + suffix);
    write_file_atomic(path, {reinterpret_cast<const unsigned char*>(stored.data()), stored.size()});
    paths.push_back(path);
  }
  out.write_s = seconds_since(start);
  return paths;
}

// Opens `paths` twice with a fresh cache: the first open builds the
// indexes, the second loads them.
std::unique_ptr<JsonlSource> open_measured(const std::vector<std::string>& paths, const std::string& cache_dir,
                                           uint64_t gzip_spacing_bytes, CompressedVariant& out) {
  const JsonlOptions options{.text_field = "text", .cache_dir = cache_dir, .restart_spacing_bytes = gzip_spacing_bytes};
  auto start = Clock::now();
  auto source = std::make_unique<JsonlSource>(paths, options);
  out.index_build_s = seconds_since(start);
  if (source->index_counts().scanned != paths.size())
    throw Error(str("expected ", paths.size(), " indexes built, got ", source->index_counts().scanned));
  out.index_bytes = folder_bytes(cache_dir);
  out.files = paths.size();
  for (size_t file = 0; file < paths.size(); ++file) {
    out.stored_bytes += file_stamp(paths[file]).size_bytes;
    const CompressedIndex& index = source->compressed_index(file);
    if (index.compression != Compression::none) out.restart_points += index.points.size();
  }
  start = Clock::now();
  source = std::make_unique<JsonlSource>(paths, options);
  out.reopen_s = seconds_since(start);
  out.state_bytes = source->state_bytes();
  if (source->index_counts().cached != paths.size())
    throw Error(str("expected ", paths.size(), " indexes from the cache, got ", source->index_counts().cached));
  return source;
}

uint64_t sample_digest(const RawSample& sample) {
  return std::hash<std::string>{}(sample.text) * 31 + static_cast<uint64_t>(sample.bad);
}

// Reads `order` twice: once only reading (recording or checking each record's
// digest against plain's), once reading and tokenizing.
void read_measured(JsonlSource& source, const std::vector<uint64_t>& order, Tokenizer& tokenizer,
                   std::vector<uint64_t>& digests, CompressedVariant& out) {
  const bool is_plain = digests.empty();
  RawSample sample;
  out.samples = order.size();
  for (uint64_t index : order) out.record_bytes += source.length_hint(index);
  auto start = Clock::now();
  for (size_t i = 0; i < order.size(); ++i) {
    source.read(order[i], sample);
    if (is_plain) digests.push_back(sample_digest(sample));
    else out.mismatched_records += sample_digest(sample) != digests[i];
  }
  out.read_mb_per_s = static_cast<double>(out.record_bytes) / 1e6 / seconds_since(start);
  std::vector<int32_t> ids;
  start = Clock::now();
  for (uint64_t index : order) {
    source.read(index, sample);
    if (sample.bad != BadKind::none) continue;
    ids.clear();  // encode appends
    tokenizer.encode(sample.text, ids);
    out.tokens += ids.size();
  }
  out.read_tokenize_mb_per_s = static_cast<double>(out.record_bytes) / 1e6 / seconds_since(start);
}

std::vector<uint64_t> shuffled_order(uint64_t size, uint64_t samples) {
  std::vector<uint64_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(2024));
  if (samples > 0 && samples < size) order.resize(samples);
  return order;
}

double ratio(double value, double base) { return base > 0 ? value / base : 0; }

}  // namespace

CompressedReport run_compressed_bench(const CompressedBenchOptions& options) {
  if (options.frame_bytes == 0) throw ConfigError("--frame-kib must be at least 1");
  if (options.gzip_spacing_bytes == 0) throw ConfigError("--gzip-spacing-kib must be at least 1");
  CompressedReport report;
  report.text_source = options.text.empty() ? join_path(options.data_dir, "web/*.jsonl") : options.text;
  const std::vector<std::string> inputs = expand_globs(report.text_source, "--text");
  for (const std::string& input : inputs)
    if (compression_of_path(input) != Compression::none)
      throw ConfigError(str("--text: ", input, " is compressed already; the benchmark starts from plain .jsonl files"));
  Tokenizer tokenizer(options.vocab.empty() ? join_path(options.data_dir, "vocab.tiktoken") : options.vocab,
                      TokenizerOptions{.pattern = options.pattern});
  const WorkDir work(options.work_dir);
  std::vector<uint64_t> digests;  // plain's, in read order
  std::vector<uint64_t> order;
  std::vector<std::string> names = {"plain"};
  for (const std::string& name : options.variants) {
    if (name != "zstd_frames" && name != "gzip" && name != "zstd_one_frame")
      throw ConfigError(str("--variants: unknown variant '", name, "' (expected zstd_frames, gzip or zstd_one_frame)"));
    if (name != "zstd_one_frame" || options.one_frame_samples > 0) names.push_back(name);
  }
  for (const std::string& name : names) {
    CompressedVariant variant;
    variant.name = name;
    const std::vector<std::string> paths = name == "plain" ? inputs : write_copies(inputs, work.folder(name), name, options, variant);
    std::unique_ptr<JsonlSource> source = open_measured(paths, work.folder("cache-" + name), options.gzip_spacing_bytes, variant);
    for (size_t file = 0; file < paths.size(); ++file) {
      const CompressedIndex& index = source->compressed_index(file);
      variant.uncompressed_bytes += index.compression == Compression::none ? file_stamp(paths[file]).size_bytes
                                                                           : index.uncompressed_bytes;
    }
    if (name == "plain") {
      report.records = source->size();
      order = shuffled_order(source->size(), options.samples);
    }
    if (source->size() != report.records)
      throw Error(str(name, ": ", source->size(), " records, the plain files hold ", report.records));
    std::vector<uint64_t> part = order;
    std::vector<uint64_t> part_digests = digests;
    if (name == "zstd_one_frame" && part.size() > options.one_frame_samples) {
      part.resize(options.one_frame_samples);
      part_digests.resize(options.one_frame_samples);
    }
    read_measured(*source, part, tokenizer, name == "plain" ? digests : part_digests, variant);
    report.variants.push_back(std::move(variant));
  }
  return report;
}

std::string compressed_text(const CompressedReport& report) {
  const CompressedVariant& plain = report.variants.front();
  char line[256];
  std::snprintf(line, sizeof line, "%.1f", static_cast<double>(plain.stored_bytes) / 1e6);
  std::string out = str("compressed JSON lines: ", report.records, " records of ", report.text_source, ", ",
                        plain.files, " files, ", line, " MB plain; rates in MB of uncompressed records per second, one thread\n");
  std::snprintf(line, sizeof line, "%-15s %9s %7s %9s %9s %8s %8s %9s %9s %7s %9s %7s %6s\n", "variant", "stored_MB",
                "ratio", "index_s", "index_MB", "points", "reopen_s", "samples", "read", "x", "read+tok", "x",
                "diffs");
  out += line;
  for (const CompressedVariant& v : report.variants) {
    std::snprintf(line, sizeof line, "%-15s %9.1f %7.2f %9.3f %9.3f %8llu %8.3f %9llu %9.1f %7.3f %9.1f %7.3f %6llu\n",
                  v.name.c_str(), static_cast<double>(v.stored_bytes) / 1e6,
                  ratio(static_cast<double>(v.uncompressed_bytes), static_cast<double>(v.stored_bytes)),
                  v.index_build_s, static_cast<double>(v.index_bytes) / 1e6,
                  static_cast<unsigned long long>(v.restart_points), v.reopen_s,
                  static_cast<unsigned long long>(v.samples), v.read_mb_per_s, ratio(v.read_mb_per_s, plain.read_mb_per_s),
                  v.read_tokenize_mb_per_s, ratio(v.read_tokenize_mb_per_s, plain.read_tokenize_mb_per_s),
                  static_cast<unsigned long long>(v.mismatched_records));
    out += line;
  }
  return out + "ratio: uncompressed over stored bytes; x: the rate over plain's; diffs: records whose text differs from plain's\n";
}

std::string compressed_json(const CompressedReport& report) {
  const CompressedVariant& plain = report.variants.front();
  JsonWriter json;
  json.begin_object().value("text_source", report.text_source).value("records", report.records).begin_array("variants");
  for (const CompressedVariant& v : report.variants) {
    const double megabytes = static_cast<double>(v.uncompressed_bytes) / 1e6;
    json.begin_object()
        .value("name", v.name)
        .value("files", v.files)
        .value("stored_bytes", v.stored_bytes)
        .value("uncompressed_bytes", v.uncompressed_bytes)
        .value("compression_ratio", ratio(static_cast<double>(v.uncompressed_bytes), static_cast<double>(v.stored_bytes)))
        .value("write_s", v.write_s)
        .value("index_build_s", v.index_build_s)
        .value("index_bytes", v.index_bytes)
        .value("index_bytes_per_mb", ratio(static_cast<double>(v.index_bytes), megabytes))
        .value("restart_points", v.restart_points)
        .value("reopen_s", v.reopen_s)
        .value("state_bytes", v.state_bytes)
        .value("samples", v.samples)
        .value("record_bytes", v.record_bytes)
        .value("read_mb_per_s", v.read_mb_per_s)
        .value("read_tokenize_mb_per_s", v.read_tokenize_mb_per_s)
        .value("read_vs_plain", ratio(v.read_mb_per_s, plain.read_mb_per_s))
        .value("read_tokenize_vs_plain", ratio(v.read_tokenize_mb_per_s, plain.read_tokenize_mb_per_s))
        .value("tokens", v.tokens)
        .value("mismatched_records", v.mismatched_records)
        .end_object();
  }
  json.end_array().end_object();
  return json.str();
}

}  // namespace msd::bench
