// Reads the job configuration: an INI file (--config) plus --section.key=value
// overrides, through Boost.Program_options. Every value is taken as a string
// and converted here rather than by program_options, so that every error names
// the option (and the file) a user has to fix.
//
// [source.NAME] options depend on mix.sources, so parsing takes two passes: a
// tolerant one that only learns --config and mix.sources, then a strict one
// with source.NAME.* registered for exactly those names. The options
// themselves are in option_table.cc, the checks in validate.cc.
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
#include "config/option_table.h"

namespace po = boost::program_options;

namespace msd {
namespace {

using namespace option_table;

constexpr const char* kUsageLine = "usage: msd-run [--config FILE] [--section.key=value ...] [options]";
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
      "resume-accept-changed-data", "= --checkpoint.accept_changed_data=true")(
      "resume-accept-changed-mix", "= --checkpoint.accept_changed_mix=true");
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

// A regular file of at most kMaxConfigBytes: a directory, a device
// (/dev/zero) or a FIFO is refused before anything reads it.
constexpr uint64_t kMaxConfigBytes = 1 << 20;

std::string read_config_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error) throw ConfigError(str("--config: cannot open '", path, "': ", error.message()));
  if (status.type() == std::filesystem::file_type::directory)
    throw ConfigError(str("--config: '", path, "' is a directory, not an INI file"));
  if (status.type() != std::filesystem::file_type::regular)
    throw ConfigError(str("--config: '", path, "' is not a regular file (an INI file is)"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(str("--config: cannot open '", path, "': ", std::strerror(errno)));
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    throw ConfigError(str("--config: '", path, "' is larger than ", kMaxConfigBytes >> 20,
                          " MiB; an INI file of options is a few KiB"));
  return text;
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
    {"resume-accept-changed-mix", "checkpoint.accept_changed_mix"},
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

}  // namespace

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
