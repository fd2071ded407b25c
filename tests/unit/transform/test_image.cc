// ImageTransform and ImageResizer: sizes, DCT scale choice, exact patch
// layout, agreement with djpeg, grayscale/CMYK input, and corrupt files. Every
// JPEG is made here with tjCompress2, so the tests need no data files.
#include <turbojpeg.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/error.h"
#include "transform/image/image.h"
#include "unit/skip.h"

namespace {

using msd::ImageOptions;
using msd::ImageResizer;
using msd::ImageTransform;
using msd::PatchedImage;

struct Rgb {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // row-major RGB
};

Rgb gradient(uint32_t width, uint32_t height) {
  Rgb image{width, height, std::vector<uint8_t>(size_t{width} * height * 3)};
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(size_t{y} * width + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1u, width - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1u, height - 1));
      p[2] = static_cast<uint8_t>((x + y) * 7);
    }
  }
  return image;
}

Rgb checkerboard(uint32_t width, uint32_t height, uint32_t cell) {
  Rgb image{width, height, std::vector<uint8_t>(size_t{width} * height * 3)};
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t v = ((x / cell + y / cell) % 2) != 0 ? 230 : 20;
      uint8_t* p = &image.pixels[(size_t{y} * width + x) * 3];
      p[0] = v;
      p[1] = static_cast<uint8_t>(255 - v);
      p[2] = v;
    }
  }
  return image;
}

Rgb constant(uint32_t width, uint32_t height, uint8_t r, uint8_t g, uint8_t b) {
  Rgb image{width, height, std::vector<uint8_t>(size_t{width} * height * 3)};
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    image.pixels[i] = r;
    image.pixels[i + 1] = g;
    image.pixels[i + 2] = b;
  }
  return image;
}

