// Synthetic pictures for the image-text source: a gradient background, a few
// shapes and a little noise, so that they compress like photographs rather
// than like flat colour, encoded as JPEG with libjpeg-turbo.
#pragma once

#include <cstdint>
#include <vector>

#include "datagen/random.h"

namespace msd::datagen {

struct PictureSpec {
  uint32_t width_px = 0;
  uint32_t height_px = 0;
  bool grayscale = false;
  bool chroma_444 = false;  // full-resolution chroma; else 4:2:0
  int quality = 85;
};

// Draws the size and colour model of one picture: sides 48..1600 px (most a
// few hundred), several aspect ratios, some grayscale.
PictureSpec draw_picture_spec(Rng& rng);

// A TurboJPEG compressor. Move-only; not thread-safe (one per thread).
class JpegEncoder {
 public:
  JpegEncoder();  // throws Error when libjpeg-turbo cannot initialize
  ~JpegEncoder();
  JpegEncoder(JpegEncoder&& other) noexcept;
  JpegEncoder& operator=(JpegEncoder&& other) noexcept;
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Renders a picture of `spec` from `rng` and returns its JPEG bytes.
  std::vector<unsigned char> picture(Rng& rng, const PictureSpec& spec);

 private:
  void* handle_ = nullptr;             // tjhandle
  std::vector<unsigned char> pixels_;  // reused between pictures
};

}  // namespace msd::datagen
