// msd/source_config.h — what a source is (its format, files, fields and
// order) and the tokenizer that reads its text: the parts of the job's
// configuration (msd/config.h) that the readers, the tokenizer and the sample
// pipeline take, without the rest of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "msd/options.h"
#include "msd/source_formats.h"

namespace msd {

// The format of a source's files. Each has a folder under lib/source/ and one
// entry in its registry (lib/source/format.h), which knows its name, what it
// needs and how it opens; configuration parses source.NAME.format once, by
// that registry (docs/formats.md "Adding a format").
#define MSD_SOURCE_FORMAT_VALUE(value, entry) value,
enum class SourceFormat : uint8_t { MSD_SOURCE_FORMATS(MSD_SOURCE_FORMAT_VALUE) };  // msd/source_formats.h
#undef MSD_SOURCE_FORMAT_VALUE

struct SourceConfig {
  std::string name;                 // [source.NAME]
  std::optional<SourceFormat> format;  // source.NAME.format; unset: missing (validation fails)
  std::string path;                 // comma-separated globs, resolved
  // "0.5" or "0:0.6, 500:0.3": steps strictly increasing, weights >= 0.
  // Default: 1 for the whole run.
  std::vector<WeightPoint> weight = {{0, 1.0}};
  std::string text_field = "text";        // jsonl: field holding the text; parquet: column of the text
  std::string caption_field = "caption";  // wds: field of a .json caption; parquet with image_field: column of the caption
  std::string image_field;                // parquet: column of the image bytes; set: image-text samples
  // The stream's order within an epoch (lib/source/permutation.h,
  // docs/formats.md "The locality order"): auto is block for a parquet
  // source and a jsonl source that reads a compressed file, else uniform.
  Shuffle shuffle = Shuffle::automatic;
  uint64_t shuffle_block_records = 2048;  // block: consecutive records per block
  uint64_t shuffle_window_blocks = 16;    // block: blocks whose records are shuffled together
  // The decoded blocks (compressed restart intervals under the block order,
  // Parquet row groups) one open source keeps, in MiB (lib/source/block_cache.h).
  uint64_t cache_mib = 64;
  // Emulated storage latency: every read of a sample first waits this long
  // (benchmarks on one machine; docs/scaling.md). 0: none.
  uint64_t read_delay_us = 0;
  // A record whose stored size (from the index: a jsonl line, a wds sample's
  // members, an indexed sequence's ids as int32) exceeds this is bad as
  // too_large without being read: no read allocates more. 0: no cap.
  uint64_t max_read_bytes = uint64_t{256} << 20;
};

struct TokenizerConfig {
  std::string vocab;               // tiktoken-format file
  std::string pattern = "cl100k";  // cl100k | o200k | gpt2 | a regex
  std::string normalize = "none";  // none | nfc | nfkc | nfd | nfkd
  std::string hf;                  // Hugging Face tokenizer.json, instead of vocab; empty: none
  bool append_eod = false;         // hf: end every document with the end-of-document token
  std::string eod_token;           // hf: that token's text; empty: tokenizer_config.json's eos_token
};

}  // namespace msd
