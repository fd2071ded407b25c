#include "plan/cluster/simulate.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <ostream>
#include <random>
#include <tuple>
#include <time.h>

#include "common/error.h"
#include "common/json_writer.h"
#include "common/stats.h"

namespace msd {
namespace {

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

uint32_t data_parallel(const SimulateOptions& options) {
  if (options.dp > 0) return options.dp;
  const uint64_t replica = static_cast<uint64_t>(options.tp) * options.pp * options.cp;
  if (replica == 0 || options.gpus == 0) throw ConfigError("--gpus, --tp, --pp and --cp must be at least 1");
  if (options.gpus % replica != 0)
    throw ConfigError(str("--gpus ", options.gpus, " is not a multiple of tp*pp*cp = ", replica));
  return static_cast<uint32_t>(options.gpus / replica);
}

// Draws text lengths from a corpus_mix: a component by its share of
// documents (token share over mean length), then a log-normal length with
// that mean.
class CorpusLengths {
 public:
  explicit CorpusLengths(const std::vector<CorpusComponent>& mix) {
    std::vector<double> documents;
    for (const CorpusComponent& c : mix) {
      documents.push_back(c.token_share / c.mean_tokens);
      // A log-normal's mean is exp(mu + sigma^2 / 2); sigma 1.
      lengths_.emplace_back(std::log(c.mean_tokens) - 0.5, 1.0);
    }
    pick_ = std::discrete_distribution<size_t>(documents.begin(), documents.end());
  }
  double operator()(std::mt19937_64& rng) { return lengths_[pick_(rng)](rng); }

 private:
  std::discrete_distribution<size_t> pick_;
  std::vector<std::lognormal_distribution<double>> lengths_;
};

}  // namespace

const std::vector<uint32_t>& measured_lengths(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<uint32_t>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  std::ifstream in(path);
  if (!in) throw ConfigError(str("--lengths file:", path, ": cannot open it"));
  std::vector<uint32_t> lengths;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || value == 0 || value > UINT32_MAX || line.find_first_not_of(" \t\r", used) != std::string::npos)
      throw ConfigError(str(path, ":", number, ": '", line, "' is not a document length (a whole number > 0)"));
    lengths.push_back(static_cast<uint32_t>(value));
  }
  if (lengths.empty()) throw ConfigError(str("--lengths file:", path, ": holds no length"));
  return cache.emplace(path, std::move(lengths)).first->second;
}

std::vector<CorpusComponent> corpus_mix(const std::string& name, const std::string& what) {
  constexpr double kTokensPerKiB = 1024.0 / 4.0;
  if (name == "pile") {
    // Effective size (GiB, the weight) and mean document size (KiB).
    const std::vector<std::tuple<const char*, double, double>> table = {
        {"Pile-CC", 227.12, 4.33},        {"PubMed Central", 180.55, 30.55}, {"Books3", 151.44, 538.36},
        {"OpenWebText2", 125.54, 3.85},   {"ArXiv", 112.42, 46.61},          {"Github", 95.16, 5.25},
        {"FreeLaw", 76.73, 15.06},        {"StackExchange", 64.39, 2.16},    {"USPTO Backgrounds", 45.81, 4.08},
        {"PubMed Abstracts", 38.53, 1.30}, {"Gutenberg (PG-19)", 27.19, 398.73}, {"OpenSubtitles", 19.47, 30.48},
        {"Wikipedia (en)", 19.13, 1.11},  {"DM Mathematics", 15.49, 8.00},   {"Ubuntu IRC", 11.03, 545.48},
        {"BookCorpus2", 9.45, 369.87},    {"EuroParl", 9.17, 68.87},         {"HackerNews", 7.80, 4.92},
        {"YoutubeSubtitles", 7.47, 22.55}, {"PhilPapers", 4.76, 73.37},      {"NIH ExPorter", 3.79, 2.11},
        {"Enron Emails", 1.76, 1.78}};
    std::vector<CorpusComponent> mix;
    for (const auto& [component, gib, kib] : table) mix.push_back({component, gib, kib * kTokensPerKiB});
    return mix;
  }
  if (name == "llama")
    return {{"CommonCrawl", 67.0, 4.33 * kTokensPerKiB}, {"C4", 15.0, 4.33 * kTokensPerKiB},
            {"GitHub", 4.5, 5.25 * kTokensPerKiB},       {"Wikipedia", 4.5, 1.11 * kTokensPerKiB},
            {"Books", 4.5, 538.36 * kTokensPerKiB},      {"ArXiv", 2.5, 46.61 * kTokensPerKiB},
            {"StackExchange", 2.0, 2.16 * kTokensPerKiB}};
  throw ConfigError(str(what, ": '", name, "' is not a length distribution (pareto, pile, llama)"));
}

