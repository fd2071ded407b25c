#include "profile/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "profile/meter.h"
#include "source/jsonl/json.h"
#include "source/source.h"

namespace msd {
namespace {

// Reads and transforms `count` samples of `source`, spread over it, batch by
// batch, into `meter`: reads on options.threads threads, as in the loader,
// then the transforms on as many.
void measure_source(uint32_t id, Source& source, const SourceConfig& config, uint64_t count, SampleTransform& transform,
                    uint32_t patch_bytes, const ProfileOptions& options, ProfileMeter& meter) {
  const uint64_t n = source.size();
  const size_t batch = size_t{16} * std::max(options.threads, 1u);
  auto bytes_of = [&](const TransformedSample& s) { return slot_bytes(s, patch_bytes); };
  WorkerPool read_pool("sample reads");
  std::vector<RawSample> raws(batch);
  std::vector<TransformedSample> outs(batch);
  for (uint64_t done = 0; done < count;) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(batch, count - done));
    std::vector<const RawSample*> good;
    std::vector<TransformedSample*> good_outs;
    std::vector<double> reads(size);
    read_measured(read_pool, options.threads, reads, [&](size_t k) {
      const uint64_t index = static_cast<uint64_t>((static_cast<__int128>(done + k) * n) / count);
      raws[k].clear();
      read_sample(source, config, index, raws[k]);
    });
    for (size_t k = 0; k < size; ++k) {
      good.push_back(&raws[k]);  // a reader's bad sample passes through apply_batch as its verdict
      good_outs.push_back(&outs[k]);
    }
    const std::vector<uint32_t> ids(size, id);
    std::vector<BadKind> verdicts(size);
    std::vector<std::string> reasons(size);
    transform_measured(transform, good, ids, reads, good_outs, verdicts, reasons, options.threads, bytes_of, meter);
    done += size;
    if (options.progress) options.progress(config.name, done, count);
  }
}

}  // namespace

ProfileReport profile_sources(PipelineOptions sources, const ProfileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ProfileReport report;
  report.threads = std::max(options.threads, 1u);
  SamplePipeline pipeline(std::move(sources));
  pipeline.open_tokenizer_if_needed();
  ProfileMeter meter(pipeline.source_count(), std::max<uint64_t>(options.samples, 1));
  for (uint32_t s = 0; s < pipeline.source_count(); ++s) {
    const SourceConfig& sc = pipeline.config(s);
    report.names.push_back(sc.name);
    Source& source = pipeline.open(s);
    const uint64_t count = std::min<uint64_t>(std::max<uint64_t>(options.samples, 1), source.size());
    measure_source(s, source, sc, count, pipeline.transform(), pipeline.patch_bytes(), options, meter);
    // After the samples: the buffers have grown to what serving holds.
    meter.set_open_bytes(s, open_bytes(source, pipeline.tokenizer(), pipeline.transform()),
                         shared_open_bytes(source, pipeline.tokenizer(), pipeline.transform()));
    pipeline.close(s);
  }
  report.profiles = meter.profiles();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string profile_json(const ProfileReport& report) {
  JsonWriter w;
  w.begin_object().value("threads", report.threads).value("seconds", report.seconds).begin_object("sources");
  for (size_t s = 0; s < report.names.size(); ++s) {
    const SourceProfile& p = report.profiles[s];
    w.begin_object(report.names[s])
        .exact_value("seconds_per_sample", p.seconds_per_sample())
        .exact_value("read_seconds_per_sample", p.read_seconds_per_sample)
        .exact_value("transform_seconds_per_sample", p.transform_seconds_per_sample)
        .exact_value("bytes_per_sample", p.bytes_per_sample)
        .exact_value("open_bytes", p.open_bytes)
        .value("samples_measured", p.samples_measured)
        .exact_value("positions_per_sample", p.positions_per_sample)
        .exact_value("patches_per_sample", p.patches_per_sample)
        .exact_value("shared_bytes", p.shared_bytes)
        .end_object();
  }
  w.end_object().end_object();
  return w.str();
}

std::string bytes_text(double bytes) {
  char text[64];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024) std::snprintf(text, sizeof text, "%.2f MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024.0) std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else std::snprintf(text, sizeof text, "%.0f B", bytes);
  return text;
}

void print_profile(const ProfileReport& report, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line,
                "source profiles (%u transform thread(s), %.2f s; reads on the loader's thread, transforms per thread)\n",
                report.threads, report.seconds);
  out << line;
  std::snprintf(line, sizeof line, "  %-12s %10s %12s %12s %12s %12s %10s\n", "source", "samples", "read ms", "transform ms",
                "bytes/sample", "positions", "open");
  out << line;
  for (size_t s = 0; s < report.names.size(); ++s) {
    const SourceProfile& p = report.profiles[s];
    std::snprintf(line, sizeof line, "  %-12s %10llu %12.4f %12.4f %12.0f %12.1f %10s\n", report.names[s].c_str(),
                  static_cast<unsigned long long>(p.samples_measured), p.read_seconds_per_sample * 1e3,
                  p.transform_seconds_per_sample * 1e3, p.bytes_per_sample, p.positions_per_sample,
                  bytes_text(p.open_bytes).c_str());
    out << line;
  }
}

