#include "common/files.h"

#include <algorithm>

#include "common/error.h"

namespace msd {

std::vector<std::string> split_patterns(const std::string& patterns) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= patterns.size()) {
    size_t comma = patterns.find(',', start);
    if (comma == std::string::npos) comma = patterns.size();
    items.push_back(patterns.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool is_msd_own_file(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.ends_with(kIndexCacheSuffix)) return true;
  const size_t tmp = name.rfind(".tmp.");
  return tmp != std::string::npos && tmp + 5 < name.size() &&
         name.find_first_not_of("0123456789", tmp + 5) == std::string::npos;
}

std::vector<std::string> expand_globs(const std::string& patterns, const std::string& what, Storage& storage) {
  std::vector<std::string> files;
  for (std::string pattern : split_patterns(patterns)) {
    pattern.erase(0, pattern.find_first_not_of(" \t"));
    pattern.erase(pattern.find_last_not_of(" \t") + 1);
    if (pattern.empty()) continue;
    const std::vector<std::string> matched = storage.glob(pattern);
    std::string own;  // the first of msd's own files the pattern matched
    for (const std::string& path : matched) {
      if (is_msd_own_file(path) && own.empty()) own = path;
      files.push_back(path);
    }
    if (!own.empty())
      throw ConfigError(str(what, ": '", pattern, "' matches ", own,
                            ", msd's own index cache or temporary file, not data; narrow the pattern or remove the "
                            "file (caches live in a hidden .msd/ folder beside the data)"));
    if (matched.empty())
      throw ConfigError(str(what, ": '", pattern, "' matches no file"));
  }
  if (files.empty()) throw ConfigError(str(what, ": no path given"));
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace msd
