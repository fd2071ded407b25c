#include "profile/plan_file.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"
#include "source/jsonl/json.h"

namespace msd {

std::string plan_json(const PartitionPlan& plan, const PartitionDemand& demand, const PartitionOptions& options,
                      const PartitionPlan* baseline) {
  JsonWriter w;
  const auto [low, high] = std::minmax_element(demand.steps_per_s.begin(), demand.steps_per_s.end());
  w.begin_object()
      .value("loader_ranks", plan.loader_ranks)
      .value("memory_bytes", plan.memory_bytes)
      .value("rate_met", plan.rate_met)
      .value("worst_margin", plan.worst_margin)
      .value("worst_step", plan.worst_step)
      .value("exact", plan.exact)
      .value("spare_ranks", plan.spare_ranks)
      .value("headroom", options.headroom)
      .value("max_threads", options.max_threads)
      .value("global_batch", demand.global_batch)
      .value("steps_per_s_min", low == demand.steps_per_s.end() ? 0.0 : *low)
      .value("steps_per_s_max", high == demand.steps_per_s.end() ? 0.0 : *high);
  w.begin_array("points");
  for (uint64_t step : demand.points) w.value("", step);
  w.end_array();
  w.begin_array("groups");
  for (const LoaderGroup& group : plan.groups) {
    w.begin_object().begin_array("sources");
    for (uint32_t s : group.sources) w.value("", demand.names.at(s));
    w.end_array()
        .value("ranks", group.ranks)
        .value("threads", group.threads)
        .value("rank_bytes", group.rank_bytes)
        .value("peak_load", group.peak_load);
    w.begin_array("read_load");
    for (double load : group.read_load) w.exact_value("", load);
    w.end_array().begin_array("transform_load");
    for (double load : group.transform_load) w.exact_value("", load);
    w.end_array().end_object();
  }
  w.end_array();
  w.begin_object("sources");
  const auto group_of = plan.group_of_source(demand.names.size());
  for (size_t s = 0; s < demand.names.size(); ++s) {
    const LoaderGroup& group = plan.groups.at(group_of[s]);
    const SourceProfile& p = demand.profiles[s];
    double peak = 0.0;
    for (size_t k = 0; k < demand.points.size(); ++k) peak = std::max(peak, demand.load(s, k, group.threads));
    w.begin_object(demand.names[s])
        .value("group", group_of[s])
        .value("ranks", group.ranks)
        .value("threads", group.threads)
        .value("memory_bytes", group.ranks * p.open_bytes)
        .value("peak_load", peak)
        .value("seconds_per_sample", p.seconds_per_sample())
        .value("read_seconds_per_sample", p.read_seconds_per_sample)
        .value("transform_seconds_per_sample", p.transform_seconds_per_sample)
        .value("bytes_per_sample", p.bytes_per_sample)
        .value("open_bytes", p.open_bytes)
        .value("positions_per_sample", p.positions_per_sample)
        .value("patches_per_sample", p.patches_per_sample)
        .end_object();
  }
  w.end_object();
  if (baseline)
    w.begin_object("static")
        .value("loader_ranks", baseline->loader_ranks)
        .value("memory_bytes", baseline->memory_bytes)
        .value("rate_met", baseline->rate_met)
        .value("worst_margin", baseline->worst_margin)
        .value("worst_step", baseline->worst_step)
        .end_object();
  w.end_object();
  return w.str();
}

namespace {
// A group's "read_load" and "transform_load" (per point); a plan written
// before they were kept has only "peak_load", then threads busy at the
// worst point, which counts as transform on one thread.
void read_loads(const JsonValue& entry, const std::string& where, LoaderGroup& group) {
  const JsonValue* read = entry.find("read_load");
  const JsonValue* transform = entry.find("transform_load");
  if (read == nullptr && transform == nullptr) {
    group.read_load = {0.0};
    group.transform_load = {group.peak_load};
    return;
  }
  const auto numbers = [&](const JsonValue* v, const char* key) {
    std::vector<double> out;
    if (v == nullptr || v->type != JsonType::array) throw ConfigError(str(where, ": '", key, "' is missing or not an array"));
    for (const JsonValue& x : v->array) {
      if (x.type != JsonType::number || !(x.number >= 0))
        throw ConfigError(str(where, ": '", key, "' holds something other than non-negative numbers"));
      out.push_back(x.number);
    }
    return out;
  };
  group.read_load = numbers(read, "read_load");
  group.transform_load = numbers(transform, "transform_load");
  if (group.read_load.size() != group.transform_load.size())
    throw ConfigError(str(where, ": 'read_load' and 'transform_load' differ in length"));
}

uint32_t positive_count(const JsonValue& object, const char* key, const std::string& where) {
  const JsonValue* v = object.find(key);
  if (v == nullptr || v->type != JsonType::number || v->number < 1 || v->number > 1e6 || v->number != static_cast<uint32_t>(v->number))
    throw ConfigError(str(where, ": '", key, "' is missing or not a whole number >= 1"));
  return static_cast<uint32_t>(v->number);
}
}  // namespace

PartitionPlan parse_plan_json(const std::string& text, std::span<const SourceConfig> sources,
                              const std::string& option, const std::string& what) {
  JsonValue doc;
  const JsonStatus status = parse_json(text, doc);
  if (!status.ok) throw ConfigError(str(option, ": ", what, " is not JSON (", status.message, " at byte ", status.offset, ")"));
  const JsonValue* groups = doc.type == JsonType::object ? doc.find("groups") : nullptr;
  if (groups == nullptr || groups->type != JsonType::array)
    throw ConfigError(str(option, ": ", what, " has no \"groups\" array (expected msd-plan partition --out output)"));
  PartitionPlan plan;
  std::vector<int> seen(sources.size(), 0);
  for (size_t g = 0; g < groups->array.size(); ++g) {
    const JsonValue& entry = groups->array[g];
    const std::string where = str(option, ": ", what, ", group ", g);
    const JsonValue* names = entry.type == JsonType::object ? entry.find("sources") : nullptr;
    if (names == nullptr || names->type != JsonType::array || names->array.empty())
      throw ConfigError(str(where, ": \"sources\" is missing or empty"));
    LoaderGroup group;
    for (const JsonValue& name : names->array) {
      const auto it = std::find_if(sources.begin(), sources.end(),
                                   [&](const SourceConfig& s) { return s.name == name.string; });
      if (name.type != JsonType::string || it == sources.end())
        throw ConfigError(str(where, ": source '", name.string, "' is not in mix.sources"));
      const auto s = static_cast<uint32_t>(it - sources.begin());
      if (seen[s]++) throw ConfigError(str(where, ": source '", name.string, "' is in more than one group"));
      group.sources.push_back(s);
    }
    group.ranks = positive_count(entry, "ranks", where);
    group.threads = positive_count(entry, "threads", where);
    if (const JsonValue* v = entry.find("rank_bytes"); v && v->type == JsonType::number) group.rank_bytes = v->number;
    if (const JsonValue* v = entry.find("peak_load"); v && v->type == JsonType::number) group.peak_load = v->number;
    read_loads(entry, where, group);
    plan.loader_ranks += group.ranks;
    plan.memory_bytes += group.ranks * group.rank_bytes;
    plan.groups.push_back(std::move(group));
  }
  for (size_t s = 0; s < seen.size(); ++s)
    if (!seen[s])
      throw ConfigError(str(option, ": ", what, " has no group for source '", sources[s].name,
                            "' (a plan made for another configuration? run msd-plan partition again)"));
  if (const JsonValue* v = doc.find("headroom"); v && v->type == JsonType::number) plan.headroom = v->number;
  if (const JsonValue* v = doc.find("rate_met"); v && v->type == JsonType::boolean) plan.rate_met = v->boolean;
  if (const JsonValue* v = doc.find("worst_margin"); v && v->type == JsonType::number) plan.worst_margin = v->number;
  return plan;
}

PartitionPlan read_plan_json(const std::string& path, std::span<const SourceConfig> sources,
                             const std::string& option) {
  std::string text;
  try {
    const auto bytes = read_file(path);
    text.assign(bytes.begin(), bytes.end());
  } catch (const Error& e) {
    throw ConfigError(str(option, ": cannot read the plan '", path, "': ", e.what()));
  }
  return parse_plan_json(text, sources, option, str("'", path, "'"));
}

}  // namespace msd

