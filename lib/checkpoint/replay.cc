#include "checkpoint/replay.h"

#include "checkpoint/changed_mix.h"
#include "checkpoint/file_kind.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/json_writer.h"
#include "config/part_options.h"
#include "msd/place_tree.h"
#include "plan/step/cost.h"
#include "plan/step/mix.h"
#include "plan/step/outlier_hold.h"
#include "plan/step/pack.h"
#include "checkpoint/step_files.h"
#include "source/fingerprint.h"
#include "source/permutation.h"
#include "source/stream_order.h"
#include "source/source.h"

namespace msd {

namespace {

std::string describe(const TraceSample& s, const TraceHeader& h) {
  const std::string name = s.source < h.source_names.size() ? h.source_names[s.source] : str("#", s.source);
  return str("source ", name, " cursor ", s.cursor, " index ", s.index,
             s.bad ? str(" bad (", bad_kind_name(static_cast<BadKind>(s.bad)), ")") : str(" positions ", s.positions,
                                                                                           " patches ", s.patches));
}

std::string describe(const TracePiece& p) {
  return str("group ", p.group, " micro-batch ", p.micro_batch, " sequence ", p.sequence, " sample ", p.sample,
             " positions [", p.begin, ", ", p.begin + p.length, ") cost ", p.cost);
}

// The divergence of a step, in the terms of the run's layout.
Divergence divergence_at(const Config& config, uint64_t step, int group, std::string what) {
  const ClientPlaceTree tree(config.topology.dp, config.topology.pp, config.topology.cp, config.topology.tp,
                             config.topology.order);
  Divergence d;
  d.step = step;
  d.group = group;
  if (group >= 0 && group < tree.data_groups()) {
    d.clients = tree.group_members(group);
  } else {
    for (int c = 0; c < tree.size(); ++c) d.clients.push_back(c);
  }
  // Clients are the last ranks of the job (the planner and loaders first).
  const int first_client = config.world_size() - config.clients();
  for (int c : d.clients) d.world_ranks.push_back(first_client + c);
  d.what = std::move(what);
  return d;
}

// Re-derives the samples one step consumed; compares them with the first
// rows of `recorded` (bad flags and sizes taken as given) and returns the
// first difference. `row` ends at the first row after them (the documents of
// earlier steps the hold delivers here).
std::optional<std::string> replay_samples(const TraceHeader& header, const std::vector<uint32_t>& quota,
                                          const std::vector<StreamOrder>& orders, std::vector<uint64_t>& cursor,
                                          const std::vector<TraceSample>& recorded, size_t& row) {
  row = 0;
  for (uint32_t s = 0; s < quota.size(); ++s) {
    uint32_t good = 0;
    while (good < quota[s]) {
      const uint64_t c = cursor[s];
      const StreamPosition pos{orders[s].epoch(c), orders[s].index(c)};
      const TraceSample want{s, 0, c, pos.index, 0, 0};
      if (row >= recorded.size())
        return str("the step ends after ", recorded.size(), " samples; expected next: ", describe(want, header),
                   " (quota of source ", header.source_names[s], ": ", quota[s], ", ", good, " so far)");
      const TraceSample& got = recorded[row];
      if (got.source != s || got.cursor != c || got.index != pos.index)
        return str("sample ", row, ": expected ", describe(want, header), ", recorded ", describe(got, header));
      if (got.bad == 0) {
        if (got.positions == 0 || got.patches > got.positions)
          return str("sample ", row, ": recorded ", describe(got, header), " cannot be planned");
        ++good;
      }
      ++cursor[s];
      ++row;
    }
  }
  return std::nullopt;
}

// The hold's decision for a step whose consumed rows are recorded[0, end):
// checks that the rows after them are the documents it releases; returns
// the first difference.
std::optional<std::string> replay_hold(const TraceHeader& header, uint64_t step, const std::vector<TraceSample>& recorded,
                                       size_t end, OutlierHold& hold, std::vector<bool>& held) {
  std::vector<HeldDoc> arrivals;
  for (size_t row = 0; row < end; ++row)
    if (recorded[row].bad == 0)
      arrivals.push_back({recorded[row].source, recorded[row].cursor, recorded[row].positions, recorded[row].patches, step});
  OutlierHold::Decision decision = hold.step(step, arrivals);
  held = std::move(decision.held);
  const auto& released = decision.released;
  for (size_t k = 0; k < std::max(released.size(), recorded.size() - end); ++k) {
    const TraceSample* got = end + k < recorded.size() ? &recorded[end + k] : nullptr;
    if (k >= released.size())
      return str("sample ", end + k, ": the quotas are met and the hold delivers no more, but the step records ",
                 describe(*got, header));
    const HeldDoc& want = released[k];
    const std::string held_doc = str("the held document of step ", want.since, ": source ",
                                     header.source_names.at(want.source), " cursor ", want.cursor);
    if (!got) return str("the hold delivers ", held_doc, " here; the step does not record it");
    if (got->bad != 0 || got->source != want.source || got->cursor != want.cursor || got->from_step != want.since ||
        got->positions != want.positions || got->patches != want.patches)
      return str("sample ", end + k, ": expected ", held_doc, ", recorded ", describe(*got, header), " of step ",
                 got->from_step);
  }
  return std::nullopt;
}

// The first piece where `expected` and `recorded` differ, as a divergence.
std::optional<Divergence> compare_pieces(const Config& config, uint64_t step, const StepRecord& expected,
                                         const StepRecord& recorded) {
  const size_t common = std::min(expected.pieces.size(), recorded.pieces.size());
  for (size_t i = 0; i < common; ++i) {
    if (expected.pieces[i] == recorded.pieces[i]) continue;
    const TracePiece& want = expected.pieces[i];
    const TracePiece& got = recorded.pieces[i];
    return divergence_at(config, step, static_cast<int>(std::min(want.group, got.group)),
                         str("piece ", i, ": expected ", describe(want), ", recorded ", describe(got)));
  }
  if (expected.pieces.size() == recorded.pieces.size()) return std::nullopt;
  const bool more_recorded = recorded.pieces.size() > common;
  const TracePiece& extra = more_recorded ? recorded.pieces[common] : expected.pieces[common];
  return divergence_at(config, step, static_cast<int>(extra.group),
                       str("piece ", common, ": ", more_recorded ? "recorded but not expected: " : "expected but not recorded: ",
                           describe(extra)));
}

// The streams' orders of a checkpoint's state (keys, eras: changed_mix.h),
// each in its source's shuffle order.
std::vector<StreamOrder> stream_orders(const PlannerCheckpoint& state, const std::vector<ShuffleOrder>& shuffles) {
  std::vector<StreamOrder> orders;
  for (uint32_t s = 0; s < state.source_samples.size(); ++s) {
    const uint32_t key = state.stream_keys.empty() ? s : state.stream_keys[s];
    if (s < state.stream_eras.size() && !state.stream_eras[s].empty())
      orders.emplace_back(state.seed, key, state.stream_eras[s], shuffles.at(s));
    else
      orders.emplace_back(state.seed, key, state.source_samples[s], shuffles.at(s));
  }
  return orders;
}

// The state a trace that begins at `start`'s step continues from: `start`
// itself, or, when the trace's run resumed it under a changed mixture (the
// trace's configuration changes the checkpoint's mix), the state continued
// under it, as the run did (the trace's header has the data's fingerprint).
PlannerCheckpoint continued_start(const PlannerCheckpoint& start, const Config& config, const TraceHeader& header) {
  if (start.seed != header.seed) throw ConfigError("the checkpoint is of another run (its seed differs from the trace's)");
  PlannerCheckpoint state = start;
  const ResumeChanges changes = resume_changes(start, config, header.data);
  if (changes.options_changed || changes.files_changed) {
    if (!changes.refused.empty())
      throw ConfigError(str("the checkpoint is of another run: ", changes.refused));
    std::vector<std::string> lines;
    state = continue_with_changed_mix(start, config, header.data, lines);
  }
  if (state.source_samples != header.source_samples)
    throw ConfigError("the checkpoint is of another run (its source sizes differ from the trace's)");
  return state;
}

}  // namespace

Config trace_config(const TraceHeader& header) {
  std::string path = (std::filesystem::temp_directory_path() / "msd-replay-XXXXXX.ini").string();
  const int fd = ::mkstemps(path.data(), 4);
  if (fd < 0) throw IoError(str("cannot create a temporary file for the trace's configuration: ", path));
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove{path};
  {
    std::ofstream out(path, std::ios::binary);
    out << header.config_ini;
    if (!out) throw IoError(str("cannot write ", path));
  }
  const std::string config_arg = "--config=" + path;
  const char* argv[] = {"msd-replay", config_arg.c_str()};
  Invocation invocation = parse_command_line(2, argv);
  Config config = std::move(invocation.config);
  config.config_path.clear();
  if (config.sources.size() != header.source_names.size() || config.job.seed != header.seed)
    throw ConfigError("the trace's configuration disagrees with its header (sources or seed)");
  // A run from before source.NAME.shuffle existed (its configuration never
  // names it) took the uniform order.
  if (header.config_ini.find("\nshuffle = ") == std::string::npos)
    for (SourceConfig& source : config.sources) source.shuffle = Shuffle::uniform;
  return config;
}

VerifyReport verify_trace(const TraceReader& trace, const std::optional<PlannerCheckpoint>& start) {
  const TraceHeader& header = trace.header();
  const Config config = trace_config(header);
  const CostModel cost = make_cost_model(config);
  const PackOptions pack = make_pack_options(config);
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<uint64_t> cursor(header.source_samples.size(), 0);
  // Each source's order over the files the run read, as the trace's data fingerprint records them.
  const std::vector<ShuffleOrder> shuffles = shuffle_orders(config, header.data);

  VerifyReport report;
  report.first_step = trace.first_step();
  if (trace.first_step() > 0) {
    if (!start)
      throw ConfigError(str("the trace begins at step ", trace.first_step(),
                            " (a resumed run): give the planner checkpoint of that step (--checkpoint)"));
    if (start->step != trace.first_step())
      throw ConfigError(str("the checkpoint is of step ", start->step, ", the trace begins at step ",
                            trace.first_step()));
  }
  std::vector<StreamOrder> orders;
  for (uint32_t s = 0; s < header.source_samples.size(); ++s)
    orders.emplace_back(header.seed, s, header.source_samples[s], shuffles.at(s));
  OutlierHold hold(pack.hold);
  if (start && start->step == trace.first_step()) {
    const PlannerCheckpoint state = continued_start(*start, config, header);
    mixer.restore(state.step, state.mixer_realized, state.mixer_origin_step, state.mixer_origin);
    cursor = state.consumed;
    orders = stream_orders(state, shuffles);
    hold.restore(state.held);
  }

  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step) {
    const StepRecord recorded = trace.step(step);
    const std::vector<uint32_t> quota = mixer.next();
    size_t consumed = 0;
    std::vector<bool> held;
    std::optional<std::string> what = replay_samples(header, quota, orders, cursor, recorded.samples, consumed);
    if (!what) what = replay_hold(header, step, recorded.samples, consumed, hold, held);
    if (what) {
      report.divergence = divergence_at(config, step, -1, *what);
      return report;
    }
    const std::vector<uint32_t> rows = delivered_rows(step, recorded.samples, held);
    const std::vector<BucketPlan> buckets = distribute_and_pack(plan_docs(recorded.samples, rows, cost), pack, cost);
    const StepRecord expected = make_step_record(step, recorded.samples, buckets, cost, rows);
    if (auto divergence = compare_pieces(config, step, expected, recorded)) {
      report.divergence = std::move(divergence);
      return report;
    }
    ++report.steps_checked;
  }
  return report;
}

