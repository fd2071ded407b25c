#include "runtime/summary.h"

#include <algorithm>
#include <cstdio>

#include "common/digest.h"
#include "common/json_writer.h"
#include "source/source.h"

namespace msd {

namespace {
std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  return buf;
}
}  // namespace

Summary gather_summary(JobContext& job, const RoleStats& stats, const std::vector<uint64_t>& step_digests,
                       const PlannerReport& report) {
  const MPI_Comm world = job.world.get();
  const int size = job.world.size();
  const bool root = job.rank == 0;
  std::vector<RoleStats> all(root ? static_cast<size_t>(size) : 0);
  MPI_Request request;
  MSD_MPI(MPI_Igather(&stats, sizeof stats, MPI_BYTE, all.data(), sizeof stats, MPI_BYTE, 0, world, &request),
          "gathering role statistics");
  wait(request, "gathering role statistics");

  const int count = static_cast<int>(step_digests.size());
  std::vector<int> counts(root ? static_cast<size_t>(size) : 0);
  MSD_MPI(MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world, &request), "gathering digest counts");
  wait(request, "gathering digest counts");
  std::vector<int> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  std::vector<uint64_t> digests(root && size > 0 ? static_cast<size_t>(displs.back() + counts.back()) : 0);
  MSD_MPI(MPI_Igatherv(step_digests.data(), count, MPI_UINT64_T, digests.data(), counts.data(), displs.data(),
                       MPI_UINT64_T, 0, world, &request),
          "gathering step digests");
  wait(request, "gathering step digests");
  if (!root) return {};

  const Config& config = job.config;
  // Per step, the clients' digests in client order; the batch digest over all.
  const uint64_t steps = report.steps;
  std::vector<uint64_t> per_step(steps, 0);
  Digest batch_digest;
  for (uint64_t t = 0; t < steps; ++t) {
    Digest d;
    d.update_u64(t);
    for (int c = 0; c < job.layout.clients; ++c) {
      const int rank = job.layout.client_rank(c);
      MSD_CHECK_LT(t, static_cast<uint64_t>(counts[static_cast<size_t>(rank)]));
      d.update_u64(digests[static_cast<size_t>(displs[static_cast<size_t>(rank)]) + t]);
    }
    per_step[t] = d.value();
    batch_digest.update_u64(per_step[t]);
  }

  double client_wall = 0, wait_sum = 0, wait_max = 0, compute_sum = 0, transform = 0;
  uint64_t mem_planner = 0, mem_loader_max = 0, mem_client_max = 0, mem_loader_total = 0, mem_client_total = 0;
  uint64_t loaded = 0, window_peak = 0, state_bytes = 0;
  int clients = 0;
  for (const RoleStats& s : all) {
    switch (static_cast<Role>(s.role)) {
      case Role::planner: mem_planner = s.peak_rss_bytes; break;
      case Role::loader:
        mem_loader_max = std::max(mem_loader_max, s.peak_rss_bytes);
        mem_loader_total += s.peak_rss_bytes;
        loaded += s.samples_loaded;
        transform += s.transform_seconds;
        window_peak = std::max(window_peak, s.window_peak_bytes);
        state_bytes += s.state_bytes;
        break;
      case Role::client:
        ++clients;
        mem_client_max = std::max(mem_client_max, s.peak_rss_bytes);
        mem_client_total += s.peak_rss_bytes;
        client_wall = std::max(client_wall, s.wall_seconds);
        wait_sum += s.wait_seconds;
        wait_max = std::max(wait_max, s.wait_seconds);
        compute_sum += s.compute_seconds;
        break;
    }
  }
  const double tokens_per_s = client_wall > 0 ? report.tokens / client_wall : 0.0;
  const double wait_mean = clients ? wait_sum / clients : 0.0;
  uint64_t bad_total = 0;
  for (uint64_t b : report.bad_samples) bad_total += b;
  uint64_t realized_total = 0, realized_tokens_total = 0;
  for (size_t s = 0; s < config.sources.size(); ++s) {
    realized_total += report.mix_realized_samples[s];
    realized_tokens_total += report.mix_realized_tokens[s];
  }

  JsonWriter w;
  w.begin_object();
  w.value("mode", config.job.mode);
  w.value("world_size", job.layout.world_size());
  w.begin_object("topology")
      .value("dp", config.topology.dp)
      .value("pp", config.topology.pp)
      .value("cp", config.topology.cp)
      .value("tp", config.topology.tp)
      .value("loaders", config.topology.loaders)
      .end_object();
  w.value("steps", steps);
  w.value("first_step", uint64_t{0});
  w.value("tokens", report.tokens);
  w.value("wall_s", client_wall);
  w.value("tokens_per_s", tokens_per_s);
  w.value("data_wait_s", wait_mean);
  w.value("data_wait_max_s", wait_max);
  w.value("compute_s", clients ? compute_sum / clients : 0.0);
  w.value("batch_digest", hex64(batch_digest.value()));
  w.begin_array("step_digests");
  for (uint64_t d : per_step) w.value("", hex64(d));
  w.end_array();
  w.begin_object("mix_target");
  for (size_t s = 0; s < config.sources.size(); ++s)
    w.begin_object(config.sources[s].name)
        .value("share", report.mix_target_share[s])
        .value("samples", report.mix_target_samples[s])
        .end_object();
  w.end_object();
  w.begin_object("mix_realized");
  for (size_t s = 0; s < config.sources.size(); ++s)
    w.begin_object(config.sources[s].name)
        .value("share", realized_total ? double(report.mix_realized_samples[s]) / realized_total : 0.0)
        .value("samples", report.mix_realized_samples[s])
        .value("tokens", report.mix_realized_tokens[s])
        .value("token_share", realized_tokens_total ? double(report.mix_realized_tokens[s]) / realized_tokens_total : 0.0)
        .end_object();
  w.end_object();
  w.begin_object("bad_samples");
  for (int k = 1; k < bad_kind_count; ++k) w.value(bad_kind_name(static_cast<BadKind>(k)), report.bad_samples[static_cast<size_t>(k)]);
  w.value("total", bad_total);
  w.end_object();
  w.begin_object("memory_peak_bytes")
      .value("planner", mem_planner)
      .value("loader", mem_loader_max)
      .value("client", mem_client_max)
      .value("loader_total", mem_loader_total)
      .value("client_total", mem_client_total)
      .end_object();
  w.begin_object("loaders")
      .value("samples_loaded", loaded)
      .value("transform_s", transform)
      .value("window_peak_bytes", window_peak)
      .value("source_state_bytes", state_bytes)
      .end_object();
  w.end_object();

  std::string text;
  char line[512];
  std::snprintf(line, sizeof line,
                "msd-run summary (%s, %d ranks: 1 planner, %d loaders, %d clients = dp %d x pp %d x cp %d x tp %d)\n",
                config.job.mode.c_str(), job.layout.world_size(), config.topology.loaders, job.layout.clients,
                config.topology.dp, config.topology.pp, config.topology.cp, config.topology.tp);
  text += line;
  std::snprintf(line, sizeof line, "  steps %llu, tokens %llu in %.2f s: %.0f tokens/s\n",
                static_cast<unsigned long long>(steps), static_cast<unsigned long long>(report.tokens), client_wall,
                tokens_per_s);
  text += line;
  std::snprintf(line, sizeof line, "  data wait per client: mean %.3f s, max %.3f s (%.1f%% of wall)\n", wait_mean,
                wait_max, client_wall > 0 ? 100.0 * wait_mean / client_wall : 0.0);
  text += line;
  text += "  mix (samples: target share -> realized share; tokens):\n";
  for (size_t s = 0; s < config.sources.size(); ++s) {
    std::snprintf(line, sizeof line, "    %-12s %6.3f -> %6.3f  (%llu samples, %llu tokens)\n",
                  config.sources[s].name.c_str(), report.mix_target_share[s],
                  realized_total ? double(report.mix_realized_samples[s]) / realized_total : 0.0,
                  static_cast<unsigned long long>(report.mix_realized_samples[s]),
                  static_cast<unsigned long long>(report.mix_realized_tokens[s]));
    text += line;
  }
  text += "  bad samples replaced: " + std::to_string(bad_total);
  if (bad_total) {
    std::string parts;
    for (int k = 1; k < bad_kind_count; ++k)
      if (report.bad_samples[static_cast<size_t>(k)])
        parts += (parts.empty() ? "" : ", ") + std::string(bad_kind_name(static_cast<BadKind>(k))) + " " +
                 std::to_string(report.bad_samples[static_cast<size_t>(k)]);
    text += " (" + parts + ")";
  }
  text += "\n";
  text += "  peak memory: planner " + format_bytes(mem_planner) + ", loader " + format_bytes(mem_loader_max) +
          " (max), client " + format_bytes(mem_client_max) + " (max)\n";
  text += "  batch digest " + hex64(batch_digest.value()) + "\n";
  return {w.str(), text};
}

}  // namespace msd
