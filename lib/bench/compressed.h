// `msd-bench compressed`: what reading JSON lines compressed costs against
// reading them plain, measured in the same run on the same records.
//
// The input .jsonl files are written again, by msd's writers
// (source/jsonl/compressed.h), as
//   zstd_frames     .jsonl.zst in frames of `frame_bytes` (as msd-datagen --compress zst)
//   gzip            .jsonl.gz, one member (what `gzip` writes)
//   zstd_one_frame  .jsonl.zst of one frame per file (what `zstd` writes)
// and every variant, the plain files included, is opened with a fresh index
// cache: the index build time (decompressing every file once), the cache's
// bytes and restart points, the time of a second open from the cache, then
// reads of the same shuffled records, without and with tokenizing their text
// (one thread). Rates are MB (10^6 bytes) of uncompressed record bytes per
// second. Each variant's texts are compared with the plain files'.
// app/msd_bench.cc only parses the command line.
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
  uint64_t samples = 20000;            // records read per variant (a shuffled selection); 0: every record
  // Records read from zstd_one_frame files, at most (each read decompresses
  // from the file's start); 0: none, the variant is left out.
  uint64_t one_frame_samples = 500;
  // The variants measured besides plain (always first); default all three.
  std::vector<std::string> variants = {"zstd_frames", "gzip", "zstd_one_frame"};
  uint64_t frame_bytes = 256 << 10;    // zstd_frames' frame size; default msd-datagen --compress zst's
  uint64_t gzip_spacing_bytes = 1 << 20;  // JsonlOptions::restart_spacing_bytes
  int zstd_level = 3;
  int gzip_level = 6;
  std::string work_dir;  // where the compressed copies and caches go; default a new /tmp/msd-bench-compressed-*, removed
};

struct CompressedVariant {
  std::string name;         // plain, zstd_frames, gzip, zstd_one_frame
  uint64_t files = 0;
  uint64_t stored_bytes = 0;        // on disk
  uint64_t uncompressed_bytes = 0;  // the records' files decompressed
  double write_s = 0;               // compressing the copies (0 for plain)
  double index_build_s = 0;         // first open: scan (and decompress) every file
  uint64_t index_bytes = 0;         // the index caches' bytes on disk
  uint64_t restart_points = 0;      // over all files (0 for plain)
  double reopen_s = 0;              // second open, from the caches
  uint64_t state_bytes = 0;         // the open source's resident index (Source::state_bytes)
  uint64_t samples = 0;             // records read
  uint64_t record_bytes = 0;        // their uncompressed bytes
  double read_mb_per_s = 0;
  double read_tokenize_mb_per_s = 0;
  uint64_t tokens = 0;
  uint64_t mismatched_records = 0;  // texts or bad kinds differing from plain's
};

struct CompressedReport {
  std::string text_source;
  uint64_t records = 0;                     // in the plain files
  std::vector<CompressedVariant> variants;  // plain first
};

// Throws ConfigError for missing inputs or bad options, IoError when files
// cannot be written or read.
CompressedReport run_compressed_bench(const CompressedBenchOptions& options);

// For people: one row per variant, with its rates over plain's.
std::string compressed_text(const CompressedReport& report);

// One JSON object: text_source, records, variants [{name, files,
// stored_bytes, compression_ratio, uncompressed_bytes, write_s,
// index_build_s, index_bytes, index_bytes_per_mb, restart_points, reopen_s, state_bytes,
// samples, record_bytes, read_mb_per_s, read_tokenize_mb_per_s,
// read_vs_plain, read_tokenize_vs_plain, tokens, mismatched_records}].
std::string compressed_json(const CompressedReport& report);

}  // namespace msd::bench
