#include "job/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/digest.h"
#include "common/json_writer.h"
#include "common/stats.h"
#include "config/part_options.h"
#include "plan/step/mix.h"
#include "plan/step/modes.h"
#include "job/startup_summary.h"
#include "source/source.h"

namespace msd {

namespace {
std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  return buf;
}


// Gathers a variable-length array from every rank of `comm` to its rank 0
// (Igatherv with backoff). Returns on rank 0 the arrays by world rank
// (`world_of`: comm rank -> world rank; ranks not in comm get none).
template <typename T>
std::vector<std::vector<T>> gather_arrays(MPI_Comm comm, const std::vector<int>& world_of, bool root,
                                          const std::vector<T>& mine, MPI_Datatype type, const char* what) {
  const int size = static_cast<int>(world_of.size());
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
  std::vector<std::vector<T>> out(root ? static_cast<size_t>(world_of.back() + 1) : 0);
  for (size_t r = 0; r < counts.size(); ++r)
    out[static_cast<size_t>(world_of[r])].assign(flat.begin() + displs[r], flat.begin() + displs[r] + counts[r]);
  return out;
}

// What every rank contributes, gathered once to world rank 0 (per world rank).
struct Records {
  std::vector<RoleStats> stats;
  // Summed over the world: per source the realized samples, then per source
  // the tokens (both from data-group leaders), then bad samples per BadKind.
  std::vector<uint64_t> totals;
  std::vector<std::vector<uint64_t>> digests, fetched, needed;
  std::vector<std::vector<double>> costs;  // data-group leaders: per step, micro-batch costs and the largest
};

Records gather_records(JobContext& job, const SummaryInput& input) {
  // Over the ranks alive at the end (Job::finish), never a taken-over loader.
  const MPI_Comm world = job.live.valid() ? job.live.get() : job.world.get();
  std::vector<int> world_of = job.live_ranks;
  if (!job.live.valid())
    for (int r = 0; r < job.world.size(); ++r) world_of.push_back(r);
  const int size = static_cast<int>(world_of.size());
  const bool root = job.rank == 0;
  const size_t sources = job.config.sources.size();
  const bool client = job.layout.role(job.rank) == Role::client;
  const int client_index = client ? job.layout.client_index(job.rank) : -1;
  // One rank per data group speaks for it: the group's first member.
  const bool group_leader =
      client && job.tree.group_members(job.tree.data_group(client_index)).front() == client_index;

  Records records;
  records.stats.resize(root ? static_cast<size_t>(size) : 0);
  MPI_Request request;
  MSD_MPI(MPI_Igather(&input.stats, sizeof(RoleStats), MPI_BYTE, records.stats.data(), sizeof(RoleStats), MPI_BYTE, 0,
                      world, &request),
          "gathering role statistics");
  wait(request, "gathering role statistics");

  // Realized mix per source (group leaders) and bad samples per kind.
  std::vector<uint64_t> counters(2 * sources + bad_kind_count, 0);
  records.totals.assign(counters.size(), 0);
  if (group_leader && input.log) {
    for (size_t s = 0; s < sources && s < input.log->source_samples.size(); ++s) {
      counters[s] = input.log->source_samples[s];
      counters[sources + s] = input.log->source_tokens[s];
    }
  }
  for (size_t k = 0; k < input.bad_samples.size() && k < static_cast<size_t>(bad_kind_count); ++k)
    counters[2 * sources + k] += input.bad_samples[k];
  MSD_MPI(MPI_Ireduce(counters.data(), records.totals.data(), static_cast<int>(counters.size()), MPI_UINT64_T, MPI_SUM,
                      0, world, &request),
          "summing the realized mix");
  wait(request, "summing the realized mix");

  const std::vector<uint64_t> none;
  const std::vector<double> no_costs;
  const ClientLog* log = input.log;
  records.digests = gather_arrays(world, world_of, root, log ? log->step_digests : none, MPI_UINT64_T,
                                  "gathering step digests");
  records.costs = gather_arrays(world, world_of, root, group_leader && log ? log->step_costs : no_costs, MPI_DOUBLE,
                                "gathering step costs");
  records.fetched = gather_arrays(world, world_of, root, log ? log->step_bytes_fetched : none, MPI_UINT64_T,
                                  "gathering fetched bytes");
  records.needed = gather_arrays(world, world_of, root, log ? log->step_bytes_needed : none, MPI_UINT64_T,
                                 "gathering needed bytes");
  return records;
}

// Per step, the clients' digests in client order; the batch digest over all.
struct Digests {
  uint64_t steps = 0;  // steps every client delivered
  std::vector<uint64_t> per_step;
  uint64_t batch = 0;
};

Digests batch_digests(const JobContext& job, const Records& records) {
  Digests out;
  out.steps = job.config.job.steps;
  for (int c = 0; c < job.layout.clients; ++c)
    out.steps = std::min<uint64_t>(out.steps, records.digests[static_cast<size_t>(job.layout.client_rank(c))].size());
  // Digests name absolute steps, so a resumed run's step digests compare with
  // an uninterrupted run's from first_step on.
  out.per_step.assign(out.steps, 0);
  Digest batch_digest;
  for (uint64_t t = 0; t < out.steps; ++t) {
    Digest d;
    d.update_u64(job.first_step + t);
    for (int c = 0; c < job.layout.clients; ++c)
      d.update_u64(records.digests[static_cast<size_t>(job.layout.client_rank(c))][t]);
    out.per_step[t] = d.value();
    batch_digest.update_u64(out.per_step[t]);
  }
  out.batch = batch_digest.value();
  return out;
}

// Balance: per step, each DP rank's cost (sum over its micro-batches) and
// each micro-batch index's cost, max over mean across DP ranks.
struct Balance {
  std::vector<double> dp_ratio, mb_ratio, bound_ratio;  // over the steps that had costs
  // The same per step (NaN, null in JSON, for a step without cost).
  std::vector<double> step_dp, step_bound;
  std::vector<std::vector<double>> step_mb;
};

double mean_of(const std::vector<double>& values) {
  double mean = 0.0;
  for (double c : values) mean += c;
  return mean / static_cast<double>(values.size());
}

void balance_of_step(const JobContext& job, const Records& records, uint64_t t, Balance& out) {
  const uint32_t micro = job.config.job.micro_batches;
  const size_t stride = micro + 1;
  std::vector<double> rank_cost;
  std::vector<std::vector<double>> mb_cost(micro);
  double largest = 0.0;
  for (int g = 0; g < job.tree.data_groups(); ++g) {
    const int leader = job.tree.group_members(g).front();
    const auto& v = records.costs[static_cast<size_t>(job.layout.client_rank(leader))];
    if (v.size() < (t + 1) * stride) continue;
    double sum = 0.0;
    for (uint32_t m = 0; m < micro; ++m) {
      sum += v[t * stride + m];
      mb_cost[m].push_back(v[t * stride + m]);
    }
    largest = std::max(largest, v[t * stride + micro]);
    rank_cost.push_back(sum);
  }
  if (rank_cost.empty()) return;
  const double mean = mean_of(rank_cost);
  if (mean <= 0) return;
  out.dp_ratio.push_back(out.step_dp[t] = max_of(rank_cost) / mean);
  out.bound_ratio.push_back(out.step_bound[t] = std::max(largest, mean) / mean);
  for (const auto& per_mb : mb_cost) {
    const double mb_mean = mean_of(per_mb);
    out.step_mb[t].push_back(mb_mean > 0 ? max_of(per_mb) / mb_mean : std::nan(""));
    if (mb_mean > 0) out.mb_ratio.push_back(out.step_mb[t].back());
  }
}

Balance balance(const JobContext& job, const Records& records, uint64_t steps) {
  Balance out;
  out.step_dp.assign(steps, std::nan(""));
  out.step_bound.assign(steps, std::nan(""));
  out.step_mb.resize(steps);
  for (uint64_t t = 0; t < steps; ++t) balance_of_step(job, records, t, out);
  return out;
}

// The roles' statistics summed (or maxed) per role.
struct RoleTotals {
  double client_wall = 0, wait_sum = 0, wait_max = 0, compute_sum = 0, transform = 0;
  uint64_t mem_planner = 0, mem_loader_max = 0, mem_client_max = 0, mem_loader_total = 0, mem_client_total = 0;
  uint64_t loaded = 0, window_peak = 0, state_bytes = 0, open_sources = 0, read_ahead = 0;
  int clients = 0;
  // A memory figure by Role, and its total where the loader state lives:
  // planner + loaders (disaggregated), or every client (colocated).
  struct ByRole {
    uint64_t role[3] = {0, 0, 0};
    uint64_t total = 0;
  };
  ByRole grown;        // peak RSS over start-up
  ByRole rank_memory;  // peak RssAnon + RssShmem, start-up included
};

RoleTotals role_totals(const JobContext& job, const std::vector<RoleStats>& all) {
  RoleTotals r;
  for (const RoleStats& s : all) {
    switch (static_cast<Role>(s.role)) {
      case Role::planner: r.mem_planner = s.peak_rss_bytes; break;
      case Role::loader:
        r.mem_loader_max = std::max(r.mem_loader_max, s.peak_rss_bytes);
        r.mem_loader_total += s.peak_rss_bytes;
        r.loaded += s.samples_loaded;
        r.transform += s.transform_seconds;
        r.window_peak = std::max(r.window_peak, s.window_peak_bytes);
        r.state_bytes += s.state_bytes;
        r.open_sources += s.open_sources;
        break;
      case Role::client:
        ++r.clients;
        r.mem_client_max = std::max(r.mem_client_max, s.peak_rss_bytes);
        r.mem_client_total += s.peak_rss_bytes;
        r.client_wall = std::max(r.client_wall, s.wall_seconds);
        r.wait_sum += s.wait_seconds;
        r.wait_max = std::max(r.wait_max, s.wait_seconds);
        r.compute_sum += s.compute_seconds;
        r.read_ahead += s.steps_read_ahead;
        r.state_bytes += s.state_bytes;
        break;
    }
  }
  // Loader memory (docs/summary.md): what each rank grew by after start-up;
  // rank memory: the same ranks' whole memory but file-backed pages, what a
  // rank fewer gives back to the node, which the growth leaves out.
  for (const RoleStats& s : all) {
    if (s.role < 0 || s.role >= 3) continue;
    r.grown.role[s.role] += s.peak_rss_bytes > s.startup_rss_bytes ? s.peak_rss_bytes - s.startup_rss_bytes : 0;
    r.rank_memory.role[s.role] += s.peak_anon_shmem_bytes;
  }
  for (RoleTotals::ByRole* m : {&r.grown, &r.rank_memory})
    m->total = job.layout.colocated ? m->role[static_cast<int>(Role::client)]
                                    : m->role[static_cast<int>(Role::planner)] + m->role[static_cast<int>(Role::loader)];
  return r;
}

// Bytes each step read from loader windows (or loaded, colocated) and used,
// summed over clients.
struct Traffic {
  std::vector<uint64_t> step_fetched, step_needed;
  uint64_t fetched_total = 0, needed_total = 0;
  double redundancy = 0.0;
};

Traffic traffic(const JobContext& job, const Records& records, uint64_t steps) {
  Traffic out;
  out.step_fetched.assign(steps, 0);
  out.step_needed.assign(steps, 0);
  for (int c = 0; c < job.layout.clients; ++c) {
    const size_t r = static_cast<size_t>(job.layout.client_rank(c));
    const auto& fetched = records.fetched[r];
    const auto& needed = records.needed[r];
    for (uint64_t t = 0; t < steps && t < fetched.size() && t < needed.size(); ++t) {
      out.step_fetched[t] += fetched[t];
      out.step_needed[t] += needed[t];
    }
  }
  for (uint64_t t = 0; t < steps; ++t) {
    out.fetched_total += out.step_fetched[t];
    out.needed_total += out.step_needed[t];
  }
  out.redundancy = out.needed_total ? double(out.fetched_total) / double(out.needed_total) : 0.0;
  return out;
}

// The realized mix and bad samples (from Records::totals) next to the target:
// the schedule's running targets over the steps this run delivered (from
// first_step on).
struct Mix {
  size_t sources = 0;
  std::vector<uint64_t> totals;  // as in Records
  uint64_t tokens = 0, realized_total = 0, bad_total = 0;
  std::vector<double> share, target;  // target share and samples per source

