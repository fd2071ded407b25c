// msd-bench transforms' JPEG half (bench/transforms.h "jpeg"): the images,
// the transform against a plain decode, and how the results are written.
#pragma once

#include <iosfwd>
#include <string>

#include "bench/transforms.h"
#include "common/json_writer.h"

namespace msd::bench {

// report.jpeg (and report.jpeg_large with options.large_photos) and
// report.image_source: options.images, else the dataset's images.
void bench_images(const TransformsBenchOptions& options, TransformsReport& report);
void write_jpeg_json(JsonWriter& json, const std::string& key, const JpegResult& jpeg);
void write_jpeg_text(std::ostream& out, const std::string& title, const JpegResult& jpeg);

}  // namespace msd::bench
