#include "checkpoint/step_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/log.h"
#include "common/storage.h"

namespace msd {

namespace fs = std::filesystem;

namespace {

constexpr int kStepDigits = 12;  // docs/checkpoint.md: file names
constexpr int kPartDigits = 5;

// The step of "PREFIX-<digits>.h5" or "PREFIX-<digits>-<part digits>.h5", or
// -1 when `name` is neither.
int64_t step_of(const std::string& name, const std::string& prefix) {
  const std::string head = prefix + "-";
  const size_t single = head.size() + kStepDigits + 3, part = single + 1 + kPartDigits;
  if ((name.size() != single && name.size() != part) || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - 3, 3, ".h5") != 0)
    return -1;
  auto digits = [&](size_t from, int count) {
    for (size_t i = from; i < from + static_cast<size_t>(count); ++i)
      if (name[i] < '0' || name[i] > '9') return false;
    return true;
  };
  if (!digits(head.size(), kStepDigits)) return -1;
  if (name.size() == part && (name[head.size() + kStepDigits] != '-' || !digits(single - 2, kPartDigits)))
    return -1;
  return std::stoll(name.substr(head.size(), kStepDigits));
}

}  // namespace

std::string step_file_path(const std::string& dir, const std::string& prefix, uint64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%0*llu", kStepDigits, static_cast<unsigned long long>(step));
  return (fs::path(dir) / (prefix + "-" + digits + ".h5")).string();
}

std::string step_part_path(const std::string& dir, const std::string& prefix, uint64_t step, uint32_t part) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "-%0*u.h5", kPartDigits, part);
  std::string path = step_file_path(dir, prefix, step);
  return path.replace(path.size() - 3, 3, digits);
}

std::optional<uint64_t> step_in_file_name(const std::string& path, const std::string& prefix) {
  const int64_t step = step_of(fs::path(path).filename().string(), prefix);
  if (step < 0) return std::nullopt;
  return static_cast<uint64_t>(step);
}

std::string temporary_path(const std::string& path) { return path + ".tmp"; }

void make_directory(const std::string& dir) { default_storage().make_dirs(dir); }

void sync_path(const std::string& path) { default_storage().sync(path); }

void rename_durably(const std::string& from, const std::string& to) { default_storage().rename(from, to); }

std::vector<std::pair<uint64_t, std::string>> list_step_files(const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<uint64_t, std::string>> files;
  for (const std::string& path : default_storage().list(dir)) {
    const int64_t step = step_of(fs::path(path).filename().string(), prefix);
    if (step >= 0) files.emplace_back(static_cast<uint64_t>(step), path);
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  return files;
}

void prune_step_files(const std::string& dir, const std::string& prefix, uint32_t keep) {
  if (keep == 0) return;
  Storage& storage = default_storage();
  const auto files = list_step_files(dir, prefix);
  std::set<uint64_t> kept;
  for (const auto& [step, path] : files) {
    if (kept.size() < keep) kept.insert(step);
    if (kept.count(step)) continue;
    try {
      storage.remove(path);
    } catch (const IoError& error) {
      log_warn("cannot remove old checkpoint: ", error.what());
    }
  }
  // A crash between create and rename leaves PREFIX-<step>.h5.tmp behind.
  if (files.empty()) return;
  const uint64_t newest = files.front().first;
  for (const std::string& path : storage.list(dir)) {
    std::string name = fs::path(path).filename().string();
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".tmp") != 0) continue;
    const int64_t step = step_of(name.substr(0, name.size() - 4), prefix);
    if (step >= 0 && static_cast<uint64_t>(step) < newest) {
      try {
        storage.remove(path);
      } catch (const IoError&) {
        // another process's, or gone: the next prune tries again
      }
    }
  }
}

}  // namespace msd
