// The configuration msd-run would parse from these arguments (the program
// name is added), for the checkpoint tests.
#pragma once

#include <string>
#include <vector>

#include "msd/config.h"

namespace msd::test {

inline Config parse_config(std::vector<std::string> args) {
  args.insert(args.begin(), "msd-run");
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data()).config;
}

}  // namespace msd::test
