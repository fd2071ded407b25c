// Reads the job configuration: an INI file (--config) plus --section.key=value
// overrides, through Boost.Program_options. Every value is taken as a string
// and converted here rather than by program_options, so that every error names
// the option (and the file) a user has to fix.
//
// [source.NAME] options depend on mix.sources, so parsing takes two passes: a
// tolerant one that only learns --config and mix.sources, then a strict one
// with source.NAME.* registered for exactly those names.
#include "msd/config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>

#include "common/error.h"

namespace po = boost::program_options;

namespace msd {
namespace {

constexpr const char* kUsageLine = "usage: msd-run [--config FILE] [--section.key=value ...] [options]";

enum class Origin { file, command_line };

// One option's value as the user wrote it, and where.
struct Setting {
  std::string key;  // "job.seq_len" (aliases already mapped to their key)
  std::string text;
  Origin origin = Origin::file;
};

struct ParseContext {
  std::string config_name;             // the --config argument as given
  std::filesystem::path config_dir;    // absolute directory of that file
  std::filesystem::path working_dir;   // for command-line paths
};

std::string where(const Setting& setting, const ParseContext& context) {
  return setting.origin == Origin::file ? str("in ", context.config_name) : std::string("on the command line");
}

[[noreturn]] void bad_value(const Setting& setting, const ParseContext& context, const std::string& expected) {
  throw ConfigError(str(setting.key, ": '", setting.text, "' is not a valid value (expected ", expected, "; ",
                        where(setting, context), ")"));
}

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    items.push_back(trim(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return items;
}

template <typename T>
bool parse_integer(const std::string& text, T& out) {
  const std::string value = trim(text);
  if (value.empty()) return false;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool parse_double(const std::string& text, double& out) {
  const std::string value = trim(text);
  if (value.empty()) return false;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

// Non-negative integers only: a "-1" for a count is a typo, not a wrap-around.
template <typename T>
T to_count(const Setting& setting, const ParseContext& context) {
  T value{};
  const std::string text = trim(setting.text);
  if (!text.empty() && text[0] == '-') bad_value(setting, context, "a non-negative integer");
  if (!parse_integer(text, value)) bad_value(setting, context, "a non-negative integer");
  return value;
}

bool to_bool(const Setting& setting, const ParseContext& context) {
  const std::string v = trim(setting.text);
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  bad_value(setting, context, "true or false");
}

std::string resolve_path(const std::string& path, const Setting& setting, const ParseContext& context) {
  if (path.empty()) return path;
  std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  const auto& base = setting.origin == Origin::file ? context.config_dir : context.working_dir;
  return (base / p).lexically_normal().string();
}

// Comma-separated globs: each pattern resolved on its own.
std::string resolve_globs(const Setting& setting, const ParseContext& context) {
  std::string joined;
  for (const auto& pattern : split_list(setting.text)) {
    if (pattern.empty()) continue;
    if (!joined.empty()) joined += ",";
    joined += resolve_path(pattern, setting, context);
  }
  return joined;
}

// mix.megatron_blend "W1 PREFIX1 W2 PREFIX2 ..." (or one PREFIX, weight 1),
// as Megatron's --data-path: one indexed source per prefix, named after the
// prefix's file name (letters, digits, '_' and '-' kept, others '_'), with a
// numeric suffix when two names would clash.
void add_megatron_blend(Config& config, const Setting& setting, const ParseContext& context) {
  std::istringstream in(setting.text);
  std::vector<std::string> words{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
  if (words.size() == 1) words.insert(words.begin(), "1");
  if (words.size() % 2 != 0) bad_value(setting, context, "\"WEIGHT PREFIX WEIGHT PREFIX ...\" (Megatron's --data-path)");
  for (size_t i = 0; i < words.size(); i += 2) {
    SourceConfig source;
    double weight = 0;
    if (!parse_double(words[i], weight) || weight < 0)
      bad_value(setting, context, str("a weight >= 0 before each prefix, not '", words[i], "'"));
    source.weight = {{0, weight}};
    source.format = "indexed";
    source.path = resolve_path(words[i + 1], setting, context);
    std::string name = std::filesystem::path(words[i + 1]).filename().string();
    for (char& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
    const std::string base = name.empty() ? "blend" : name;
    name = base;
    for (int n = 2; std::any_of(config.sources.begin(), config.sources.end(),
                                [&](const SourceConfig& other) { return other.name == name; });
         ++n)
      name = str(base, "_", n);
    source.name = name;
    config.sources.push_back(source);
  }
}

std::vector<WeightPoint> to_weight(const Setting& setting, const ParseContext& context) {
  constexpr const char* kExpected = "a weight W or STEP:W pairs \"0:0.6, 500:0.3\" with increasing steps and weights >= 0";
  const auto items = split_list(setting.text);
  std::vector<WeightPoint> points;
  for (const auto& item : items) {
    WeightPoint point;
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      // A bare weight is the whole curve, never one item of a list.
      if (items.size() != 1) bad_value(setting, context, kExpected);
    } else {
      const std::string step = trim(item.substr(0, colon));
      if (step.empty() || step[0] == '-' || !parse_integer(step, point.step)) bad_value(setting, context, kExpected);
    }
    const std::string weight = colon == std::string::npos ? item : item.substr(colon + 1);
    if (!parse_double(weight, point.weight) || point.weight < 0) bad_value(setting, context, kExpected);
    if (!points.empty() && point.step <= points.back().step) bad_value(setting, context, kExpected);
    points.push_back(point);
  }
  return points;
}

ScheduleKind to_schedule(const Setting& setting, const ParseContext& context) {
  const std::string value = trim(setting.text);
  if (value == "constant") return ScheduleKind::constant;
  if (value == "piecewise") return ScheduleKind::piecewise;
  if (value == "linear") return ScheduleKind::linear;
  bad_value(setting, context, "constant, piecewise or linear");
}

// Shortest text that reads back to the same double.
std::string exact(double value) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  MSD_CHECK(ec == std::errc());
  return std::string(text, end);
}

std::string schedule_name(ScheduleKind kind) {
  return kind == ScheduleKind::constant ? "constant" : kind == ScheduleKind::piecewise ? "piecewise" : "linear";
}

std::string weight_text(const std::vector<WeightPoint>& weight) {
  std::string text;
  for (const auto& point : weight) text += (text.empty() ? "" : ", ") + str(point.step) + ":" + exact(point.weight);
  return text;
}

// How an option's text lands in the Config, and how the Config's value reads
// as INI text again (to_ini; with a default Config, the default --help shows).
using Apply = std::function<void(Config&, const Setting&, const ParseContext&)>;
using Print = std::function<std::string(const Config&)>;

struct OptionSpec {
  std::string key;           // "job.seq_len"
  std::string value_name;    // "N", "FILE", ... for --help
  std::string help;
  Apply apply;
  Print print;
  std::string default_text = {};  // --help and README; empty: print(Config{})
};

struct Section {
  std::string name;  // "job"
  std::vector<OptionSpec> options;
};

// Option makers: `member` is a generic lambda returning the field of a Config
// (const or not), so one accessor serves both parsing and printing.
template <typename Member>
OptionSpec count(std::string key, std::string value_name, std::string help, Member member) {
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext& x) {
            auto& field = member(c);
            field = to_count<std::remove_reference_t<decltype(field)>>(s, x);
          },
          [member](const Config& c) { return str(member(c)); }};
}

template <typename Member>
OptionSpec text(std::string key, std::string value_name, std::string help, Member member) {
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext&) { member(c) = trim(s.text); },
          [member](const Config& c) -> std::string { return member(c); }};
}

// A path: relative to the INI file's directory or the working directory.
template <typename Member>
OptionSpec path(std::string key, std::string value_name, std::string help, Member member) {
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext& x) { member(c) = resolve_path(trim(s.text), s, x); },
          [member](const Config& c) -> std::string { return member(c); }};
}