// Lengths: short web text is log-normal (median 600 tokens, sigma 1); long
// documents are Pareto from seq_len/4 with alpha 1.1 (a few run to many
// sequences; capped at 16 sequences); image-text is 64..1024 patches and a
// log-normal caption (median 40 tokens).
std::vector<PlanDoc> synthetic_step(const SimulateOptions& options, const CostModel& cost, uint64_t step) {
  std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ull + step);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::lognormal_distribution<double> web(std::log(600.0), 1.0);
  std::lognormal_distribution<double> caption(std::log(40.0), 0.6);
  std::uniform_int_distribution<uint32_t> patches(64, 1024);
  const double long_min = std::max(1.0, options.seq_len / 4.0);
  const double cap = 16.0 * options.seq_len;
  const uint64_t count = static_cast<uint64_t>(data_parallel(options)) * options.samples_per_gpu;
  const bool pareto = options.lengths == "pareto";
  const std::vector<uint32_t>* measured =
      options.lengths.starts_with("file:") ? &measured_lengths(options.lengths.substr(5)) : nullptr;
  CorpusLengths corpus(pareto || measured ? std::vector<CorpusComponent>{{"web", 1.0, 600.0}}
                                          : corpus_mix(options.lengths, "--lengths"));
  std::uniform_int_distribution<size_t> pick(0, measured ? measured->size() - 1 : 0);
  std::vector<PlanDoc> docs;
  docs.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    PlanDoc doc;
    doc.id = checked_cast<uint32_t>(i);
    const double kind = unit(rng);
    double length;
    const double long_share = pareto ? options.long_share : 0.0;
    if (kind < long_share) {
      length = long_min / std::pow(1.0 - unit(rng), 1.0 / 1.1);
    } else if (kind < long_share + options.image_share) {
      doc.fixed = std::min(patches(rng), options.seq_len - 1);
      length = doc.fixed + caption(rng);
    } else {
      length = pareto ? web(rng) : measured ? (*measured)[pick(rng)] : corpus(rng);
    }
    doc.positions = static_cast<uint32_t>(std::clamp(length, 1.0, cap));
    doc.positions = std::max(doc.positions, doc.fixed);
    doc.cost = cost.document(doc.positions, doc.fixed);
    docs.push_back(doc);
  }
  return docs;
}

PackOptions simulate_pack_options(const SimulateOptions& options, uint32_t dp) {
  PackOptions pack;
  pack.seq_len = options.seq_len;
  pack.dp = dp;
  pack.micro_batches = options.micro_batches;
  pack.long_docs = options.long_docs;
  pack.cp = options.cp;
  pack.pp = options.pp;
  pack.cuts = options.cuts;
  pack.variable_micro_batches = options.variable_micro_batches;
  pack.varlen = options.varlen || spreads(pack);
  pack.max_positions_per_micro_batch = options.max_positions_per_micro_batch;
  pack.hold.above = static_cast<uint32_t>(options.hold_above * options.seq_len);
  pack.hold.max_steps = options.hold_steps;
  pack.hold.release = std::max(1u, dp);
  pack.hold.last_step = options.steps > 0 ? options.steps - 1 : 0;
  return pack;
}

CostModel simulate_cost(const SimulateOptions& options) {
  CostModel cost = CostModel::from(options.model, options.cost_a);
  if (!std::isfinite(options.cost_micro_batch) || options.cost_micro_batch < 0.0)
    throw ConfigError("--cost-micro-batch: must be >= 0");
  cost.micro_batch = options.cost_micro_batch;
  return cost;
}

namespace {

// One method's figures over the run's steps.
struct MethodSteps {
  std::vector<double> ms, cpu_ms, imbalance, bound, pigeonhole, over_bound, micro, positions, seconds;
  uint64_t docs = 0, pieces = 0, megatron_pieces = 0;
};

void summarize(const MethodSteps& m, uint32_t steps, MethodReport& line) {
  line.ms_median = median(m.ms);
  line.ms_max = max_of(m.ms);
  line.cpu_ms_median = median(m.cpu_ms);
  line.cpu_ms_max = max_of(m.cpu_ms);
  line.imbalance_median = median(m.imbalance);
  line.imbalance_worst = max_of(m.imbalance);
  line.lower_bound_median = median(m.bound);
  line.lower_bound_worst = max_of(m.bound);
  line.pigeonhole_median = median(m.pigeonhole);
  line.pigeonhole_worst = max_of(m.pigeonhole);
  line.over_bound_median = median(m.over_bound);
  line.over_bound_worst = max_of(m.over_bound);
  line.micro_batch_median = median(m.micro);
  line.micro_batch_worst = max_of(m.micro);
  line.positions_median = median(m.positions);
  line.positions_worst = max_of(m.positions);
  line.step_seconds_median = median(m.seconds);
  line.pieces_per_step = static_cast<double>(m.pieces) / steps;
  line.megatron_pieces_per_step = static_cast<double>(m.megatron_pieces) / steps;
}

}  // namespace