  uint64_t samples(size_t s) const { return totals[s]; }
  uint64_t source_tokens(size_t s) const { return totals[sources + s]; }
  uint64_t bad(int kind) const { return totals[2 * sources + static_cast<size_t>(kind)]; }
  double realized_share(size_t s) const { return realized_total ? double(totals[s]) / realized_total : 0.0; }
};

Mix mix(const JobContext& job, std::vector<uint64_t> totals, uint64_t steps) {
  const Config& config = job.config;
  Mix out;
  out.sources = config.sources.size();
  out.totals = std::move(totals);
  for (size_t s = 0; s < out.sources; ++s) {
    out.realized_total += out.samples(s);
    out.tokens += out.source_tokens(s);
  }
  for (int k = 1; k < bad_kind_count; ++k) out.bad_total += out.bad(k);

  const uint64_t first_step = job.first_step;
  Mixer mixer(make_schedule(config), config.job.global_batch);
  std::vector<double> target_before(out.sources, 0.0);
  out.share.assign(out.sources, 0.0);
  out.target.assign(out.sources, 0.0);
  for (uint64_t t = 0; t < first_step + steps; ++t) {
    if (t == first_step && t > 0) target_before = mixer.target();
    if (t >= first_step) {
      const auto w = mixer.schedule().weights(t);
      for (size_t s = 0; s < out.sources; ++s) out.share[s] += w[s] / static_cast<double>(steps);
    }
    mixer.next();
  }
  for (size_t s = 0; s < out.sources; ++s) out.target[s] = mixer.target()[s] - target_before[s];
  return out;
}

// Everything the JSON and the text report, computed on world rank 0.
struct Report {
  const JobContext& job;
  const SummaryInput& input;
  Digests digests;
  Balance balance;
  RoleTotals roles;
  Traffic traffic;
  Mix mix;
  const std::vector<RoleStats>& stats;  // every rank's, by world rank

