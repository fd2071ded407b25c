// The option table: each option's key, value name, help, parser and printer,
// section by section (option_table.h).
#include "config/option_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "common/error.h"
#include "source/format.h"

namespace msd::option_table {

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
    source.format = SourceFormat::indexed;
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

// A number >= 0 (a double), written back exactly.
template <typename Member>
OptionSpec number(std::string key, std::string value_name, std::string help, Member member) {
  return {std::move(key), std::move(value_name), std::move(help),
          [member](Config& c, const Setting& s, const ParseContext& x) {
            if (!parse_double(s.text, member(c)) || member(c) < 0) bad_value(s, x, "a number >= 0");
          },
          [member](const Config& c) { return exact(member(c)); }};
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

// job.mode: a mode a job runs (kTrainingModes, or the alias colocated), or
// disaggregated (no mode named: job.balance picks the msd mode).
OptionSpec job_mode(std::string key, std::string value_name, std::string help) {
  return {std::move(key), std::move(value_name), std::move(help),
          [](Config& c, const Setting& s, const ParseContext& x) {
            const std::string name = trim(s.text);
            if (name == kDisaggregated) {
              c.job.named_mode.reset();
              return;
            }
            const auto mode = find_option_value<TrainingMode>(name);
            if (mode && !is_job_mode(*mode))
              throw ConfigError(str(s.key, ": '", name, "' ", kBaselineOnly, " (", where(s, x), ")"));
            if (!mode) {
              std::string names;
              for (TrainingMode m : kTrainingModes) names += str(option_name(m), " | ");
              bad_value(s, x, str(names, "colocated | ", kDisaggregated));
            }
            c.job.named_mode = *mode;
          },
          [](const Config& c) -> std::string { return c.job.mode_name(); }};
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
      job_mode("job.mode", "M",
               "colocated_samples | colocated_tokens | msd_tokens | msd_greedy | msd_kk; aliases colocated "
               "(= colocated_samples), disaggregated (= msd_ with job.balance). docs/evaluation.md; alias --mode"),
      choice("job.long_docs", "M", "split | truncate: documents longer than seq_len",
           [](auto& c) -> auto& { return c.job.long_docs; }),
      count("job.max_sample_bytes", "BYTES",
            "a transformed sample bigger than this is skipped as too_large (a stream setting; <= loader.window_mb)",
            [](auto& c) -> auto& { return c.job.max_sample_bytes; }),
      choice("job.micro_batch_shape", "S",
           "fixed | varlen: a micro-batch as [sequences, seq_len] padded rows, or one row of its positions "
           "(packed THD attention, under topology.cp > 1 each document piece split over the CP ranks on its own; "
           "planner-driven modes; docs/batch.md)",
           [](auto& c) -> auto& { return c.job.micro_batch_shape; }),
      choice("job.balance", "M", "greedy | karmarkar_karp | tokens: how the planner balances DP ranks and micro-batches (docs/cost-and-balance.md)",
           [](auto& c) -> auto& { return c.job.balance; }),
      count("job.max_positions_per_micro_batch", "N",
            "most positions (tokens + patches) a micro-batch may hold; 0: seq_len x the sequences of an equal token split",
            [](auto& c) -> auto& { return c.job.max_positions_per_micro_batch; }),
      choice("job.cuts", "C",
           "whole | balance: documents cut only when longer than seq_len, or also where that evens out the DP "
           "ranks, never into more pieces than Megatron's cut of the step (needs micro_batch_shape = varlen; "
           "docs/cost-and-balance.md)",
           [](auto& c) -> auto& { return c.job.cuts; }),
      choice("job.micro_batch_count", "C",
           "fixed | variable: job.micro_batches per DP rank, or as many as each rank's positions need under "
           "max_positions_per_micro_batch, at least micro_batches (needs micro_batch_shape = varlen; "
           "docs/batch.md)",
           [](auto& c) -> auto& { return c.job.micro_batch_count; }),
      number("job.hold_above", "X",
             "the outlier hold: a document over X x seq_len positions waits for later steps until topology.dp of "
             "them wait (one per rank) or it waited job.hold_steps; the last step places all; 0: no hold "
             "(docs/cost-and-balance.md)",
             [](auto& c) -> auto& { return c.job.hold_above; }),
      count("job.hold_steps", "N", "the outlier hold: most steps a held document waits",
            [](auto& c) -> auto& { return c.job.hold_steps; }),
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
      choice("topology.network_reads", "HOW",
           "two_sided | one_sided: how clients read loader windows that are not node-shared: one request and one "
           "reply per loader and step, or MPI_Get per piece (docs/multi-node.md)",
           [](auto& c) -> auto& { return c.topology.network_reads; }),
      count("topology.ranks_per_node", "N",
            "0: the nodes MPI reports; N: plan as if every N consecutive world ranks shared a node (docs/layout.md)",
            [](auto& c) -> auto& { return c.topology.ranks_per_node; }),
      choice("topology.data_ranks", "P",
           "first | per_node | dedicated_nodes: where the planner and loaders sit (docs/layout.md)",
           [](auto& c) -> auto& { return c.topology.data_ranks; }),
      // Loader pool scaling (docs/scaling.md).
      choice("topology.scaling", "S",
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
      number("model.cost_micro_batch", "C",
             "cost model's cost of one micro-batch whatever it holds, in units of a*L + L^2 (the calibration's "
             "constant; msd-plan calibrate fits it); the variable micro-batch count weighs it; 0: none",
             [](auto& c) -> auto& { return c.model.cost_micro_batch; }),
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
      {"checkpoint.accept_changed_mix", "BOOL",
       "resume although the mixture changed since the checkpoint: weights, sources added or removed, files added to "
       "or removed from a source; the new mixture holds from the resume step, no document a source delivered comes "
       "again before its epoch ends, a removed file's undelivered documents are dropped; the warning lists every "
       "change (docs/checkpoint.md; alias --resume-accept-changed-mix)",
       [](Config& c, const Setting& s, const ParseContext& x) { c.checkpoint.accept_changed_mix = to_bool(s, x); },
       [](const Config& c) { return std::string(c.checkpoint.accept_changed_mix ? "true" : "false"); }},
      {"checkpoint.start_over", "BOOL",
       "start at step 0 over a checkpoint.dir that holds an earlier run's checkpoints (with --resume: only when none "
       "reads back), moving them to DIR/replaced-<time>/; else such a start is refused",
       [](Config& c, const Setting& s, const ParseContext& x) { c.checkpoint.start_over = to_bool(s, x); },
       [](const Config& c) { return std::string(c.checkpoint.start_over ? "true" : "false"); }},
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

Section source_section(const std::string& name) {
  const std::string prefix = "source." + name + ".";
  // `field` is a generic lambda returning the field of a SourceConfig.
  auto option = [&](const std::string& key, const char* value_name, const std::string& help, auto apply, auto field) {
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
  auto text_field = [](auto& src) -> auto& { return src.text_field; };
  auto caption_field = [](auto& src) -> auto& { return src.caption_field; };
  auto image_field = [](auto& src) -> auto& { return src.image_field; };
  // A count option of the source: `member` is a pointer to its field.
  auto count_option = [&](const std::string& key, const char* value_name, const char* help, uint64_t SourceConfig::*member) {
    return option(key, value_name, help,
                  [member](SourceConfig& src, const Setting& s, const ParseContext& x) { src.*member = to_count<uint64_t>(s, x); },
                  [member](const SourceConfig& src) { return str(src.*member); });
  };
  Section section{"source." + name, {}};
  section.options = {
      option("format", "F", format_names() + " (docs/formats.md)",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) {
               src.format = format_named(trim(s.text));
               if (!src.format) bad_value(s, x, str("one of the registered formats: ", format_names()));
             },
             [](const SourceConfig& src) { return std::string(src.format ? format_name(*src.format) : ""); }),
      option("path", "GLOBS", "comma-separated globs of the source's files",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.path = resolve_globs(s, x); },
             [](const SourceConfig& src) { return src.path; }),
      option("weight", "W", "mixing weight: W, or STEP:W pairs \"0:0.6, 500:0.3\"",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) { src.weight = to_weight(s, x); },
             [](const SourceConfig& src) { return weight_text(src.weight); }),
      option("text_field", "KEY", "jsonl: field holding the text; parquet: column of the text", trimmed(text_field),
             text_field),
      option("caption_field", "KEY", "wds: field of the .json caption; parquet with image_field: column of the caption",
             trimmed(caption_field), caption_field),
      option("image_field", "KEY", "parquet: column of the image bytes (JPEG); set: image-text samples",
             trimmed(image_field), image_field),
      option("shuffle", "ORDER",
             "auto | uniform | block: the stream's order in an epoch; block shuffles blocks of consecutive records and "
             "the records of a window of blocks together, so compressed files and Parquet row groups decode about "
             "once per epoch; auto: block for parquet and compressed jsonl, else uniform (docs/formats.md)",
             [](SourceConfig& src, const Setting& s, const ParseContext& x) {
               const auto value = find_option_value<Shuffle>(trim(s.text));
               if (!value) bad_value(s, x, option_names<Shuffle>());
               src.shuffle = *value;
             },
             [](const SourceConfig& src) { return std::string(option_name(src.shuffle)); }),
      count_option("shuffle_block_records", "N", "shuffle block: consecutive records per block (>= 1)",
                   &SourceConfig::shuffle_block_records),
      count_option("shuffle_window_blocks", "N", "shuffle block: blocks whose records are shuffled together (>= 1)",
                   &SourceConfig::shuffle_window_blocks),
      count_option("cache_mib", "MIB",
                   "decoded blocks one open source keeps: Parquet row groups, and compressed jsonl restart intervals "
                   "under shuffle block; size it to hold a window (shuffle_window_blocks x shuffle_block_records "
                   "records)",
                   &SourceConfig::cache_mib),
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


const OptionSpec& find_spec(const std::vector<Section>& sections, const std::string& key) {
  for (const auto& section : sections)
    for (const auto& option : section.options)
      if (option.key == key) return option;
  MSD_CHECK(false);
  std::abort();
}

}  // namespace msd::option_table
