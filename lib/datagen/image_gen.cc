#include "datagen/image_gen.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.h"

namespace msd::datagen {
namespace {

struct Color {
  int channel[3];
};

Color random_color(Rng& rng) {
  return {{static_cast<int>(rng.below(256)), static_cast<int>(rng.below(256)), static_cast<int>(rng.below(256))}};
}

uint8_t clamp_byte(int value) { return static_cast<uint8_t>(std::clamp(value, 0, 255)); }

// Blends `color` at opacity `alpha` (0..256) over the pixels of one row segment.
void blend_span(uint8_t* row, int channels, int x_begin, int x_end, const Color& color, int alpha) {
  for (int x = x_begin; x < x_end; ++x) {
    uint8_t* pixel = row + static_cast<ptrdiff_t>(x) * channels;
    for (int c = 0; c < channels; ++c) pixel[c] = static_cast<uint8_t>((pixel[c] * (256 - alpha) + color.channel[c] * alpha) >> 8);
  }
}

void draw_gradient(Rng& rng, uint8_t* pixels, int width, int height, int channels) {
  const Color from = random_color(rng);
  const Color to = random_color(rng);
  const double angle = rng.unit() * 6.283185307179586;
  // t runs 0..65536 across the picture along the gradient's direction, in 16.16 fixed point.
  const double span = std::abs(std::cos(angle)) * width + std::abs(std::sin(angle)) * height + 1.0;
  const auto step_x = static_cast<int64_t>(std::cos(angle) / span * 65536.0);
  const auto step_y = static_cast<int64_t>(std::sin(angle) / span * 65536.0);
  const int64_t origin = 32768 - step_x * width / 2 - step_y * height / 2;
  for (int y = 0; y < height; ++y) {
    uint8_t* row = pixels + static_cast<ptrdiff_t>(y) * width * channels;
    int64_t t = origin + step_y * y;
    for (int x = 0; x < width; ++x, t += step_x) {
      const int64_t weight = std::clamp<int64_t>(t, 0, 65536);
      for (int c = 0; c < channels; ++c) {
        row[x * channels + c] =
            static_cast<uint8_t>(from.channel[c] + ((to.channel[c] - from.channel[c]) * weight >> 16));
      }
    }
  }
}

void draw_shapes(Rng& rng, uint8_t* pixels, int width, int height, int channels) {
  const int64_t shapes = rng.between(2, 9);
  for (int64_t s = 0; s < shapes; ++s) {
    const Color color = random_color(rng);
    const int alpha = rng.chance(0.5) ? 256 : static_cast<int>(rng.between(64, 224));
    const int center_x = static_cast<int>(rng.below(static_cast<uint64_t>(width)));
    const int center_y = static_cast<int>(rng.below(static_cast<uint64_t>(height)));
    const int radius_x = static_cast<int>(rng.between(width / 20 + 1, width / 3 + 2));
    const int radius_y = static_cast<int>(rng.between(height / 20 + 1, height / 3 + 2));
    const int y_begin = std::max(0, center_y - radius_y);
    const int y_end = std::min(height, center_y + radius_y);
    switch (rng.below(3)) {
      case 0:  // rectangle
        for (int y = y_begin; y < y_end; ++y) {
          blend_span(pixels + static_cast<ptrdiff_t>(y) * width * channels, channels, std::max(0, center_x - radius_x),
                     std::min(width, center_x + radius_x), color, alpha);
        }
        break;
      case 1:  // ellipse
        for (int y = y_begin; y < y_end; ++y) {
          const double dy = static_cast<double>(y - center_y) / radius_y;
          const int half = static_cast<int>(radius_x * std::sqrt(std::max(0.0, 1.0 - dy * dy)));
          blend_span(pixels + static_cast<ptrdiff_t>(y) * width * channels, channels, std::max(0, center_x - half),
                     std::min(width, center_x + half), color, alpha);
        }
        break;
      default: {  // horizontal stripes across the whole width
        const int period = static_cast<int>(rng.between(4, 40));
        for (int y = y_begin; y < y_end; ++y) {
          if ((y / period) % 2 == 0) {
            blend_span(pixels + static_cast<ptrdiff_t>(y) * width * channels, channels, 0, width, color, alpha / 2);
          }
        }
        break;
      }
    }
  }
}

// Sensor-like noise: what makes a JPEG cost bits the way a photograph does.
void add_noise(Rng& rng, uint8_t* pixels, size_t bytes) {
  const int amplitude = static_cast<int>(rng.between(1, 6));
  const int mask = (1 << amplitude) - 1;
  // xorshift32: a per-picture stream is cheap enough for every byte.
  auto state = static_cast<uint32_t>(rng.next() | 1);
  for (size_t i = 0; i < bytes; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    pixels[i] = clamp_byte(pixels[i] + static_cast<int>(state & static_cast<uint32_t>(mask)) - mask / 2);
  }
}

}  // namespace

PictureSpec draw_picture_spec(Rng& rng) {
  constexpr std::pair<int, int> aspects[] = {{1, 1}, {4, 3}, {3, 4}, {3, 2}, {2, 3}, {16, 9}, {9, 16}, {21, 9}};
  PictureSpec spec;
  const double long_side = rng.chance(0.03) ? static_cast<double>(rng.between(1000, 1600)) : rng.lognormal(300.0, 0.55);
  const auto& [wide, high] = aspects[rng.below(std::size(aspects))];
  const double ratio = static_cast<double>(std::max(wide, high)) / std::min(wide, high);
  const auto long_px = static_cast<uint32_t>(std::clamp(long_side, 48.0, 1600.0));
  const auto short_px = static_cast<uint32_t>(std::max(48.0, long_px / ratio));
  spec.width_px = wide >= high ? long_px : short_px;
  spec.height_px = wide >= high ? short_px : long_px;
  spec.grayscale = rng.chance(0.12);
  spec.chroma_444 = rng.chance(0.2);
  spec.quality = static_cast<int>(rng.between(80, 90));
  return spec;
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
  if (handle_ == nullptr) throw Error(str("cannot initialize the JPEG compressor: ", tjGetErrorStr2(nullptr)));
}

JpegEncoder::~JpegEncoder() {
  if (handle_ != nullptr) tjDestroy(handle_);
}

JpegEncoder::JpegEncoder(JpegEncoder&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), pixels_(std::move(other.pixels_)) {}

JpegEncoder& JpegEncoder::operator=(JpegEncoder&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    pixels_ = std::move(other.pixels_);
  }
  return *this;
}

