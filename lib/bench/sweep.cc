#include "bench/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "bench/launch.h"
#include "common/error.h"
#include "common/files.h"
#include "common/json_writer.h"

#ifndef MSD_TOOLS_DIR_DEFAULT
#define MSD_TOOLS_DIR_DEFAULT "tools"
#endif

namespace msd::bench {
namespace {

SweepMix find_mix(const std::string& name, const std::string& lengths_file) {
  for (const SweepMix& mix : sweep_mixes(lengths_file))
    if (mix.name == name) return mix;
  if (name == "measured") throw ConfigError("--mixes: 'measured' needs --lengths-file");
  throw ConfigError(str("--mixes: '", name, "' is not a mix (longtail_text, text_image, demo, pile, llama, measured)"));
}

// Documents per DP rank and step for options.sequences_per_rank sequences of
// tokens (SweepOptions), from the mix's mean positions on a pilot step.
uint32_t samples_per_gpu(const SweepOptions& options, uint32_t seq_len, const SweepMix& mix) {
  if (options.sequences_per_rank <= 0) return options.samples_per_gpu;
  SimulateOptions pilot;
  pilot.dp = 1;
  pilot.tp = 1;
  pilot.seq_len = seq_len;
  pilot.samples_per_gpu = 16384;
  pilot.seed = 999;
  pilot.lengths = mix.lengths;
  pilot.long_share = mix.long_share;
  pilot.image_share = mix.image_share;
  double positions = 0.0;
  const std::vector<PlanDoc> docs = synthetic_step(pilot, CostModel{}, 0);
  for (const PlanDoc& doc : docs) positions += doc.positions;
  const double mean = positions / static_cast<double>(docs.size());
  return static_cast<uint32_t>(std::max(1.0, std::round(options.sequences_per_rank * seq_len / mean)));
}

// The shape of a row.
struct RowShape {
  uint32_t seq_len = 0, dp = 0, pp = 1, cp = 1;
};

// A row's options for one seed; `samples` from samples_per_gpu.
SimulateOptions row_options(const SweepOptions& options, const RowShape& shape, const SweepMix& mix, uint32_t samples,
                            uint64_t seed) {
  SimulateOptions sim;
  sim.dp = shape.dp;
  sim.tp = options.tp;
  sim.pp = shape.pp;
  sim.cp = shape.cp;
  sim.seq_len = shape.seq_len;
  sim.samples_per_gpu = samples;
  sim.micro_batches = options.micro_batches_per_stage * shape.pp;
  sim.steps = options.steps;
  sim.seed = seed;
  sim.lengths = mix.lengths;
  sim.long_share = mix.long_share;
  sim.image_share = mix.image_share;
  return sim;
}

// A mode's evaluation by key: a baseline's mode name, or a placement's name.
using Evaluations = std::map<std::string, ModeEvaluation>;

// Evaluates `modes` (each with its key) under `placement`'s row shape, cost
// and options. Returns the calibration it placed by (probes == 0: analytic);
// `fit`, when given, is that calibration already made.
Calibration add_evaluations(Evaluations& out, SimulateOptions sim, CompareOptions compare,
                            const std::vector<std::pair<TrainingMode, std::string>>& modes,
                            const SweepPlacement& placement, std::optional<Calibration> fit = std::nullopt) {
  sim.varlen = placement.varlen;
  sim.cuts = placement.cuts;
  sim.variable_micro_batches = placement.variable_micro_batches;
  sim.hold_above = placement.hold_above;
  compare.modes.clear();
  for (const auto& [mode, key] : modes) compare.modes.push_back(mode);
  compare.calibrate = placement.calibrated;
  compare.calibration = fit;
  compare.calibration_seed = sim.seed + 1000;  // fitted on other steps than those judged
  const CompareReport report = compare_modes(sim, compare);
  for (size_t i = 0; i < modes.size(); ++i) out[modes[i].second] = report.modes.at(i);
  return report.calibration;
}

// The placements that are placed together: same row shape, cost and options.
bool same_options(const SweepPlacement& a, const SweepPlacement& b) {
  return a.varlen == b.varlen && a.calibrated == b.calibrated && a.cuts == b.cuts &&
         a.variable_micro_batches == b.variable_micro_batches && a.hold_above == b.hold_above &&
         a.cp_rows == b.cp_rows;
}

// Every evaluation one row and seed needs: the baselines with the placements
// of the default options (fixed rows, analytic cost) in one pass, then each
// other set of options (calibrated ones when asked, the first fit reused and
// returned in *calibration; variable-length rows under CP split per piece).
Evaluations evaluate_cell(const SimulateOptions& sim, const CompareOptions& compare, bool calibrated,
                          Calibration* calibration = nullptr) {
  Evaluations out;
  const SweepPlacement plain{"", TrainingMode::msd_greedy, false, false};
  std::vector<const SweepPlacement*> groups = {&plain};
  for (const SweepPlacement& p : sweep_placements())
    if (std::none_of(groups.begin(), groups.end(), [&](const SweepPlacement* g) { return same_options(*g, p); }))
      groups.push_back(&p);
  std::optional<Calibration> fit;
  for (const SweepPlacement* group : groups) {
    if ((group->calibrated && !calibrated) || (!group->cp_rows && sim.cp > 1)) continue;
    std::vector<std::pair<TrainingMode, std::string>> modes;
    if (group == &plain) {
      modes.push_back({TrainingMode::colocated_samples, training_mode_name(TrainingMode::colocated_samples)});
      for (TrainingMode mode : sweep_megatron_baselines())
        if (mode != TrainingMode::megatron_dynamic_cp || sim.cp > 1) modes.push_back({mode, training_mode_name(mode)});
    }
    for (const SweepPlacement& p : sweep_placements())
      if (same_options(*group, p)) modes.push_back({p.mode, p.name});
    const Calibration used = add_evaluations(out, sim, compare, modes, *group, group->calibrated ? fit : std::nullopt);
    if (group->calibrated && !fit) fit = used;
  }
  if (calibration && fit) *calibration = *fit;
  return out;
}

// The comparison's ratio in `cell`, when the cell has both sides.
std::optional<double> ratio(const Evaluations& cell, const SweepComparison& c) {
  if (!cell.count(c.mine) || !cell.count(c.theirs)) return std::nullopt;
  const ModeEvaluation& mine = cell.at(c.mine);
  const ModeEvaluation& theirs = cell.at(c.theirs);
  MSD_CHECK_EQ(mine.real_positions, theirs.real_positions);  // the same tokens,
  MSD_CHECK_EQ(mine.steps, theirs.steps);                    // in the same steps
  return theirs.tokens_per_s > 0 ? mine.tokens_per_s / theirs.tokens_per_s : 0.0;
}

void add_ratios(std::map<std::string, std::vector<double>>& ratios, const Evaluations& cell, bool calibrated) {
  for (const SweepComparison& c : sweep_comparisons()) {
    if (!calibrated && c.mine.starts_with("calibrated_")) continue;
    if (const std::optional<double> r = ratio(cell, c)) ratios[c.name].push_back(*r);
  }
}

SweepRow run_row(const SweepOptions& options, const RowShape& shape, const SweepMix& mix) {
  SweepRow row;
  row.seq_len = shape.seq_len;
  row.dp = shape.dp;
  row.pp = shape.pp;
  row.cp = shape.cp;
  row.mix = mix.name;
  row.samples_per_gpu = samples_per_gpu(options, shape.seq_len, mix);
  for (uint64_t seed = 1; seed <= options.seeds; ++seed) {
    Calibration fit;
    const Evaluations cell =
        evaluate_cell(row_options(options, shape, mix, row.samples_per_gpu, seed), options.compare, true, &fit);
    add_ratios(row.ratios, cell, true);
    if (seed != 1) continue;
    for (const auto& [key, e] : cell) {
      row.dp_max_over_mean[key] = e.dp_max_over_mean;
      row.padding_fraction[key] = e.padding_fraction;
      row.sequences_per_rank[key] = {e.sequences_per_rank_min, e.sequences_per_rank_max};
    }
    row.calibration = fit;
  }
  return row;
}

// The sensitivity rows at one reference row (the longest seq_len, the first
// dp and pp, longtail_text): the device model and the long share varied.
std::vector<SensitivityRow> run_sensitivity(const SweepOptions& options) {
  const uint32_t seq_len = *std::max_element(options.seq_lens.begin(), options.seq_lens.end());
  const SweepMix reference = find_mix("longtail_text", "");
  struct Variant {
    std::string name;
    double gemm = 1.0;
    uint32_t flash = 3;
    double long_share;
  };
  const std::vector<Variant> variants = {{"reference", 1.0, 3, reference.long_share},
                                         {"gemm_efficiency x0.8", 0.8, 3, reference.long_share},
                                         {"gemm_efficiency x1.2", 1.2, 3, reference.long_share},
                                         {"flash_attention 2", 1.0, 2, reference.long_share},
                                         {"long_share 0.05", 1.0, 3, 0.05},
                                         {"long_share 0.30", 1.0, 3, 0.30}};
  std::vector<SensitivityRow> out;
  for (const Variant& v : variants) {
    CompareOptions compare = options.compare;
    compare.gemm_efficiency_scale = v.gemm;
    compare.flash_attention = v.flash;
    SweepMix mix = reference;
    mix.long_share = v.long_share;
    std::map<std::string, std::vector<double>> ratios;
    const RowShape shape{seq_len, options.dps.front(), options.pps.front(), 1};
    const uint32_t samples = samples_per_gpu(options, seq_len, mix);
    for (uint64_t seed = 1; seed <= options.seeds; ++seed)
      add_ratios(ratios, evaluate_cell(row_options(options, shape, mix, samples, seed), compare, false), false);
    SensitivityRow row{v.name, {}};
    for (const auto& [name, values] : ratios) row.summary[name] = summarize(values, options.resamples);
    out.push_back(std::move(row));
  }
  return out;
}

const char* shape_name(bool varlen) { return varlen ? "varlen" : "fixed"; }

std::string rows_of(const SweepComparison& c) {
  return str(shape_name(c.mine_varlen), " over ", shape_name(c.theirs_varlen));
}

void write_summary(JsonWriter& w, const std::string& key, const Summary& s) {
  w.begin_object(key).value("geomean", s.geomean).value("n", s.n);
  w.begin_array("ci95").value("", s.low).value("", s.high).end_array();
  w.end_object();
}

// One comparison's summaries as "key": its row shapes, the cp 1 rows'
// geomean, n and ci95, then seq_len_32k_and_above and context_parallel.
void write_comparison(JsonWriter& w, const std::string& key, const SweepComparison& c, const SweepReport& report) {
  if (!report.overall.count(c.name) && !report.context_parallel.count(c.name)) return;
  w.begin_object(key).value("rows", rows_of(c));
  if (report.overall.count(c.name)) {
    const Summary& s = report.overall.at(c.name);
    w.value("geomean", s.geomean).value("n", s.n);
    w.begin_array("ci95").value("", s.low).value("", s.high).end_array();
  }
  if (report.long_context.count(c.name)) write_summary(w, "seq_len_32k_and_above", report.long_context.at(c.name));
  if (report.context_parallel.count(c.name)) write_summary(w, "context_parallel", report.context_parallel.at(c.name));
  w.end_object();
}

}  // namespace

std::vector<SweepMix> sweep_mixes(const std::string& lengths_file) {
  std::vector<SweepMix> mixes = {{"longtail_text", "pareto", 0.15, 0.0},
                                 {"text_image", "pareto", 0.15, 0.4},
                                 {"demo", "pareto", 0.3, 0.2},
                                 {"pile", "pile", 0.0, 0.0},
                                 {"llama", "llama", 0.0, 0.0}};
  if (!lengths_file.empty()) mixes.push_back({"measured", "file:" + lengths_file, 0.0, 0.0});
  return mixes;
}

const std::vector<SweepPlacement>& sweep_placements() {
  using M = TrainingMode;
  static const std::vector<SweepPlacement> placements = {
      {"msd_greedy", M::msd_greedy, false, false},
      {"msd_tokens", M::msd_tokens, false, false},
      {"msd_greedy_varlen", M::msd_greedy, true, false, Cuts::whole, false, 0.0, false},
      {"msd_greedy_cut_vmb", M::msd_greedy, true, false, Cuts::balance, true},
      {"msd_greedy_cut_vmb_hold", M::msd_greedy, true, false, Cuts::balance, true, kComparedHoldAbove},
      {"calibrated_msd_greedy", M::msd_greedy, false, true},
      {"calibrated_msd_greedy_varlen", M::msd_greedy, true, true, Cuts::whole, false, 0.0, false},
  };
  return placements;
}

const std::vector<TrainingMode>& sweep_megatron_baselines() {
  static const std::vector<TrainingMode> baselines = {TrainingMode::megatron_docmask, TrainingMode::megatron,
                                                      TrainingMode::megatron_dp_balanced,
                                                      TrainingMode::megatron_dynamic_cp};
  return baselines;
}

const std::vector<SweepComparison>& sweep_comparisons() {
  static const std::vector<SweepComparison> comparisons = [] {
    std::vector<SweepComparison> out;
    auto baseline = [](TrainingMode mode) { return std::pair{std::string(training_mode_name(mode)), varlen_rows(mode, false)}; };
    for (const SweepPlacement& p : sweep_placements())
      for (TrainingMode mode : sweep_megatron_baselines()) {
        const auto [theirs, varlen] = baseline(mode);
        out.push_back({p.name + "_over_" + theirs, p.name, theirs, p.varlen, varlen});
      }
    using M = TrainingMode;
    for (const auto& [mine, theirs] : {std::pair{M::megatron_docmask, M::megatron},
                                       std::pair{M::megatron_dp_balanced, M::megatron_docmask},
                                       std::pair{M::megatron_dynamic_cp, M::megatron_dp_balanced}}) {
      const auto [a, a_varlen] = baseline(mine);
      const auto [b, b_varlen] = baseline(theirs);
      out.push_back({a + "_over_" + b, a, b, a_varlen, b_varlen});
    }
    out.push_back({"msd_greedy_over_colocated_samples", "msd_greedy", "colocated_samples", false, false});
    return out;
  }();
  return comparisons;
}

double geomean(const std::vector<double>& ratios) {
  if (ratios.empty()) return 0.0;
  double logs = 0.0;
  for (double r : ratios) {
    MSD_CHECK_LT(0.0, r);
    logs += std::log(r);
  }
  return std::exp(logs / static_cast<double>(ratios.size()));
}

Summary summarize(const std::vector<double>& ratios, uint32_t resamples) {
  Summary s;
  s.n = ratios.size();
  s.geomean = s.low = s.high = geomean(ratios);
  if (ratios.empty() || resamples == 0) return s;
  std::vector<double> logs;
  for (double r : ratios) logs.push_back(std::log(r));
  auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  std::mt19937_64 rng(20261202);
  std::uniform_int_distribution<size_t> pick(0, logs.size() - 1);
  std::vector<double> means, sample(logs.size());
  for (uint32_t b = 0; b < resamples; ++b) {
    for (double& x : sample) x = logs[pick(rng)];
    means.push_back(mean(sample));
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double q) { return std::exp(means[static_cast<size_t>(q * static_cast<double>(means.size() - 1))]); };
  s.low = at(0.025);
  s.high = at(0.975);
  return s;
}

namespace {

// Every row's shape: seq_len x dp x mix x pp, then the CP rows (cp x
// cp_seq_len x mix at the first dp, pp 1), with its mix.
std::vector<std::pair<RowShape, SweepMix>> row_shapes(const SweepOptions& options, const std::vector<SweepMix>& mixes) {
  std::vector<std::pair<RowShape, SweepMix>> rows;
  for (uint32_t seq_len : options.seq_lens)
    for (uint32_t dp : options.dps)
      for (const SweepMix& mix : mixes)
        for (uint32_t pp : options.pps) rows.push_back({{seq_len, dp, pp, 1}, mix});
  for (uint32_t cp : options.cps)
    for (uint32_t seq_len : options.cp_seq_lens)
      for (const SweepMix& mix : mixes) rows.push_back({{seq_len, options.dps.front(), 1, cp}, mix});
  return rows;
}

// The placement of the highest geometric mean over kBestChosenOver over
// every (row, seed) of both row kinds; one missing from some row cannot be best.
std::string best_placement(const std::map<std::string, std::vector<double>>& cp1,
                           const std::map<std::string, std::vector<double>>& cp_rows) {
  std::vector<std::pair<std::string, std::vector<double>>> pooled;
  size_t most = 0;
  for (const SweepPlacement& p : sweep_placements()) {
    const std::string name = str(p.name, "_over_", training_mode_name(kBestChosenOver));
    std::vector<double> ratios;
    for (const auto* kind : {&cp1, &cp_rows})
      if (kind->count(name)) ratios.insert(ratios.end(), kind->at(name).begin(), kind->at(name).end());
    most = std::max(most, ratios.size());
    pooled.emplace_back(p.name, std::move(ratios));
  }
  std::string best;
  double best_mean = 0.0;
  for (const auto& [name, ratios] : pooled) {
    if (ratios.empty() || ratios.size() < most) continue;
    if (const double mean = geomean(ratios); best.empty() || mean > best_mean) {
      best = name;
      best_mean = mean;
    }
  }
  return best;
}

void check_options(const SweepOptions& options) {
  if (options.seq_lens.empty() || options.dps.empty() || options.pps.empty() || options.mixes.empty())
    throw ConfigError("--seq-lens, --dps, --pps and --mixes need a value each");
  if (options.steps == 0 || options.seeds == 0 || options.samples_per_gpu == 0 || options.micro_batches_per_stage == 0)
    throw ConfigError("--steps, --seeds, --samples-per-gpu and --micro-batches-per-stage must be at least 1");
  for (uint32_t cp : options.cps) {
    PackOptions pack;
    pack.dp = options.dps.front();
    pack.cp = cp;
    check_mode(TrainingMode::megatron_dynamic_cp, pack, "--cps");
    for (uint32_t seq_len : options.cp_seq_lens)
      if (seq_len % (2 * cp) != 0) throw ConfigError(str("--cp-seq-lens: ", seq_len, " is not divisible by 2 x ", cp));
  }
}

}  // namespace

SweepReport run_sweep(const SweepOptions& options) {
  check_options(options);
  std::vector<SweepMix> mixes;
  for (const std::string& name : options.mixes) mixes.push_back(find_mix(name, options.lengths_file));
  if (!options.lengths_file.empty()) measured_lengths(options.lengths_file);  // its errors, before any work
  compare_device_model(options.compare);  // its checks, before any work
  SweepReport report;
  report.options = options;
  std::map<std::string, std::vector<double>> all, long_context, context_parallel;
  const std::vector<std::pair<RowShape, SweepMix>> shapes = row_shapes(options, mixes);
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [shape, mix] : shapes) {
    report.rows.push_back(run_row(options, shape, mix));
    if (options.progress)
      std::fprintf(stderr, "msd-bench sweep: row %zu/%zu (seq_len %u, dp %u, pp %u, cp %u, %s) done at %.0f s\n",
                   report.rows.size(), shapes.size(), shape.seq_len, shape.dp, shape.pp, shape.cp, mix.name.c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (const auto& [name, values] : report.rows.back().ratios) {
      auto& into = shape.cp > 1 ? context_parallel[name] : all[name];
      into.insert(into.end(), values.begin(), values.end());
      if (shape.cp == 1 && shape.seq_len >= 32768)
        long_context[name].insert(long_context[name].end(), values.begin(), values.end());
    }
  }
  for (const auto& [name, values] : all) report.overall[name] = summarize(values, options.resamples);
  for (const auto& [name, values] : long_context) report.long_context[name] = summarize(values, options.resamples);
  for (const auto& [name, values] : context_parallel)
    report.context_parallel[name] = summarize(values, options.resamples);
  report.best = best_placement(all, context_parallel);
  if (options.sensitivity) report.sensitivity = run_sensitivity(options);
  return report;
}

namespace {

void write_row(JsonWriter& w, const SweepRow& row) {
  w.begin_object();
  w.value("seq_len", row.seq_len).value("dp", row.dp).value("pp", row.pp).value("cp", row.cp).value("mix", row.mix);
  w.value("samples_per_gpu", row.samples_per_gpu);
  w.begin_object("comparisons");
  for (const auto& [name, values] : row.ratios) {
    w.begin_object(name).value("geomean", geomean(values));
    w.value("min", *std::min_element(values.begin(), values.end()));
    w.value("max", *std::max_element(values.begin(), values.end())).end_object();
  }
  w.end_object();
  for (const auto& [key, values] : {std::pair{"dp_max_over_mean", &row.dp_max_over_mean},
                                    std::pair{"padding_fraction", &row.padding_fraction}}) {
    w.begin_object(key);
    for (const auto& [mode, x] : *values) w.value(mode, x);
    w.end_object();
  }
  w.begin_object("sequences_per_rank");
  for (const auto& [mode, range] : row.sequences_per_rank)
    w.begin_object(mode).value("min", range.first).value("max", range.second).end_object();
  w.end_object();
  write_cost_model(w, calibrated(CostModel{}, row.calibration), row.calibration);
  w.end_object();
}

}  // namespace

std::string sweep_json(const SweepReport& report) {
  const SweepOptions& o = report.options;
  JsonWriter w;
  w.begin_object();
  w.value("model", o.compare.model_preset).value("device", o.compare.device_preset);
  w.value("tp", o.tp).value("sequences_per_rank", o.sequences_per_rank);
  w.value("seeds", o.seeds).value("steps_per_row", o.steps).value("bootstrap_resamples", o.resamples);
  w.value("planner_cost", "analytic (headline); calibrated_*: fitted per row on another seed's steps");
  w.begin_array("rows");
  for (const SweepRow& row : report.rows) write_row(w, row);
  w.end_array();
  w.begin_object("comparisons");
  for (const SweepComparison& c : sweep_comparisons()) write_comparison(w, c.name, c, report);
  w.end_object();
  // msd's best placement against every baseline (the aims' comparisons).
  w.begin_object("best").value("placement", report.best);
  w.value("chosen_by", str("the highest geometric mean over ", training_mode_name(kBestChosenOver),
                           " over every row and seed"));
  for (const SweepComparison& c : sweep_comparisons())
    if (!report.best.empty() && c.mine == report.best && c.theirs.starts_with("megatron"))
      write_comparison(w, "best_over_" + c.theirs, c, report);
  w.end_object();
  w.begin_array("sensitivity");
  for (const SensitivityRow& row : report.sensitivity) {
    w.begin_object().value("name", row.name).begin_object("comparisons");
    for (const auto& [name, s] : row.summary) write_summary(w, name, s);
    w.end_object().end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

std::string sweep_csv(const SweepReport& report) {
  std::ostringstream out;
  out << "seq_len,dp,pp,cp,mix";
  for (const SweepComparison& c : sweep_comparisons()) out << ',' << c.name;
  out << '\n';
  for (const SweepRow& row : report.rows) {
    out << row.seq_len << ',' << row.dp << ',' << row.pp << ',' << row.cp << ',' << row.mix;
    for (const SweepComparison& c : sweep_comparisons()) {
      out << ',';
      if (row.ratios.count(c.name)) out << geomean(row.ratios.at(c.name));
    }
    out << '\n';
  }
  return out.str();
}

namespace {

// The text table's columns: the headline comparisons, short.
const std::pair<const char*, const char*> kColumns[] = {
    {"msd_greedy_over_megatron_docmask", "gr/docm"},
    {"msd_greedy_over_megatron", "gr/meg"},
    {"msd_greedy_over_megatron_dp_balanced", "gr/dpbal"},
    {"msd_greedy_varlen_over_megatron_dp_balanced", "grV/dpbal"},
    {"msd_greedy_cut_vmb_over_megatron_docmask", "cv/docm"},
    {"msd_greedy_cut_vmb_over_megatron_dynamic_cp", "cv/dyncp"},
    {"msd_greedy_over_megatron_dynamic_cp", "gr/dyncp"},
    {"msd_tokens_over_megatron_docmask", "tok/docm"},
    {"msd_greedy_over_colocated_samples", "gr/col"},
    {"calibrated_msd_greedy_over_megatron_docmask", "cal/docm"},
};

// The summaries of `names` (every comparison when empty) that `summaries` holds.
void write_summaries(const std::map<std::string, Summary>& summaries, std::ostream& out,
                     const std::vector<std::string>& names = {}) {
  char line[256];
  for (const SweepComparison& c : sweep_comparisons()) {
    if (!summaries.count(c.name)) continue;
    if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    const Summary& s = summaries.at(c.name);
    std::snprintf(line, sizeof line, "    %-50s %-16s %6.3fx  [%.3f, %.3f]  n=%llu\n", c.name.c_str(),
                  rows_of(c).c_str(), s.geomean, s.low, s.high, static_cast<unsigned long long>(s.n));
    out << line;
  }
}

void write_rows(const SweepReport& report, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "  %7s %4s %2s %2s %-13s %9s", "seq_len", "dp", "pp", "cp", "mix", "docs/rank");
  out << line;
  for (const auto& [name, title] : kColumns) {
    std::snprintf(line, sizeof line, " %10s", title);
    out << line;
  }
  out << '\n';
  for (const SweepRow& row : report.rows) {
    std::snprintf(line, sizeof line, "  %7u %4u %2u %2u %-13s %9u", row.seq_len, row.dp, row.pp, row.cp,
                  row.mix.c_str(), row.samples_per_gpu);
    out << line;
    for (const auto& [name, title] : kColumns) {
      if (row.ratios.count(name))
        std::snprintf(line, sizeof line, " %9.3fx", geomean(row.ratios.at(name)));
      else
        std::snprintf(line, sizeof line, " %10s", "-");
      out << line;
    }
    out << '\n';
  }
}

// msd's best placement against each Megatron baseline: cp 1 rows, >= 32k, CP rows.
void write_best(const SweepReport& report, std::ostream& out) {
  if (report.best.empty()) return;
  out << "  msd's best placement (the highest geometric mean over " << training_mode_name(kBestChosenOver)
      << " over every row and seed): " << report.best << "\n";
  char line[256];
  auto cell = [&](const std::map<std::string, Summary>& summaries, const std::string& name) {
    if (!summaries.count(name)) return std::string("-");
    const Summary& s = summaries.at(name);
    std::snprintf(line, sizeof line, "%.3fx [%.3f, %.3f]", s.geomean, s.low, s.high);
    return std::string(line);
  };
  std::snprintf(line, sizeof line, "    %-34s %-24s %-24s %-24s\n", "", "cp 1 rows", "cp 1, seq_len >= 32k",
                "CP rows (cp > 1)");
  out << line;
  for (const SweepComparison& c : sweep_comparisons()) {
    if (c.mine != report.best || !c.theirs.starts_with("megatron")) continue;
    const std::string name = "best_over_" + c.theirs;
    std::snprintf(line, sizeof line, "    %-34s %-24s %-24s %-24s\n", name.c_str(), cell(report.overall, c.name).c_str(),
                  cell(report.long_context, c.name).c_str(), cell(report.context_parallel, c.name).c_str());
    out << line;
  }
}

}  // namespace

void write_sweep_text(const SweepReport& report, std::ostream& out) {
  const SweepOptions& o = report.options;
  out << "msd-bench sweep: tokens/s ratios on the device model (" << o.compare.model_preset << " on "
      << o.compare.device_preset << ", tp " << o.tp << ", steps of about " << o.sequences_per_rank
      << " sequences of tokens per DP rank: docs/rank below), " << o.seeds << " seeds x " << o.steps
      << " steps per row; geometric means over seeds\n"
      << "  planner cost: analytic; cal: calibrated per row on another seed's steps timed on the device model\n"
      << "  baselines: docm = megatron_docmask (fixed rows, attention per document), meg = megatron (fixed rows, "
         "causal over each row), dpbal = megatron_dp_balanced (varlen), dyncp = megatron_dynamic_cp (varlen, CP "
         "rows), col = colocated_samples (the published system's baseline); gr = msd_greedy, grV = in varlen rows, "
         "cv = msd_greedy_cut_vmb (cuts and variable micro-batch counts, varlen rows, THD under CP), tok = "
         "msd_tokens\n";
  write_rows(report, out);
  out << "  cp 1 rows, all seeds (geometric mean [95% bootstrap interval]):\n";
  write_summaries(report.overall, out);
  if (!report.long_context.empty()) {
    out << "  cp 1 rows, seq_len >= 32k:\n";
    write_summaries(report.long_context, out);
  }
  if (!report.context_parallel.empty()) {
    out << "  context-parallel rows (cp > 1):\n";
    write_summaries(report.context_parallel, out);
  }
  write_best(report, out);
  std::vector<std::string> headline;
  for (const auto& [name, title] : kColumns) headline.push_back(name);
  for (const SensitivityRow& row : report.sensitivity) {
    out << "  sensitivity, " << row.name << ":\n";
    write_summaries(row.summary, out, headline);
  }
  out << "  published (docs/evaluation.md): WLB-LLM 1.23x over Megatron-style fixed-length packing; Megatron's "
         "dynamic CP 1.21-1.50x over its dp_balanced\n";
}

}  // namespace msd::bench

namespace msd::bench {

void write_sweep_files(const SweepReport& report, const std::string& csv, const std::string& png) {
  const std::string csv_path = !csv.empty() ? csv : png + ".csv";
  {
    std::ofstream out(csv_path);
    out << sweep_csv(report);
    if (!out) throw IoError(str("cannot write ", csv_path));
  }
  if (png.empty()) return;
  const std::string script = std::string(MSD_TOOLS_DIR_DEFAULT) + "/plot_sweep.py";
  const std::string log = png + ".log";
  const int rc = run_command({"/usr/bin/python3", script, csv_path, png}, log);
  if (rc != 0) throw IoError(str("plotting ", png, " failed (exit code ", rc, "); see ", log));
  if (csv.empty()) std::remove(csv_path.c_str());
}

}  // namespace msd::bench
