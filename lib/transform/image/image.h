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
  uint32_t max_side = 224;  // longest side after resizing
  uint32_t patch = 16;      // patch side
};

struct PatchedImage {
  uint32_t width = 0, height = 0;  // after resizing; multiples of patch
  uint32_t source_width = 0, source_height = 0;
  uint32_t patches = 0;            // (width/patch) * (height/patch)
  // patches x (patch*patch*3) bytes: patch (row-major over the patch grid),
  // then its pixels row-major, RGB interleaved.
  std::vector<uint8_t> pixels;
};

// Largest patch count an image can have under `options`.
uint32_t max_patches(const ImageOptions& options);

// Owns a TurboJPEG handle (re-created after every failed decode: libjpeg-turbo
// 2.1 keeps reporting a stale error otherwise). Not thread-safe; one per thread.
class ImageTransform {
 public:
  explicit ImageTransform(const ImageOptions& options);
  ~ImageTransform();
  ImageTransform(ImageTransform&&) noexcept;
  ImageTransform& operator=(ImageTransform&&) noexcept;

  // Decodes, resizes so the longest side is at most max_side (never upscaled
  // beyond it; sides rounded to multiples of patch, at least one patch), and
  // cuts into patches. Returns false and sets `error` for data libjpeg-turbo
  // cannot decode.
  bool apply(std::string_view jpeg, PatchedImage& out, std::string& error);

  // Header only: the stored size. Returns false for data that is not a JPEG.
  bool probe(std::string_view jpeg, uint32_t& width, uint32_t& height, std::string& error);

  uint64_t state_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace msd