std::string compress(const uint8_t* pixels, uint32_t width, uint32_t height, int pixel_format, int subsampling,
                     int quality = 90) {
  tjhandle handle = tjInitCompress();
  REQUIRE(handle != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels, static_cast<int>(width), 0, static_cast<int>(height), pixel_format, &jpeg,
                             &size, subsampling, quality, 0);
  INFO(tjGetErrorStr2(handle));
  REQUIRE(rc == 0);
  std::string out(reinterpret_cast<const char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(handle);
  return out;
}

std::string jpeg_of(const Rgb& image, int subsampling = TJSAMP_420, int quality = 90) {
  return compress(image.pixels.data(), image.width, image.height, TJPF_RGB, subsampling, quality);
}

// A plain decode at the given scale, with its own handle.
Rgb reference_decode(const std::string& jpeg, uint32_t num, uint32_t denom) {
  tjhandle handle = tjInitDecompress();
  REQUIRE(handle != nullptr);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  REQUIRE(tjDecompressHeader3(handle, data, jpeg.size(), &width, &height, &subsampling, &colorspace) == 0);
  const tjscalingfactor factor{static_cast<int>(num), static_cast<int>(denom)};
  Rgb out{static_cast<uint32_t>(TJSCALED(width, factor)), static_cast<uint32_t>(TJSCALED(height, factor)), {}};
  out.pixels.resize(size_t{out.width} * out.height * 3);
  REQUIRE(tjDecompress2(handle, data, jpeg.size(), out.pixels.data(), static_cast<int>(out.width), 0,
                        static_cast<int>(out.height), TJPF_RGB, 0) == 0);
  tjDestroy(handle);
  return out;
}

// The obvious patchify, to check the transform's fused one against.
std::vector<uint8_t> reference_patchify(const Rgb& image, uint32_t patch) {
  std::vector<uint8_t> out;
  for (uint32_t py = 0; py < image.height / patch; ++py) {
    for (uint32_t px = 0; px < image.width / patch; ++px) {
      for (uint32_t y = py * patch; y < (py + 1) * patch; ++y) {
        for (uint32_t x = px * patch; x < (px + 1) * patch; ++x) {
          for (int c = 0; c < 3; ++c) out.push_back(image.pixels[(size_t{y} * image.width + x) * 3 + c]);
        }
      }
    }
  }
  return out;
}

Rgb resize_rows(const Rgb& image, uint32_t width, uint32_t height) {
  ImageResizer resizer;
  Rgb out{width, height, std::vector<uint8_t>(size_t{width} * height * 3)};
  resizer.resize(image.pixels.data(), image.width, image.height, size_t{image.width} * 3, out.pixels.data(), width,
                 height, 0);
  return out;
}

PatchedImage transform(const std::string& jpeg, ImageOptions options = {}) {
  ImageTransform transform(options);
  PatchedImage out;
  std::string error;
  if (!transform.apply(jpeg, out, error)) FAIL(error);
  return out;
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("msd_test_image_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Binary PPM (P6, maxval 255) as djpeg writes it.
bool read_ppm(const std::filesystem::path& path, Rgb& out) {
  std::ifstream in(path, std::ios::binary);
  std::string magic;
  int maxval = 0;
  in >> magic >> out.width >> out.height >> maxval;
  if (!in || magic != "P6" || maxval != 255) return false;
  in.get();  // the single whitespace before the raster
  out.pixels.resize(size_t{out.width} * out.height * 3);
  in.read(reinterpret_cast<char*>(out.pixels.data()), static_cast<std::streamsize>(out.pixels.size()));
  return static_cast<bool>(in);
}

bool have_djpeg() { return std::system("djpeg -version > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("resized_size keeps the aspect ratio on a patch grid", "[image]") {
  const ImageOptions options{224, 16};
  auto check = [&](uint32_t w, uint32_t h, uint32_t want_w, uint32_t want_h) {
    const msd::ImageSize size = msd::resized_size(options, w, h);
    INFO(w << "x" << h);
    CHECK(size.width == want_w);
    CHECK(size.height == want_h);
  };
  check(4000, 3000, 224, 176);  // 10.5 patches: halves round up
  check(3000, 4000, 176, 224);
  check(3000, 2000, 224, 144);  // 149.3 rounds to 144
  check(4000, 100, 224, 16);    // 5.6 pixels: still one patch
  check(1, 1, 16, 16);          // never below one patch
  check(100, 50, 96, 48);       // smaller than max_side: source size, rounded
  check(24, 24, 32, 32);        // 1.5 patches rounds up
  check(224, 224, 224, 224);
  // max_side that is not a multiple of the patch: the grid stays within it.
  CHECK(msd::resized_size({232, 16}, 5000, 5000).width == 224);
  CHECK(msd::resized_size({8, 16}, 5000, 100).width == 16);

  CHECK(msd::max_patches({224, 16}) == 196);
  CHECK(msd::max_patches({232, 16}) == 196);
  CHECK(msd::max_patches({8, 16}) == 1);
  CHECK(msd::max_patches({336, 14}) == 576);
}

TEST_CASE("options without a patch or a side are a configuration error", "[image]") {
  CHECK_THROWS_AS(ImageTransform(ImageOptions{224, 0}), msd::ConfigError);
  CHECK_THROWS_AS(ImageTransform(ImageOptions{0, 16}), msd::ConfigError);
}

TEST_CASE("sizes and patch counts over varied images", "[image]") {
  struct Case {
    uint32_t width, height;
  };
  const ImageOptions options{224, 16};
  ImageTransform transform(options);
  PatchedImage out;  // reused across calls, as a loader does
  for (const Case c : {Case{1, 1}, Case{17, 33}, Case{33, 17}, Case{4000, 100}, Case{100, 4000}, Case{3000, 2000},
                       Case{640, 480}, Case{225, 223}}) {
    const std::string jpeg = jpeg_of(gradient(c.width, c.height));
    std::string error;
    INFO(c.width << "x" << c.height);
    REQUIRE(transform.apply(jpeg, out, error));
    const msd::ImageSize want = msd::resized_size(options, c.width, c.height);
    CHECK(out.width == want.width);
    CHECK(out.height == want.height);
    CHECK(out.source_width == c.width);
    CHECK(out.source_height == c.height);
    CHECK(out.patches == (want.width / 16) * (want.height / 16));
    CHECK(out.patches <= msd::max_patches(options));
    CHECK(out.pixels.size() == size_t{out.patches} * 16 * 16 * 3);

    uint32_t width = 0, height = 0;
    REQUIRE(transform.probe(jpeg, width, height, error));
    CHECK(width == c.width);
    CHECK(height == c.height);
  }
}

TEST_CASE("the smallest DCT scale that still covers the target is chosen", "[image]") {
  auto scale_of = [](uint32_t w, uint32_t h, ImageOptions options = {}) {
    const PatchedImage out = transform(jpeg_of(checkerboard(w, h, 8)), options);
    return std::to_string(out.decode_scale_num) + "/" + std::to_string(out.decode_scale_denom);
  };
  const PatchedImage big = transform(jpeg_of(gradient(4000, 3000)));
  CHECK(big.decode_scale_num == 1);
  CHECK(big.decode_scale_denom == 8);
  CHECK(big.decoded_width == 500);
  CHECK(big.decoded_height == 375);
  CHECK(big.width == 224);
  CHECK(big.height == 176);

  CHECK(scale_of(3000, 2000) == "1/8");  // 375x250 covers 224x144
  CHECK(scale_of(600, 400) == "1/2");    // 300x200 covers 224x144; 1/4 (150x100) does not
  CHECK(scale_of(448, 448) == "1/2");    // exactly the target
  CHECK(scale_of(1792, 900) == "1/8");   // exactly the target width: 224x113 covers 224x112
  CHECK(scale_of(300, 300) == "1/1");    // 1/2 (150) is too small; M/8 factors are never used
  CHECK(scale_of(100, 50) == "1/1");     // already smaller than the target
  CHECK(scale_of(4000, 100) == "1/4");   // 1000x25 covers 224x16; 1/8 (500x13) is too short
  CHECK(scale_of(1024, 768, {448, 16}) == "1/2");  // 512x384 covers 448x336
}

TEST_CASE("the patch layout is an exact patchify of the resized image", "[image]") {
  const ImageOptions options{224, 16};
  for (const auto& source : {gradient(1000, 700), checkerboard(333, 517, 5), gradient(4000, 100)}) {
    const std::string jpeg = jpeg_of(source);
    const PatchedImage out = transform(jpeg, options);
    INFO(source.width << "x" << source.height << " decoded at " << out.decode_scale_num << "/"
                      << out.decode_scale_denom);
    const Rgb decoded = reference_decode(jpeg, out.decode_scale_num, out.decode_scale_denom);
    REQUIRE(decoded.width == out.decoded_width);
    REQUIRE(decoded.height == out.decoded_height);
    const Rgb resized = resize_rows(decoded, out.width, out.height);
    CHECK(out.pixels == reference_patchify(resized, options.patch));
  }
}

TEST_CASE("an image already at its target size is patchified unchanged", "[image]") {
  const std::string jpeg = jpeg_of(checkerboard(64, 48, 3));
  const PatchedImage out = transform(jpeg);
  REQUIRE(out.width == 64);
  REQUIRE(out.height == 48);
  CHECK(out.decode_scale_num == out.decode_scale_denom);
  CHECK(out.pixels == reference_patchify(reference_decode(jpeg, 1, 1), 16));
}

TEST_CASE("the resizer keeps a flat color exact and stays close to the source", "[image]") {
  const Rgb flat = constant(731, 413, 200, 13, 97);
  for (const auto& [w, h] : {std::pair<uint32_t, uint32_t>{224, 128}, {16, 16}, {731, 16}, {16, 413}, {1000, 600}}) {
    const Rgb out = resize_rows(flat, w, h);
    INFO(w << "x" << h);
    CHECK(out.pixels == constant(w, h, 200, 13, 97).pixels);
  }

  // Through the whole transform: a flat JPEG stays its color within the
  // codec's rounding.
  const PatchedImage out = transform(jpeg_of(constant(1234, 777, 123, 45, 67), TJSAMP_444, 100));
  const Rgb decoded = reference_decode(jpeg_of(constant(1234, 777, 123, 45, 67), TJSAMP_444, 100),
                                       out.decode_scale_num, out.decode_scale_denom);
  const uint8_t want[3] = {decoded.pixels[0], decoded.pixels[1], decoded.pixels[2]};
  size_t off_by_more_than_one = 0;
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    if (std::abs(out.pixels[i] - want[i % 3]) > 1) ++off_by_more_than_one;
  }
  CHECK(off_by_more_than_one == 0);
  CHECK(std::abs(want[0] - 123) <= 2);
  CHECK(std::abs(want[1] - 45) <= 2);
  CHECK(std::abs(want[2] - 67) <= 2);

  // A smooth gradient downscaled stays within a few levels of an area average.
  const Rgb ramp = gradient(800, 600);
  const Rgb small = resize_rows(ramp, 200, 150);
  for (uint32_t y = 0; y < 150; y += 7) {
    for (uint32_t x = 0; x < 200; x += 7) {
      int sum = 0;
      for (uint32_t dy = 0; dy < 4; ++dy) {
        for (uint32_t dx = 0; dx < 4; ++dx) sum += ramp.pixels[((size_t{4 * y + dy}) * 800 + 4 * x + dx) * 3];
      }
      CHECK(std::abs(small.pixels[(size_t{y} * 200 + x) * 3] - sum / 16) <= 2);
    }
  }
}

TEST_CASE("the resizer writes patch-major exactly as a patchify of its row-major output", "[image]") {
  const Rgb source = gradient(501, 377);
  ImageResizer resizer;
  std::vector<uint8_t> patched(size_t{160} * 112 * 3);
  resizer.resize(source.pixels.data(), source.width, source.height, size_t{source.width} * 3, patched.data(), 160,
                 112, 16);
  CHECK(patched == reference_patchify(resize_rows(source, 160, 112), 16));
  // Upscaling works too (a source smaller than one patch).
  const Rgb tiny = gradient(3, 5);
  std::vector<uint8_t> up(size_t{16} * 16 * 3);
  resizer.resize(tiny.pixels.data(), 3, 5, 9, up.data(), 16, 16, 16);
  CHECK(up == reference_patchify(resize_rows(tiny, 16, 16), 16));
  CHECK(resizer.state_bytes() > 0);
}

TEST_CASE("decoding matches djpeg bit for bit", "[image][djpeg]") {
  if (!have_djpeg()) MSD_SKIP("djpeg not found (package libjpeg-turbo-progs)");
  const auto dir = temp_dir();
  struct Case {
    Rgb source;
    ImageOptions options;
    const char* scale;  // djpeg -scale; the transform must pick the same without resizing
  };
  const std::vector<Case> cases = {
      {gradient(64, 48), {224, 16}, "1/1"},       // unscaled, no resize
      {checkerboard(256, 128, 7), {32, 16}, "1/8"},  // 1/8 gives 32x16, the target itself
  };
  for (const Case& c : cases) {
    const std::string jpeg = jpeg_of(c.source, TJSAMP_420, 85);
    const auto jpeg_path = dir / "in.jpg";
    const auto ppm_path = dir / "out.ppm";
    std::ofstream(jpeg_path, std::ios::binary).write(jpeg.data(), static_cast<std::streamsize>(jpeg.size()));
    const std::string command = "djpeg -rgb -pnm -scale " + std::string(c.scale) + " -outfile " + ppm_path.string() +
                                " " + jpeg_path.string();
    REQUIRE(std::system(command.c_str()) == 0);
    Rgb reference;
    REQUIRE(read_ppm(ppm_path, reference));

    const PatchedImage out = transform(jpeg, c.options);
    INFO(command);
    REQUIRE(out.width == reference.width);
    REQUIRE(out.height == reference.height);
    CHECK(std::to_string(out.decode_scale_num) + "/" + std::to_string(out.decode_scale_denom) == c.scale);
    CHECK(out.pixels == reference_patchify(reference, c.options.patch));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("grayscale JPEGs decode to gray RGB", "[image]") {
  std::vector<uint8_t> gray(300 * 200);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>((i % 300) * 255 / 299);
  const std::string jpeg = compress(gray.data(), 300, 200, TJPF_GRAY, TJSAMP_GRAY);
  const PatchedImage out = transform(jpeg);
  CHECK(out.width == 224);
  CHECK(out.height == 144);  // 149.3 rounds to 144
  for (size_t i = 0; i < out.pixels.size(); i += 3) {
    REQUIRE(out.pixels[i] == out.pixels[i + 1]);
    REQUIRE(out.pixels[i] == out.pixels[i + 2]);
  }
  // Left dark, right bright: the ramp survived.
  CHECK(out.pixels[0] < 10);
  CHECK(out.pixels[(16 * 16 - 1) * 3] < 30);
  const size_t last_patch_of_first_row = (224 / 16 - 1) * 16 * 16 * 3;
  CHECK(out.pixels[last_patch_of_first_row + (16 - 1) * 3] > 240);
}

TEST_CASE("CMYK JPEGs are converted to RGB", "[image]") {
  // libjpeg's CMYK is Adobe-inverted: with K = 255 (no black ink) the stored
  // C, M, Y are the R, G, B values themselves.
  std::vector<uint8_t> cmyk(200 * 100 * 4);
  for (size_t i = 0; i < cmyk.size(); i += 4) {
    cmyk[i] = 200;
    cmyk[i + 1] = 100;
    cmyk[i + 2] = 30;
    cmyk[i + 3] = i < cmyk.size() / 2 ? 255 : 128;  // top half: no black; bottom half: half black
  }
  const std::string jpeg = compress(cmyk.data(), 200, 100, TJPF_CMYK, TJSAMP_444, 100);
  const PatchedImage out = transform(jpeg, {64, 16});
  REQUIRE(out.width == 64);
  REQUIRE(out.height == 32);
  // First pixel of the first patch (top half) and of the last patch (bottom half).
  const uint8_t* top = &out.pixels[0];
  const uint8_t* bottom = &out.pixels[out.pixels.size() - 3];
  CHECK(std::abs(top[0] - 200) <= 3);
  CHECK(std::abs(top[1] - 100) <= 3);
  CHECK(std::abs(top[2] - 30) <= 3);
  CHECK(std::abs(bottom[0] - 100) <= 3);
  CHECK(std::abs(bottom[1] - 50) <= 3);
  CHECK(std::abs(bottom[2] - 15) <= 3);
}

TEST_CASE("corrupt data is rejected with a reason, and the next good image decodes", "[image]") {
  const std::string good = jpeg_of(gradient(320, 240));
  const PatchedImage want = transform(good);

  std::mt19937 random(7);
  std::string noise(5000, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  std::string png = "\x89PNG\r\n\x1a\n";
  png += std::string(200, '\0');
  std::string bad_marker = good;
  bad_marker[2] = '\x00';  // the first marker after SOI is gone
  std::string zero_filled = good.substr(0, good.size() / 2) + std::string(good.size() / 2, '\0');

  struct Case {
    const char* name;
    std::string data;
    const char* reason_has;
  };
  const std::vector<Case> cases = {
      {"empty", "", "0 bytes"},
      {"random bytes", noise, ""},
      {"PNG header", png, ""},
      {"SOI only", good.substr(0, 2), ""},
      {"truncated at half", good.substr(0, good.size() / 2), "warning"},
      {"header only", good.substr(0, 700), ""},
      {"broken marker", bad_marker, ""},
      {"zero-filled tail", zero_filled, ""},
  };
  ImageTransform transform_under_test(ImageOptions{});
  for (const Case& c : cases) {
    INFO(c.name);
    PatchedImage out;
    std::string error;
    CHECK_FALSE(transform_under_test.apply(c.data, out, error));
    CHECK_FALSE(error.empty());
    CHECK(error.find(c.reason_has) != std::string::npos);
    uint32_t width = 0, height = 0;
    std::string probe_error;
    if (c.data.size() < 100) CHECK_FALSE(transform_under_test.probe(c.data, width, height, probe_error));

    // The same object decodes a good image right after the failure.
    error.clear();
    REQUIRE(transform_under_test.apply(good, out, error));
    CHECK(error.empty());
    CHECK(out.pixels == want.pixels);
  }
}

TEST_CASE("state_bytes counts the reused buffers", "[image]") {
  ImageTransform transform_under_test(ImageOptions{});
  const uint64_t idle = transform_under_test.state_bytes();
  CHECK(idle > 0);
  PatchedImage out;
  std::string error;
  REQUIRE(transform_under_test.apply(jpeg_of(gradient(1000, 800)), out, error));
  const uint64_t after = transform_under_test.state_bytes();
  REQUIRE(out.decoded_width == 250);  // 1/4 scale covers the 224x176 target
  CHECK(after >= idle + uint64_t{250 * 200 * 3});
  // A smaller image reuses the buffers: no growth.
  REQUIRE(transform_under_test.apply(jpeg_of(gradient(100, 80)), out, error));
  CHECK(transform_under_test.state_bytes() <= after);
}
