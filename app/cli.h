// What every msd command line does alike (docs/errors.md): parse with
// Boost.Program_options, print the help for --help, and end with one line
// naming the program and the cause and the exit status of msd/exit.h.
#pragma once

#include <boost/program_options.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"

namespace msd::cli {

namespace po = boost::program_options;

// How parse_or_help reads a command line beyond its options.
struct ParseRules {
  const po::positional_options_description* positional = nullptr;  // named positional arguments
  const po::options_description* help = nullptr;  // what --help prints (default: every option)
  std::vector<std::string>* unrecognized = nullptr;  // unknown arguments go here instead of being refused
};

// Parses argv into `values`. For --help it prints the options and returns
// false before any option is checked, so a required option does not hide the
// help.
bool parse_or_help(int argc, char** argv, const po::options_description& described, po::variables_map& values,
                   const ParseRules& rules = {});
bool parse_or_help(int argc, char** argv, const po::options_description& described);

// Runs `body` and returns its status. An error ends it with one line on
// stderr, "PROGRAM: CAUSE", and a status: kExitConfig for a bad command line
// (followed by "(see --help)") or a ConfigError, kExitData for a DataError,
// kExitAborted for any other failure.
int guarded(const std::string& program, const std::function<int()>& body);

// "a,b,c" -> {"a", "b", "c"}; an empty item is a ConfigError naming `what`.
std::vector<std::string> split_list(const std::string& text, const std::string& what);

// "8,32,128" -> numbers; anything else is a ConfigError naming `what`.
template <typename T>
std::vector<T> number_list(const std::string& text, const char* what) {
  std::vector<T> out;
  for (const std::string& item : split_list(text, what)) {
    try {
      size_t used = 0;
      const long long value = std::stoll(item, &used);
      if (used != item.size() || value < 0) throw std::invalid_argument(item);
      out.push_back(static_cast<T>(value));
    } catch (const std::exception&) {
      throw ConfigError(std::string(what) + ": '" + text + "' is not a list of numbers");
    }
  }
  return out;
}

}  // namespace msd::cli