#include "profile/profiler.h"

namespace msd {

void fit_to_loaders(PartitionPlan& plan, const LoaderFit& fit) {
  const uint32_t configured = fit.loaders;
  if (plan.loader_ranks > configured)
    throw ConfigError(str("topology.loaders: the partition plan needs ", plan.loader_ranks, " loader ranks, the job has ",
                          configured, " (topology.scaling = partition); set topology.loaders = ", plan.loader_ranks));
  for (size_t g = 0; g < plan.groups.size(); ++g)
    if (plan.groups[g].threads > fit.threads)
      throw ConfigError(str("loader.threads: the partition plan's group ", g, " runs ", plan.groups[g].threads,
                            " threads per loader, more than loader.threads = ", fit.threads));
  PartitionOptions options;
  options.max_threads = fit.threads;
  options.headroom = plan.headroom;
  add_spare_ranks(plan, options, configured);
}

std::string start_up_plan(PipelineOptions sources, const DemandOptions& job, const LoaderFit& fit) {
  ProfileOptions profile;
  profile.samples = kStartUpProfileSamples;
  const ProfileReport report = profile_sources(std::move(sources), profile);
  const PartitionDemand demand = make_demand(job, report.profiles, 0.0);
  PartitionOptions options;
  options.max_threads = fit.threads;
  PartitionPlan plan = partition(demand, options);
  fit_to_loaders(plan, fit);
  return plan_json(plan, demand, options);
}

}  // namespace msd
