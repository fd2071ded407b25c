// The registry of source formats (source/format.h).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "source/format.h"

using namespace msd;

TEST_CASE("every format has one entry, found by its name") {
  std::set<std::string> names;
  for (const FormatSpec* spec : registered_formats()) {
    CHECK(names.insert(spec->name).second);
    CHECK(format_named(spec->name) == spec->format);
    CHECK(&format_spec(spec->format) == spec);
    CHECK(std::string(format_name(spec->format)) == spec->name);
  }
  for (SourceFormat format : {SourceFormat::jsonl, SourceFormat::wds, SourceFormat::indexed, SourceFormat::parquet})
    CHECK(format_spec(format).format == format);
  CHECK(format_names() == "jsonl | wds | indexed | parquet");
  // Each line of msd/source_formats.h names the entry of its own value.
  size_t line = 0;
  for (const FormatSpec* spec : registered_formats()) CHECK(static_cast<size_t>(spec->format) == line++);
  CHECK_FALSE(format_named("orc").has_value());
}

TEST_CASE("decisions go by the entries' properties") {
  SourceConfig config;
  config.name = "x";
  CHECK_THROWS_AS(needs_tokenizer(config), ConfigError);
  config.format = SourceFormat::indexed;
  CHECK_FALSE(needs_tokenizer(config));
  CHECK(format_spec(config).data_files("a.idx") == std::vector<std::string>{"a.idx", "a.bin"});
  config.format = SourceFormat::parquet;
  CHECK(needs_tokenizer(config));
  CHECK_FALSE(has_images(config));
  config.image_field = "jpg";
  CHECK(has_images(config));
  config.format = SourceFormat::wds;
  CHECK(has_images(config));
  std::vector<SourceConfig> sources(2, config);
  sources[0].format = SourceFormat::indexed;
  CHECK(needs_tokenizer(sources));
  sources[1].format = SourceFormat::indexed;
  CHECK_FALSE(needs_tokenizer(sources));
}