SimulateReport simulate(const SimulateOptions& options) {
  using Clock = std::chrono::steady_clock;
  if (options.seq_len < 16) throw ConfigError("--seq-len must be at least 16");
  if (options.micro_batches == 0 || options.samples_per_gpu == 0 || options.steps == 0)
    throw ConfigError("--micro-batches, --samples-per-gpu and --steps must be at least 1");
  SimulateReport report;
  report.options = options;
  report.dp = data_parallel(options);
  const CostModel cost = simulate_cost(options);
  std::vector<std::vector<PlanDoc>> steps;
  for (uint32_t s = 0; s < options.steps; ++s) steps.push_back(synthetic_step(options, cost, s));
  PackOptions pack = simulate_pack_options(options, report.dp);
  pack.cp = 1;  // the balance without context parallelism (--compare models CP)
  if (pack.hold.enabled()) {
    // Ids unique over the run (in order, so each step's placement is the same).
    uint32_t next = 0;
    for (std::vector<PlanDoc>& step : steps)
      for (PlanDoc& doc : step) doc.id = next++;
    steps = hold_run(steps, pack.hold, &report.hold);
  }
  for (BalanceMethod method : options.methods) {
    pack.balance = method;
    MethodSteps m;
    MethodReport line;
    line.method = method;
    for (const std::vector<PlanDoc>& step_docs : steps) {
      const auto start = Clock::now();
      const double cpu_start = thread_cpu_ms();
      const PackedStep step = pack_step(step_docs, pack, cost);
      m.cpu_ms.push_back(thread_cpu_ms() - cpu_start);
      m.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      const PlanStats& stats = step.stats;
      m.imbalance.push_back(stats.imbalance);
      m.bound.push_back(stats.lower_bound);
      m.pigeonhole.push_back(stats.pigeonhole_bound);
      m.micro.push_back(stats.worst_micro_batch_imbalance);
      m.positions.push_back(stats.positions_imbalance);
      m.seconds.push_back(cost.seconds(stats.max_cost, options.tflops));
      m.over_bound.push_back(stats.max_over_bound);
      if (m.over_bound.back() <= 1.01) ++line.steps_on_target;
      line.max_cost_sum += stats.max_cost;
      line.max_micro_batches = std::max<uint64_t>(line.max_micro_batches, stats.max_micro_batches);
      m.docs += step_docs.size();
      m.megatron_pieces += stats.megatron_pieces;
      for (const BucketPlan& bucket : step.buckets)
        for (const MicroBatchPlan& mb : bucket.micro_batches)
          for (const PackedSequence& sequence : mb.sequences) m.pieces += sequence.pieces.size();
    }
    summarize(m, options.steps, line);
    report.docs_per_step = static_cast<double>(m.docs) / options.steps;
    report.pieces_per_step = line.pieces_per_step;
    report.methods.push_back(line);
  }
  return report;
}

namespace {

// What the placement options did (cuts, micro-batch counts, the hold), under the table.
void print_placement_options(const SimulateReport& report, std::ostream& out) {
  const SimulateOptions& o = report.options;
  char line[512];
  out << "sum of the heaviest rank's cost over the steps:";
  for (const MethodReport& m : report.methods) out << ' ' << option_name(m.method) << ' ' << m.max_cost_sum;
  out << '\n';
  if (o.cuts == Cuts::balance)
    for (const MethodReport& m : report.methods) {
      std::snprintf(line, sizeof line, "cuts %s: %.1f pieces per step, Megatron's cut of the same documents %.1f\n",
                    option_name(m.method), m.pieces_per_step, m.megatron_pieces_per_step);
      out << line;
    }
  if (o.variable_micro_batches)
    for (const MethodReport& m : report.methods)
      out << "variable micro-batches " << option_name(m.method) << ": at most " << m.max_micro_batches
          << " on a rank\n";
  if (o.hold_above > 0.0) {
    const HoldStats& h = report.hold;
    std::snprintf(line, sizeof line,
                  "outlier hold (above %.2f x seq_len, at most %u steps): %llu documents held, mean delay %.2f, "
                  "max %llu steps\n",
                  o.hold_above, o.hold_steps, static_cast<unsigned long long>(h.held), h.mean_delay(),
                  static_cast<unsigned long long>(h.max_delay));
    out << line;
  }
}

}  // namespace

