#include "common/memory.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

namespace msd {

uint64_t peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

uint64_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t open_file_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  uint64_t entries = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++entries;
  ::closedir(dir);
  return entries > 0 ? entries - 1 : 0;  // the listing's own descriptor
}

namespace {
std::atomic<uint64_t> anon_shmem_peak{0};
std::atomic<int64_t> anon_shmem_read_ns{0};  // 0: never read

// RssAnon + RssShmem of /proc/self/status, in bytes; 0 without /proc.
uint64_t current_anon_shmem_bytes() {
  std::ifstream status("/proc/self/status");
  uint64_t bytes = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("RssAnon:", 0) != 0 && line.rfind("RssShmem:", 0) != 0) continue;
    bytes += std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10) * 1024;  // "kB"
  }
  return bytes;
}
}  // namespace

void sample_anon_shmem(bool now) {
  constexpr int64_t kRefreshNs = 100'000'000;
  const int64_t at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch()).count();
  const int64_t last = anon_shmem_read_ns.load(std::memory_order_relaxed);
  if (!now && last != 0 && at - last < kRefreshNs) return;
  anon_shmem_read_ns.store(at, std::memory_order_relaxed);
  const uint64_t bytes = current_anon_shmem_bytes();
  uint64_t peak = anon_shmem_peak.load(std::memory_order_relaxed);
  while (bytes > peak && !anon_shmem_peak.compare_exchange_weak(peak, bytes, std::memory_order_relaxed)) {
  }
}

uint64_t peak_anon_shmem_bytes() { return anon_shmem_peak.load(std::memory_order_relaxed); }

}  // namespace msd