// One of an enumerated option's names (msd/options.h), parsed into its enum.
template <typename Member>
OptionSpec choice(std::string key, std::string value_name, std::string help, Member member) {
  using E = std::remove_cvref_t<decltype(member(std::declval<Config&>()))>;
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext& x) {
            const auto value = find_option_value<E>(trim(s.text));
            if (!value) bad_value(s, x, option_names<E>());
            member(c) = *value;
          },
          [member](const Config& c) -> std::string { return option_name(member(c)); }};
}

// A comma-separated list of names, kept as "a,b".
template <typename Member>
OptionSpec name_list(std::string key, std::string value_name, std::string help, Member member) {
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext&) {
            std::string names;
            for (const auto& name : split_list(s.text)) names += (names.empty() ? "" : ",") + name;
            member(c) = names;
          },
          [member](const Config& c) -> std::string { return member(c); }};
}

std::vector<OptionSpec> job_options() {
  return {
      count("job.steps", "N", "training steps to run (alias --steps)", [](auto& c) -> auto& { return c.job.steps; }),
      count("job.seed", "N", "seed of every shuffle and mix (alias --seed)", [](auto& c) -> auto& { return c.job.seed; }),
      count("job.global_batch", "N", "samples per step over all DP groups (>= dp)",
            [](auto& c) -> auto& { return c.job.global_batch; }),
      count("job.seq_len", "N", "positions (tokens + patches) per packed sequence (>= 16, a multiple of 2 * topology.cp)",
            [](auto& c) -> auto& { return c.job.seq_len; }),
      count("job.micro_batches", "N", "micro-batches per DP rank and step",
            [](auto& c) -> auto& { return c.job.micro_batches; }),
      count("job.prefetch_steps", "N", "steps the planner plans ahead",
            [](auto& c) -> auto& { return c.job.prefetch_steps; }),
      choice("job.mode", "M",
           "colocated_samples | colocated_tokens | msd_tokens | msd_greedy | msd_kk; aliases colocated "
           "(= colocated_samples), disaggregated (= msd_ with job.balance). docs/evaluation.md; alias --mode",
           [](auto& c) -> auto& { return c.job.mode; }),
      choice("job.long_docs", "M", "split | truncate: documents longer than seq_len",
           [](auto& c) -> auto& { return c.job.long_docs; }),
      count("job.max_sample_bytes", "BYTES",
            "a transformed sample bigger than this is skipped as too_large (a stream setting; <= loader.window_mb)",
            [](auto& c) -> auto& { return c.job.max_sample_bytes; }),
      choice("job.micro_batch_shape", "S",
           "fixed | varlen: a micro-batch as [sequences, seq_len] padded rows, or one row of its positions "
           "(packed THD attention; planner-driven modes, topology.cp = 1; docs/batch.md)",
           [](auto& c) -> auto& { return c.job.micro_batch_shape; }),
      choice("job.balance", "M", "greedy | karmarkar_karp | tokens: how the planner balances DP ranks and micro-batches (docs/cost-and-balance.md)",
           [](auto& c) -> auto& { return c.job.balance; }),
      count("job.max_positions_per_micro_batch", "N",
            "most positions (tokens + patches) a micro-batch may hold; 0: seq_len x the sequences of an equal token split",
            [](auto& c) -> auto& { return c.job.max_positions_per_micro_batch; }),
      count("job.stall_timeout_s", "S",
            "a step unacknowledged this long ends the job naming the client; a client without a plan this long + 10 s "
            "ends it naming the planner; a rank missing at the end of the job this long after the last step ends it "
            "naming the rank; in the colocated modes a client whose trainer asks for no step this long ends its "
            "process; must exceed (job.prefetch_steps + 1) of the trainer's longest steps plus its longest pause "
            "(evaluation, saving); at most a week; 0: never",
            [](auto& c) -> auto& { return c.job.stall_timeout_s; }),
      count("job.startup_timeout_s", "S",
            "every wait from process start to the first step (MPI_Init, the loaders' hello with their sources "
            "opened, the start-up agreement) ends the job after this long naming the rank that did not arrive; "
            "at most a week; 0: never",
            [](auto& c) -> auto& { return c.job.startup_timeout_s; }),
  };
}

std::vector<OptionSpec> topology_options() {
  return {
      count("topology.dp", "N", "data-parallel size", [](auto& c) -> auto& { return c.topology.dp; }),
      count("topology.pp", "N", "pipeline-parallel size", [](auto& c) -> auto& { return c.topology.pp; }),
      count("topology.cp", "N", "context-parallel size", [](auto& c) -> auto& { return c.topology.cp; }),
      count("topology.tp", "N", "tensor-parallel size", [](auto& c) -> auto& { return c.topology.tp; }),
      name_list("topology.order", "AXES", "rank order, fastest axis first: a permutation of tp,cp,dp,pp",
                [](auto& c) -> auto& { return c.topology.order; }),
      count("topology.loaders", "N", "source-loader ranks (alias --loaders)",
            [](auto& c) -> auto& { return c.topology.loaders; }),
      count("topology.shadow_loaders", "N",
            "spare loader ranks, every source open, that take over a loader missing loader.deadline_ms (docs/fault-tolerance.md)",
            [](auto& c) -> auto& { return c.topology.shadow_loaders; }),
      choice("topology.broadcast_at", "LEVEL",
           "tp | none: tp, one rank per TP group fetches and shares the batch; none, every TP rank fetches",
           [](auto& c) -> auto& { return c.topology.broadcast_at; }),
      count("topology.ranks_per_node", "N",
            "0: the nodes MPI reports; N: plan as if every N consecutive world ranks shared a node (docs/layout.md)",
            [](auto& c) -> auto& { return c.topology.ranks_per_node; }),
      choice("topology.data_ranks", "P",
           "first | per_node | dedicated_nodes: where the planner and loaders sit (docs/layout.md)",
           [](auto& c) -> auto& { return c.topology.data_ranks; }),
      // Loader pool scaling (docs/scaling.md).
      text("topology.scaling", "S",
           "static | partition | online: sources to loaders by peak weight, by the partition plan, or moved between "
           "sources as the mix changes (docs/scaling.md)",
           [](auto& c) -> auto& { return c.topology.scaling; }),
      path("topology.partition_plan", "FILE",
           "scaling = partition: the plan of msd-plan partition --out; empty: computed at start-up from a profile",
           [](auto& c) -> auto& { return c.topology.partition_plan; }),
      count("topology.scaling_lookahead_steps", "N",
            "online: steps ahead the schedule is read, so loaders move before a weight rises",
            [](auto& c) -> auto& { return c.topology.scaling_lookahead_steps; }),
      count("topology.scaling_interval_steps", "N", "online: fewest steps between two moves of loader ranks",
            [](auto& c) -> auto& { return c.topology.scaling_interval_steps; }),
  };
}

