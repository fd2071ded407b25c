#include "bench/transforms_jpeg.h"

#include <turbojpeg.h>

#include <iomanip>
#include <ostream>
#include <utility>
#include <vector>

#include "bench/pass_timing.h"
#include "common/error.h"
#include "common/files.h"
#include "common/log.h"
#include "datagen/image_gen.h"
#include "datagen/random.h"
#include "source/source.h"
#include "transform/image/image.h"
#include "transform/tokenizer/tokenizer.h"
#include "transform/transform.h"

namespace msd::bench {
namespace {



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
  config.format = SourceFormat::wds;
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

}  // namespace

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
void bench_images(const TransformsBenchOptions& options, TransformsReport& report) {
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
}

}  // namespace msd::bench
