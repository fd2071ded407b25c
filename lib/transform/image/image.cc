#include "transform/image/image.h"

#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/error.h"

namespace msd {
namespace {

// Fixed-point resize weights: 14 fractional bits keep the worst-case sum
// (255 * 2^14 per tap, a few taps) far inside int32 and each weight in int16.
constexpr int kWeightBits = 14;
constexpr int32_t kWeightOne = 1 << kWeightBits;
constexpr int32_t kWeightHalf = 1 << (kWeightBits - 1);

// libjpeg-turbo's decompressor state is opaque: the TurboJPEG instance, the
// libjpeg decompress struct and its permanent pool (tables, marker reader)
// come to a few tens of KiB.
constexpr uint64_t kDecoderHandleBytes = 32 << 10;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename T>
void grow(std::vector<T>& buffer, size_t elements) {
  if (buffer.size() < elements) buffer.resize(elements);
}

template <typename T>
uint64_t capacity_bytes(const std::vector<T>& buffer) {
  return static_cast<uint64_t>(buffer.capacity()) * sizeof(T);
}

// Two taps' weights packed as pmaddwd wants them: w0 in the low half.
inline int32_t weight_pair(int16_t w0, int16_t w1) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(w0)) |
                              static_cast<uint32_t>(static_cast<uint16_t>(w1)) << 16);
}

// The source taps of every output index along one axis.
struct AxisWeights {
  uint32_t in = 0, out = 0;
  uint32_t stride = 0;           // weights per output index in `weights`
  std::vector<uint32_t> first;   // first source index per output index
  std::vector<uint32_t> count;   // taps per output index
  std::vector<int16_t> weights;  // out x stride, each row summing to kWeightOne
  uint32_t pair_stride = 0;      // pairs per output index: taps / 2, rounded up to even
  std::vector<int32_t> pairs;    // the weights two by two (weight_pair), out x pair_stride

  // Pillow's antialiased triangle filter: the support widens with the
  // downscale factor so every source sample contributes.
  void build(uint32_t in_size, uint32_t out_size) {
    if (in == in_size && out == out_size) return;
    const double scale = static_cast<double>(in_size) / out_size;
    const double filter_scale = std::max(scale, 1.0);
    const double support = filter_scale;  // the triangle's radius is 1
    stride = static_cast<uint32_t>(std::ceil(2 * support)) + 2;
    first.assign(out_size, 0);
    count.assign(out_size, 0);
    weights.assign(static_cast<size_t>(out_size) * stride, 0);
    pair_stride = (stride + 3) / 4 * 2;  // whole groups of four taps, for the horizontal pass
    pairs.assign(static_cast<size_t>(out_size) * pair_stride, 0);
    std::vector<double> exact(stride);
    for (uint32_t o = 0; o < out_size; ++o) {
      const double center = (o + 0.5) * scale;
      int64_t lo = static_cast<int64_t>(std::floor(center - support + 0.5));
      int64_t hi = static_cast<int64_t>(std::floor(center + support + 0.5));
      lo = std::max<int64_t>(lo, 0);
      hi = std::min<int64_t>(hi, in_size);
      // Trim the zero-weight ends so an unscaled axis is a single-tap copy.
      double total = 0;
      uint32_t n = 0;
      int64_t start = -1;
      for (int64_t i = lo; i < hi; ++i) {
        const double w = std::max(0.0, 1.0 - std::abs((i - center + 0.5) / filter_scale));
        if (w <= 0 && n == 0) continue;
        if (start < 0) start = i;
        MSD_CHECK_LT(n, stride);
        exact[n++] = w;
        total += w;
      }
      while (n > 1 && exact[n - 1] <= 0) --n;
      if (start < 0) {  // cannot happen for in, out >= 1; nearest sample as a guard
        start = std::min<int64_t>(static_cast<int64_t>(center), in_size - 1);
        exact[0] = total = 1;
        n = 1;
      }
      int16_t* row = &weights[static_cast<size_t>(o) * stride];
      int32_t sum = 0;
      uint32_t largest = 0;
      for (uint32_t k = 0; k < n; ++k) {
        row[k] = static_cast<int16_t>(std::lround(exact[k] / total * kWeightOne));
        sum += row[k];
        if (row[k] > row[largest]) largest = k;
      }
      // Exact unit sum: a flat region must come out at its exact value.
      row[largest] = static_cast<int16_t>(row[largest] + (kWeightOne - sum));
      first[o] = static_cast<uint32_t>(start);
      count[o] = n;
      for (uint32_t k = 0; k < n; k += 2) {
        pairs[static_cast<size_t>(o) * pair_stride + k / 2] = weight_pair(row[k], k + 1 < n ? row[k + 1] : int16_t{0});
      }
    }
    in = in_size;
    out = out_size;
  }

