#include "job/startup_summary.h"

#include <algorithm>
#include <limits>

#include "msd/place_tree.h"

namespace msd {

namespace {

struct Spread {
  double min = std::numeric_limits<double>::infinity(), max = 0.0, sum = 0.0;
  uint64_t count = 0;
  void add(double value) {
    min = std::min(min, value);
    max = std::max(max, value);
    sum += value;
    ++count;
  }
};

void write_spread(JsonWriter& w, const char* key, const Spread& s) {
  w.begin_object(key)
      .value("min", s.count ? s.min : 0.0)
      .value("mean", s.count ? s.sum / static_cast<double>(s.count) : 0.0)
      .value("max", s.max)
      .end_object();
}

// The figures of one role that its ranks pass (a StartupFigures member each).
struct RoleFigures {
  const char* key;
  Role role;
  std::vector<std::pair<const char*, double StartupFigures::*>> points;
};

}  // namespace

void write_startup_json(JsonWriter& w, const std::vector<RoleStats>& stats) {
  const std::vector<RoleFigures> roles = {
      {"planner", Role::planner,
       {{"hello_s", &StartupFigures::hello_s}, {"ready_s", &StartupFigures::ready_s},
        {"agreed_s", &StartupFigures::agreed_s}, {"first_s", &StartupFigures::first_s}}},
      {"loaders", Role::loader,
       {{"open_s", &StartupFigures::open_s}, {"hello_s", &StartupFigures::hello_s},
        {"agreed_s", &StartupFigures::agreed_s}, {"first_s", &StartupFigures::first_s}}},
      {"clients", Role::client,
       {{"open_s", &StartupFigures::open_s}, {"agreed_s", &StartupFigures::agreed_s},
        {"first_s", &StartupFigures::first_s}}},
  };
  double origin = std::numeric_limits<double>::infinity(), first_batch = 0.0;
  for (const RoleStats& s : stats) {
    origin = std::min(origin, s.startup.origin_unix_s);
    if (static_cast<Role>(s.role) == Role::client)
      first_batch = std::max(first_batch, s.startup.origin_unix_s + s.startup.first_s);
  }
  w.begin_object("startup");
  w.value("origin_unix_s", stats.empty() ? 0.0 : origin).value("first_batch_unix_s", first_batch);
  for (const RoleFigures& role : roles) {
    std::vector<Spread> points(role.points.size());
    Spread rss, files, cpu;
    uint64_t indexed = 0, cached = 0;
    uint64_t ranks = 0;
    for (const RoleStats& s : stats) {
      if (static_cast<Role>(s.role) != role.role) continue;
      ++ranks;
      for (size_t p = 0; p < points.size(); ++p) points[p].add(s.startup.*(role.points[p].second));
      rss.add(static_cast<double>(s.startup.peak_rss_bytes));
      files.add(static_cast<double>(s.startup.open_files));
      cpu.add(s.startup.cpu_s);
      indexed += s.startup.files_indexed;
      cached += s.startup.files_cached;
    }
    w.begin_object(role.key).value("ranks", ranks).value("files_indexed", indexed).value("files_cached", cached);
    for (size_t p = 0; p < points.size(); ++p) write_spread(w, role.points[p].first, points[p]);
    write_spread(w, "peak_rss_bytes", rss);
    write_spread(w, "open_files", files);
    write_spread(w, "cpu_s", cpu);
    w.end_object();
  }
  w.end_object();
}

}  // namespace msd
