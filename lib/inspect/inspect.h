// msd-inspect's logic: open one source as a loader would, summarize it (files,
// samples, length statistics) and show one sample as stored and as the loader
// would transform it. app/msd_inspect.cc only parses the command line.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "source/source.h"

namespace msd {

struct InspectOptions {
  std::string source;           // "FORMAT:PATH_OR_GLOB", e.g. "jsonl:data/web-*.jsonl"
  uint64_t sample = 0;          // file-order index of the sample to show
  std::string vocab;            // tiktoken vocabulary; empty: no tokenization of text
  std::string pattern = "cl100k";   // pre-tokenization pattern (TokenizerOptions)
  uint32_t max_side = 224;      // image resize bound, pixels
  uint32_t patch = 16;          // image patch side, pixels
  std::string text_field = "text";        // jsonl field, parquet column
  std::string caption_field = "caption";  // wds .json captions; parquet image-text: the caption column
  std::string image_field;                // parquet: the image column; set: image-text
  std::string cache_dir;        // index caches (SourceOptions); empty: beside the data
  size_t max_text_chars = 300;  // longer text is cut (at a UTF-8 boundary) with "..."
};

// Splits "FORMAT:PATH" into a SourceConfig named "inspect". Throws ConfigError
// naming --source when there is no ':' or either side is empty.
SourceConfig parse_source_spec(const std::string& spec, const InspectOptions& options);

struct LengthStats {
  uint64_t count = 0;  // samples the statistics cover
  uint64_t min = 0, max = 0;
  double mean = 0.0;
  uint64_t p50 = 0, p90 = 0, p99 = 0;  // nearest-rank percentiles
};

// Statistics of length_hint() over all samples, or over `max_samples` evenly
// spaced ones when the source is larger (so huge sources stay quick).
LengthStats length_stats(const Source& source, uint64_t max_samples = 1000000);

// The unit of length_hint() for a kind of source: "tokens" or "bytes".
const char* length_unit(SampleKind kind);

// Prints the summary and sample `options.sample` to `out`. A bad sample is
// printed as "bad sample: <kind>: <reason>" (reporting it is the job, not an
// error). Throws ConfigError / IoError when the source cannot be opened, and
// ConfigError when the sample index is out of range.
void run_inspect(const InspectOptions& options, std::ostream& out);

}  // namespace msd