  uint64_t bytes() const {
    return capacity_bytes(first) + capacity_bytes(count) + capacity_bytes(weights) + capacity_bytes(pairs);
  }
};

// Writes output row `y` (width RGB pixels) to `dst`, row-major or patch-major.
inline void emit_row(const uint8_t* row, uint32_t y, uint8_t* dst, uint32_t width, uint32_t patch) {
  const size_t row_bytes = static_cast<size_t>(width) * 3;
  if (patch == 0) {
    std::memcpy(dst + y * row_bytes, row, row_bytes);
    return;
  }
  const uint32_t grid_width = width / patch;
  const size_t patch_row_bytes = static_cast<size_t>(patch) * 3;
  const size_t patch_bytes = patch_row_bytes * patch;
  uint8_t* out = dst + static_cast<size_t>(y / patch) * grid_width * patch_bytes + (y % patch) * patch_row_bytes;
  for (uint32_t px = 0; px < grid_width; ++px) {
    std::memcpy(out + px * patch_bytes, row + px * patch_row_bytes, patch_row_bytes);
  }
}

}  // namespace

uint32_t max_patches(const ImageOptions& options) {
  MSD_CHECK(options.patch > 0);
  const uint64_t grid = std::max<uint32_t>(1, options.max_side / options.patch);
  return checked_cast<uint32_t>(grid * grid);
}

ImageSize resized_size(const ImageOptions& options, uint32_t width, uint32_t height) {
  MSD_CHECK(options.patch > 0);
  MSD_CHECK(width > 0 && height > 0);
  const uint64_t patch = options.patch;
  const uint64_t longest = std::max(width, height);
  const uint64_t shortest = std::min(width, height);
  const uint64_t max_grid = std::max<uint64_t>(1, options.max_side / patch);
  const uint64_t target = std::min<uint64_t>(options.max_side, longest);
  const uint64_t long_grid = std::clamp<uint64_t>((2 * target + patch) / (2 * patch), 1, max_grid);
  // round(shortest * long_grid * patch / longest / patch)
  const uint64_t short_grid = std::clamp<uint64_t>((2 * shortest * long_grid + longest) / (2 * longest), 1, long_grid);
  const auto long_side = static_cast<uint32_t>(long_grid * patch);
  const auto short_side = static_cast<uint32_t>(short_grid * patch);
  return width >= height ? ImageSize{long_side, short_side} : ImageSize{short_side, long_side};
}

// ---------------------------------------------------------------- resizer ----