std::vector<OptionSpec> mix_options() {
  return {
      {"mix.sources", "NAMES", "comma-separated source names; each needs a [source.NAME] section",
       [](Config&, const Setting&, const ParseContext&) {},  // applied first, by parse_command_line
       [](const Config& c) {
         std::string names;
         for (const auto& source : c.sources) names += (names.empty() ? "" : ", ") + source.name;
         return names;
       }},
      {"mix.schedule", "KIND", "constant | piecewise | linear: how weights vary over steps",
       [](Config& c, const Setting& s, const ParseContext& x) { c.schedule = to_schedule(s, x); },
       [](const Config& c) { return schedule_name(c.schedule); }},
      // Written back as the [source.NAME] sections it made, so never printed.
      {"mix.megatron_blend", "BLEND",
       "\"W1 PREFIX1 W2 PREFIX2 ...\" as Megatron's --data-path: one indexed source per .bin/.idx prefix, "
       "named after it, after mix.sources",
       add_megatron_blend, [](const Config&) { return std::string(); }},
  };
}

std::vector<OptionSpec> tokenizer_and_image_options() {
  return {
      path("tokenizer.vocab", "FILE", "tiktoken-format vocabulary (needed by jsonl and wds sources)",
           [](auto& c) -> auto& { return c.tokenizer.vocab; }),
      {"tokenizer.pattern", "P", "pre-tokenizer: cl100k | o200k | gpt2 | a regex",
       [](Config& c, const Setting& s, const ParseContext&) { c.tokenizer.pattern = s.text; },
       [](const Config& c) { return c.tokenizer.pattern; }},
      text("tokenizer.normalize", "FORM", "none | nfc | nfkc | nfd | nfkd",
           [](auto& c) -> auto& { return c.tokenizer.normalize; }),
      path("tokenizer.hf", "FILE",
           "Hugging Face tokenizer.json (BPE family: Llama 3, Qwen, Gemma, Llama 2, DeepSeek) instead of "
           "tokenizer.vocab; documents get the BOS/EOS its post-processor adds",
           [](auto& c) -> auto& { return c.tokenizer.hf; }),
      {"tokenizer.append_eod", "BOOL",
       "tokenizer.hf: end every document with the end-of-document token (Megatron's --append-eod)",
       [](Config& c, const Setting& s, const ParseContext& x) { c.tokenizer.append_eod = to_bool(s, x); },
       [](const Config& c) { return std::string(c.tokenizer.append_eod ? "true" : "false"); }},
      text("tokenizer.eod_token", "TEXT",
           "append_eod's token (an added token's text); empty: the eos_token of the tokenizer_config.json "
           "beside tokenizer.hf",
           [](auto& c) -> auto& { return c.tokenizer.eod_token; }),
      count("image.max_side", "PIXELS", "longest image side after resizing",
            [](auto& c) -> auto& { return c.image.max_side; }),
      count("image.patch", "PIXELS", "patch side; one sequence position per patch",
            [](auto& c) -> auto& { return c.image.patch; }),
      {"image.token_id", "ID", "token id at patch positions; -1: the vocabulary size",
       [](Config& c, const Setting& s, const ParseContext& x) {
         if (!parse_integer(s.text, c.image.token_id) || c.image.token_id < -1)
           bad_value(s, x, "-1 or a non-negative token id");
       },
       [](const Config& c) { return str(c.image.token_id); }},
  };
}

std::vector<OptionSpec> loader_and_model_options() {
  return {
      count("loader.window_mb", "MB", "RMA window per loader rank, MiB",
            [](auto& c) -> auto& { return c.loader.window_mb; }),
      path("loader.cache_dir", "DIR", "index caches; empty: beside the data, or ~/.cache/msd where its directory is read-only",
           [](auto& c) -> auto& { return c.loader.cache_dir; }),
      count("loader.deadline_ms", "MS", "a loader silent this long with requests pending is handed over to a shadow",
            [](auto& c) -> auto& { return c.loader.deadline_ms; }),
      count("loader.threads", "N",
            "threads per loader reading, decoding and tokenizing a batch of pending requests together (1: one sample at a time)",
            [](auto& c) -> auto& { return c.loader.threads; }),
      count("model.hidden", "N", "hidden size (cost model: a = 6 * hidden)",
            [](auto& c) -> auto& { return c.model.hidden; }),
      count("model.layers", "N", "transformer layers", [](auto& c) -> auto& { return c.model.layers; }),
      count("model.vision_hidden", "N", "vision encoder hidden size",
            [](auto& c) -> auto& { return c.model.vision_hidden; }),
      count("model.vision_layers", "N", "vision encoder layers",
            [](auto& c) -> auto& { return c.model.vision_layers; }),
      {"model.cost_a", "A", "cost model's linear weight a in a*L + L^2; 0: 6 * hidden (msd-plan calibrate fits it)",
       [](Config& c, const Setting& s, const ParseContext& x) {
         if (!parse_double(s.text, c.model.cost_a) || c.model.cost_a < 0) bad_value(s, x, "a number >= 0");
       },
       [](const Config& c) { return exact(c.model.cost_a); }},
      {"model.cost_vision_scale", "S",
       "cost model's weight of the vision encoder's term against the LM's; 0: from the widths (msd-plan calibrate "
       "fits it with cost_a)",
       [](Config& c, const Setting& s, const ParseContext& x) {
         if (!parse_double(s.text, c.model.cost_vision_scale) || c.model.cost_vision_scale < 0)
           bad_value(s, x, "a number >= 0");
       },
       [](const Config& c) { return exact(c.model.cost_vision_scale); }},
      text("model.preset", "NAME", "llama3-8b | llama3-70b | vit-l (replaces hidden and layers); empty: hidden x layers",
           [](auto& c) -> auto& { return c.model.preset; }),
  };
}

std::vector<OptionSpec> device_and_emulator_options() {
  return {
      text("device.preset", "NAME", "h100 | h200: the GPU the device model emulates",
           [](auto& c) -> auto& { return c.device.preset; }),
      {"emulator.time_scale", "X", "the trainer emulator sleeps the device model's time times X (0: no sleep)",
       [](Config& c, const Setting& s, const ParseContext& x) {
         if (!parse_double(s.text, c.emulator.time_scale) || !(c.emulator.time_scale >= 0) ||
             !std::isfinite(c.emulator.time_scale))
           bad_value(s, x, "a number >= 0");
       },
       [](const Config& c) { return exact(c.emulator.time_scale); }},
  };
}

