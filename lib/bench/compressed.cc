#include "bench/compressed.h"

#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <random>

#include "bench/work_dir.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "source/jsonl/compressed.h"
#include "source/jsonl/jsonl_source.h"
#include "source/parquet/parquet_source.h"
#include "source/parquet/parquet_writer.h"
#include "source/permutation.h"
#include "transform/tokenizer/tokenizer.h"

namespace msd::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// CPU time of the calling thread (user and system: the reads' syscalls
// included), which other processes on a shared machine do not stretch.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// A pass's clocks: wall and this thread's CPU.
struct PassTimer {
  Clock::time_point wall = Clock::now();
  double cpu = thread_cpu_seconds();
  // The rates of `megabytes` over this pass into the fastest so far.
  void rate(double megabytes, double& wall_rate, double& cpu_rate) const {
    wall_rate = std::max(wall_rate, megabytes / seconds_since(wall));
    cpu_rate = std::max(cpu_rate, megabytes / std::max(thread_cpu_seconds() - cpu, 1e-9));
  }
};

uint64_t folder_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) bytes += entry.file_size();
  return bytes;
}

bool is_parquet(const std::string& variant) { return variant.starts_with("parquet_"); }

// What plain's reads give, per file-order index: the text's digest and the
// verdict, and the record's bytes (the rates' unit).
struct PlainRecords {
  std::vector<uint64_t> digests;
  std::vector<BadKind> bad;
  std::vector<uint64_t> bytes;
};

PlainRecords read_plain(JsonlSource& plain) {
  PlainRecords records;
  RawSample sample;
  for (uint64_t index = 0; index < plain.size(); ++index) {
    plain.read(index, sample);
    records.digests.push_back(std::hash<std::string>{}(sample.text));
    records.bad.push_back(sample.bad);
    records.bytes.push_back(plain.length_hint(index));
  }
  return records;
}

// A plain file's records as a Parquet text column: a bad record's text is
// null, so the file holds the same records in the same order.
std::string parquet_copy(const std::string& input, const CompressedBenchOptions& options, int32_t codec) {
  JsonlSource plain({input}, JsonlOptions{});
  ParquetWriteColumn text{"text", {}};
  RawSample sample;
  for (uint64_t index = 0; index < plain.size(); ++index) {
    plain.read(index, sample);
    if (sample.bad == BadKind::none) text.values.emplace_back(std::move(sample.text));
    else text.values.emplace_back();
  }
  return write_parquet({text}, {.codec = codec, .level = options.zstd_level, .row_group_rows = options.parquet_row_group_rows});
}

// Writes each input file again as `variant` into `dir`; returns the copies' paths.
std::vector<std::string> write_copies(const std::vector<std::string>& inputs, const std::string& dir,
                                      const std::string& variant, const CompressedBenchOptions& options,
                                      CompressedVariant& out) {
  std::vector<std::string> paths;
  const auto start = Clock::now();
  for (const std::string& input : inputs) {
    const std::string name = std::filesystem::path(input).filename().string();
    std::string stored, path;
    if (is_parquet(variant)) {
      const auto codec = variant == "parquet_zstd" ? ParquetCodec::zstd : ParquetCodec::snappy;
      stored = parquet_copy(input, options, static_cast<int32_t>(codec));
      path = join_path(dir, std::filesystem::path(input).stem().string() + ".parquet");
    } else {
      const std::vector<unsigned char> bytes = read_file(input);
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (variant == "zstd_frames") stored = zstd_compress_frames(text, options.frame_bytes, options.zstd_level);
      if (variant == "zstd_one_frame") stored = zstd_compress_frames(text, 0, options.zstd_level);
      if (variant == "gzip") stored = gzip_compress(text, options.gzip_level);
      path = join_path(dir, name + (variant == "gzip" ? ".gz" : ".zst"));
    }
    write_file_atomic(path, {reinterpret_cast<const unsigned char*>(stored.data()), stored.size()});
    paths.push_back(path);
  }
  out.write_s = seconds_since(start);
  return paths;
}

// A variant's files opened as its source would be: a Parquet source caches
// decoded row groups always, a jsonl one its restart intervals under the
// block order only (source.cc, open_source).
struct Opener {
  std::string variant;
  std::vector<std::string> paths;
  std::string cache_dir;
  const CompressedBenchOptions* options = nullptr;