namespace {

// Both passes sum 16-bit products in pairs (pmaddwd: a*w0 + b*w1 into 32
// bits), two taps per instruction on baseline x86-64 (SSE2); the vertical pass
// has an AVX2 twin picked at run time. The integer sums are exactly those of
// the scalar loops used elsewhere, so every platform gives the same bytes.
#if defined(__x86_64__) && defined(__GNUC__)
#define MSD_RESIZE_SSE2 1
#endif

#if MSD_RESIZE_SSE2

// The vertical filter over whole vectors of bytes, for one vector type; a
// macro because GCC inlines intrinsics only into functions of their target.
// Per pair of rows a and b: bytes interleaved a0 b0 a1 b1 ..., widened to
// 16 bits, multiplied by (w0, w1) and summed in pairs into 32-bit lanes; the
// unpacks and the final packs both work within 128-bit lanes, so the packs
// put every byte back in its place. Returns the bytes done.
#define MSD_FILTER_VERTICAL_BLOCKS(V, BYTES, P)                                                          \
  const V zero = P##setzero_si##BYTES();                                                               \
  const V half = P##set1_epi32(kWeightHalf);                                                            \
  size_t i = 0;                                                                                         \
  for (; i + sizeof(V) <= bytes; i += sizeof(V)) {                                                      \
    V s0 = half, s1 = half, s2 = half, s3 = half;                                                       \
    const uint8_t* in = first + i;                                                                      \
    for (uint32_t k = 0; k < taps; k += 2, in += 2 * stride) {                                          \
      const V a = P##loadu_si##BYTES(reinterpret_cast<const V*>(in));                                   \
      /* An odd last tap pairs with zeros: its partner weight is 0. */                                  \
      const V b = k + 1 < taps ? P##loadu_si##BYTES(reinterpret_cast<const V*>(in + stride)) : zero;   \
      const V pair = P##set1_epi32(pairs[k / 2]);                                                       \
      const V lo = P##unpacklo_epi8(a, b), hi = P##unpackhi_epi8(a, b);                                 \
      s0 = P##add_epi32(s0, P##madd_epi16(P##unpacklo_epi8(lo, zero), pair));                           \
      s1 = P##add_epi32(s1, P##madd_epi16(P##unpackhi_epi8(lo, zero), pair));                           \
      s2 = P##add_epi32(s2, P##madd_epi16(P##unpacklo_epi8(hi, zero), pair));                           \
      s3 = P##add_epi32(s3, P##madd_epi16(P##unpackhi_epi8(hi, zero), pair));                           \
    }                                                                                                   \
    const V low = P##packs_epi32(P##srai_epi32(s0, kWeightBits), P##srai_epi32(s1, kWeightBits));      \
    const V high = P##packs_epi32(P##srai_epi32(s2, kWeightBits), P##srai_epi32(s3, kWeightBits));     \
    P##storeu_si##BYTES(reinterpret_cast<V*>(out + i), P##packus_epi16(low, high));                     \
  }                                                                                                     \
  return i;

size_t filter_vertical_sse2(const uint8_t* first, size_t stride, const int32_t* pairs, uint32_t taps, size_t bytes,
                            uint8_t* out) {
  MSD_FILTER_VERTICAL_BLOCKS(__m128i, 128, _mm_)
}

__attribute__((target("avx2"))) size_t filter_vertical_avx2(const uint8_t* first, size_t stride,
                                                             const int32_t* pairs, uint32_t taps, size_t bytes,
                                                             uint8_t* out) {
  MSD_FILTER_VERTICAL_BLOCKS(__m256i, 256, _mm256_)
}

#undef MSD_FILTER_VERTICAL_BLOCKS

const bool have_avx2 = __builtin_cpu_supports("avx2");

#endif  // MSD_RESIZE_SSE2

// One vertically filtered row: out[i] = sum_k w[k] * rows[k][i], rows
// `stride` bytes apart; `pairs` holds the weights two by two (weight_pair).
void filter_vertical(const uint8_t* first, size_t stride, const int16_t* weights, const int32_t* pairs, uint32_t taps,
                     size_t bytes, uint8_t* out) {
  size_t i = 0;
#if MSD_RESIZE_SSE2
  if (have_avx2) i = filter_vertical_avx2(first, stride, pairs, taps, bytes, out);
  i += filter_vertical_sse2(first + i, stride, pairs, taps, bytes - i, out + i);
#endif
  for (; i < bytes; ++i) {
    int32_t sum = kWeightHalf;
    for (uint32_t k = 0; k < taps; ++k) sum += weights[k] * first[k * stride + i];
    // Non-negative weights summing to one keep every result in 0..255.
    out[i] = static_cast<uint8_t>(sum >> kWeightBits);
  }
}

// One horizontally filtered row. `in` is RGBX (4 bytes a pixel) with three
// spare pixels past the end, so that taps go four at a time (the weights past
// an output's count are 0). `out` gets RGB and one spare byte: each pixel is
// stored as 4 bytes, the next overwriting the fourth.
void filter_horizontal(const uint8_t* in, const AxisWeights& h, uint8_t* out) {
#if MSD_RESIZE_SSE2
  const __m128i zero = _mm_setzero_si128();
  for (uint32_t x = 0; x < h.out; ++x) {
    const int32_t* pairs = &h.pairs[static_cast<size_t>(x) * h.pair_stride];
    const uint8_t* p = in + static_cast<size_t>(h.first[x]) * 4;
    __m128i sum = _mm_set1_epi32(kWeightHalf);
    for (uint32_t k = 0, n = h.count[x]; k < n; k += 4, p += 16) {
      const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Pixels 0,1 and 2,3 as 16 bits, then each pair's channels side by side:
      // r0 r1 g0 g1 b0 b1 x0 x1, for pmaddwd against (w0, w1).
      const __m128i lo = _mm_unpacklo_epi8(four, zero), hi = _mm_unpackhi_epi8(four, zero);
      const __m128i first_two = _mm_unpacklo_epi16(lo, _mm_srli_si128(lo, 8));
      const __m128i last_two = _mm_unpacklo_epi16(hi, _mm_srli_si128(hi, 8));
      sum = _mm_add_epi32(sum, _mm_madd_epi16(first_two, _mm_set1_epi32(pairs[k / 2])));
      sum = _mm_add_epi32(sum, _mm_madd_epi16(last_two, _mm_set1_epi32(pairs[k / 2 + 1])));
    }
    const __m128i bytes = _mm_srai_epi32(sum, kWeightBits);
    const auto rgbx = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(bytes, zero), zero)));
    std::memcpy(out + 3 * static_cast<size_t>(x), &rgbx, 4);
  }
