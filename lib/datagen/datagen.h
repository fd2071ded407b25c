// msd-datagen: the synthetic multi-source dataset the demo, the tests and the
// benchmarks run on. From one seed it writes, under one directory:
//
//   web/web-NNNN.jsonl         short web-like documents  {"id","url","text"}
//                              (.jsonl.zst or .jsonl.gz with DatagenOptions::compress,
//                              web-NNNN.parquet with DatagenOptions::format)
//   books/books-NNNN.jsonl     long documents, same shape
//   images/images-NNNN.tar     WebDataset shards: KEY.jpg + KEY.txt or KEY.json
//   corpus/corpus-NNNN.bin/.idx  pre-tokenized Megatron MMIDIDX corpus
//   vocab.tiktoken             byte-level BPE trained on the web and book text
//   bad_samples.txt            the deliberately broken records, where they are
//   MANIFEST                   the options and the file list; written last
//
// The output is a pure function of the options (not of the thread count or
// the machine): the same seed and counts give byte-identical files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "source/source.h"

namespace msd::datagen {

// How much of each kind of data a scale makes.
struct DatasetCounts {
  uint64_t web_docs = 0;
  uint64_t long_docs = 0;
  uint64_t images = 0;
  uint64_t indexed_docs = 0;
  uint32_t vocab_size = 0;  // tokens, including the 256 single bytes
  uint64_t bad_samples = 0;
};

// tiny (tests: a few hundred samples per source, under 2 s), demo (the demo's
// ~100-step job, under ~150 MB) or large (10x demo, for benchmarks). Throws
// ConfigError for another name.
DatasetCounts counts_for_scale(const std::string& scale);

struct DatagenOptions {
  std::string out_dir;          // required
  uint64_t seed = 1234;
  std::string scale = "demo";   // tiny | demo | large: the counts not given below
  std::optional<uint64_t> web_docs;
  std::optional<uint64_t> long_docs;
  std::optional<uint64_t> images;
  std::optional<uint64_t> indexed_docs;
  std::optional<uint32_t> vocab_size;   // >= 257 and <= 2^31
  std::optional<uint64_t> bad_samples;
  // Documents per shard of the web and book parts (default 2500 and 200):
  // small values make many small shards, as corpora of thousands of files
  // are (msd-bench startup). Must be >= 1.
  std::optional<uint64_t> web_shard_docs;
  std::optional<uint64_t> long_shard_docs;
  // "zst" or "gz": the web shards are written compressed (web-NNNN.jsonl.zst in
  // zstd frames of about 256 KiB ending at line ends, or web-NNNN.jsonl.gz as one
  // gzip member); default empty (or "none"): plain .jsonl. Bad records'
  // offsets are then offsets in the decompressed bytes. Throws ConfigError for
  // another name.
  std::string compress;
  // "parquet": the web shards are written as Parquet (web-NNNN.parquet,
  // columns id, url and text; --compress none, zst, gz or snappy picks the
  // pages' codec; source/parquet/parquet_writer.h); default "jsonl".
  std::string format = "jsonl";
  bool force = false;   // regenerate even when out_dir holds a complete dataset
  unsigned threads = 0; // worker threads; 0: the machine's cores, at most 8. Does not change the output.
};

// The scale's counts with the explicit overrides applied; validated (throws ConfigError).
DatasetCounts resolve_counts(const DatagenOptions& options);

// One file of the dataset, path relative to the dataset directory.
struct DatasetFile {
  std::string path;
  uint64_t samples = 0;  // documents or image-text pairs; 0 for the vocabulary
  uint64_t bytes = 0;
};

// A record written broken on purpose, listed in bad_samples.txt.
struct BadRecord {
  std::string source;  // web | books | images
  std::string file;    // relative to the dataset directory
  uint64_t offset = 0; // jsonl: the line's first byte (decompressed, for a compressed shard); tar: the member's header
  BadKind kind = BadKind::none;
  std::string detail;
};

struct DatagenResult {
  bool reused = false;  // a complete dataset with the same options was already there
  std::vector<DatasetFile> files;
  std::vector<BadRecord> bad_records;
  double seconds = 0;
};

// Writes the dataset (or finds it already complete), logging a progress line
// per part. Without `force`, a directory whose MANIFEST records the same
// options is left alone; one recording other options is an error (ConfigError
// naming both), never silently overwritten. Throws IoError when writing fails.
DatagenResult generate_dataset(const DatagenOptions& options);

// The final listing: per part, files, samples and bytes; then the total.
std::string format_listing(const DatagenResult& result);

}  // namespace msd::datagen
