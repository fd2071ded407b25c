// `msd-plan profile`: what each source of a configuration costs a loader,
// measured offline on a sample of each source with the real readers and
// transforms (tokenizer, JPEG decode) through the loaders' own mechanism
// (meter.h). MPI-free. docs/scaling.md "Profiles".
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "msd/source_config.h"
#include "pipeline/pipeline.h"
#include "plan/pool/profile.h"

namespace msd {

struct ProfileOptions {
  uint64_t samples = 256;  // per source, spread evenly over its files (all of them when it holds fewer)
  unsigned threads = 1;    // read and transform threads; the seconds are per thread either way
  // Called after each batch: source name, samples done, samples to do.
  std::function<void(const std::string&, uint64_t, uint64_t)> progress;
};

// Profiles of a configuration's sources, in mix.sources order.
struct ProfileReport {
  std::vector<std::string> names;
  std::vector<SourceProfile> profiles;
  unsigned threads = 1;
  double seconds = 0.0;  // wall time of the whole measurement
};

// Opens each source (one at a time), the tokenizer and the transform through
// the sample pipeline, as a loader does, and reads and transforms
// options.samples samples of each (indices i * n / samples) in batches of
// 16 * threads. Throws what opening a source or the tokenizer throws
// (ConfigError naming the option, IoError).
ProfileReport profile_sources(PipelineOptions sources, const ProfileOptions& options);

// The report as JSON: {"threads", "seconds", "sources": {NAME: {seconds_per_sample
// (read + transform), read_seconds_per_sample, transform_seconds_per_sample,
// bytes_per_sample, open_bytes, samples_measured, positions_per_sample,
// patches_per_sample, shared_bytes}}}.
std::string profile_json(const ProfileReport& report);
void print_profile(const ProfileReport& report, std::ostream& out);

// Reads what profile_json wrote (or the "source_profiles" of a msd-run
// summary, docs/summary.md), in the order of `sources`. Throws
// ConfigError naming `option` (e.g. "--profile") for an unreadable file,
// malformed JSON, or a source it does not have. A profile
// written before reads and transforms were measured apart (only
// seconds_per_sample) loads with all of it as transform, and a warning.
ProfileReport read_profile_json(const std::string& path, std::span<const SourceConfig> sources,
                                const std::string& option);

// "1.5 MiB": bytes for people.
std::string bytes_text(double bytes);

}  // namespace msd