#else
  for (uint32_t x = 0; x < h.out; ++x) {
    const int16_t* w = &h.weights[static_cast<size_t>(x) * h.stride];
    const uint8_t* p = in + static_cast<size_t>(h.first[x]) * 4;
    int32_t r = kWeightHalf, g = kWeightHalf, b = kWeightHalf;
    for (uint32_t k = 0, n = h.count[x]; k < n; ++k, p += 4) {
      r += w[k] * p[0];
      g += w[k] * p[1];
      b += w[k] * p[2];
    }
    out[3 * x + 0] = static_cast<uint8_t>(r >> kWeightBits);
    out[3 * x + 1] = static_cast<uint8_t>(g >> kWeightBits);
    out[3 * x + 2] = static_cast<uint8_t>(b >> kWeightBits);
  }
#endif
}

// RGB to RGBX (X = 0) for the horizontal pass, plus the three spare zero pixels.
void widen_rgb(const uint8_t* rgb, uint32_t pixels, uint8_t* rgbx) {
  for (uint32_t i = 0; i < pixels; ++i, rgb += 3, rgbx += 4) {
    rgbx[0] = rgb[0];
    rgbx[1] = rgb[1];
    rgbx[2] = rgb[2];
    rgbx[3] = 0;
  }
  std::memset(rgbx, 0, 12);
}

}  // namespace

struct ImageResizer::Impl {
  AxisWeights horizontal, vertical;
  std::vector<uint8_t> column_row;  // one vertically filtered row, source width, RGB
  std::vector<uint8_t> wide_row;    // the row the horizontal pass reads: RGBX, source width + 3
  std::vector<uint8_t> out_row;     // one finished row, output width, RGB + 1 spare byte
};

ImageResizer::ImageResizer() : impl_(std::make_unique<Impl>()) {}
ImageResizer::~ImageResizer() = default;
ImageResizer::ImageResizer(ImageResizer&&) noexcept = default;
ImageResizer& ImageResizer::operator=(ImageResizer&&) noexcept = default;

void ImageResizer::resize(const uint8_t* src, uint32_t src_width, uint32_t src_height, size_t src_stride_bytes,
                          uint8_t* dst, uint32_t out_width, uint32_t out_height, uint32_t patch,
                          ImageTiming* timing) {
  MSD_CHECK(src_width > 0 && src_height > 0 && out_width > 0 && out_height > 0);
  MSD_CHECK_LE(static_cast<size_t>(src_width) * 3, src_stride_bytes);
  if (patch > 0) {
    MSD_CHECK_EQ(out_width % patch, 0u);
    MSD_CHECK_EQ(out_height % patch, 0u);
  }
  Impl& s = *impl_;
  const Clock::time_point start = timing != nullptr ? Clock::now() : Clock::time_point{};
  const bool scale_x = src_width != out_width;
  const bool scale_y = src_height != out_height;
  const size_t src_row_bytes = static_cast<size_t>(src_width) * 3;
  if (scale_x) {
    s.horizontal.build(src_width, out_width);
    grow(s.wide_row, (static_cast<size_t>(src_width) + 3) * 4);
    grow(s.out_row, static_cast<size_t>(out_width) * 3 + 1);
  }
  if (scale_y) {
    s.vertical.build(src_height, out_height);
    grow(s.column_row, src_row_bytes);
  }
  // Vertical pass first, one output row at a time: downscaling, it leaves the
  // horizontal pass (one pixel at a time) only the output rows, and no
  // intermediate image is kept. An axis that keeps its size is not filtered.
  double scatter_seconds = 0;
  for (uint32_t y = 0; y < out_height; ++y) {
    const uint8_t* line = src + static_cast<size_t>(y) * src_stride_bytes;
    if (scale_y) {
      const AxisWeights& v = s.vertical;
      const uint8_t* first = src + static_cast<size_t>(v.first[y]) * src_stride_bytes;
      if (v.count[y] == 1) {  // a single tap has weight one: the row itself
        line = first;
      } else {
        filter_vertical(first, src_stride_bytes, &v.weights[static_cast<size_t>(y) * v.stride],
                        &v.pairs[static_cast<size_t>(y) * v.pair_stride], v.count[y], src_row_bytes,
                        s.column_row.data());
        line = s.column_row.data();
      }
    }
    if (scale_x) {
      widen_rgb(line, src_width, s.wide_row.data());
      filter_horizontal(s.wide_row.data(), s.horizontal, s.out_row.data());
      line = s.out_row.data();
    }
    if (timing != nullptr) {
      const Clock::time_point scatter_start = Clock::now();
      emit_row(line, y, dst, out_width, patch);
      scatter_seconds += seconds_since(scatter_start);
    } else {
      emit_row(line, y, dst, out_width, patch);
    }
  }
  if (timing != nullptr) {
    timing->resize_seconds += seconds_since(start) - scatter_seconds;
    timing->patchify_seconds += scatter_seconds;
  }
}

