// The option table behind msd/config.h: every option's key, help, how its
// text lands in a Config and how it is written back (to_ini). Internal to
// lib/config: config.cc parses and prints with it, validate.cc checks the
// Config it fills.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "msd/config.h"

namespace msd::option_table {

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

std::string trim(const std::string& text);
// "a, b,c" -> {"a", "b", "c"}, each trimmed; "" -> {""}.
std::vector<std::string> split_list(const std::string& text);

// Every static option, grouped by section, in the order of to_ini; defaults
// are printed from a default Config so --help cannot disagree with config.h.
std::vector<Section> static_sections();
// The options of one [source.NAME] section.
Section source_section(const std::string& name);
const OptionSpec& find_spec(const std::vector<Section>& sections, const std::string& key);

// Command-line-only options; the aliases map to "section.key" options.
inline constexpr std::array<std::pair<const char*, const char*>, 8> kAliases = {{
    {"resume-step", "checkpoint.resume_step"},
    {"loaders", "topology.loaders"},
    {"summary-json", "output.summary_json"},
    {"metrics", "output.metrics"},
    {"mode", "job.mode"},
    {"steps", "job.steps"},
    {"seed", "job.seed"},
    {"trace", "checkpoint.trace"},
}};

}  // namespace msd::option_table