std::vector<OptionSpec> output_options() {
  return {
      {"output.summary_json", "FILE",
       "write the final summary here; relative to the working directory, also in a file (alias --summary-json)",
       [](Config& c, const Setting& s, const ParseContext&) { c.output.summary_json = trim(s.text); },
       [](const Config& c) { return c.output.summary_json; }},
      {"output.metrics", "FILE",
       "write one JSON line per step here (docs/metrics.md); relative to the working directory, also in a file (alias --metrics)",
       [](Config& c, const Setting& s, const ParseContext&) { c.output.metrics = trim(s.text); },
       [](const Config& c) { return c.output.metrics; }},
      count("output.progress_every", "N", "a progress line every N steps; 0: none",
            [](auto& c) -> auto& { return c.output.progress_every; }),
      text("output.log_level", "LEVEL", "debug | info | warn | error | quiet",
           [](auto& c) -> auto& { return c.output.log_level; }),
  };
}

std::vector<OptionSpec> checkpoint_options() {
  return {
      path("checkpoint.dir", "DIR", "where checkpoints and the trace go; empty: no checkpoints (docs/checkpoint.md, docs/trace.md)",
           [](auto& c) -> auto& { return c.checkpoint.dir; }),
      count("checkpoint.planner_every", "N", "planner state every N steps",
            [](auto& c) -> auto& { return c.checkpoint.planner_every; }),
      count("checkpoint.loader_every", "N", "loader state every N steps; 0: never",
            [](auto& c) -> auto& { return c.checkpoint.loader_every; }),
      count("checkpoint.keep", "N", "checkpoint files kept of each kind",
            [](auto& c) -> auto& { return c.checkpoint.keep; }),
      path("checkpoint.trace", "FILE", "the plan trace (alias --trace); empty: DIR/trace.h5 when checkpoint.dir is set",
           [](auto& c) -> auto& { return c.checkpoint.trace; }),
      {"checkpoint.resume", "BOOL", "start from the latest consistent checkpoint in DIR (alias --resume)",
       [](Config& c, const Setting& s, const ParseContext& x) { c.checkpoint.resume = to_bool(s, x); },
       [](const Config& c) { return std::string(c.checkpoint.resume ? "true" : "false"); }},
      {"checkpoint.resume_step", "N",
       "resume so that the first step delivered is N (the trainer's step): from the newest planner checkpoint "
       "at or before N, fast-forwarded to N; implies resume; unset: the latest checkpoint (alias --resume-step)",
       [](Config& c, const Setting& s, const ParseContext& x) {
         if (trim(s.text).empty()) c.checkpoint.resume_step.reset();
         else c.checkpoint.resume_step = to_count<uint64_t>(s, x);
       },
       [](const Config& c) { return c.checkpoint.resume_step ? str(*c.checkpoint.resume_step) : std::string(); }},
      {"checkpoint.accept_changed_data", "BOOL",
       "resume although the data files or the vocabulary differ from the checkpoint's fingerprint, with a warning "
       "(alias --resume-accept-changed-data)",
       [](Config& c, const Setting& s, const ParseContext& x) { c.checkpoint.accept_changed_data = to_bool(s, x); },
       [](const Config& c) { return std::string(c.checkpoint.accept_changed_data ? "true" : "false"); }},
      name_list("checkpoint.snapshot_sources", "NAMES",
                "sources whose transformed samples loader checkpoints keep (expensive transforms, e.g. images)",
                [](auto& c) -> auto& { return c.checkpoint.snapshot_sources; }),
  };
}

std::vector<OptionSpec> fault_options() {
  return {
      {"fault.loader", "I", "inject a fault into loader I (testing failover); -1: none",
       [](Config& c, const Setting& s, const ParseContext& x) {
         int64_t v = 0;
         if (!parse_integer(s.text, v) || v < -1 || v > 1000000) bad_value(s, x, "-1 or a loader index");
         c.fault.loader = static_cast<int>(v);
       },
       [](const Config& c) { return str(c.fault.loader); }},
      {"fault.rank", "R", "kind crash: the world rank that throws at fault.step; -1: fault.loader's rank",
       [](Config& c, const Setting& s, const ParseContext& x) {
         int64_t v = 0;
         if (!parse_integer(s.text, v) || v < -1 || v > 1000000) bad_value(s, x, "-1 or a world rank");
         c.fault.rank = static_cast<int>(v);
       },
       [](const Config& c) { return str(c.fault.rank); }},
      text("fault.kind", "K",
           "hang | stall | checkpoint_stall | startup_stall | finish_stall | fail | crash: stop serving, pause for "
           "stall_ms (now, inside the write of the next loader checkpoint, before opening the sources at start-up, "
           "or, on fault.rank, at the end of the job), fail every read, or throw (ends the job)",
           [](auto& c) -> auto& { return c.fault.kind; }),
      count("fault.step", "N", "the step the fault starts at", [](auto& c) -> auto& { return c.fault.step; }),
      count("fault.stall_ms", "MS", "how long a stall lasts", [](auto& c) -> auto& { return c.fault.stall_ms; }),
  };
}

// A section holds the options whose keys start with its name and a dot.
void add_to_sections(std::vector<Section>& sections, std::vector<OptionSpec> options) {
  for (auto& option : options) {
    const std::string name = option.key.substr(0, option.key.rfind('.'));
    if (sections.empty() || sections.back().name != name) sections.push_back(Section{name, {}});
    sections.back().options.push_back(std::move(option));
  }
}

void fill_defaults(std::vector<Section>& sections) {
  const Config defaults;
  for (auto& section : sections)
    for (auto& option : section.options)
      if (option.default_text.empty()) option.default_text = option.print(defaults);
}

// Every static option, grouped by section, in the order of to_ini; defaults
// are printed from a default Config so --help cannot disagree with config.h.
std::vector<Section> static_sections() {
  std::vector<Section> sections;
  add_to_sections(sections, job_options());
  add_to_sections(sections, topology_options());
  add_to_sections(sections, mix_options());
  add_to_sections(sections, tokenizer_and_image_options());
  add_to_sections(sections, loader_and_model_options());
  add_to_sections(sections, device_and_emulator_options());
  add_to_sections(sections, output_options());
  add_to_sections(sections, checkpoint_options());
  add_to_sections(sections, fault_options());
  fill_defaults(sections);
  return sections;
}

SourceConfig* find_source(Config& config, const std::string& name) {
  for (auto& source : config.sources)
    if (source.name == name) return &source;
  return nullptr;
}

const SourceConfig* find_source(const Config& config, const std::string& name) {
  return find_source(const_cast<Config&>(config), name);
}