uint64_t ImageResizer::state_bytes() const {
  const Impl& s = *impl_;
  return sizeof(Impl) + s.horizontal.bytes() + s.vertical.bytes() + capacity_bytes(s.column_row) +
         capacity_bytes(s.out_row);
}

// --------------------------------------------------------------- transform ---

namespace {

// Created on first use: a loader whose sources hold no image never pays for
// a decompressor (nor the library pages its creation touches).
struct DecoderHandle {
  tjhandle handle = nullptr;

  DecoderHandle() = default;
  ~DecoderHandle() {
    if (handle != nullptr) tjDestroy(handle);
  }
  DecoderHandle(const DecoderHandle&) = delete;
  DecoderHandle& operator=(const DecoderHandle&) = delete;

  // A fresh handle: after a failed call libjpeg-turbo 2.1 keeps the old error
  // state, and the next good image would be reported as failing too.
  void reset() {
    if (handle != nullptr) tjDestroy(handle);
    handle = tjInitDecompress();
    if (handle == nullptr) throw Error(str("cannot create a TurboJPEG decompressor: ", tjGetErrorStr2(nullptr)));
  }
  tjhandle get() {
    if (handle == nullptr) reset();
    return handle;
  }
};

// CMYK as libjpeg stores it (Adobe-inverted: 255 is no ink) to RGB, in place:
// the 3-byte writes never overtake the 4-byte reads.
void cmyk_to_rgb(uint8_t* pixels, size_t count) {
  const uint8_t* in = pixels;
  uint8_t* out = pixels;
  for (size_t i = 0; i < count; ++i, in += 4, out += 3) {
    const uint32_t k = in[3];
    const uint32_t r = (in[0] * k + 127) / 255, g = (in[1] * k + 127) / 255, b = (in[2] * k + 127) / 255;
    out[0] = static_cast<uint8_t>(r);
    out[1] = static_cast<uint8_t>(g);
    out[2] = static_cast<uint8_t>(b);
  }
}

}  // namespace

struct ImageTransform::Impl {
  ImageOptions options;
  DecoderHandle decoder;
  const tjscalingfactor* factors = nullptr;
  int factor_count = 0;
  std::vector<uint8_t> decoded;
  ImageResizer resizer;

  // Describes the last failure of `decoder` and replaces it with a fresh one.
  std::string fail(const char* what) {
    const bool warning = tjGetErrorCode(decoder.handle) == TJERR_WARNING;
    std::string message = str(what, warning ? " (damaged or truncated JPEG, decoder warning): " : ": ",
                              tjGetErrorStr2(decoder.handle));
    decoder.reset();
    return message;
  }
};

ImageTransform::ImageTransform(const ImageOptions& options) : impl_(std::make_unique<Impl>()) {
  if (options.patch == 0) throw ConfigError("image.patch must be at least 1 pixel");
  if (options.max_side == 0) throw ConfigError("image.max_side must be at least 1 pixel");
  impl_->options = options;
  impl_->factors = tjGetScalingFactors(&impl_->factor_count);
  if (impl_->factors == nullptr) impl_->factor_count = 0;
}

ImageTransform::~ImageTransform() = default;
ImageTransform::ImageTransform(ImageTransform&&) noexcept = default;
ImageTransform& ImageTransform::operator=(ImageTransform&&) noexcept = default;

