#include "cli.h"

#include <algorithm>
#include <iostream>

#include "msd/exit.h"

namespace msd::cli {

bool parse_or_help(int argc, char** argv, const po::options_description& described, po::variables_map& values,
                   const ParseRules& rules) {
  po::command_line_parser parser(argc, argv);
  parser.options(described);
  if (rules.positional) parser.positional(*rules.positional);
  if (rules.unrecognized) parser.allow_unregistered();
  const po::parsed_options parsed = parser.run();
  po::store(parsed, values);
  if (values.count("help")) {
    std::cout << (rules.help ? *rules.help : described) << '\n';
    return false;
  }
  po::notify(values);
  if (rules.unrecognized) *rules.unrecognized = po::collect_unrecognized(parsed.options, po::include_positional);
  return true;
}

bool parse_or_help(int argc, char** argv, const po::options_description& described) {
  po::variables_map values;
  return parse_or_help(argc, argv, described, values);
}

int guarded(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const po::error& error) {
    std::cerr << program << ": " << error.what() << " (see --help)\n";
    return kExitConfig;
  } catch (const std::exception& error) {
    std::cerr << program << ": " << error.what() << '\n';
    return exit_status(error);
  }
}

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    if (out.back().empty()) throw ConfigError(what + ": '" + text + "' has an empty item");
    start = comma + 1;
  }
  return out;
}

}  // namespace msd::cli