  std::unique_ptr<Source> open(bool blocks) const {
    const uint64_t cache_bytes = options->cache_mib << 20;
    if (is_parquet(variant)) {
      ParquetOptions parquet;
      parquet.cache_dir = cache_dir;
      parquet.cache_bytes = cache_bytes;
      return std::make_unique<ParquetSource>(paths, parquet);
    }
    return std::make_unique<JsonlSource>(paths, JsonlOptions{.text_field = "text",
                                                             .cache_dir = cache_dir,
                                                             .restart_spacing_bytes = options->gzip_spacing_bytes,
                                                             .cache_bytes = blocks ? cache_bytes : 0});
  }
};

// Opens the files twice with a fresh index cache: the first open builds the
// indexes, the second loads them. Fills the index figures of `out`.
void measure_index(const Opener& opener, CompressedVariant& out) {
  auto start = Clock::now();
  std::unique_ptr<Source> source = opener.open(false);
  out.index_build_s = seconds_since(start);
  const size_t files = opener.paths.size();
  if (source->index_counts().scanned != files)
    throw Error(str("expected ", files, " indexes built, got ", source->index_counts().scanned));
  out.index_bytes = folder_bytes(opener.cache_dir);
  out.files = files;
  for (size_t file = 0; file < files; ++file) {
    const uint64_t stored = file_stamp(opener.paths[file]).size_bytes;
    out.stored_bytes += stored;
    if (auto* parquet = dynamic_cast<const ParquetSource*>(source.get())) {
      out.restart_points += parquet->row_groups(file);
      for (size_t g = 0; g < parquet->row_groups(file); ++g) out.uncompressed_bytes += parquet->text_chunk(file, g).uncompressed_bytes;
      continue;
    }
    const CompressedIndex& index = dynamic_cast<const JsonlSource&>(*source).compressed_index(file);
    if (index.compression != Compression::none) out.restart_points += index.points.size();
    out.uncompressed_bytes += index.compression == Compression::none ? stored : index.uncompressed_bytes;
  }
  start = Clock::now();
  source = opener.open(false);
  out.reopen_s = seconds_since(start);
  out.state_bytes = source->state_bytes();
  if (source->index_counts().cached != files)
    throw Error(str("expected ", files, " indexes from the cache, got ", source->index_counts().cached));
}

// Restart intervals or row groups decoded: the cache's misses, and for
// jsonl the reads that decompressed without it.
uint64_t blocks_decoded(const Source& source) {
  if (auto* parquet = dynamic_cast<const ParquetSource*>(&source)) return parquet->cache().misses();
  const auto& jsonl = dynamic_cast<const JsonlSource&>(source);
  return jsonl.cache().misses() + jsonl.uncached_reads();
}

// One row's reads: `order` through `opener`'s source, in one order.
struct Row {
  const Opener* opener = nullptr;
  bool blocks = false;
  std::vector<uint64_t> order;
  CompressedVariant result;
};

// One pass of a row, each half from a freshly opened source: reading
// (checking each record against plain's on the first pass), then reading and
// tokenizing. A row's rates are its fastest pass's: load on a shared machine
// only ever slows a pass down.
void measure_pass(Row& row, bool first, Tokenizer& tokenizer, const PlainRecords& plain) {
  CompressedVariant& out = row.result;
  const bool parquet = is_parquet(row.opener->variant);
  RawSample sample;
  if (first) {
    out.samples = row.order.size();
    for (uint64_t index : row.order) out.record_bytes += plain.bytes[index];
  }
  const double megabytes = static_cast<double>(out.record_bytes) / 1e6;
  std::unique_ptr<Source> source = row.opener->open(row.blocks);
  PassTimer timer;
  for (uint64_t index : row.order) {
    source->read(index, sample);
    if (!first) continue;
    // A Parquet copy holds a bad record as a null: bad either way, of its own kind.
    const bool same_verdict = parquet ? (sample.bad == BadKind::none) == (plain.bad[index] == BadKind::none)
                                      : sample.bad == plain.bad[index];
    out.mismatched_records += !same_verdict || std::hash<std::string>{}(sample.text) != plain.digests[index];
  }
  timer.rate(megabytes, out.read_mb_per_s, out.read_mb_per_cpu_s);
  std::vector<int32_t> ids;
  source = row.opener->open(row.blocks);
  out.tokens = 0;
  timer = PassTimer{};
  for (uint64_t index : row.order) {
    source->read(index, sample);
    if (sample.bad != BadKind::none) continue;
    ids.clear();  // encode appends
    tokenizer.encode(sample.text, ids);
    out.tokens += ids.size();
  }
  timer.rate(megabytes, out.read_tokenize_mb_per_s, out.read_tokenize_mb_per_cpu_s);
  out.blocks_decoded = blocks_decoded(*source);
}