// The options of one [source.NAME] section.
Section source_section(const std::string& name) {
  const std::string prefix = "source." + name + ".";
  // `field` is a generic lambda returning the field of a SourceConfig.
  auto option = [&](const std::string& key, const char* value_name, const char* help, auto apply, auto field) {
    return OptionSpec{prefix + key, value_name, help,
                      [name, apply](Config& c, const Setting& s, const ParseContext& x) {
                        SourceConfig* source = find_source(c, name);
                        MSD_CHECK(source != nullptr);
                        apply(*source, s, x);
                      },
                      [name, field](const Config& c) -> std::string {
                        const SourceConfig* source = find_source(c, name);
                        return field(source != nullptr ? *source : SourceConfig{});
                      }};
  };
  auto trimmed = [](auto member) {
    return [member](SourceConfig& src, const Setting& s, const ParseContext&) { member(src) = trim(s.text); };
  };
  auto format = [](auto& src) -> auto& { return src.format; };
  auto text_field = [](auto& src) -> auto& { return src.text_field; };
  auto caption_field = [](auto& src) -> auto& { return src.caption_field; };
  Section section{"source." + name, {}};
  section.options = {
      option("format", "F", "jsonl | wds | indexed", trimmed(format), format),
      option("path", "GLOBS", "comma-separated globs of the source's files",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.path = resolve_globs(s, x); },
             [](const SourceConfig& src) { return src.path; }),
      option("weight", "W", "mixing weight: W, or STEP:W pairs \"0:0.6, 500:0.3\"",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.weight = to_weight(s, x); },
             [](const SourceConfig& src) { return weight_text(src.weight); }),
      option("text_field", "KEY", "jsonl: field holding the text", trimmed(text_field), text_field),
      option("caption_field", "KEY", "wds: field of the .json caption", trimmed(caption_field), caption_field),
      option("read_delay_us", "US", "emulated storage latency: each sample read first waits this long (benchmarks)",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.read_delay_us = to_count<uint64_t>(s, x); },
             [](const SourceConfig& src) { return str(src.read_delay_us); }),
      option("max_read_bytes", "BYTES",
             "a record stored bigger than this (by the index, before any read) is bad as too_large; 0: no cap",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.max_read_bytes = to_count<uint64_t>(s, x); },
             [](const SourceConfig& src) { return str(src.max_read_bytes); }),
  };
  section.options[2].default_text = "1";  // a bare weight, as users write it
  std::vector<Section> one{std::move(section)};
  fill_defaults(one);
  return std::move(one.front());
}

// Command-line-only options; the aliases map to "section.key" options.
const std::array<std::pair<const char*, const char*>, 8> kAliases = {{
    {"resume-step", "checkpoint.resume_step"},
    {"loaders", "topology.loaders"},
    {"summary-json", "output.summary_json"},
    {"metrics", "output.metrics"},
    {"mode", "job.mode"},
    {"steps", "job.steps"},
    {"seed", "job.seed"},
    {"trace", "checkpoint.trace"},
}};

const OptionSpec& find_spec(const std::vector<Section>& sections, const std::string& key) {
  for (const auto& section : sections)
    for (const auto& option : section.options)
      if (option.key == key) return option;
  MSD_CHECK(false);
  std::abort();
}

constexpr unsigned kHelpWidth = 100;  // columns of --help

po::options_description describe(const Section& section, bool for_help) {
  po::options_description description(for_help ? "[" + section.name + "]" : section.name, kHelpWidth,
                                      kHelpWidth / 2);
  for (const auto& option : section.options) {
    auto* value = po::value<std::string>()->value_name(option.value_name);
    if (for_help && !option.default_text.empty()) value->default_value(option.default_text);
    description.add_options()(option.key.c_str(), value, option.help.c_str());
  }
  return description;
}

po::options_description command_line_only(const std::vector<Section>& sections) {
  po::options_description description("command line only", kHelpWidth, kHelpWidth / 2);
  description.add_options()                                                       //
      ("config", po::value<std::string>()->value_name("FILE"), "INI file to read")    //
      ("help", "print this help and exit")                                           //
      ("help-markdown", "print the option table as Markdown (README's) and exit")    //
      ("print-world-size", "print the number of MPI ranks the job needs and exit")   //
      ("print-layout", "print world rank -> node, role, index, dp pp cp tp and exit");
  for (const auto& [alias, target] : kAliases)
    description.add_options()(alias, po::value<std::string>()->value_name(find_spec(sections, target).value_name),
                              str("= --", target).c_str());
  description.add_options()("resume", "= --checkpoint.resume=true")(
      "resume-accept-changed-data", "= --checkpoint.accept_changed_data=true");
  return description;
}

// README's option table: one row per option, [source.NAME] last.
std::string markdown_table(const std::vector<Section>& sections) {
  auto cell = [](const std::string& text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out = "| option | default | meaning |\n|---|---|---|\n";
  std::vector<Section> all = sections;
  all.push_back(source_section("NAME"));
  for (const auto& section : all)
    for (const auto& option : section.options)
      out += str("| `", option.key, "` | ", cell(option.default_text), " | ", cell(option.help), " |\n");
  return out;
}

std::string usage_text(const std::vector<Section>& sections) {
  po::options_description all("", kHelpWidth, kHelpWidth / 2);
  all.add(command_line_only(sections));
  for (const auto& section : sections) all.add(describe(section, true));
  po::options_description per_source = describe(source_section("NAME"), true);
  std::ostringstream out;
  out << kUsageLine << "\n\n"
      << "Options are \"section.key\": in the INI file as key = value under [section], on the command\n"
      << "line as --section.key=value, which overrides the file. Relative paths in the file resolve\n"
      << "against the file's directory, on the command line against the working directory;\n"
      << "output.summary_json and output.metrics always resolve against the working directory.\n";
  all.add(per_source);
  out << all << "\n"
      << "[source.NAME] is one section per name in mix.sources. Its weight is one number for the whole\n"
      << "run, or STEP:W pairs with increasing steps that mix.schedule turns into a curve (piecewise:\n"
      << "held until the next point; linear: interpolated between points).\n";
  return out.str();
}

constexpr int kStyle = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// program_options reports an unknown command-line option with its dashes and
// any "=value"; the option's key is what a user greps for.
std::string bare_option(std::string name) {
  name.erase(0, name.find_first_not_of('-'));
  const size_t equals = name.find('=');
  if (equals != std::string::npos) name.erase(equals);
  return name;
}

[[noreturn]] void unknown_option(const std::string& key, const std::vector<std::string>& sources,
                                 const std::string& origin) {
  if (key.rfind("source.", 0) == 0) {
    const std::string rest = key.substr(7);
    const size_t dot = rest.find('.');
    const std::string name = rest.substr(0, dot);
    if (dot != std::string::npos && std::find(sources.begin(), sources.end(), name) == sources.end()) {
      std::string listed;
      for (const auto& source : sources) listed += (listed.empty() ? "" : ",") + source;
      throw ConfigError(str("unknown option '", key, "' ", origin, ": source '", name,
                            "' is not listed in mix.sources (", listed.empty() ? "empty" : listed, ")"));
    }
  }
  throw ConfigError(str("unknown option '", key, "' ", origin));
}

po::parsed_options parse_arguments(int argc, const char* const* argv, const po::options_description& description,
                                   bool allow_unregistered, const std::vector<std::string>& sources) {
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(description).style(kStyle);
    if (allow_unregistered) parser.allow_unregistered();
    return parser.run();
  } catch (const po::unknown_option& e) {
    unknown_option(bare_option(e.get_option_name()), sources, "on the command line");
  } catch (const po::error& e) {
    throw ConfigError(str("command line: ", e.what()));
  }
}