std::vector<unsigned char> JpegEncoder::picture(Rng& rng, const PictureSpec& spec) {
  const int width = checked_cast<int>(spec.width_px);
  const int height = checked_cast<int>(spec.height_px);
  const int channels = spec.grayscale ? 1 : 3;
  pixels_.resize(static_cast<size_t>(width) * height * channels);
  draw_gradient(rng, pixels_.data(), width, height, channels);
  draw_shapes(rng, pixels_.data(), width, height, channels);
  add_noise(rng, pixels_.data(), pixels_.size());

  unsigned char* jpeg = nullptr;
  unsigned long jpeg_bytes = 0;
  const int subsampling = spec.grayscale ? TJSAMP_GRAY : spec.chroma_444 ? TJSAMP_444 : TJSAMP_420;
  if (tjCompress2(handle_, pixels_.data(), width, 0, height, spec.grayscale ? TJPF_GRAY : TJPF_RGB, &jpeg, &jpeg_bytes,
                  subsampling, spec.quality, 0) != 0) {
    std::string reason = tjGetErrorStr2(handle_);
    tjFree(jpeg);
    throw Error(str("JPEG compression of a ", width, "x", height, " picture failed: ", reason));
  }
  std::vector<unsigned char> out(jpeg, jpeg + jpeg_bytes);
  tjFree(jpeg);
  return out;
}

}  // namespace msd::datagen