// The first `count` positions (0: all) of an epoch of n records in the
// uniform or the block order.
std::vector<uint64_t> order_prefix(uint64_t n, const ShuffleOrder& shuffle, uint64_t count) {
  const SourceOrder order(n, permutation_key(2024, 0, 0), shuffle);
  count = count == 0 ? n : std::min(count, n);
  std::vector<uint64_t> indexes(count);
  for (uint64_t i = 0; i < count; ++i) indexes[i] = order(i);
  return indexes;
}

double ratio(double value, double base) { return base > 0 ? value / base : 0; }

}  // namespace

CompressedReport run_compressed_bench(const CompressedBenchOptions& options) {
  if (options.frame_bytes == 0) throw ConfigError("--frame-kib must be at least 1");
  if (options.gzip_spacing_bytes == 0) throw ConfigError("--gzip-spacing-kib must be at least 1");
  if (options.block_records == 0 || options.window_blocks == 0)
    throw ConfigError("--block-records and --window-blocks must be at least 1");
  CompressedReport report;
  report.text_source = options.text.empty() ? join_path(options.data_dir, "web/*.jsonl") : options.text;
  report.block_records = options.block_records;
  report.window_blocks = options.window_blocks;
  report.cache_mib = options.cache_mib;
  report.repeats = std::max<uint32_t>(options.repeats, 1);
  const std::vector<std::string> inputs = expand_globs(report.text_source, "--text");
  for (const std::string& input : inputs)
    if (compression_of_path(input) != Compression::none)
      throw ConfigError(str("--text: ", input, " is compressed already; the benchmark starts from plain .jsonl files"));
  std::vector<std::string> names = {"plain"};
  for (const std::string& name : options.variants) {
    if (name != "zstd_frames" && name != "gzip" && name != "zstd_one_frame" && name != "parquet_zstd" &&
        name != "parquet_snappy")
      throw ConfigError(str("--variants: unknown variant '", name,
                            "' (expected zstd_frames, gzip, zstd_one_frame, parquet_zstd or parquet_snappy)"));
    names.push_back(name);
  }
  Tokenizer tokenizer(options.vocab.empty() ? join_path(options.data_dir, "vocab.tiktoken") : options.vocab,
                      TokenizerOptions{.pattern = options.pattern});
  const WorkDir work(options.work_dir, "compressed");
  PlainRecords plain;
  const ShuffleOrder uniform{}, blocks{true, options.block_records, options.window_blocks};
  std::vector<std::unique_ptr<Opener>> openers;
  std::vector<Row> rows;
  for (const std::string& name : names) {
    CompressedVariant base;
    base.name = name;
    const Opener& opener = *openers.emplace_back(std::make_unique<Opener>(Opener{
        name, name == "plain" ? inputs : write_copies(inputs, work.folder(name), name, options, base),
        work.folder("cache-" + name), &options}));
    measure_index(opener, base);
    const uint64_t size = opener.open(false)->size();
    if (name == "plain") {
      JsonlSource source(inputs, JsonlOptions{.cache_dir = opener.cache_dir});
      plain = read_plain(source);
      report.records = size;
    }
    if (size != report.records) throw Error(str(name, ": ", size, " records, the plain files hold ", report.records));
    for (const bool block : {false, true}) {
      uint64_t count = options.samples;
      if (!block && name != "plain") count = name == "zstd_one_frame" ? std::min(options.uniform_samples, options.one_frame_samples)
                                                                       : options.uniform_samples;
      if (!block && name != "plain" && count == 0) continue;
      Row& row = rows.emplace_back(Row{&opener, block, order_prefix(size, block ? blocks : uniform, count), base});
      row.result.order = block ? "block" : "uniform";
    }
  }
  // The passes of every row in turn, `repeats` times: each row's fastest pass
  // comes from the same stretch of time as the others'.
  for (uint32_t repeat = 0; repeat < report.repeats; ++repeat)
    for (Row& row : rows) measure_pass(row, repeat == 0, tokenizer, plain);
  for (Row& row : rows) report.variants.push_back(std::move(row.result));
  return report;
}

