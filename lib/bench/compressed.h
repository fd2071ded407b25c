// `msd-bench compressed`: what reading compressed shards costs against
// reading the same records as plain JSON lines, measured in the same run.
//
// The input .jsonl files are written again, by msd's writers
// (source/jsonl/compressed.h, source/parquet/parquet_writer.h), as
//   zstd_frames     .jsonl.zst in frames of `frame_bytes` (as msd-datagen --compress zst)
//   gzip            .jsonl.gz, one member (what `gzip` writes)
//   zstd_one_frame  .jsonl.zst of one frame per file (what `zstd` writes)
//   parquet_zstd    .parquet, the records' text column, zstd pages (msd-datagen --format parquet --compress zst)
//   parquet_snappy  the same with snappy pages
// and every variant, the plain files included, is opened with a fresh index
// cache: the index build time (decompressing every file once, or reading
// every footer), the cache's bytes and restart points (row groups), the time
// of a second open from the cache. Then each variant reads records in the
// two orders a source's stream can take (source/permutation.h), without and
// with tokenizing their text, on one thread, each pass on a freshly opened
// source (an empty cache of decoded blocks), the fastest of `repeats` passes
// taken in turns over all rows:
//   uniform  the uniform shuffle: plain's `samples` records; a compressed
//            variant's first `uniform_samples` (each read decompresses from
//            its restart point, a Parquet read decodes its row group);
//   block    the locality order (block_records, window_blocks, cache_mib:
//            the defaults of source.NAME.shuffle_*): `samples` records, the
//            decoded blocks cached as the sources cache them.
// Rates are MB (10^6 bytes) of the records' plain JSON lines per second of
// wall time and of the reading thread's CPU time (a shared machine stretches
// the first, hardly the second), so
// every row's rate is a rate of the same records and its ratio to plain's
// uniform row is one of records per second. Each record read is compared with
// the plain file's. app/msd_bench.cc only parses the command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msd::bench {

struct CompressedBenchOptions {
  std::string data_dir = "data/demo";  // an msd-datagen dataset: DATA/web/*.jsonl, DATA/vocab.tiktoken
  std::string text;                    // comma-separated globs of plain .jsonl files instead of DATA/web/*.jsonl
  std::string vocab;                   // tiktoken vocabulary; default DATA/vocab.tiktoken
  std::string pattern = "cl100k";      // pre-tokenization pattern (TokenizerOptions)
  // Records read by plain's rows and by every block row: the first of their
  // order; 0 (the default): all, an epoch.
  uint64_t samples = 0;
  // Records read by the compressed variants' uniform rows; 0: those rows are left out.
  uint64_t uniform_samples = 5000;
  // The uniform row of zstd_one_frame reads at most this many (each read
  // decompresses from the file's start).
  uint64_t one_frame_samples = 300;
  // The variants measured besides plain (always first); default all five.
  std::vector<std::string> variants = {"zstd_frames", "gzip", "zstd_one_frame", "parquet_zstd", "parquet_snappy"};
  uint64_t frame_bytes = 256 << 10;       // zstd_frames' frame size; default msd-datagen --compress zst's
  uint64_t gzip_spacing_bytes = 1 << 20;  // JsonlOptions::restart_spacing_bytes
  uint64_t parquet_row_group_rows = 1000;  // msd-datagen --format parquet's
  int zstd_level = 3;
  int gzip_level = 6;
  // The locality order and the cache of decoded blocks (source.NAME.shuffle_block_records,
  // shuffle_window_blocks, cache_mib; their defaults).
  uint64_t block_records = 2048;
  uint64_t window_blocks = 16;
  uint64_t cache_mib = 64;
  // Passes of each row, its rates the fastest pass's (load on a shared
  // machine only ever slows a pass down).
  uint32_t repeats = 1;
  std::string work_dir;  // where the copies and caches go; default a new /tmp/msd-bench-compressed-*, removed
};

struct CompressedVariant {
  std::string name;         // plain, zstd_frames, gzip, zstd_one_frame, parquet_zstd, parquet_snappy
  std::string order;        // uniform or block
  uint64_t files = 0;
  uint64_t stored_bytes = 0;        // on disk
  uint64_t uncompressed_bytes = 0;  // jsonl: the files decompressed; parquet: the text column's pages decompressed
  double write_s = 0;               // writing the copies (0 for plain)
  double index_build_s = 0;         // first open: scan (and decompress) every file, or read every footer
  uint64_t index_bytes = 0;         // the index caches' bytes on disk
  uint64_t restart_points = 0;      // over all files (0 for plain); parquet: row groups
  double reopen_s = 0;              // second open, from the caches
  uint64_t state_bytes = 0;         // the open source's resident index (Source::state_bytes), before any read
  uint64_t samples = 0;             // records read
  uint64_t record_bytes = 0;        // their plain JSON lines' bytes
  double read_mb_per_s = 0;           // wall time
  double read_tokenize_mb_per_s = 0;
  double read_mb_per_cpu_s = 0;       // the reading thread's CPU time, which other processes do not stretch
  double read_tokenize_mb_per_cpu_s = 0;
  uint64_t tokens = 0;
  uint64_t blocks_decoded = 0;      // restart intervals or row groups decoded by the read+tokenize pass (cache misses)
  uint64_t mismatched_records = 0;  // texts or bad verdicts differing from plain's
};

struct CompressedReport {
  std::string text_source;
  uint64_t records = 0;                     // in the plain files
  uint64_t block_records = 0, window_blocks = 0, cache_mib = 0;
  uint32_t repeats = 1;                     // passes of each row, its rates the fastest's
  std::vector<CompressedVariant> variants;  // plain's rows first, uniform then block
};

// Throws ConfigError for missing inputs or bad options, IoError when files
// cannot be written or read.
CompressedReport run_compressed_bench(const CompressedBenchOptions& options);

// For people: one row per variant and order, with its rates over plain's uniform row.
std::string compressed_text(const CompressedReport& report);

// One JSON object: text_source, records, block_records, window_blocks,
// cache_mib, repeats, variants [{name, order, files, stored_bytes, compression_ratio,
// uncompressed_bytes, write_s, index_build_s, index_bytes,
// index_bytes_per_mb, restart_points, reopen_s, state_bytes, samples,
// record_bytes, read_mb_per_s, read_tokenize_mb_per_s, read_vs_plain,
// read_tokenize_vs_plain, read_mb_per_cpu_s, read_tokenize_mb_per_cpu_s,
// read_cpu_vs_plain, read_tokenize_cpu_vs_plain, tokens, blocks_decoded,
// mismatched_records}].
std::string compressed_json(const CompressedReport& report);

}  // namespace msd::bench
