// JPEG -> RGB -> resized -> patches. Decoding uses libjpeg-turbo's DCT scaling
// when the target is much smaller than the source, so large photos are never
// decoded at full size only to be thrown away.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace msd {

struct ImageOptions {
  uint32_t max_side = 224;  // longest side after resizing, pixels; >= 1
  uint32_t patch = 16;      // patch side, pixels; >= 1
};

struct ImageSize {
  uint32_t width = 0, height = 0;
};

struct PatchedImage {
  uint32_t width = 0, height = 0;  // after resizing; multiples of patch
  uint32_t source_width = 0, source_height = 0;
  uint32_t patches = 0;            // (width/patch) * (height/patch)
  // The DCT scaling factor the decoder ran at (1/1 when none helped) and the
  // size it produced, before the resize to width x height.
  uint32_t decode_scale_num = 1, decode_scale_denom = 1;
  uint32_t decoded_width = 0, decoded_height = 0;
  // patches x (patch*patch*3) bytes: patch (row-major over the patch grid),
  // then its pixels row-major, RGB interleaved.
  std::vector<uint8_t> pixels;
};

// Where ImageTransform::apply spends its wall time, summed over the calls it
// is passed to (the benchmark's split). Measuring reads the clock a few times
// per output row; apply without one reads no clock at all.
struct ImageTiming {
  double decode_seconds = 0;    // header, DCT-scaled decode, CMYK conversion
  double resize_seconds = 0;    // both filter passes
  double patchify_seconds = 0;  // writing finished rows in patch-major order
  uint64_t images = 0;          // successful apply calls measured
};

// Largest patch count an image can have under `options`.
uint32_t max_patches(const ImageOptions& options);

// The size an image of `width` x `height` (both >= 1) is resized to: the
// longest side is min(max_side, longest source side) rounded to the nearest
// multiple of patch, kept within [patch, max_side rounded down to a multiple
// of patch] (at least one patch); the other side follows the aspect ratio,
// rounded to the nearest multiple of patch, at least one patch. Lets a caller
// know an image's patch count from its header alone (ImageTransform::probe).
ImageSize resized_size(const ImageOptions& options, uint32_t width, uint32_t height);

// Separable resize of packed RGB with an antialiased bilinear (triangle)
// filter whose support widens with the downscale factor (as Pillow's BILINEAR),
// so downscaling averages every source pixel it covers. Weights are fixed
// point and sum exactly to one: a flat region keeps its exact value. The weight
// tables of the last size pair and the scratch rows are kept between calls.
// Not thread-safe.
class ImageResizer {
 public:
  ImageResizer();
  ~ImageResizer();
  ImageResizer(ImageResizer&&) noexcept;
  ImageResizer& operator=(ImageResizer&&) noexcept;

  // Resizes `src` (src_width x src_height RGB, rows src_stride_bytes apart)
  // into `dst`, out_width x out_height. patch == 0: `dst` is row-major RGB.
  // patch > 0: `dst` is patch-major as PatchedImage::pixels; REQUIRES the out
  // sizes be multiples of patch. REQUIRES every size >= 1; `dst` holds
  // out_width*out_height*3 bytes. With `timing`, adds the filtering time to
  // its resize_seconds and the row scatter to its patchify_seconds.
  void resize(const uint8_t* src, uint32_t src_width, uint32_t src_height, size_t src_stride_bytes,
              uint8_t* dst, uint32_t out_width, uint32_t out_height, uint32_t patch,
              ImageTiming* timing = nullptr);

  uint64_t state_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Owns a TurboJPEG handle (created by the first probe or apply, so a loader
// without images never holds one; re-created after every failed decode:
// libjpeg-turbo 2.1 keeps reporting a stale error otherwise) and the decode and resize
// buffers, reused across calls. Not thread-safe; one per thread.
//
// Grayscale JPEGs decode to RGB (gray replicated). CMYK/YCCK JPEGs decode to
// CMYK and are converted with R = C*K/255 (likewise G, B) on the stored,
// Adobe-inverted values, libjpeg-turbo's own convention: no color management.
//
// A decode that finishes with only a libjpeg warning (a truncated file, a
// damaged entropy segment: the image would display, with gray or smeared
// rows) is a failure too, so that such files are counted as corrupt instead of
// feeding a half-gray image to training.
class ImageTransform {
 public:
  // Throws ConfigError when patch or max_side is 0.
  explicit ImageTransform(const ImageOptions& options);
  ~ImageTransform();
  ImageTransform(ImageTransform&&) noexcept;
  ImageTransform& operator=(ImageTransform&&) noexcept;

  // Decodes, resizes to resized_size(options, source size) (never upscaled
  // beyond max_side; sides multiples of patch, at least one patch), and cuts
  // into patches. The decode runs at the smallest DCT scaling factor 1/N
  // (N = 1, 2, 4, 8: the factors libjpeg-turbo decodes fastest) whose output
  // still covers the target size in both sides (or the source size, where that
  // is smaller), so the resize only ever shrinks what the source allows. Returns false and sets `error` (the decoder's message) for
  // data libjpeg-turbo cannot decode, or decodes only with a warning; `out`
  // is then unspecified. Throws Error only when a TurboJPEG handle cannot be
  // created (out of memory). With `timing`, adds where the time went.
  bool apply(std::string_view jpeg, PatchedImage& out, std::string& error, ImageTiming* timing = nullptr);

  // Header only: the stored size. Returns false for data that is not a JPEG.
  bool probe(std::string_view jpeg, uint32_t& width, uint32_t& height, std::string& error);

  // Bytes held: the decoder's handle (an estimate: libjpeg-turbo's state is
  // opaque; counted before its first use creates it, as the cost of a source
  // of images) and the reused decode and resize buffers.
  uint64_t state_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace msd