std::string compressed_text(const CompressedReport& report) {
  const CompressedVariant& plain = report.variants.front();
  char line[320];
  std::snprintf(line, sizeof line, "%.1f", static_cast<double>(plain.stored_bytes) / 1e6);
  std::string out = str("compressed shards: ", report.records, " records of ", report.text_source, ", ", plain.files,
                        " files, ", line, " MB plain; block order: ", report.block_records, " records a block, ",
                        report.window_blocks, " blocks a window, a cache of ", report.cache_mib,
                        " MiB; rates in MB of the records' plain lines per second, one thread, the fastest of ",
                        report.repeats, " pass(es)\n");
  std::snprintf(line, sizeof line, "%-15s %-7s %9s %6s %8s %8s %6s %8s %8s %7s %8s %7s %7s %9s %7s %6s\n", "variant",
                "order", "stored_MB", "ratio", "index_s", "index_MB", "points", "samples", "read", "x", "read+tok", "x",
                "cpu_x", "tok_cpu_x", "decoded", "diffs");
  out += line;
  for (const CompressedVariant& v : report.variants) {
    std::snprintf(line, sizeof line,
                  "%-15s %-7s %9.1f %6.2f %8.3f %8.3f %6llu %8llu %8.1f %7.3f %8.1f %7.3f %7.3f %9.3f %7llu %6llu\n",
                  v.name.c_str(), v.order.c_str(), static_cast<double>(v.stored_bytes) / 1e6,
                  ratio(static_cast<double>(v.uncompressed_bytes), static_cast<double>(v.stored_bytes)),
                  v.index_build_s, static_cast<double>(v.index_bytes) / 1e6,
                  static_cast<unsigned long long>(v.restart_points), static_cast<unsigned long long>(v.samples),
                  v.read_mb_per_s, ratio(v.read_mb_per_s, plain.read_mb_per_s), v.read_tokenize_mb_per_s,
                  ratio(v.read_tokenize_mb_per_s, plain.read_tokenize_mb_per_s),
                  ratio(v.read_mb_per_cpu_s, plain.read_mb_per_cpu_s),
                  ratio(v.read_tokenize_mb_per_cpu_s, plain.read_tokenize_mb_per_cpu_s),
                  static_cast<unsigned long long>(v.blocks_decoded), static_cast<unsigned long long>(v.mismatched_records));
    out += line;
  }
  return out + "ratio: decompressed over stored bytes; points: restart points (parquet: row groups); x: the rate over "
               "plain's uniform row (read, read+tok); cpu_x, tok_cpu_x: the same ratios in the reading thread's CPU "
               "time; decoded: restart intervals or row groups decoded by the read+tok pass (each uncached read counts "
               "one); diffs: records whose text differs from plain's\n";
}

std::string compressed_json(const CompressedReport& report) {
  const CompressedVariant& plain = report.variants.front();
  JsonWriter json;
  json.begin_object()
      .value("text_source", report.text_source)
      .value("records", report.records)
      .value("block_records", report.block_records)
      .value("window_blocks", report.window_blocks)
      .value("cache_mib", report.cache_mib)
      .value("repeats", report.repeats)
      .begin_array("variants");
  for (const CompressedVariant& v : report.variants) {
    const double megabytes = static_cast<double>(v.uncompressed_bytes) / 1e6;
    json.begin_object()
        .value("name", v.name)
        .value("order", v.order)
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
        .value("read_mb_per_cpu_s", v.read_mb_per_cpu_s)
        .value("read_tokenize_mb_per_cpu_s", v.read_tokenize_mb_per_cpu_s)
        .value("read_cpu_vs_plain", ratio(v.read_mb_per_cpu_s, plain.read_mb_per_cpu_s))
        .value("read_tokenize_cpu_vs_plain", ratio(v.read_tokenize_mb_per_cpu_s, plain.read_tokenize_mb_per_cpu_s))
        .value("tokens", v.tokens)
        .value("blocks_decoded", v.blocks_decoded)
        .value("mismatched_records", v.mismatched_records)
        .end_object();
  }
  json.end_array().end_object();
  return json.str();
}

}  // namespace msd::bench
