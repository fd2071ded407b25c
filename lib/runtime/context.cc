#include "runtime/context.h"

#include <sys/resource.h>

#include "common/memory.h"

namespace msd {

void JobContext::end_startup() {
  if (startup.first_s > 0) return;
  mark_startup(&StartupFigures::first_s);
  startup.peak_rss_bytes = peak_rss_bytes();
  startup.open_files = open_file_descriptors();
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  startup.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace msd