po::parsed_options parse_file(const std::string& text, const std::string& name,
                              const po::options_description& description, bool allow_unregistered,
                              const std::vector<std::string>& sources) {
  try {
    std::istringstream in(text);
    return po::parse_config_file(in, description, allow_unregistered);
  } catch (const po::unknown_option& e) {
    unknown_option(bare_option(e.get_option_name()), sources, "in " + name);
  } catch (const po::error& e) {
    throw ConfigError(str(name, ": ", e.what()));
  }
}

std::string read_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(str("--config: cannot open '", path, "': ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> source_names(const std::string& text, const std::string& origin) {
  std::vector<std::string> names;
  if (trim(text).empty()) return names;
  for (const auto& name : split_list(text)) {
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
    });
    if (!valid)
      throw ConfigError(str("mix.sources: '", text, "' is not a valid value (expected comma-separated names of ",
                            "letters, digits, '_' and '-'; ", origin, ")"));
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw ConfigError(str("mix.sources: source '", name, "' is listed twice (", origin, ")"));
    names.push_back(name);
  }
  return names;
}

std::string alias_target(const std::string& key) {
  for (const auto& [alias, target] : kAliases)
    if (key == alias) return target;
  return key;
}

// Command-line switches (no value) and the boolean option each sets to true.
const std::map<std::string, std::string> kSwitches = {
    {"resume", "checkpoint.resume"},
    {"resume-accept-changed-data", "checkpoint.accept_changed_data"},
};

// The value of the last occurrence of `key` in `parsed`, if any.
const std::string* find_value(const po::parsed_options& parsed, const std::string& key) {
  const std::string* found = nullptr;
  for (const auto& option : parsed.options)
    if (option.string_key == key && !option.value.empty()) found = &option.value.front();
  return found;
}

// Values by key; a key given twice in one place is ambiguous and rejected.
void collect(const po::parsed_options& parsed, Origin origin, const std::string& origin_text,
             std::map<std::string, Setting>& settings) {
  std::set<std::string> seen;
  std::map<std::string, std::string> spelled;  // key -> how the user wrote it, for messages
  for (const auto& option : parsed.options) {
    if (option.position_key != -1)
      throw ConfigError(str("unexpected argument '", option.value.empty() ? "" : option.value.front(), "' ",
                            origin_text, " (options are --section.key=value)"));
    if (option.string_key == "config" || option.string_key == "help" || option.string_key == "help-markdown" ||
        option.string_key == "print-world-size" || option.string_key == "print-layout")
      continue;
    if (auto it = kSwitches.find(option.string_key); it != kSwitches.end()) {  // a switch: no value
      const std::string key = it->second;
      if (!seen.insert(key).second) throw ConfigError(str(key, ": given twice ", origin_text));
      settings[key] = Setting{key, "true", origin};
      continue;
    }
    const std::string key = alias_target(option.string_key);
    const std::string written = origin == Origin::command_line ? "--" + option.string_key : option.string_key;
    if (!seen.insert(key).second)
      throw ConfigError(str(key, ": given twice ", origin_text, " (", spelled[key], " and ", written, ")"));
    spelled[key] = written;
    MSD_CHECK_EQ(option.value.size(), size_t{1});
    settings[key] = Setting{key, option.value.front(), origin};
  }
}

bool valid_weight_curve(const std::vector<WeightPoint>& curve) {
  if (curve.empty()) return false;
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i].weight) || curve[i].weight < 0) return false;
    if (i > 0 && curve[i].step <= curve[i - 1].step) return false;
  }
  return true;
}

// A curve's raw (unnormalized) weight at `step`, as lib/plan/mix.cc's Schedule
// evaluates it.
double curve_at(ScheduleKind kind, const std::vector<WeightPoint>& curve, uint64_t step) {
  if (kind == ScheduleKind::constant || step <= curve.front().step) return curve.front().weight;
  if (step >= curve.back().step) return curve.back().weight;
  size_t next = 1;
  while (curve[next].step <= step) ++next;
  const WeightPoint& a = curve[next - 1];
  if (kind == ScheduleKind::piecewise) return a.weight;
  const WeightPoint& b = curve[next];
  const double t = static_cast<double>(step - a.step) / static_cast<double>(b.step - a.step);
  return a.weight + (b.weight - a.weight) * t;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

template <typename T>
void require_at_least(T value, T minimum, const char* key) {
  require(value >= minimum, str(key, ": must be at least ", +minimum, " (got ", +value, ")"));
}

template <typename T>
void require_at_most(T value, T maximum, const char* key, const char* why) {
  require(value <= maximum, str(key, ": must be at most ", +maximum, " (got ", +value, "; ", why, ")"));
}

// Bounds on the waits and the window, so that no product or shift of them
// overflows and no wait is unbounded in practice: a week, and 1 TiB.
void validate_limits(const Config& config) {
  require_at_least(config.loader.window_mb, uint64_t{1}, "loader.window_mb");
  constexpr uint64_t kWeekS = 7 * 24 * 3600, kWeekMs = kWeekS * 1000;
  require_at_most(config.job.stall_timeout_s, kWeekS, "job.stall_timeout_s", "a week");
  require_at_most(config.job.startup_timeout_s, kWeekS, "job.startup_timeout_s", "a week");
  require_at_most(config.loader.deadline_ms, kWeekMs, "loader.deadline_ms", "a week");
  require_at_most(config.fault.stall_ms, kWeekMs, "fault.stall_ms", "a week");
  require_at_most(config.loader.window_mb, uint64_t{1} << 20, "loader.window_mb", "1 TiB");
}

void require_one_of(const std::string& value, std::initializer_list<const char*> allowed, const std::string& key) {
  std::string list;
  for (const char* name : allowed) {
    if (value == name) return;
    list += (list.empty() ? "" : " | ") + std::string(name);
  }
  throw ConfigError(str(key, ": '", value, "' is not a valid value (expected ", list, ")"));
}

}  // namespace

int Config::world_size() const {
  return trainers_load(job.mode) ? clients() : 1 + topology.loaders + topology.shadow_loaders + clients();
}