void print_verify_report(const VerifyReport& report, std::ostream& out) {
  if (!report.divergence) {
    out << "verify: " << report.steps_checked << " steps from step " << report.first_step
        << " equal the re-plan from configuration and seed\n";
    return;
  }
  const Divergence& d = *report.divergence;
  auto list = [](const std::vector<int>& values) {
    std::string text;
    for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
  };
  out << "verify: first divergence at step " << d.step << " (" << report.steps_checked << " steps before it equal)\n"
      << "  data group: " << (d.group >= 0 ? std::to_string(d.group) : std::string("all (the step's samples)")) << "\n"
      << "  clients: " << list(d.clients) << "  (world ranks " << list(d.world_ranks) << ")\n"
      << "  " << d.what << "\n";
}

void print_client_step(const TraceReader& trace, int client, uint64_t step, std::ostream& out) {
  const TraceHeader& h = trace.header();
  const ClientPlaceTree tree(static_cast<int>(h.dp), static_cast<int>(h.pp), static_cast<int>(h.cp),
                             static_cast<int>(h.tp), trace_config(h).topology.order);
  if (client < 0 || client >= tree.size())
    throw ConfigError(str("--rank: client ", client, " is not in 0..", tree.size() - 1));
  if (step < trace.first_step() || step >= trace.end_step())
    throw ConfigError(str("--step: ", step, " is not in the trace (steps ", trace.first_step(), "..",
                          trace.end_step() - 1, ")"));
  const Place place = tree.place(client);
  const StepRecord record = trace.step(step);
  out << "step " << step << ", client " << client << " (dp " << place.dp << " pp " << place.pp << " cp " << place.cp
      << " tp " << place.tp << "): data group " << place.dp;
  if (h.cp > 1)
    out << "; as CP rank " << place.cp << " it holds chunks " << place.cp << " and " << 2 * h.cp - 1 - place.cp
        << " of 2*cp of each sequence";
  out << "\nmicro_batch,sequence,source,cursor,index,begin,length,cost\n";
  for (const auto& p : record.pieces) {
    if (p.group != static_cast<uint32_t>(place.dp)) continue;
    const TraceSample& s = record.samples[p.sample];
    out << p.micro_batch << ',' << p.sequence << ',' << h.source_names.at(s.source) << ',' << s.cursor << ','
        << s.index << ',' << p.begin << ',' << p.length << ',' << p.cost << '\n';
  }
}