  double tokens_per_s() const { return roles.client_wall > 0 ? mix.tokens / roles.client_wall : 0.0; }
  double wait_mean() const { return roles.clients ? roles.wait_sum / roles.clients : 0.0; }
};

void write_per_step(JsonWriter& w, const std::vector<double>& values) {
  w.begin_array("per_step");
  for (double v : values) w.value("", v);
  w.end_array();
}

// The run, its throughput, digests and balance.
void write_run_json(JsonWriter& w, const Report& r) {
  const Config& config = r.job.config;
  const RoleLayout& layout = r.job.layout;
  w.value("mode", config.job.mode_name());
  w.value("world_size", layout.world_size());
  w.begin_object("topology")
      .value("dp", config.topology.dp)
      .value("pp", config.topology.pp)
      .value("cp", config.topology.cp)
      .value("tp", config.topology.tp)
      .value("loaders", layout.colocated ? 0 : config.topology.loaders)
      .value("shadow_loaders", layout.colocated ? 0 : config.topology.shadow_loaders)
      .value("scaling", option_name(config.topology.scaling))
      .end_object();
  w.value("steps", r.digests.steps);
  w.value("first_step", r.job.first_step);
  w.value("stopped_early", r.job.first_step + r.digests.steps < config.job.steps);
  w.value("tokens", r.mix.tokens);
  w.value("wall_s", r.roles.client_wall);
  w.value("tokens_per_s", r.tokens_per_s());
  w.value("data_wait_s", r.wait_mean());
  w.value("data_wait_max_s", r.roles.wait_max);
  w.value("steps_read_ahead", r.roles.read_ahead);
  w.value("compute_s", r.roles.clients ? r.roles.compute_sum / r.roles.clients : 0.0);
  w.value("batch_digest", hex64(r.digests.batch));
  w.begin_array("step_digests");
  for (uint64_t d : r.digests.per_step) w.value("", hex64(d));
  w.end_array();
  w.begin_array("step_document_digests");
  for (uint64_t d : r.input.document_digests) w.value("", hex64(d));
  w.end_array();
  // Both balance objectives, for every step and summarized.
  const Balance& b = r.balance;
  w.begin_object("dp_max_over_mean").value("median", median(b.dp_ratio)).value("max", max_of(b.dp_ratio));
  write_per_step(w, b.step_dp);
  w.end_object();
  w.begin_object("microbatch_max_over_mean").value("median", median(b.mb_ratio)).value("max", max_of(b.mb_ratio));
  w.begin_array("per_step");  // per step, one value per micro-batch index
  for (const auto& values : b.step_mb) {
    w.begin_array();
    for (double v : values) w.value("", v);
    w.end_array();
  }
  w.end_array();
  w.end_object();
  w.begin_object("lower_bound").value("median", median(b.bound_ratio)).value("max", max_of(b.bound_ratio));
  write_per_step(w, b.step_bound);
  w.end_object();
}

// The activation-memory budget (job.max_positions_per_micro_batch): steps
// whose plan it changed, and steps it could not hold (docs/summary.md).
void write_memory_budget_json(JsonWriter& w, const SummaryInput& in) {
  w.begin_object("memory_budget")
      .value("binding_steps", in.budget_binding_steps)
      .value("exceeded_steps", in.budget_exceeded_steps)
      .end_object();
}

// msd's placement options and what they did (docs/summary.md "placement").
void write_placement_json(JsonWriter& w, const Config& config, const PlacementReport& p) {
  w.begin_object("placement")
      .value("micro_batch_shape", option_name(config.job.micro_batch_shape))
      .value("cuts", option_name(config.job.cuts))
      .value("micro_batch_count", option_name(config.job.micro_batch_count))
      .value("pieces", p.pieces)
      .value("megatron_pieces", p.megatron_pieces)
      .value("max_micro_batches", p.max_micro_batches);
  w.begin_object("hold")
      .value("above", config.job.hold_above)
      .value("steps", config.job.hold_steps)
      .value("held", p.hold.held)
      .value("mean_delay", p.hold.mean_delay())
      .value("max_delay", p.hold.max_delay);
  w.begin_array("histogram");  // [d]: documents delivered d steps late
  for (uint64_t n : p.hold.histogram) w.value("", n);
  w.end_array().end_object().end_object();
}

// The planner's own work per delivered step (docs/summary.md, docs/planner-scaling.md).
void write_planner_work_json(JsonWriter& w, const Report& r) {
  const SummaryInput& in = r.input;
  const double steps = r.digests.steps > 0 ? static_cast<double>(r.digests.steps) : 1.0;
  w.begin_object("planner_work")
      .value("seconds", in.planner_work_seconds)
      .value("cpu_seconds", in.planner_work_cpu_seconds)
      .value("ms_per_step", 1e3 * in.planner_work_seconds / steps)
      .value("cpu_ms_per_step", 1e3 * in.planner_work_cpu_seconds / steps)
      .value("placement_cpu_ms_per_step", 1e3 * in.planner_placement_cpu_seconds / steps)
      .value("messages_received_per_step", static_cast<double>(in.planner_messages_received) / steps)
      .value("messages_sent_per_step", static_cast<double>(in.planner_messages_sent) / steps)
      .value("busy_passes_per_step", static_cast<double>(in.planner_busy_passes) / steps)
      .end_object();
}

// The mix, bad samples, checkpoints and takeovers.
void write_data_json(JsonWriter& w, const Report& r) {
  const Config& config = r.job.config;
  const Mix& m = r.mix;
  w.begin_object("mix_target");
  for (size_t s = 0; s < m.sources; ++s)
    w.begin_object(config.sources[s].name).value("share", m.share[s]).value("samples", m.target[s]).end_object();
  w.end_object();
  w.begin_object("mix_realized");
  for (size_t s = 0; s < m.sources; ++s)
    w.begin_object(config.sources[s].name)
        .value("share", m.realized_share(s))
        .value("samples", m.samples(s))
        .value("tokens", m.source_tokens(s))
        .value("token_share", m.tokens ? double(m.source_tokens(s)) / m.tokens : 0.0)
        .end_object();
  w.end_object();
  w.begin_object("bad_samples");
  for (int k = 1; k < bad_kind_count; ++k) w.value(bad_kind_name(static_cast<BadKind>(k)), m.bad(k));
  w.value("total", m.bad_total);
  w.end_object();
  const SummaryInput& in = r.input;
  write_memory_budget_json(w, in);
  if (!r.job.layout.colocated) write_placement_json(w, config, in.placement);
  write_planner_work_json(w, r);
  w.begin_object("planner_checkpoints")
      .value("written", in.checkpoints)
      .value("seconds", in.checkpoint_seconds)
      .value("max_ms", in.checkpoint_max_seconds * 1e3)
      .value("share_of_wall", r.roles.client_wall > 0 ? in.checkpoint_seconds / r.roles.client_wall : 0.0)
      .end_object();
  w.value("takeover_count", static_cast<uint64_t>(in.takeovers.size()));
  w.begin_array("takeovers");
  for (const Takeover& t : in.takeovers)
    w.begin_object()
        .value("loader", t.loader)
        .value("shadow", t.shadow)
        .value("step", t.step)
        .value("requests", t.requests)
        .value("latency_s", t.latency_s)
        .value("why", t.why)
        .end_object();
  w.end_array();
  w.value("scaling", option_name(config.topology.scaling));
  w.value("moves", static_cast<uint64_t>(in.moves.size()));
  w.begin_array("move_log");
  for (const SourceMove& m : in.moves)
    w.begin_object()
        .value("step", m.step)
        .value("loader", m.loader)
        .value("from", config.sources.at(m.from).name)
        .value("to", config.sources.at(m.to).name)
        .value("why", m.why)
        .end_object();
  w.end_array();
}

// Memory, window traffic and the loaders' work.
void write_resources_json(JsonWriter& w, const Report& r) {
  const RoleTotals& roles = r.roles;
  w.begin_object("memory_peak_bytes")
      .value("planner", roles.mem_planner)
      .value("loader", roles.mem_loader_max)
      .value("client", roles.mem_client_max)
      .value("loader_total", roles.mem_loader_total)
      .value("client_total", roles.mem_client_total)
      .end_object();
  for (const auto& [key, m] : {std::pair{"loader_memory_bytes", &roles.grown},
                                std::pair{"loader_rank_memory_bytes", &roles.rank_memory}})
    w.begin_object(key)
        .value("planner", m->role[static_cast<int>(Role::planner)])
        .value("loader", m->role[static_cast<int>(Role::loader)])
        .value("client", m->role[static_cast<int>(Role::client)])
        .value("total", m->total)
        .end_object();
  const Traffic& traffic = r.traffic;
  w.begin_array("bytes_fetched");
  for (uint64_t b : traffic.step_fetched) w.value("", b);
  w.end_array();
  w.begin_array("bytes_needed");
  for (uint64_t b : traffic.step_needed) w.value("", b);
  w.end_array();
  w.value("bytes_fetched_total", traffic.fetched_total);
  w.value("bytes_needed_total", traffic.needed_total);
  w.value("fetch_redundancy", traffic.redundancy);
  w.begin_object("loaders")
      .value("samples_loaded", roles.loaded)
      .value("transform_s", roles.transform)
      .value("window_peak_bytes", roles.window_peak)
      .value("source_state_bytes", roles.state_bytes)
      .value("open_sources", roles.open_sources)
      .end_object();
}

// What each source cost its loaders (the planner's view; docs/scaling.md
// "Profiles"); empty in colocated mode.
void write_profiles_json(JsonWriter& w, const Report& r) {
  w.begin_object("source_profiles");
  const auto& profiles = r.input.profiles;
  for (size_t s = 0; s < profiles.size() && s < r.job.config.sources.size(); ++s)
    w.begin_object(r.job.config.sources[s].name)
        .value("seconds_per_sample", profiles[s].seconds_per_sample())
        .value("read_seconds_per_sample", profiles[s].read_seconds_per_sample)
        .value("transform_seconds_per_sample", profiles[s].transform_seconds_per_sample)
        .value("bytes_per_sample", profiles[s].bytes_per_sample)
        .value("open_bytes", profiles[s].open_bytes)
        .value("shared_bytes", profiles[s].shared_bytes)
        .value("positions_per_sample", profiles[s].positions_per_sample)
        .value("patches_per_sample", profiles[s].patches_per_sample)
        .value("samples_measured", profiles[s].samples_measured)
        .end_object();
  w.end_object();
}

// Each source's stream order and what it gives up in randomness (the
// planner's view; docs/summary.md "shuffle"); empty in colocated mode.
void write_shuffle_json(JsonWriter& w, const Report& r) {
  w.begin_object("shuffle");
  const auto& shuffles = r.input.shuffles;
  for (size_t s = 0; s < shuffles.size() && s < r.job.config.sources.size(); ++s) {
    const ShuffleReport& x = shuffles[s];
    const double uniform = uniform_mean_gap(x.samples);
    w.begin_object(r.job.config.sources[s].name)
        .value("order", x.order.blocks ? "block" : "uniform")
        .value("block_records", x.order.block_records)
        .value("window_blocks", x.order.window_blocks)
        .value("pairs", x.locality.pairs)
        .value("mean_index_gap", x.locality.mean_gap())
        .value("uniform_mean_index_gap", uniform)
        .value("gap_vs_uniform", uniform > 0 ? x.locality.mean_gap() / uniform : 0.0)
        .end_object();
  }
  w.end_object();
}

std::string summary_json(const Report& r) {
  JsonWriter w;
  w.begin_object();
  write_run_json(w, r);
  write_data_json(w, r);
  write_resources_json(w, r);
  write_profiles_json(w, r);
  write_shuffle_json(w, r);
  write_startup_json(w, r.stats);
  w.end_object();
  return w.str();
}

// printf into a std::string (the text summary's lines are short).
template <typename... Args>
std::string line(const char* format, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

using ull = unsigned long long;

// The same as text, for the options that are on.
std::string placement_text(const Config& config, const PlacementReport& p) {
  std::string text;
  if (config.job.cuts == Cuts::balance)
    text += line("  cuts balance: %llu pieces placed; Megatron's cut of the same documents makes %llu\n",
                 static_cast<ull>(p.pieces), static_cast<ull>(p.megatron_pieces));
  if (config.job.micro_batch_count == MicroBatchCount::variable)
    text += line("  micro-batches per rank variable: at most %llu on a rank in a step\n",
                 static_cast<ull>(p.max_micro_batches));
  if (config.job.hold_above > 0) {
    text += line("  outlier hold (above %.3g x seq_len, at most %u steps): %llu documents held, mean delay %.2f steps, "
                 "max %llu; delays",
                 config.job.hold_above, config.job.hold_steps, static_cast<ull>(p.hold.held), p.hold.mean_delay(),
                 static_cast<ull>(p.hold.max_delay));
    for (size_t d = 1; d < p.hold.histogram.size(); ++d)
      if (p.hold.histogram[d] > 0) text += line(" %zu:%llu", d, static_cast<ull>(p.hold.histogram[d]));
    text += "\n";
  }
  return text;
}


// The heading, throughput, checkpoints, waits and balance.
std::string run_text(const Report& r) {
  const Config& config = r.job.config;
  const RoleLayout& layout = r.job.layout;
  const auto& topology = config.topology;
  std::string text;
  if (layout.colocated)
    text += line("msd-run summary (colocated, %d ranks = dp %d x pp %d x cp %d x tp %d clients)\n",
                 layout.world_size(), topology.dp, topology.pp, topology.cp, topology.tp);
  else
    text += line("msd-run summary (%s, %d ranks: 1 planner, %d loaders, %d clients = dp %d x pp %d x cp %d x tp %d)\n",
                 config.job.mode_name(), layout.world_size(), topology.loaders, layout.clients, topology.dp,
                 topology.pp, topology.cp, topology.tp);
  if (r.job.first_step > 0) text += line("  resumed at step %llu\n", static_cast<ull>(r.job.first_step));
  if (r.job.first_step + r.digests.steps < config.job.steps)
    text += line("  the trainer stopped early (finish() before the stream's end): after step %llu of job.steps = %llu\n",
                 static_cast<ull>(r.job.first_step + r.digests.steps), static_cast<ull>(config.job.steps));
  const double wall = r.roles.client_wall;
  text += line("  steps %llu, tokens %llu in %.2f s: %.0f tokens/s\n", static_cast<ull>(r.digests.steps),
               static_cast<ull>(r.mix.tokens), wall, r.tokens_per_s());
  const SummaryInput& in = r.input;
  if (in.checkpoints > 0)
    text += line("  planner checkpoints: %llu, %.3f ms each on average (%.3f%% of wall)\n",
                 static_cast<ull>(in.checkpoints), 1e3 * in.checkpoint_seconds / in.checkpoints,
                 wall > 0 ? 100.0 * in.checkpoint_seconds / wall : 0.0);
  if (!r.job.layout.colocated && r.digests.steps > 0)
    text += line("  planner work per step: %.3f ms (%.3f ms CPU), %.0f messages received, %.0f sent\n",
                 1e3 * in.planner_work_seconds / r.digests.steps, 1e3 * in.planner_work_cpu_seconds / r.digests.steps,
                 static_cast<double>(in.planner_messages_received) / r.digests.steps,
                 static_cast<double>(in.planner_messages_sent) / r.digests.steps);
  text += line("  data wait per client: mean %.3f s, max %.3f s (%.1f%% of wall)\n", r.wait_mean(), r.roles.wait_max,
               wall > 0 ? 100.0 * r.wait_mean() / wall : 0.0);
  if (!r.job.layout.colocated)
    text += line("  steps read ahead (two-sided network reads): %llu over %d clients\n",
                 static_cast<ull>(r.roles.read_ahead), r.roles.clients);
  const Balance& b = r.balance;
  text += line("  balance, max/mean cost over DP ranks per step: median %.3f, worst %.3f (lower bound median %.3f)\n",
               median(b.dp_ratio), max_of(b.dp_ratio), median(b.bound_ratio));
  if (!r.job.layout.colocated) text += placement_text(config, in.placement);
  return text;
}

// The mix, bad samples, memory, traffic, takeovers and the batch digest.
std::string data_text(const Report& r) {
  const Config& config = r.job.config;
  const Mix& m = r.mix;
  std::string text = "  mix (samples: target share -> realized share; tokens):\n";
  for (size_t s = 0; s < m.sources; ++s)
    text += line("    %-12s %6.3f -> %6.3f  (%llu samples, %llu tokens)\n", config.sources[s].name.c_str(), m.share[s],
                 m.realized_share(s), static_cast<ull>(m.samples(s)), static_cast<ull>(m.source_tokens(s)));
  // colocated_samples' ranks load only their own share, so they drop a bad
  // sample (client/colocated.cc); every other mode replaces it.
  const bool dropped = trainers_load(config.job.mode());
  text += std::string("  bad samples ") + (dropped ? "dropped" : "replaced") + ": " + std::to_string(m.bad_total);
  if (m.bad_total) {
    std::string parts;
    for (int k = 1; k < bad_kind_count; ++k)
      if (m.bad(k))
        parts += (parts.empty() ? "" : ", ") + std::string(bad_kind_name(static_cast<BadKind>(k))) + " " +
                 std::to_string(m.bad(k));
    text += " (" + parts + ")";
  }
  text += "\n";
  const RoleTotals& roles = r.roles;
  const bool colocated = r.job.layout.colocated;
  if (colocated)
    text += "  peak memory: client " + format_bytes(roles.mem_client_max) + " (max), " +
            format_bytes(roles.mem_client_total) + " (all clients)\n";
  else
    text += "  peak memory: planner " + format_bytes(roles.mem_planner) + ", loader " +
            format_bytes(roles.mem_loader_max) + " (max), client " + format_bytes(roles.mem_client_max) + " (max)\n";
  text += "  loader memory (peak RSS over start-up): " + format_bytes(roles.grown.total) +
          (colocated ? " over all clients\n" : " (planner and loaders)\n");
  text += "  loader rank memory (peak anonymous + shared memory, start-up included): " +
          format_bytes(roles.rank_memory.total) + (colocated ? " over all clients\n" : " (planner and loaders)\n");
  text += line("  sample bytes per step fetched/needed over clients: %.3f\n", r.traffic.redundancy);
  if (!r.input.profiles.empty())
    text += "  source profiles (loaders' moving averages; read on the loader's thread + transform on one thread):\n";
  for (size_t s = 0; s < r.input.profiles.size() && s < config.sources.size(); ++s) {
    const SourceProfile& p = r.input.profiles[s];
    text += line("    %-12s %9.4f ms/sample (read %.4f + transform %.4f) %10.0f bytes/sample  open %s  (%llu samples)\n",
                 config.sources[s].name.c_str(), p.seconds_per_sample() * 1e3, p.read_seconds_per_sample * 1e3,
                 p.transform_seconds_per_sample * 1e3, p.bytes_per_sample, format_bytes(static_cast<uint64_t>(p.open_bytes)).c_str(),
                 static_cast<ull>(p.samples_measured));
  }
  for (size_t s = 0; s < r.input.shuffles.size() && s < config.sources.size(); ++s) {
    const ShuffleReport& x = r.input.shuffles[s];
    if (!x.order.blocks) continue;
    const double uniform = uniform_mean_gap(x.samples);
    text += line("  shuffle of %s: blocks of %llu records, %llu a window; neighbours in a rank's batch %.0f records apart "
                 "(uniform: %.0f, x%.3f)\n",
                 config.sources[s].name.c_str(), static_cast<ull>(x.order.block_records),
                 static_cast<ull>(x.order.window_blocks), x.locality.mean_gap(), uniform,
                 uniform > 0 ? x.locality.mean_gap() / uniform : 0.0);
  }
  for (const Takeover& t : r.input.takeovers)
    text += line("  takeover: loader %d by shadow %d before step %llu, %llu requests, %.0f ms after it went quiet\n",
                 t.loader, t.shadow, static_cast<ull>(t.step), static_cast<ull>(t.requests), t.latency_s * 1e3);
  if (config.topology.scaling != Scaling::fixed || !r.input.moves.empty()) {
    size_t reactive = 0;
    for (const SourceMove& m : r.input.moves) reactive += m.why == "reactive";
    text += line("  loader scaling %s: %zu moves (%zu proactive, %zu reactive); %llu sources open on loaders, %s of source state\n",
                 option_name(config.topology.scaling), r.input.moves.size(), r.input.moves.size() - reactive, reactive,
                 static_cast<ull>(roles.open_sources), format_bytes(roles.state_bytes).c_str());
  }
  text += "  batch digest " + hex64(r.digests.batch) + "\n";
  return text;
}

}  // namespace

Summary gather_summary(JobContext& job, const SummaryInput& input) {
  Records records = gather_records(job, input);
  if (job.rank != 0) return {};
  const Digests digests = batch_digests(job, records);
  const uint64_t steps = digests.steps;
  const Report report{job,
                      input,
                      digests,
                      balance(job, records, steps),
                      role_totals(job, records.stats),
                      traffic(job, records, steps),
                      mix(job, std::move(records.totals), steps),
                      records.stats};
  return {summary_json(report), run_text(report) + data_text(report)};
}

}  // namespace msd