namespace {
// [model], [device], [emulator] and the activation budget the planner packs to.
void validate_model_and_device(const Config& config) {
  const auto& job = config.job;
  require_at_least(config.model.hidden, uint32_t{1}, "model.hidden");
  require_at_least(config.model.layers, uint32_t{1}, "model.layers");
  require(std::isfinite(config.emulator.time_scale) && config.emulator.time_scale >= 0,
          str("emulator.time_scale: must be >= 0 (got ", config.emulator.time_scale, ")"));
  if (!config.model.preset.empty())
    require_one_of(config.model.preset, {"llama3-8b", "llama3-70b", "vit-l"}, "model.preset");
  require_one_of(config.device.preset, {"h100", "h200"}, "device.preset");
  require(job.max_positions_per_micro_batch == 0 || job.max_positions_per_micro_batch >= job.seq_len,
          str("job.max_positions_per_micro_batch: ", job.max_positions_per_micro_batch,
              " cannot hold one sequence; give 0 or at least job.seq_len (", job.seq_len, ")"));
}

// [fault]: what it injects, and where.
void validate_fault(const Config& config) {
  const auto& topo = config.topology;
  const auto& job = config.job;
  const auto& fault = config.fault;
  require_one_of(fault.kind, {"hang", "stall", "checkpoint_stall", "startup_stall", "finish_stall", "fail", "crash"},
                 "fault.kind");
  require(fault.rank < config.world_size(),
          str("fault.rank: ", fault.rank, " is not a rank of this job (", config.world_size(), " ranks)"));
  require(fault.rank < 0 || ((fault.kind == "crash" || fault.kind == "finish_stall") && !trainers_load(job.mode)),
          "fault.rank: only fault.kind = crash or finish_stall names a rank, and only in a mode with loader ranks");
  require(fault.loader < topo.loaders,
          str("fault.loader: ", fault.loader, " is not a loader index (topology.loaders = ", topo.loaders, ")"));
}
void validate_tokenizer(const TokenizerConfig& tokenizer, bool needed) {
  if (needed)
    require(!tokenizer.vocab.empty() || !tokenizer.hf.empty(),
            "tokenizer.vocab: missing; jsonl and wds sources need a vocabulary (tokenizer.vocab or tokenizer.hf)");
  require(tokenizer.vocab.empty() || tokenizer.hf.empty(), "tokenizer.hf: set with tokenizer.vocab; give one of the two");
  require(!tokenizer.append_eod || !tokenizer.hf.empty(),
          "tokenizer.append_eod: needs tokenizer.hf (a tiktoken vocabulary has no end-of-document token)");
  require(!tokenizer.pattern.empty(), "tokenizer.pattern: must not be empty");
  require_one_of(tokenizer.normalize, {"none", "nfc", "nfkc", "nfd", "nfkd"}, "tokenizer.normalize");
}

}  // namespace

// topology.order names each axis once.
static void validate_order(const std::string& order) {
  std::vector<std::string> sorted = split_list(order);
  std::sort(sorted.begin(), sorted.end());
  require(sorted == std::vector<std::string>{"cp", "dp", "pp", "tp"},
          str("topology.order: '", order, "' is not a valid value (expected a permutation of tp,cp,dp,pp)"));
}

void validate(const Config& config) {
  const auto& job = config.job;
  const auto& topo = config.topology;
  require(job.micro_batch_shape != RowShape::varlen || topo.cp <= 1,
          str("job.micro_batch_shape: varlen needs topology.cp = 1 (got ", topo.cp,
              "); context-parallel ranks split fixed rows"));
  require_at_least(job.steps, uint64_t{1}, "job.steps");
  require_at_least(topo.dp, 1, "topology.dp");
  require_at_least(topo.pp, 1, "topology.pp");
  require_at_least(topo.cp, 1, "topology.cp");
  require_at_least(topo.tp, 1, "topology.tp");
  if (!trainers_load(job.mode)) require_at_least(topo.loaders, 1, "topology.loaders");
  require_at_least(topo.loaders, 0, "topology.loaders");
  require_at_least(topo.shadow_loaders, 0, "topology.shadow_loaders");
  // The rank count is an int for MPI; a product that overflows is a typo.
  const int64_t ranks = int64_t{topo.dp} * topo.pp * topo.cp * topo.tp + topo.loaders + topo.shadow_loaders + 1;
  require(ranks <= std::numeric_limits<int>::max(),
          str("topology: dp*pp*cp*tp + loaders + 1 = ", ranks, " ranks is more than MPI can address"));
  require(job.global_batch >= static_cast<uint32_t>(topo.dp),
          str("job.global_batch: must be at least topology.dp = ", topo.dp, " so every DP group gets a sample (got ",
              job.global_batch, ")"));
  require_at_least(job.seq_len, uint32_t{16}, "job.seq_len");
  require(topo.cp <= 1 || job.seq_len % (2 * static_cast<uint32_t>(topo.cp)) == 0,
          str("job.seq_len: ", job.seq_len, " must be divisible by 2 * topology.cp = ", 2 * topo.cp,
              " (each context-parallel rank takes two equal chunks of every sequence)"));
  require_at_least(topo.ranks_per_node, 0, "topology.ranks_per_node");
  require_one_of(topo.scaling, {"static", "partition", "online"}, "topology.scaling");
  require(topo.partition_plan.empty() || topo.scaling == "partition",
          "topology.partition_plan: a plan is used only with topology.scaling = partition");
  require_at_least(job.micro_batches, uint32_t{1}, "job.micro_batches");
  require_at_least(job.prefetch_steps, uint32_t{1}, "job.prefetch_steps");
  validate_order(topo.order);

  require(!config.sources.empty(), "mix.sources: at least one source is needed");
  bool needs_tokenizer = false;
  bool has_images = false;
  std::set<std::string> names;
  for (const auto& source : config.sources) {
    const std::string key = "source." + source.name;
    require(!source.name.empty(), "mix.sources: a source has an empty name");
    require(names.insert(source.name).second, str("mix.sources: source '", source.name, "' is listed twice"));
    require(!source.format.empty(), str(key, ".format: missing (expected jsonl | wds | indexed)"));
    require_one_of(source.format, {"jsonl", "wds", "indexed"}, key + ".format");
    require(!source.path.empty(), str(key, ".path: missing (comma-separated globs of the source's files)"));
    require(valid_weight_curve(source.weight),
            str(key, ".weight: expected at least one point, steps increasing, weights finite and >= 0"));
    require(!source.text_field.empty(), str(key, ".text_field: must not be empty"));
    require(!source.caption_field.empty(), str(key, ".caption_field: must not be empty"));
    needs_tokenizer = needs_tokenizer || source.format == "jsonl" || source.format == "wds";
    has_images = has_images || source.format == "wds";
  }
  // The weights may be zero for some sources, never for all at once: a step
  // would have nothing to draw from. The total is piecewise constant (or
  // piecewise linear) between the steps of the points, so checking it at step
  // 0 and at every point's step covers every step.
  std::set<uint64_t> steps{0};
  if (config.schedule != ScheduleKind::constant)
    for (const auto& source : config.sources)
      for (const auto& point : source.weight) steps.insert(point.step);
  for (uint64_t step : steps) {
    double total = 0;
    for (const auto& source : config.sources) total += curve_at(config.schedule, source.weight, step);
    require(total > 0, str("source.*.weight: the weights of all sources are zero at step ", step));
  }

  validate_tokenizer(config.tokenizer, needs_tokenizer);

  const auto& image = config.image;
  require_at_least(image.patch, uint32_t{1}, "image.patch");
  require(image.patch <= image.max_side,
          str("image.patch: ", image.patch, " is larger than image.max_side = ", image.max_side));
  require_at_least(image.token_id, int64_t{-1}, "image.token_id");
  if (has_images) {
    // The image transform rounds the longest side down to a multiple of the
    // patch (max_patches in lib/transform/image/image.h); the patches are never
    // split across sequences, so the largest image and one caption token must
    // fit one sequence.
    const uint64_t side = image.max_side / image.patch;
    const uint64_t largest = side * side;
    require(largest + 1 <= job.seq_len,
            str("job.seq_len: ", job.seq_len, " cannot hold the largest image (", largest, " patches at image.max_side = ",
                image.max_side, ", image.patch = ", image.patch, ") plus a caption token"));
  }

  validate_limits(config);
  require_at_least(job.max_sample_bytes, uint64_t{64}, "job.max_sample_bytes");
  require(trainers_load(job.mode) || (config.loader.window_mb << 20) >= job.max_sample_bytes,
          str("loader.window_mb: ", config.loader.window_mb, " MiB cannot hold one sample of job.max_sample_bytes = ",
              job.max_sample_bytes, " bytes; raise loader.window_mb or lower job.max_sample_bytes"));
  validate_model_and_device(config);
  require_one_of(config.output.log_level, {"debug", "info", "warn", "error", "quiet"}, "output.log_level");
  require_at_least(config.loader.deadline_ms, uint64_t{1}, "loader.deadline_ms");
  require_at_least(config.loader.threads, uint32_t{1}, "loader.threads");

  const auto& ckpt = config.checkpoint;
  require_at_least(ckpt.planner_every, uint64_t{1}, "checkpoint.planner_every");
  require_at_least(ckpt.keep, uint32_t{1}, "checkpoint.keep");
  const std::string resume_key = ckpt.resume_step ? "checkpoint.resume_step" : "checkpoint.resume";
  require(!ckpt.resuming() || !ckpt.dir.empty(), resume_key + ": needs checkpoint.dir (where to find checkpoints)");
  require(ckpt.loader_every == 0 || !ckpt.dir.empty(), "checkpoint.loader_every: needs checkpoint.dir");
  require(!ckpt.resuming() || !trainers_load(job.mode), resume_key + ": the colocated mode does not checkpoint");
  require(!ckpt.resume_step || *ckpt.resume_step < job.steps,
          str("checkpoint.resume_step: ", ckpt.resume_step.value_or(0), " is beyond the run (job.steps = ", job.steps,
              "; the last step is ", job.steps - 1, ")"));
  for (const auto& name : split_list(ckpt.snapshot_sources))
    require(name.empty() || names.count(name) > 0, str("checkpoint.snapshot_sources: '", name, "' is not a source in mix.sources"));

  validate_fault(config);
}