void print_mix(const TraceReader& trace, std::ostream& out) {
  const TraceHeader& h = trace.header();
  const Config config = trace_config(h);
  const Schedule schedule = make_schedule(config);
  out << "step,source,samples,target_samples,positions,cumulative_share,cumulative_target_share\n";
  std::vector<uint64_t> total(h.source_names.size(), 0);
  std::vector<double> total_target(h.source_names.size(), 0.0);
  uint64_t all = 0;
  double all_target = 0.0;
  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step) {
    const StepRecord record = trace.step(step);
    std::vector<uint64_t> samples(h.source_names.size(), 0), positions(h.source_names.size(), 0);
    for (const auto& s : record.samples) {
      // What the step consumed: not the hold's documents of earlier steps.
      if (s.bad != 0 || s.source >= samples.size() || s.from_step != step) continue;
      ++samples[s.source];
      positions[s.source] += s.positions;
    }
    const std::vector<double> weights = schedule.weights(step);
    for (size_t s = 0; s < samples.size(); ++s) {
      const double target = config.job.global_batch * weights[s];
      total[s] += samples[s];
      total_target[s] += target;
      all += samples[s];
      all_target += target;
    }
    for (size_t s = 0; s < samples.size(); ++s) {
      char line[256];
      std::snprintf(line, sizeof line, "%llu,%s,%llu,%.4f,%llu,%.6f,%.6f\n", static_cast<unsigned long long>(step),
                    h.source_names[s].c_str(), static_cast<unsigned long long>(samples[s]),
                    config.job.global_batch * weights[s], static_cast<unsigned long long>(positions[s]),
                    all ? static_cast<double>(total[s]) / static_cast<double>(all) : 0.0,
                    all_target > 0 ? total_target[s] / all_target : 0.0);
      out << line;
    }
  }
}

