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
#include <ostream>
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

void bench_msd_tokenizer(const TransformsBenchOptions& options, const TextInput& text, TokenizerResult& result,
                         EncodedText& encoded) {
  TokenizerOptions tokenizer_options;
  tokenizer_options.pattern = options.pattern;
  Tokenizer tokenizer(options.vocab, tokenizer_options);
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
  result.msd_mb_per_s = static_cast<double>(text.bytes) / median(passes) / 1e6;

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

// Runs bench_encode.mjs on the same documents. Every way it can fail leaves the
// reference unavailable with a note, never an exception.
void bench_reference_tokenizer(const TransformsBenchOptions& options, const TextInput& text,
                               const EncodedText& encoded, TokenizerResult& result) {
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
      str(shell_quote(options.node), " ", shell_quote(script), " --vocab ", shell_quote(options.vocab), " --pattern ",
          shell_quote(options.pattern), " --input ", shell_quote(input), " --seconds ", options.seconds,
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
                      " (tools/reference/install.sh installs the tiktoken package)");
    return;
  }
  JsonValue report;
  const JsonStatus parsed = parse_json(output, report);
  const JsonValue* seconds = parsed.ok ? report.find("seconds") : nullptr;
  const JsonValue* bytes = parsed.ok ? report.find("bytes") : nullptr;
  const JsonValue* passes = parsed.ok ? report.find("passes") : nullptr;
  const JsonValue* tokens = parsed.ok ? report.find("tokens") : nullptr;
  const JsonValue* digests = parsed.ok ? report.find("digests") : nullptr;
  if (seconds == nullptr || bytes == nullptr || passes == nullptr || tokens == nullptr || digests == nullptr ||
      seconds->number <= 0) {
    result.reference_note = str("unreadable report from ", script);
    return;
  }
  if (static_cast<uint64_t>(bytes->number) != text.bytes) {
    result.reference_note = str("the reference read ", static_cast<uint64_t>(bytes->number), " bytes, msd ", text.bytes);
    return;
  }
  result.reference_mb_per_s = bytes->number / seconds->number / 1e6;
  result.reference_passes = static_cast<uint32_t>(passes->number);
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

}  // namespace

TransformsReport run_transforms_bench(const TransformsBenchOptions& options_in) {
  TransformsBenchOptions options = options_in;
  if (options.vocab.empty()) options.vocab = join_path(options.data_dir, "vocab.tiktoken");
  if (options.reference_dir.empty()) options.reference_dir = MSD_REFERENCE_DIR_DEFAULT;
  if (!(options.seconds >= 0)) throw ConfigError("--seconds must be 0 or more");
  if (options.min_passes == 0) throw ConfigError("--min-passes must be at least 1");
  if (options.threads == 0) throw ConfigError("--threads must be at least 1");
  if (!file_exists(options.vocab)) throw ConfigError(str("no vocabulary at ", options.vocab, " (see --vocab, --data)"));

  TransformsReport report;
  const TextInput text = read_text(options, report.text_source);
  TokenizerResult& tokenizer = report.tokenizer;
  tokenizer.documents = text.documents.size();
  tokenizer.bytes = text.bytes;
  tokenizer.skipped_documents = text.skipped;
  log_info("tokenizer: ", text.documents.size(), " documents, ", text.bytes, " bytes");
  EncodedText encoded;
  bench_msd_tokenizer(options, text, tokenizer, encoded);
  bench_reference_tokenizer(options, text, encoded, tokenizer);

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
  out << "  msd tokenizer     " << std::setw(8) << t.msd_mb_per_s << " MB/s  (one thread, median of " << t.msd_passes
      << " passes)\n";
  out << "  msd encode_batch  " << std::setw(8) << t.msd_batch_mb_per_s << " MB/s  (" << t.threads << " thread"
      << (t.threads == 1 ? "" : "s") << ", " << t.msd_batch_mb_per_s / t.threads << " MB/s per thread, "
      << std::setprecision(2) << ratio(t.msd_batch_mb_per_s, t.msd_mb_per_s) << std::setprecision(1)
      << "x one thread, " << kBatchDocuments << " documents per call, median of " << t.msd_batch_passes
      << " passes)\n";
  if (t.batch_mismatched_documents > 0) {
    out << "  encode_batch ids differ from encode()'s in " << t.batch_mismatched_documents << " documents\n";
  }
  if (t.reference_mb_per_s) {
    out << "  tiktoken (node)   " << std::setw(8) << *t.reference_mb_per_s << " MB/s  (median of "
        << t.reference_passes << " passes)\n";
    out << std::setprecision(2) << "  ratio             " << std::setw(8) << t.msd_mb_per_s / *t.reference_mb_per_s
        << "x\n";
    out << "  mismatched        " << std::setw(8) << *t.mismatched_lines << " of " << t.documents << " documents";
    if (!t.first_mismatch.empty()) out << " (first: " << t.first_mismatch << ")";
    out << '\n';
  } else {
    out << "  tiktoken (node)   unavailable: " << t.reference_note << '\n';
  }
  out << std::defaultfloat;
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
      .value("reference_mb_per_s", t.reference_mb_per_s.value_or(nothing))
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
  if (report.jpeg) write_jpeg_json(json, "jpeg", *report.jpeg);
  if (report.jpeg_large) write_jpeg_json(json, "jpeg_large", *report.jpeg_large);
  json.end_object();
  return json.str();
}

}  // namespace msd::bench