Invocation parse_command_line(int argc, const char* const* argv) {
  Invocation invocation;
  const std::vector<Section> sections = static_sections();
  invocation.usage = usage_text(sections);

  po::options_description static_options;
  for (const auto& section : sections) static_options.add(describe(section, false));
  po::options_description first_pass;
  first_pass.add(command_line_only(sections)).add(static_options);

  // Pass 1: tolerant, to learn --help, --config and mix.sources.
  const po::parsed_options tolerant = parse_arguments(argc, argv, first_pass, true, {});
  for (const auto& option : tolerant.options) {
    if (option.string_key == "help") invocation.help = true;
    if (option.string_key == "help-markdown") {
      invocation.help = true;
      invocation.usage = markdown_table(sections);
      return invocation;
    }
    if (option.string_key == "print-world-size") invocation.print_world_size = true;
    if (option.string_key == "print-layout") invocation.print_layout = true;
  }
  if (invocation.help) return invocation;

  ParseContext context;
  context.working_dir = std::filesystem::current_path();
  std::string file_text;
  if (const std::string* path = find_value(tolerant, "config")) {
    context.config_name = *path;
    context.config_dir = std::filesystem::absolute(std::filesystem::path(*path)).parent_path();
    file_text = read_config_file(*path);
    invocation.config.config_path = *path;
  }
  po::options_description file_first_pass;
  file_first_pass.add(static_options);
  const po::parsed_options file_tolerant =
      parse_file(file_text, context.config_name, file_first_pass, true, {});

  std::vector<std::string> names;
  if (const std::string* text = find_value(tolerant, "mix.sources"))
    names = source_names(*text, "on the command line");
  else if (const std::string* text = find_value(file_tolerant, "mix.sources"))
    names = source_names(*text, "in " + context.config_name);

  // Pass 2: strict, with exactly the listed sources' sections registered.
  std::vector<Section> all_sections = sections;
  for (const auto& name : names) all_sections.push_back(source_section(name));
  po::options_description file_options;
  for (size_t i = sections.size(); i < all_sections.size(); ++i) file_options.add(describe(all_sections[i], false));
  file_options.add(static_options);
  po::options_description command_options;
  command_options.add(command_line_only(sections)).add(file_options);

  std::map<std::string, Setting> settings;
  collect(parse_file(file_text, context.config_name, file_options, false, names), Origin::file,
          "in " + context.config_name, settings);
  // The command line overrides the file: collected second, into its own map
  // first so a duplicate within the command line is still caught.
  std::map<std::string, Setting> overrides;
  collect(parse_arguments(argc, argv, command_options, false, names), Origin::command_line, "on the command line",
          overrides);
  for (auto& [key, setting] : overrides) settings[key] = setting;

  Config& config = invocation.config;
  for (const auto& name : names) config.sources.emplace_back().name = name;
  std::map<std::string, const OptionSpec*> specs;
  for (const auto& section : all_sections)
    for (const auto& option : section.options) specs[option.key] = &option;
  for (const auto& [key, setting] : settings) {
    auto it = specs.find(key);
    MSD_CHECK(it != specs.end());
    it->second->apply(config, setting, context);
  }
  validate(config);
  return invocation;
}

namespace {

// One "key = value" line; the INI reader strips blanks around a value and
// takes '#' as the start of a comment, so such values cannot be written.
void ini_line(std::ostringstream& out, const std::string& key, const std::string& value) {
  const bool blank_edge = !value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                                             std::isspace(static_cast<unsigned char>(value.back())));
  if (blank_edge || value.find_first_of("#\r\n") != std::string::npos)
    throw ConfigError(str(key, ": '", value,
                          "' cannot be written to an INI file (a '#', a line break or leading/trailing blanks)"));
  out << key.substr(key.rfind('.') + 1) << " = " << value << "\n";
}

}  // namespace

std::string to_ini(const Config& config) {
  std::vector<Section> sections = static_sections();
  for (const auto& source : config.sources) sections.push_back(source_section(source.name));
  std::ostringstream out;
  for (const auto& section : sections) {
    out << (&section == &sections.front() ? "" : "\n") << "[" << section.name << "]\n";
    for (const auto& option : section.options) ini_line(out, option.key, option.print(config));
  }
  return out.str();
}

}  // namespace msd
