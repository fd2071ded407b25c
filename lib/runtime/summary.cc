#include "runtime/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/digest.h"
#include "common/json_writer.h"
#include "plan/mix.h"
#include "source/source.h"

namespace msd {

namespace {
std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  return buf;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// Gathers a variable-length array from every rank to rank 0 (Igatherv with
// backoff). Returns per-rank arrays on rank 0.
template <typename T>
std::vector<std::vector<T>> gather_arrays(MPI_Comm comm, int size, bool root, const std::vector<T>& mine,
                                          MPI_Datatype type, const char* what) {
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(root ? static_cast<size_t>(size) : 0);
  MPI_Request request;
  MSD_MPI(MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm, &request), what);
  wait(request, what);
  std::vector<int> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  std::vector<T> flat(root ? static_cast<size_t>(displs.back() + counts.back()) : 0);
  MSD_MPI(MPI_Igatherv(mine.data(), count, type, flat.data(), counts.data(), displs.data(), type, 0, comm, &request),
          what);
  wait(request, what);
  std::vector<std::vector<T>> out;
  for (size_t r = 0; r < counts.size(); ++r)
    out.emplace_back(flat.begin() + displs[r], flat.begin() + displs[r] + counts[r]);
  return out;
}
}  // namespace

Summary gather_summary(JobContext& job, const SummaryInput& input) {
  const MPI_Comm world = job.world.get();
  const int size = job.world.size();
  const bool root = job.rank == 0;
  const Config& config = job.config;
  const size_t sources = config.sources.size();
  const uint32_t micro = config.job.micro_batches;
  const bool client = job.layout.role(job.rank) == Role::client;
  const int client_index = client ? job.layout.client_index(job.rank) : -1;
  // One rank per data group speaks for it: the group's first member.
  const bool group_leader =
      client && job.tree.group_members(job.tree.data_group(client_index)).front() == client_index;

  std::vector<RoleStats> all(root ? static_cast<size_t>(size) : 0);
  MPI_Request request;
  MSD_MPI(MPI_Igather(&input.stats, sizeof(RoleStats), MPI_BYTE, all.data(), sizeof(RoleStats), MPI_BYTE, 0, world,
                      &request),
          "gathering role statistics");
  wait(request, "gathering role statistics");

  // Realized mix per source (group leaders) and bad samples per kind.
  std::vector<uint64_t> counters(2 * sources + bad_kind_count, 0), totals(counters.size(), 0);
  if (group_leader && input.log) {
    for (size_t s = 0; s < sources && s < input.log->source_samples.size(); ++s) {
      counters[s] = input.log->source_samples[s];
      counters[sources + s] = input.log->source_tokens[s];
    }
  }
  for (size_t k = 0; k < input.bad_samples.size() && k < static_cast<size_t>(bad_kind_count); ++k)
    counters[2 * sources + k] += input.bad_samples[k];
  MSD_MPI(MPI_Ireduce(counters.data(), totals.data(), static_cast<int>(counters.size()), MPI_UINT64_T, MPI_SUM, 0,
                      world, &request),
          "summing the realized mix");
  wait(request, "summing the realized mix");

  const std::vector<uint64_t> no_digests;
  const std::vector<double> no_costs;
  auto digests = gather_arrays(world, size, root, input.log ? input.log->step_digests : no_digests, MPI_UINT64_T,
                               "gathering step digests");
  auto costs = gather_arrays(world, size, root, group_leader && input.log ? input.log->step_costs : no_costs,
                             MPI_DOUBLE, "gathering step costs");
  auto fetched = gather_arrays(world, size, root, input.log ? input.log->step_bytes_fetched : no_digests,
                               MPI_UINT64_T, "gathering fetched bytes");
  auto needed = gather_arrays(world, size, root, input.log ? input.log->step_bytes_needed : no_digests, MPI_UINT64_T,
                              "gathering needed bytes");
  if (!root) return {};

  // Per step, the clients' digests in client order; the batch digest over all.
  uint64_t steps = config.job.steps;
  for (int c = 0; c < job.layout.clients; ++c)
    steps = std::min<uint64_t>(steps, digests[static_cast<size_t>(job.layout.client_rank(c))].size());
  // Digests name absolute steps, so a resumed run's step digests compare with
  // an uninterrupted run's from first_step on.
  const uint64_t first_step = job.first_step;
  std::vector<uint64_t> per_step(steps, 0);
  Digest batch_digest;
  for (uint64_t t = 0; t < steps; ++t) {
    Digest d;
    d.update_u64(first_step + t);
    for (int c = 0; c < job.layout.clients; ++c) d.update_u64(digests[static_cast<size_t>(job.layout.client_rank(c))][t]);
    per_step[t] = d.value();
    batch_digest.update_u64(per_step[t]);
  }

  // Balance: per step, each DP rank's cost (sum over its micro-batches) and
  // each micro-batch index's cost, max over mean across DP ranks.
  std::vector<double> dp_ratio, mb_ratio, bound_ratio;
  // The same per step (NaN, null in JSON, for a step without cost).
  std::vector<double> step_dp(steps, std::nan("")), step_bound(steps, std::nan(""));
  std::vector<std::vector<double>> step_mb(steps);
  const size_t stride = micro + 1;
  for (uint64_t t = 0; t < steps; ++t) {
    std::vector<double> rank_cost;
    std::vector<std::vector<double>> mb_cost(micro);
    double largest = 0.0;
    for (int g = 0; g < job.tree.data_groups(); ++g) {
      const int leader = job.tree.group_members(g).front();
      const auto& v = costs[static_cast<size_t>(job.layout.client_rank(leader))];
      if (v.size() < (t + 1) * stride) continue;
      double sum = 0.0;
      for (uint32_t m = 0; m < micro; ++m) {
        sum += v[t * stride + m];
        mb_cost[m].push_back(v[t * stride + m]);
      }
      largest = std::max(largest, v[t * stride + micro]);
      rank_cost.push_back(sum);
    }
    if (rank_cost.empty()) continue;
    double mean = 0.0;
    for (double c : rank_cost) mean += c;
    mean /= static_cast<double>(rank_cost.size());
    if (mean <= 0) continue;
    dp_ratio.push_back(step_dp[t] = max_of(rank_cost) / mean);
    bound_ratio.push_back(step_bound[t] = std::max(largest, mean) / mean);
    for (const auto& per_mb : mb_cost) {
      double m_mean = 0.0;
      for (double c : per_mb) m_mean += c;
      m_mean /= static_cast<double>(per_mb.size());
      step_mb[t].push_back(m_mean > 0 ? max_of(per_mb) / m_mean : std::nan(""));
      if (m_mean > 0) mb_ratio.push_back(step_mb[t].back());
    }
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
        state_bytes += s.state_bytes;
        break;
    }
  }
  // Loader memory (docs/summary.md): what each rank grew by after start-up.
  // The loader state lives in the planner and loaders (disaggregated) or in
  // every client (colocated).
  uint64_t grown[3] = {0, 0, 0};  // by Role
  for (const RoleStats& s : all)
    if (s.role >= 0 && s.role < 3)
      grown[s.role] += s.peak_rss_bytes > s.startup_rss_bytes ? s.peak_rss_bytes - s.startup_rss_bytes : 0;
  const uint64_t loader_memory = job.layout.colocated
                                     ? grown[static_cast<int>(Role::client)]
                                     : grown[static_cast<int>(Role::planner)] + grown[static_cast<int>(Role::loader)];
  // Bytes each step read from loader windows (or loaded, colocated) and
  // used, summed over clients.
  std::vector<uint64_t> step_fetched(steps, 0), step_needed(steps, 0);
  uint64_t fetched_total = 0, needed_total = 0;
  for (int c = 0; c < job.layout.clients; ++c) {
    const size_t r = static_cast<size_t>(job.layout.client_rank(c));
    for (uint64_t t = 0; t < steps && t < fetched[r].size() && t < needed[r].size(); ++t) {
      step_fetched[t] += fetched[r][t];
      step_needed[t] += needed[r][t];
    }
  }
  for (uint64_t t = 0; t < steps; ++t) {
    fetched_total += step_fetched[t];
    needed_total += step_needed[t];
  }
  const double redundancy = needed_total ? double(fetched_total) / double(needed_total) : 0.0;

  uint64_t tokens = 0, realized_total = 0, bad_total = 0;
  for (size_t s = 0; s < sources; ++s) {
    realized_total += totals[s];
    tokens += totals[sources + s];
  }
  for (int k = 1; k < bad_kind_count; ++k) bad_total += totals[2 * sources + static_cast<size_t>(k)];
  const double tokens_per_s = client_wall > 0 ? tokens / client_wall : 0.0;
  const double wait_mean = clients ? wait_sum / clients : 0.0;

  // The target mix: the schedule's running targets over the steps this run
  // delivered (from first_step on).
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<double> share(sources, 0.0), target_before(sources, 0.0), target(sources, 0.0);
  for (uint64_t t = 0; t < first_step + steps; ++t) {
    if (t == first_step && t > 0) target_before = mixer.target();
    if (t >= first_step) {
      const auto w = mixer.schedule().weights(t);
      for (size_t s = 0; s < sources; ++s) share[s] += w[s] / static_cast<double>(steps);
    }
    mixer.next();
  }
  for (size_t s = 0; s < sources; ++s) target[s] = mixer.target()[s] - target_before[s];

  JsonWriter w;
  w.begin_object();
  w.value("mode", config.job.mode);
  w.value("world_size", job.layout.world_size());
  w.begin_object("topology")
      .value("dp", config.topology.dp)
      .value("pp", config.topology.pp)
      .value("cp", config.topology.cp)
      .value("tp", config.topology.tp)
      .value("loaders", job.layout.colocated ? 0 : config.topology.loaders)
      .value("shadow_loaders", job.layout.colocated ? 0 : config.topology.shadow_loaders)
      .end_object();
  w.value("steps", steps);
  w.value("first_step", first_step);
  w.value("tokens", tokens);
  w.value("wall_s", client_wall);
  w.value("tokens_per_s", tokens_per_s);
  w.value("data_wait_s", wait_mean);
  w.value("data_wait_max_s", wait_max);
  w.value("compute_s", clients ? compute_sum / clients : 0.0);
  w.value("batch_digest", hex64(batch_digest.value()));
  w.begin_array("step_digests");
  for (uint64_t d : per_step) w.value("", hex64(d));
  w.end_array();
  // Both balance objectives, for every step and summarized.
  auto write_per_step = [&w](const std::vector<double>& values) {
    w.begin_array("per_step");
    for (double v : values) w.value("", v);
    w.end_array();
  };
  w.begin_object("dp_max_over_mean").value("median", median(dp_ratio)).value("max", max_of(dp_ratio));
  write_per_step(step_dp);
  w.end_object();
  w.begin_object("microbatch_max_over_mean").value("median", median(mb_ratio)).value("max", max_of(mb_ratio));
  w.begin_array("per_step");  // per step, one value per micro-batch index
  for (const auto& values : step_mb) {
    w.begin_array();
    for (double v : values) w.value("", v);
    w.end_array();
  }
  w.end_array();
  w.end_object();
  w.begin_object("lower_bound").value("median", median(bound_ratio)).value("max", max_of(bound_ratio));
  write_per_step(step_bound);
  w.end_object();
  w.begin_object("mix_target");
  for (size_t s = 0; s < sources; ++s)
    w.begin_object(config.sources[s].name).value("share", share[s]).value("samples", target[s]).end_object();
  w.end_object();
  w.begin_object("mix_realized");
  for (size_t s = 0; s < sources; ++s)
    w.begin_object(config.sources[s].name)
        .value("share", realized_total ? double(totals[s]) / realized_total : 0.0)
        .value("samples", totals[s])
        .value("tokens", totals[sources + s])
        .value("token_share", tokens ? double(totals[sources + s]) / tokens : 0.0)
        .end_object();
  w.end_object();
  w.begin_object("bad_samples");
  for (int k = 1; k < bad_kind_count; ++k)
    w.value(bad_kind_name(static_cast<BadKind>(k)), totals[2 * sources + static_cast<size_t>(k)]);
  w.value("total", bad_total);
  w.end_object();
  w.begin_object("memory_budget")
      .value("binding_steps", input.budget_binding_steps)
      .value("exceeded_steps", input.budget_exceeded_steps)
      .end_object();
  w.begin_object("planner_checkpoints")
      .value("written", input.checkpoints)
      .value("seconds", input.checkpoint_seconds)
      .value("max_ms", input.checkpoint_max_seconds * 1e3)
      .value("share_of_wall", client_wall > 0 ? input.checkpoint_seconds / client_wall : 0.0)
      .end_object();
  w.value("takeover_count", static_cast<uint64_t>(input.takeovers.size()));
  w.begin_array("takeovers");
  for (const Takeover& t : input.takeovers)
    w.begin_object()
        .value("loader", t.loader)
        .value("shadow", t.shadow)
        .value("step", t.step)
        .value("requests", t.requests)
        .value("latency_s", t.latency_s)
        .value("why", t.why)
        .end_object();
  w.end_array();
  w.begin_object("memory_peak_bytes")
      .value("planner", mem_planner)
      .value("loader", mem_loader_max)
      .value("client", mem_client_max)
      .value("loader_total", mem_loader_total)
      .value("client_total", mem_client_total)
      .end_object();
  w.begin_object("loader_memory_bytes")
      .value("planner", grown[static_cast<int>(Role::planner)])
      .value("loader", grown[static_cast<int>(Role::loader)])
      .value("client", grown[static_cast<int>(Role::client)])
      .value("total", loader_memory)
      .end_object();
  w.begin_array("bytes_fetched");
  for (uint64_t b : step_fetched) w.value("", b);
  w.end_array();
  w.begin_array("bytes_needed");
  for (uint64_t b : step_needed) w.value("", b);
  w.end_array();
  w.value("bytes_fetched_total", fetched_total);
  w.value("bytes_needed_total", needed_total);
  w.value("fetch_redundancy", redundancy);
  w.begin_object("loaders")
      .value("samples_loaded", loaded)
      .value("transform_s", transform)
      .value("window_peak_bytes", window_peak)
      .value("source_state_bytes", state_bytes)
      .end_object();
  w.end_object();

  std::string text;
  char line[512];
  if (job.layout.colocated)
    std::snprintf(line, sizeof line, "msd-run summary (colocated, %d ranks = dp %d x pp %d x cp %d x tp %d clients)\n",
                  job.layout.world_size(), config.topology.dp, config.topology.pp, config.topology.cp,
                  config.topology.tp);
  else
    std::snprintf(line, sizeof line,
                  "msd-run summary (%s, %d ranks: 1 planner, %d loaders, %d clients = dp %d x pp %d x cp %d x tp %d)\n",
                  config.job.mode.c_str(), job.layout.world_size(), config.topology.loaders, job.layout.clients,
                  config.topology.dp, config.topology.pp, config.topology.cp, config.topology.tp);
  text += line;
  if (first_step > 0) {
    std::snprintf(line, sizeof line, "  resumed at step %llu\n", static_cast<unsigned long long>(first_step));
    text += line;
  }
  std::snprintf(line, sizeof line, "  steps %llu, tokens %llu in %.2f s: %.0f tokens/s\n",
                static_cast<unsigned long long>(steps), static_cast<unsigned long long>(tokens), client_wall,
                tokens_per_s);
  text += line;
  if (input.checkpoints > 0) {
    std::snprintf(line, sizeof line, "  planner checkpoints: %llu, %.3f ms each on average (%.3f%% of wall)\n",
                  static_cast<unsigned long long>(input.checkpoints), 1e3 * input.checkpoint_seconds / input.checkpoints,
                  client_wall > 0 ? 100.0 * input.checkpoint_seconds / client_wall : 0.0);
    text += line;
  }
  std::snprintf(line, sizeof line, "  data wait per client: mean %.3f s, max %.3f s (%.1f%% of wall)\n", wait_mean,
                wait_max, client_wall > 0 ? 100.0 * wait_mean / client_wall : 0.0);
  text += line;
  std::snprintf(line, sizeof line,
                "  balance, max/mean cost over DP ranks per step: median %.3f, worst %.3f (lower bound median %.3f)\n",
                median(dp_ratio), max_of(dp_ratio), median(bound_ratio));
  text += line;
  text += "  mix (samples: target share -> realized share; tokens):\n";
  for (size_t s = 0; s < sources; ++s) {
    std::snprintf(line, sizeof line, "    %-12s %6.3f -> %6.3f  (%llu samples, %llu tokens)\n",
                  config.sources[s].name.c_str(), share[s], realized_total ? double(totals[s]) / realized_total : 0.0,
                  static_cast<unsigned long long>(totals[s]), static_cast<unsigned long long>(totals[sources + s]));
    text += line;
  }
  text += "  bad samples replaced: " + std::to_string(bad_total);
  if (bad_total) {
    std::string parts;
    for (int k = 1; k < bad_kind_count; ++k)
      if (totals[2 * sources + static_cast<size_t>(k)])
        parts += (parts.empty() ? "" : ", ") + std::string(bad_kind_name(static_cast<BadKind>(k))) + " " +
                 std::to_string(totals[2 * sources + static_cast<size_t>(k)]);
    text += " (" + parts + ")";
  }
  text += "\n";
  if (job.layout.colocated)
    text += "  peak memory: client " + format_bytes(mem_client_max) + " (max), " + format_bytes(mem_client_total) +
            " (all clients)\n";
  else
    text += "  peak memory: planner " + format_bytes(mem_planner) + ", loader " + format_bytes(mem_loader_max) +
            " (max), client " + format_bytes(mem_client_max) + " (max)\n";
  text += "  loader memory (peak RSS over start-up): " + format_bytes(loader_memory) +
          (job.layout.colocated ? " over all clients\n" : " (planner and loaders)\n");
  std::snprintf(line, sizeof line, "  sample bytes per step fetched/needed over clients: %.3f\n", redundancy);
  text += line;
  for (const Takeover& t : input.takeovers) {
    std::snprintf(line, sizeof line, "  takeover: loader %d by shadow %d before step %llu, %llu requests, %.0f ms after it went quiet\n",
                  t.loader, t.shadow, static_cast<unsigned long long>(t.step),
                  static_cast<unsigned long long>(t.requests), t.latency_s * 1e3);
    text += line;
  }
  text += "  batch digest " + hex64(batch_digest.value()) + "\n";
  return {w.str(), text};
}

}  // namespace msd