bool ImageTransform::probe(std::string_view jpeg, uint32_t& width, uint32_t& height, std::string& error) {
  if (jpeg.empty()) {
    error = "empty image (0 bytes)";
    return false;
  }
  int w = 0, h = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(impl_->decoder.get(), reinterpret_cast<const unsigned char*>(jpeg.data()),
                          static_cast<unsigned long>(jpeg.size()), &w, &h, &subsampling, &colorspace) != 0) {
    error = impl_->fail("JPEG header");
    return false;
  }
  if (w <= 0 || h <= 0) {
    error = str("JPEG header gives an empty size ", w, "x", h);
    return false;
  }
  width = static_cast<uint32_t>(w);
  height = static_cast<uint32_t>(h);
  return true;
}

bool ImageTransform::apply(std::string_view jpeg, PatchedImage& out, std::string& error, ImageTiming* timing) {
  Impl& s = *impl_;
  const Clock::time_point start = timing != nullptr ? Clock::now() : Clock::time_point{};
  if (jpeg.empty()) {
    error = "empty image (0 bytes)";
    return false;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  const auto size = static_cast<unsigned long>(jpeg.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(s.decoder.get(), data, size, &width, &height, &subsampling, &colorspace) != 0) {
    error = s.fail("JPEG header");
    return false;
  }
  if (width <= 0 || height <= 0) {
    error = str("JPEG header gives an empty size ", width, "x", height);
    return false;
  }
  const ImageSize target = resized_size(s.options, static_cast<uint32_t>(width), static_cast<uint32_t>(height));

  // The smallest DCT-scaled size that still covers the target (or the source,
  // where the target is bigger): the resize then only shrinks. Only the 1/N
  // factors: libjpeg-turbo has fast IDCTs for 1/2, 1/4 and 1/8, while its
  // generic M/8 ones (3/4, 5/8, ...) decode slower than full size.
  const int need_width = static_cast<int>(std::min<uint32_t>(target.width, width));
  const int need_height = static_cast<int>(std::min<uint32_t>(target.height, height));
  tjscalingfactor scale{1, 1};
  int decoded_width = width, decoded_height = height;
  for (int i = 0; i < s.factor_count; ++i) {
    const tjscalingfactor f = s.factors[i];
    if (f.num != 1) continue;  // also excludes DCT upscaling, which only adds blur
    const int w = TJSCALED(width, f), h = TJSCALED(height, f);
    if (w >= need_width && h >= need_height && static_cast<int64_t>(w) * h < static_cast<int64_t>(decoded_width) * decoded_height) {
      scale = f;
      decoded_width = w;
      decoded_height = h;
    }
  }

  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int pixel_format = cmyk ? TJPF_CMYK : TJPF_RGB;
  const size_t channels = cmyk ? 4 : 3;
  const size_t decoded_pixels = static_cast<size_t>(decoded_width) * decoded_height;
  grow(s.decoded, decoded_pixels * channels);
  // Stop at the first warning: the sample is rejected anyway, and a damaged
  // file costs no more than its header. LIMITSCANS bounds progressive files
  // crafted with thousands of scans.
  if (tjDecompress2(s.decoder.get(), data, size, s.decoded.data(), decoded_width, 0, decoded_height, pixel_format,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    error = s.fail("JPEG decode");
    return false;
  }
  if (cmyk) cmyk_to_rgb(s.decoded.data(), decoded_pixels);

  const uint32_t patch = s.options.patch;
  out.source_width = static_cast<uint32_t>(width);
  out.source_height = static_cast<uint32_t>(height);
  out.decode_scale_num = static_cast<uint32_t>(scale.num);
  out.decode_scale_denom = static_cast<uint32_t>(scale.denom);
  out.decoded_width = static_cast<uint32_t>(decoded_width);
  out.decoded_height = static_cast<uint32_t>(decoded_height);
  out.width = target.width;
  out.height = target.height;
  out.patches = (target.width / patch) * (target.height / patch);
  out.pixels.resize(static_cast<size_t>(target.width) * target.height * 3);
  if (timing != nullptr) timing->decode_seconds += seconds_since(start);
  s.resizer.resize(s.decoded.data(), out.decoded_width, out.decoded_height, static_cast<size_t>(decoded_width) * 3,
                   out.pixels.data(), target.width, target.height, patch, timing);
  if (timing != nullptr) ++timing->images;
  return true;
}

uint64_t ImageTransform::state_bytes() const {
  const Impl& s = *impl_;
  return sizeof(Impl) + kDecoderHandleBytes + capacity_bytes(s.decoded) + s.resizer.state_bytes();
}

}  // namespace msd
