#include "transform/image/image.h"

#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

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

// The source taps of every output index along one axis.
struct AxisWeights {
  uint32_t in = 0, out = 0;
  uint32_t stride = 0;           // weights per output index in `weights`
  std::vector<uint32_t> first;   // first source index per output index
  std::vector<uint32_t> count;   // taps per output index
  std::vector<int16_t> weights;  // out x stride, each row summing to kWeightOne

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
    }
    in = in_size;
    out = out_size;
  }

  uint64_t bytes() const {
    return capacity_bytes(first) + capacity_bytes(count) + capacity_bytes(weights);
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

// The filters are built twice, for AVX2 and for the baseline, and picked at
// load time: baseline x86-64 (SSE2) has no 32-bit vector multiply.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MSD_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MSD_VECTOR_CLONES
#endif

// One vertically filtered row: out[i] = sum_k w[k] * rows[k][i]. Blocks of 16
// bytes with a fixed inner trip count, so the compiler vectorizes them even
// at -O2; the accumulators stay in registers across the taps.
MSD_VECTOR_CLONES void filter_vertical(const uint8_t* first, size_t stride, const int16_t* weights, uint32_t taps, size_t bytes,
                     uint8_t* out) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= bytes; i += kBlock) {
    int32_t sums[kBlock];
    for (size_t j = 0; j < kBlock; ++j) sums[j] = kWeightHalf;
    const uint8_t* in = first + i;
    for (uint32_t k = 0; k < taps; ++k, in += stride) {
      const int32_t weight = weights[k];
      for (size_t j = 0; j < kBlock; ++j) sums[j] += weight * in[j];
    }
    // Non-negative weights summing to one keep every result in 0..255.
    for (size_t j = 0; j < kBlock; ++j) out[i + j] = static_cast<uint8_t>(sums[j] >> kWeightBits);
  }
  for (; i < bytes; ++i) {
    int32_t sum = kWeightHalf;
    for (uint32_t k = 0; k < taps; ++k) sum += weights[k] * first[k * stride + i];
    out[i] = static_cast<uint8_t>(sum >> kWeightBits);
  }
}

MSD_VECTOR_CLONES void filter_horizontal(const uint8_t* in, const AxisWeights& h, uint8_t* out) {
  for (uint32_t x = 0; x < h.out; ++x) {
    const int16_t* w = &h.weights[static_cast<size_t>(x) * h.stride];
    const uint8_t* p = in + static_cast<size_t>(h.first[x]) * 3;
    int32_t r = kWeightHalf, g = kWeightHalf, b = kWeightHalf;
    for (uint32_t k = 0, n = h.count[x]; k < n; ++k, p += 3) {
      r += w[k] * p[0];
      g += w[k] * p[1];
      b += w[k] * p[2];
    }
    out[3 * x + 0] = static_cast<uint8_t>(r >> kWeightBits);
    out[3 * x + 1] = static_cast<uint8_t>(g >> kWeightBits);
    out[3 * x + 2] = static_cast<uint8_t>(b >> kWeightBits);
  }
}

}  // namespace

struct ImageResizer::Impl {
  AxisWeights horizontal, vertical;
  std::vector<uint8_t> column_row;  // one vertically filtered row, source width
  std::vector<uint8_t> out_row;     // one finished row, output width
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
  const bool scale_x = src_width != out_width;
  const bool scale_y = src_height != out_height;
  const size_t src_row_bytes = static_cast<size_t>(src_width) * 3;
  if (scale_x) {
    s.horizontal.build(src_width, out_width);
    grow(s.out_row, static_cast<size_t>(out_width) * 3);
  }
  if (scale_y) {
    s.vertical.build(src_height, out_height);
    grow(s.column_row, src_row_bytes);
  }
  // Vertical pass first, one output row at a time: downscaling, it leaves the
  // (scalar) horizontal pass only the output rows, and no intermediate image
  // is kept. An axis that keeps its size is not filtered at all.
  const Clock::time_point start = timing != nullptr ? Clock::now() : Clock::time_point{};
  double scatter_seconds = 0;
  for (uint32_t y = 0; y < out_height; ++y) {
    const uint8_t* line = src + static_cast<size_t>(y) * src_stride_bytes;
    if (scale_y) {
      const AxisWeights& v = s.vertical;
      const uint8_t* first = src + static_cast<size_t>(v.first[y]) * src_stride_bytes;
      if (v.count[y] == 1) {  // a single tap has weight one: the row itself
        line = first;
      } else {
        filter_vertical(first, src_stride_bytes, &v.weights[static_cast<size_t>(y) * v.stride], v.count[y],
                        src_row_bytes, s.column_row.data());
        line = s.column_row.data();
      }
    }
    if (scale_x) {
      filter_horizontal(line, s.horizontal, s.out_row.data());
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

struct DecoderHandle {
  tjhandle handle = nullptr;

  DecoderHandle() { reset(); }
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
  if (tjDecompressHeader3(impl_->decoder.handle, reinterpret_cast<const unsigned char*>(jpeg.data()),
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
  if (tjDecompressHeader3(s.decoder.handle, data, size, &width, &height, &subsampling, &colorspace) != 0) {
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
  if (tjDecompress2(s.decoder.handle, data, size, s.decoded.data(), decoded_width, 0, decoded_height, pixel_format,
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