namespace {
double number_of(const JsonValue& object, const char* key, const std::string& where) {
  const JsonValue* v = object.find(key);
  if (v == nullptr || v->type != JsonType::number || v->number < 0)
    throw ConfigError(str(where, ": '", key, "' is missing or not a non-negative number"));
  return v->number;
}

// The seconds of a profile: read_seconds_per_sample and
// transform_seconds_per_sample; a profile written before they were split has
// only seconds_per_sample, which counts as transform, with a warning. The
// plan is the same either way (a loader's threads share reads and
// transforms alike); only the split, which part waits on storage, is lost.
void read_seconds(const JsonValue& p, const std::string& where, const std::string& option, SourceProfile& profile) {
  const bool has_read = p.find("read_seconds_per_sample") != nullptr;
  const bool has_transform = p.find("transform_seconds_per_sample") != nullptr;
  if (has_read || has_transform) {
    profile.read_seconds_per_sample = number_of(p, "read_seconds_per_sample", where);
    profile.transform_seconds_per_sample = number_of(p, "transform_seconds_per_sample", where);
    return;
  }
  profile.transform_seconds_per_sample = number_of(p, "seconds_per_sample", where);
  log_warn(where, " has seconds_per_sample but no read_seconds_per_sample and transform_seconds_per_sample "
           "(a profile from before they were split): all of it counts as transform, which plans the same, but "
           "which part waits on storage is not known; profile again (msd-plan profile --json) for the split (",
           option, ")");
}
}  // namespace

ProfileReport read_profile_json(const std::string& path, std::span<const SourceConfig> sources,
                                const std::string& option) {
  std::string text;
  try {
    const auto bytes = read_file(path);
    text.assign(bytes.begin(), bytes.end());
  } catch (const Error& e) {
    throw ConfigError(str(option, ": cannot read '", path, "': ", e.what()));
  }
  JsonValue doc;
  const JsonStatus status = parse_json(text, doc);
  if (!status.ok)
    throw ConfigError(str(option, ": '", path, "' is not JSON (", status.message, " at byte ", status.offset, ")"));
  // msd-plan profile --json's "sources", or a run summary's "source_profiles".
  const JsonValue* entries = doc.type == JsonType::object ? doc.find("sources") : nullptr;
  if (entries == nullptr && doc.type == JsonType::object) entries = doc.find("source_profiles");
  if (entries == nullptr || entries->type != JsonType::object)
    throw ConfigError(str(option, ": '", path, "' has no \"sources\" object (expected msd-plan profile --json output, "
                          "or a msd-run summary with \"source_profiles\")"));
  ProfileReport report;
  if (const JsonValue* t = doc.find("threads"); t && t->type == JsonType::number) report.threads = static_cast<unsigned>(t->number);
  for (const SourceConfig& sc : sources) {
    const JsonValue* p = entries->find(sc.name);
    const std::string where = str(option, ": '", path, "', source '", sc.name, "'");
    if (p == nullptr || p->type != JsonType::object)
      throw ConfigError(str(where, " is not in the profile (profile this configuration with msd-plan profile)"));
    SourceProfile profile;
    read_seconds(*p, where, option, profile);
    profile.bytes_per_sample = number_of(*p, "bytes_per_sample", where);
    profile.open_bytes = number_of(*p, "open_bytes", where);
    profile.samples_measured = static_cast<uint64_t>(number_of(*p, "samples_measured", where));
    if (p->find("positions_per_sample")) profile.positions_per_sample = number_of(*p, "positions_per_sample", where);
    if (p->find("patches_per_sample"))
      profile.patches_per_sample = std::min(profile.positions_per_sample, number_of(*p, "patches_per_sample", where));
    if (p->find("shared_bytes")) profile.shared_bytes = std::min(profile.open_bytes, number_of(*p, "shared_bytes", where));
    report.names.push_back(sc.name);
    report.profiles.push_back(profile);
  }
  return report;
}

}  // namespace msd