void print_balance(const TraceReader& trace, std::ostream& out) {
  const TraceHeader& h = trace.header();
  out << "step,dp_max_cost,dp_mean_cost,dp_max_over_mean,worst_micro_batch,micro_batch_max_over_mean\n";
  double sum_ratio = 0.0, worst_ratio = 0.0, sum_mb = 0.0, worst_mb = 0.0;
  uint64_t steps = 0;
  auto ratio = [](double max, double mean) { return mean > 0 ? max / mean : 1.0; };
  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step) {
    const StepRecord record = trace.step(step);
    std::vector<double> group_cost(h.dp, 0.0);
    std::vector<std::vector<double>> mb_cost(h.micro_batches, std::vector<double>(h.dp, 0.0));
    for (const auto& p : record.pieces) {
      if (p.group >= h.dp || p.micro_batch >= h.micro_batches) continue;
      group_cost[p.group] += p.cost;
      mb_cost[p.micro_batch][p.group] += p.cost;
    }
    const double max = *std::max_element(group_cost.begin(), group_cost.end());
    double mean = 0.0;
    for (double c : group_cost) mean += c / h.dp;
    double mb_ratio = 1.0;
    uint32_t mb_worst = 0;
    for (uint32_t m = 0; m < h.micro_batches; ++m) {
      double mb_mean = 0.0;
      for (double c : mb_cost[m]) mb_mean += c / h.dp;
      const double r = ratio(*std::max_element(mb_cost[m].begin(), mb_cost[m].end()), mb_mean);
      if (r > mb_ratio) mb_ratio = r, mb_worst = m;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%llu,%.6g,%.6g,%.4f,%u,%.4f\n", static_cast<unsigned long long>(step), max, mean,
                  ratio(max, mean), mb_worst, mb_ratio);
    out << line;
    sum_ratio += ratio(max, mean);
    worst_ratio = std::max(worst_ratio, ratio(max, mean));
    sum_mb += mb_ratio;
    worst_mb = std::max(worst_mb, mb_ratio);
    ++steps;
  }
  if (steps == 0) return;
  char line[256];
  std::snprintf(line, sizeof line, "# %llu steps: dp max/mean cost mean %.4f worst %.4f; micro-batch max/mean mean %.4f worst %.4f\n",
                static_cast<unsigned long long>(steps), sum_ratio / steps, worst_ratio, sum_mb / steps, worst_mb);
  out << line;
}

