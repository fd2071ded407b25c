#include "bench/scaling.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench/launch.h"
#include "bench/step_stream.h"
#include "bench/work_dir.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "datagen/datagen.h"
#include "msd/config.h"
#include "plan/cluster/compare.h"
#include "plan/cluster/device_model.h"
#include "plan/step/modes.h"
#include "source/source.h"
#include "transform/tokenizer/tokenizer.h"
#include "transform/transform.h"

namespace msd::bench {

const std::vector<ScalingModeSpec>& scaling_modes() {
  static const std::vector<ScalingModeSpec> modes = {
      {"static", "static", true, ""},
      // Offline partitioning of the loader pool: the planner profiles the
      // sources at start-up and sizes the pool for the whole schedule.
      {"partition", "partition", true, ""},
      {"online", "online", true, ""},
  };
  return modes;
}

namespace {

constexpr double kTextWeight = 0.9;  // text's share before the shift, images' after

std::string write_config(const ScalingOptions& o, const std::string& data, const std::string& path, uint64_t shift) {
  std::ofstream out(path);
  out << "[job]\nsteps = " << o.steps << "\nglobal_batch = " << o.global_batch
      << "\nseq_len = 2048\nmicro_batches = 1\nseed = 1\nprefetch_steps = 2\n"
      << "[topology]\ndp = 1\nloaders = " << o.loaders << "\nscaling_lookahead_steps = 8\nscaling_interval_steps = 4\n"
      << "[mix]\nsources = text, images\nschedule = piecewise\n"
      << "[source.text]\nformat = jsonl\npath = " << data << "/web/*.jsonl\nweight = 0:" << kTextWeight << ", " << shift
      << ":" << 1 - kTextWeight << "\n"
      << "[source.images]\nformat = wds\npath = " << data << "/images/*.tar\nweight = 0:" << 1 - kTextWeight << ", "
      << shift << ":" << kTextWeight << "\nread_delay_us = " << static_cast<uint64_t>(o.image_read_ms * 1e3) << "\n"
      << "[tokenizer]\nvocab = " << data << "/vocab.tiktoken\n"
      << "[image]\nmax_side = " << o.image_side << "\npatch = 16\n"
      << "[loader]\nwindow_mb = 64\nthreads = " << o.loader_threads << "\n";
  if (!out) throw IoError(str("cannot write ", path));
  return path;
}

// The configuration at `path` with msd-run's `extra` options on top.
Config parse_config(const std::string& path, const std::vector<std::string>& extra = {}) {
  std::vector<const char*> argv = {"msd-run", "--config", path.c_str()};
  for (const std::string& option : extra) argv.push_back(option.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
}

// Seconds per sample of read + transform for each source, one thread.
std::vector<double> measure_costs(const Config& config) {
  const std::unique_ptr<Tokenizer> tokenizer = open_tokenizer(config.tokenizer);
  SampleTransform transform(tokenizer.get(), ImageOptions{config.image.max_side, config.image.patch});
  std::vector<double> costs;
  for (const SourceConfig& source_config : config.sources) {
    auto source = open_source(source_config, {});
    const uint64_t n = std::min<uint64_t>(source->size(), 128);
    RawSample raw;
    TransformedSample out;
    std::string reason;
    const auto start = std::chrono::steady_clock::now();
    for (int pass = 0; pass < 2; ++pass)
      for (uint64_t i = 0; i < n; ++i) {
        source->read(i, raw);
        transform.apply(raw, out, reason);
      }
    costs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / (2.0 * n));
  }
  return costs;
}

// Device-model seconds per step over steps [first, end) of the stream.
double device_step_seconds(const Config& config, uint64_t first, uint64_t end) {
  std::vector<std::vector<PlanDoc>> steps;
  auto all = job_step_documents(config, end);
  for (uint64_t t = first; t < end; ++t) steps.push_back(std::move(all[t].docs));
  const TopologyConfig& t = config.topology;
  const Parallel parallel{static_cast<uint32_t>(t.dp), static_cast<uint32_t>(t.pp), static_cast<uint32_t>(t.cp),
                          static_cast<uint32_t>(t.tp)};
  const ModeEvaluation e = evaluate_mode(config.job.mode(), steps,
                                         make_pack_options(config), make_cost_model(config), make_device_model(config),
                                         parallel);
  return e.seconds / static_cast<double>(std::max<uint64_t>(1, e.steps));
}

// The planner's progress lines (output.progress_every = 1): per step, its
// time and the longest data wait, summed over [first, end).
struct Window {
  double step_s = 0, wait_s = 0, tokens = 0;
  uint64_t steps = 0;
};
void read_progress(const std::string& log, uint64_t shift, uint64_t steps, Window& before, Window& after) {
  std::ifstream in(log);
  const uint64_t settle = std::max<uint64_t>(1, steps / 8);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("] step ");
    if (at == std::string::npos) continue;
    unsigned long long step = 0, total = 0, tokens = 0;
    double step_ms = 0, wait_ms = 0;
    if (std::sscanf(line.c_str() + at + 2, "step %llu/%llu tokens %llu step %lf ms data wait (max over ranks) %lf ms",
                    &step, &total, &tokens, &step_ms, &wait_ms) != 5)
      continue;
    const uint64_t t = step - 1;
    Window* window = t >= settle && t < shift ? &before : t >= shift + settle ? &after : nullptr;
    if (!window) continue;
    window->step_s += step_ms / 1e3;
    window->wait_s += wait_ms / 1e3;
    window->tokens += static_cast<double>(tokens);
    window->steps++;
  }
}

// One msd-run of `spec` as `label` (its files' names) with the trainer
// emulator at `time_scale` and msd-run's `extra` options; `after` gets the
// steps after the shift.
ScalingModeResult run_mode(const ScalingModeSpec& spec, const std::string& label, double time_scale,
                           const ScalingReport& report, const std::string& config, const std::string& work,
                           const std::vector<std::string>& extra = {}, Window* after_out = nullptr) {
  ScalingModeResult r;
  r.name = spec.name;
  r.available = spec.available;
  r.note = spec.note;
  if (!spec.available) return r;
  const std::string summary = work + "/" + label + ".json", log = work + "/" + label + ".log";
  std::vector<std::string> args = {"--config", config, "--topology.scaling=" + std::string(spec.scaling),
                                   "--emulator.time_scale=" + str(time_scale), "--summary-json", summary,
                                   "--output.progress_every=1", "--output.log_level=info"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Config parsed = parse_config(config, std::vector<std::string>(args.begin() + 2, args.end()));
  std::fprintf(stderr, "msd-bench scaling: running %s on %d ranks (log %s)\n", label.c_str(), parsed.world_size(),
               log.c_str());
  const int rc = run_command(mpirun_command(parsed.world_size(), executable_dir() + "/msd-run", args), log);
  if (rc != 0) throw Error(str("the ", spec.name, " run failed with exit code ", rc, "; see ", log));
  Window before, after;
  read_progress(log, report.shift_step, report.options.steps, before, after);
  if (after_out) *after_out = after;
  r.data_wait_fraction_before = before.step_s > 0 ? before.wait_s / before.step_s : 0;
  r.data_wait_fraction_after = after.step_s > 0 ? after.wait_s / after.step_s : 0;
  r.tokens_per_s_before = before.step_s > 0 ? before.tokens / before.step_s : 0;
  r.tokens_per_s_after = after.step_s > 0 ? after.tokens / after.step_s : 0;
  const JsonValue s = read_json_file(summary);
  r.loader_ranks = parsed.topology.loaders;
  r.loader_memory_bytes = static_cast<uint64_t>(json_number(s, "loader_memory_bytes.total"));
  r.loader_peak_rss_bytes = static_cast<uint64_t>(json_number(s, "memory_peak_bytes.planner") +
                                                  json_number(s, "memory_peak_bytes.loader_total"));
  r.loader_rank_memory_bytes = static_cast<uint64_t>(json_number(s, "loader_rank_memory_bytes.total"));
  r.source_state_bytes = static_cast<uint64_t>(json_number(s, "loaders.source_state_bytes"));
  r.moves = static_cast<uint64_t>(json_number(s, "moves"));
  if (const JsonValue* digest = s.find("batch_digest"); digest && digest->type == JsonType::string) r.batch_digest = digest->string;
  return r;
}

// The partition plan for the runs, computed offline as a user would:
// `msd-plan partition` (its own profile of each source, the device model's
// rate at `time_scale`) writes work/plan.json; the partition run then has
// exactly the plan's loader ranks and reads the plan instead of profiling
// at start-up. Returns msd-run's options for that run.
std::vector<std::string> plan_partition(const std::string& config, double time_scale, const std::string& work,
                                        ScalingReport& report) {
  const std::string plan = work + "/plan.json", log = work + "/plan.log";
  std::fprintf(stderr, "msd-bench scaling: planning the partition (log %s)\n", log.c_str());
  const int rc = run_command({executable_dir() + "/msd-plan", "partition", "--config", config,
                              "--emulator.time_scale=" + str(time_scale), "--out", plan}, log);
  if (rc != 0) throw Error(str("msd-plan partition failed with exit code ", rc, "; see ", log));
  const JsonValue doc = read_json_file(plan);
  report.plan_loader_ranks = static_cast<int>(json_number(doc, "loader_ranks"));
  report.plan_memory_bytes = json_number(doc, "memory_bytes");
  report.plan_worst_margin = json_number(doc, "worst_margin");
  report.plan_steps_per_s_max = json_number(doc, "steps_per_s_max");
  report.static_plan_memory_bytes = json_number(doc, "static.memory_bytes");
  report.static_worst_margin = json_number(doc, "static.worst_margin");
  if (!(report.plan_loader_ranks >= 1)) throw Error(str("msd-plan partition wrote no loader_ranks to ", plan));
  if (const JsonValue* groups = doc.find("groups"); groups && groups->type == JsonType::array)
    for (const JsonValue& g : groups->array) {
      ScalingPlanGroup group;
      if (const JsonValue* names = g.find("sources"); names && names->type == JsonType::array)
        for (const JsonValue& name : names->array) group.sources += (group.sources.empty() ? "" : "+") + name.string;
      group.ranks = static_cast<int>(json_number(g, "ranks"));
      group.threads = static_cast<int>(json_number(g, "threads"));
      report.plan_groups.push_back(std::move(group));
    }
  return {"--topology.partition_plan=" + plan, "--topology.loaders=" + str(report.plan_loader_ranks)};
}

}  // namespace

ScalingReport run_scaling_bench(const ScalingOptions& options) {
  if (options.steps < 8) throw ConfigError("--steps: at least 8 (the shift is half-way)");
  if (options.loaders < 2) throw ConfigError("--loaders: at least 2 (one per source)");
  if (options.loader_threads < 1) throw ConfigError("--loader-threads: at least 1");
  ScalingReport report;
  report.options = options;
  report.shift_step = options.steps / 2;
  const WorkDir work_dir(options.work_dir, "scaling", true);  // kept, for inspection
  const std::string& work = work_dir.path();
  datagen::DatagenOptions data;
  data.out_dir = work + "/data";
  data.seed = 1;
  data.scale = "tiny";
  data.images = options.images;
  data.bad_samples = 0;
  std::fprintf(stderr, "msd-bench scaling: generating the dataset in %s\n", data.out_dir.c_str());
  datagen::generate_dataset(data);
  const std::string config_path = write_config(options, data.out_dir, work + "/job.ini", report.shift_step);
  const Config config = parse_config(config_path);
  const std::vector<double> costs = measure_costs(config);
  report.seconds_per_text = costs[0];
  report.seconds_per_image = costs[1];
  // A pilot run of the static assignment with no emulated compute: after the
  // shift its steps take what its one image loader needs, on this machine
  // as it is now. The device model is then scaled so that a step after the
  // shift takes load_share of that.
  Window pilot;
  run_mode(scaling_modes().front(), "pilot", 0.0, report, config_path, work, {}, &pilot);
  if (pilot.steps == 0) throw Error(str("the pilot run printed no progress after the shift; see ", work, "/pilot.log"));
  report.pilot_step_s_after = pilot.step_s / static_cast<double>(pilot.steps);
  report.target_step_s_after = options.load_share * report.pilot_step_s_after;
  report.time_scale = report.target_step_s_after / device_step_seconds(config, report.shift_step, options.steps);
  for (const ScalingModeSpec& spec : scaling_modes()) {
    const bool partition = std::string(spec.scaling) == "partition" && spec.available;
    const auto extra = partition ? plan_partition(config_path, report.time_scale, work, report) : std::vector<std::string>{};
    report.modes.push_back(run_mode(spec, spec.name, report.time_scale, report, config_path, work, extra));
  }
  std::string digest;
  for (const auto& m : report.modes) {
    if (!m.available) continue;
    if (digest.empty()) digest = m.batch_digest;
    report.same_stream = report.same_stream && m.batch_digest == digest;
  }
  return report;
}

namespace {
const ScalingModeResult* find_mode(const ScalingReport& r, const std::string& name) {
  for (const auto& m : r.modes)
    if (m.name == name && m.available) return &m;
  return nullptr;
}
double after_over_static(const ScalingReport& r, const std::string& name) {
  const ScalingModeResult *m = find_mode(r, name), *s = find_mode(r, "static");
  return m && s && s->tokens_per_s_after > 0 ? m->tokens_per_s_after / s->tokens_per_s_after : 0.0;
}
}  // namespace

std::string scaling_json(const ScalingReport& r) {
  JsonWriter w;
  w.begin_object();
  w.value("steps", r.options.steps).value("shift_step", r.shift_step).value("global_batch", r.options.global_batch);
  w.value("loader_threads", r.options.loader_threads);
  w.value("seconds_per_image", r.seconds_per_image).value("seconds_per_text", r.seconds_per_text);
  w.value("pilot_step_s_after", r.pilot_step_s_after);
  w.value("time_scale", r.time_scale).value("target_step_s_after", r.target_step_s_after);
  w.begin_object("modes");
  for (const ScalingModeResult& m : r.modes) {
    w.begin_object(m.name).value("available", m.available);
    if (!m.available) {
      w.value("note", m.note).end_object();
      continue;
    }
    w.value("data_wait_fraction_before", m.data_wait_fraction_before)
        .value("data_wait_fraction_after", m.data_wait_fraction_after)
        .value("tokens_per_s_before", m.tokens_per_s_before)
        .value("tokens_per_s_after", m.tokens_per_s_after)
        .value("loader_ranks", m.loader_ranks)
        .value("loader_memory_bytes", m.loader_memory_bytes)
        .value("loader_peak_rss_bytes", m.loader_peak_rss_bytes)
        .value("loader_rank_memory_bytes", m.loader_rank_memory_bytes)
        .value("source_state_bytes", m.source_state_bytes)
        .value("moves", m.moves)
        .value("batch_digest", m.batch_digest)
        .end_object();
  }
  w.end_object();
  if (r.plan_loader_ranks > 0) {
    w.begin_object("partition_plan")
        .value("loader_ranks", r.plan_loader_ranks)
        .value("memory_bytes", r.plan_memory_bytes)
        .value("worst_margin", r.plan_worst_margin)
        .value("steps_per_s_max", r.plan_steps_per_s_max)
        .value("static_memory_bytes", r.static_plan_memory_bytes)
        .value("static_worst_margin", r.static_worst_margin)
        .begin_array("groups");
    for (const ScalingPlanGroup& g : r.plan_groups)
      w.begin_object().value("sources", g.sources).value("ranks", g.ranks).value("threads", g.threads).end_object();
    w.end_array().end_object();
  }
  w.value("online_tokens_per_s_after_over_static", after_over_static(r, "online"));
  w.value("same_stream", r.same_stream);
  w.end_object();
  return w.str();
}

std::string scaling_text(const ScalingReport& r) {
  std::ostringstream out;
  char line[768];
  std::snprintf(line, sizeof line,
                "msd-bench scaling: text -> images at step %llu of %llu (weight %.1f -> %.1f), %u samples per step, "
                "%d loaders of %u thread(s)\n  measured here: %.2f ms per image, %.3f ms per text document; static "
                "without compute: %.0f ms per step after the shift; the emulated step then takes %.0f ms (time scale "
                "%.4g)\n",
                static_cast<unsigned long long>(r.shift_step), static_cast<unsigned long long>(r.options.steps),
                1 - kTextWeight, kTextWeight, r.options.global_batch, r.options.loaders, r.options.loader_threads,
                r.seconds_per_image * 1e3,
                r.seconds_per_text * 1e3, r.pilot_step_s_after * 1e3, r.target_step_s_after * 1e3, r.time_scale);
  out << line;
  std::snprintf(line, sizeof line, "  %-10s %11s %11s %12s %12s %8s %12s %12s %12s %6s\n", "mode", "wait before",
                "wait after", "tok/s before", "tok/s after", "loaders", "rank mem", "loader mem", "peak RSS", "moves");
  out << line;
  for (const ScalingModeResult& m : r.modes) {
    if (!m.available) {
      out << "  " << m.name << std::string(m.name.size() < 10 ? 10 - m.name.size() : 0, ' ') << " " << m.note << '\n';
      continue;
    }
    std::snprintf(line, sizeof line, "  %-10s %10.1f%% %10.1f%% %12.0f %12.0f %8d %10.1f MB %10.1f MB %10.1f MB %6llu\n",
                  m.name.c_str(), 100 * m.data_wait_fraction_before, 100 * m.data_wait_fraction_after,
                  m.tokens_per_s_before, m.tokens_per_s_after, m.loader_ranks, m.loader_rank_memory_bytes / 1e6,
                  m.loader_memory_bytes / 1e6, m.loader_peak_rss_bytes / 1e6, static_cast<unsigned long long>(m.moves));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  online after the shift: %.2fx static's tokens/s (target >= 1.3x), data wait %.1f%% of step time "
                "(target <= 5%%)%s\n",
                after_over_static(r, "online"),
                find_mode(r, "online") ? 100 * find_mode(r, "online")->data_wait_fraction_after : 0.0,
                r.same_stream ? "; every mode delivered the same batches" : "; WARNING: the modes' batch digests differ");
  out << line;
  const ScalingModeResult *partition = find_mode(r, "partition"), *fixed = find_mode(r, "static");
  if (partition && fixed) {
    std::snprintf(line, sizeof line,
                  "  partition (msd-plan partition: %d loader ranks for up to %.2f steps/s, the emulated step after "
                  "the shift %.2f; worst planned margin %+.0f%%, static's %+.0f%%): data wait after the shift "
                  "%.1f%%, %d loaders against static's %d, loader rank memory %.1f MB against static's %.1f MB "
                  "(target: the rate with no more loaders and less memory)\n",
                  r.plan_loader_ranks, r.plan_steps_per_s_max,
                  r.target_step_s_after > 0 ? 1 / r.target_step_s_after : 0.0, 100 * r.plan_worst_margin,
                  100 * r.static_worst_margin, 100 * partition->data_wait_fraction_after, partition->loader_ranks,
                  fixed->loader_ranks, partition->loader_rank_memory_bytes / 1e6, fixed->loader_rank_memory_bytes / 1e6);
    out << line;
    out << "    the plan's groups (ranks x threads):";
    for (const ScalingPlanGroup& g : r.plan_groups) out << ' ' << g.sources << ' ' << g.ranks << 'x' << g.threads;
    out << '\n';
    std::snprintf(line, sizeof line,
                  "    memory is judged on rank mem: each loader rank's (and the planner's) own memory from start-up "
                  "on, file-backed pages left out, so a rank fewer counts as the memory it gives back; loader mem "
                  "(%.1f MB against %.1f MB) counts only what ranks grow by after start-up, and peak RSS (%.1f MB "
                  "against %.1f MB) also the library pages every process of the node shares\n",
                  partition->loader_memory_bytes / 1e6, fixed->loader_memory_bytes / 1e6,
                  partition->loader_peak_rss_bytes / 1e6, fixed->loader_peak_rss_bytes / 1e6);
    out << line;
  }
  return out.str();
}

}  // namespace msd::bench