void print_report(const SimulateReport& report, std::ostream& out) {
  const SimulateOptions& o = report.options;
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-plan simulate: %u DP ranks (%u GPUs, tp %u pp %u cp %u), seq_len %u, %u micro-batches, "
                "%.0f documents / %.0f pieces per step, %u steps, seed %llu\n",
                report.dp, o.dp > 0 ? report.dp * o.tp * o.pp * o.cp : o.gpus, o.tp, o.pp, o.cp, o.seq_len,
                o.micro_batches, report.docs_per_step, report.pieces_per_step, o.steps,
                static_cast<unsigned long long>(o.seed));
  out << line;
  out << "ms/step: wall time of a plan (median, worst); cpu ms: its thread CPU time (median). Median and\n"
         "worst over steps of: DP max/mean cost (padding included); lower bound / mean (padding-aware, bound.h);\n"
         "pigeonhole bound / mean; max over the bound; worst micro-batch index's max/mean cost\n"
         "over DP; DP max/mean positions. step s: the slowest rank's compute (median); on target: max within\n"
         "1% of the bound\n";
  std::snprintf(line, sizeof line, "%-15s %8s %8s %8s  %15s  %15s  %15s  %15s  %17s  %15s  %8s  %9s\n", "method",
                "ms/step", "ms max", "cpu ms", "DP max/mean", "lower bound", "pigeonhole", "max/bound", "micro-batch",
                "positions", "step s", "on target");
  out << line;
  for (const MethodReport& m : report.methods) {
    std::snprintf(line, sizeof line,
                  "%-15s %8.3f %8.3f %8.3f  %7.4f %7.4f  %7.4f %7.4f  %7.4f %7.4f  %7.4f %7.4f  %8.4f %8.4f  %7.4f %7.4f  "
                  "%8.3f  %4u/%-4u\n",
                  option_name(m.method), m.ms_median, m.ms_max, m.cpu_ms_median, m.imbalance_median, m.imbalance_worst,
                  m.lower_bound_median, m.lower_bound_worst, m.pigeonhole_median, m.pigeonhole_worst,
                  m.over_bound_median, m.over_bound_worst, m.micro_batch_median, m.micro_batch_worst,
                  m.positions_median, m.positions_worst, m.step_seconds_median, m.steps_on_target, o.steps);
    out << line;
  }
  print_placement_options(report, out);
}

std::string report_json(const SimulateReport& report) {
  const SimulateOptions& o = report.options;
  JsonWriter json;
  json.begin_object();
  json.value("dp", report.dp).value("gpus", o.gpus).value("tp", o.tp).value("pp", o.pp).value("cp", o.cp);
  json.value("seq_len", o.seq_len).value("micro_batches", o.micro_batches).value("steps", o.steps);
  json.value("seed", static_cast<uint64_t>(o.seed));
  json.value("docs_per_step", report.docs_per_step).value("pieces_per_step", report.pieces_per_step);
  json.begin_array("methods");
  for (const MethodReport& m : report.methods) {
    json.begin_object();
    json.value("method", option_name(m.method));
    json.value("ms_per_step_median", m.ms_median).value("ms_per_step_max", m.ms_max);
    json.value("cpu_ms_per_step_median", m.cpu_ms_median).value("cpu_ms_per_step_max", m.cpu_ms_max);
    json.value("dp_imbalance_median", m.imbalance_median).value("dp_imbalance_worst", m.imbalance_worst);
    json.value("lower_bound_median", m.lower_bound_median).value("lower_bound_worst", m.lower_bound_worst);
    json.value("pigeonhole_bound_median", m.pigeonhole_median).value("pigeonhole_bound_worst", m.pigeonhole_worst);
    json.value("max_over_bound_median", m.over_bound_median).value("max_over_bound_worst", m.over_bound_worst);
    json.value("micro_batch_imbalance_median", m.micro_batch_median);
    json.value("micro_batch_imbalance_worst", m.micro_batch_worst);
    json.value("positions_imbalance_median", m.positions_median).value("positions_imbalance_worst", m.positions_worst);
    json.value("step_seconds_median", m.step_seconds_median);
    json.value("steps_on_target", m.steps_on_target);
    json.value("max_cost_sum", m.max_cost_sum).value("max_micro_batches", m.max_micro_batches);
    json.value("pieces_per_step", m.pieces_per_step).value("megatron_pieces_per_step", m.megatron_pieces_per_step);
    json.end_object();
  }
  json.end_array();
  json.value("cuts", option_name(o.cuts)).value("variable_micro_batches", o.variable_micro_batches);
  json.begin_object("hold").value("above", o.hold_above).value("steps", o.hold_steps);
  json.value("held", report.hold.held).value("mean_delay", report.hold.mean_delay());
  json.value("max_delay", report.hold.max_delay).end_object();
  json.end_object();
  return json.str();
}

}  // namespace msd