void export_trace(const TraceReader& trace, const std::string& format, std::ostream& out) {
  if (format != "csv" && format != "json") throw ConfigError(str("--format: '", format, "' (expected csv or json)"));
  const TraceHeader& h = trace.header();
  const bool csv = format == "csv";
  if (csv) out << "step,group,micro_batch,sequence,sample,source,source_name,cursor,index,begin,length,cost,from_step\n";
  else out << "[";
  bool first = true;
  for (uint64_t step = trace.first_step(); step < trace.end_step(); ++step) {
    const StepRecord record = trace.step(step);
    for (const auto& p : record.pieces) {
      const TraceSample& s = record.samples[p.sample];
      const std::string& name = h.source_names.at(s.source);
      if (csv) {
        char cost[64];
        std::snprintf(cost, sizeof cost, "%.17g", p.cost);
        out << step << ',' << p.group << ',' << p.micro_batch << ',' << p.sequence << ',' << p.sample << ','
            << s.source << ',' << name << ',' << s.cursor << ',' << s.index << ',' << p.begin << ',' << p.length << ','
            << cost << ',' << s.from_step << '\n';
      } else {
        JsonWriter json;  // one object per line
        json.begin_object()
            .value("step", step)
            .value("group", p.group)
            .value("micro_batch", p.micro_batch)
            .value("sequence", p.sequence)
            .value("sample", p.sample)
            .value("source", s.source)
            .value("source_name", name)
            .value("cursor", s.cursor)
            .value("index", s.index)
            .value("begin", p.begin)
            .value("length", p.length)
            .exact_value("cost", p.cost)
            .value("from_step", s.from_step)
            .end_object();
        out << (first ? "\n" : ",\n") << json.str();
      }
      first = false;
    }
  }
  if (!csv) out << "\n]\n";
}

// --- integrity and data (verify_command) -----------------------------------------

DataCheck check_trace_data(const TraceReader& trace) {
  DataCheck check;
  const Config config = trace_config(trace.header());
  DataFingerprint now;
  try {
    now = fingerprint_data(config.sources, config.tokenizer);
  } catch (const Error& e) {
    check.not_checked = e.what();
    return check;
  }
  check.checked = true;
  check.differences = fingerprint_differences(trace.header().data, now, config.sources);
  return check;
}

int verify_command(const std::string& trace_path, std::string checkpoint_path, std::ostream& out) {
  if (auto changed = check_trace_integrity(trace_path)) {
    out << "verify: TAMPERED: " << trace_path << " was changed after it was written\n  " << *changed << "\n";
    return kVerifyTampered;
  }
  const TraceReader trace(trace_path);
  std::string option = "--checkpoint";
  if (checkpoint_path.empty() && trace.first_step() > 0) {
    const auto parent = std::filesystem::path(trace_path).parent_path().string();
    checkpoint_path = planner_checkpoint_path(parent.empty() ? "." : parent, trace.first_step());
    option = str("--checkpoint (default for a trace that begins at step ", trace.first_step(), ")");
  }
  std::optional<PlannerCheckpoint> start;
  if (!checkpoint_path.empty()) {
    require_file_kind(checkpoint_path, FileKind::planner_checkpoint, option);
    if (auto changed = check_planner_checkpoint_integrity(checkpoint_path)) {
      out << "verify: TAMPERED: " << checkpoint_path << " was changed after it was written\n  " << *changed << "\n";
      return kVerifyTampered;
    }
    start = read_planner_checkpoint(checkpoint_path);
  }
  out << "verify: integrity: the trace" << (start ? " and the checkpoint" : "") << " match their checksums\n";
  const VerifyReport report = verify_trace(trace, start);
  print_verify_report(report, out);
  const DataCheck data = check_trace_data(trace);
  if (!data.checked) {
    out << "verify: data: not checked (" << data.not_checked << ")\n";
  } else if (data.differences.empty()) {
    out << "verify: data: the data files and vocabulary match the trace's fingerprint\n";
  } else {
    out << "verify: data: CHANGED since the run:\n";
    for (const auto& d : data.differences) out << "  " << d << "\n";
  }
  if (!trace.closed())
    out << "verify: CUT: the run did not close the trace: it holds steps " << trace.first_step() << " up to "
        << trace.end_step() << " (exclusive; killed after its last flush, or still running)\n";
  if (report.divergence) return kVerifyDivergence;
  if (data.checked && !data.differences.empty()) return kVerifyDataChanged;
  return trace.closed() ? kVerifyIdentical : kVerifyCut;
}

}  // namespace msd
