#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "checkpoint/ownership.h"
#include "common/files.h"
#include "common/log.h"
#include "common/memory.h"
#include "config/part_options.h"
#include "construct/batch_sink.h"
#include "msd/client.h"
#include "profile/plan_file.h"
#include "client/disaggregated.h"
#include "client/colocated.h"
#include "runtime/context.h"
#include "runtime/fatal.h"
#include "loader/loader.h"
#include "job/nodes.h"
#include "planner/planner.h"
#include "job/preflight.h"
#include "job/resume_step.h"
#include "job/source_agreement.h"
#include "job/summary.h"
#include "runtime/watchdog.h"

namespace msd {

class JobImpl {
 public:
  JobImpl(const Config& config, MPI_Comm world);
  void start_stream();
  std::unique_ptr<PlannerRole> make_planner(const std::vector<LoaderHello>& hellos);
  std::vector<LoaderHello> receive_hellos();

  // What one rank learned while opening its role, before the job agrees on it.
  struct StartUp {
    bool failed = false;
    int64_t vocab_size = -1;
    int64_t first_step = 0;
    std::string error;  // the message, on the rank that reports it
  };
  void set_up_logging();
  void preflight();
  void split_communicators();
  void settle_assignment();
  StartUp start_colocated();
  StartUp start_loader();
  StartUp start_planner();
  void agree_and_start(const StartUp& mine);
  // Whether the Job is mid-stream: destroying it now would enter collective
  // frees that peers still streaming (or waiting for this rank) never join.
  bool mid_stream() const { return stage == Stage::starting || stage == Stage::started; }

  JobContext ctx;
  Role role = Role::client;
  // The planner's, on checkpoint.dir and the trace: released after the
  // planner (declared before it).
  std::vector<std::unique_ptr<OwnerLock>> owner_locks;
  std::unique_ptr<LoaderRole> loader;
  std::unique_ptr<PlannerRole> planner;
  std::unique_ptr<Client> client;
  ClientImpl* client_impl = nullptr;  // client's, for an early end (Job::finish)
  ColocatedClient* colocated = nullptr;
  Comm clients, dp, tp, cp, pp;
  int client_index = -1;
  RoleStats stats;
  PlannerReport report;
  bool started = false;
  // How far the Job got: failed_everywhere is a start-up error every rank
  // raised alike (after an agreement), so every rank frees alike.
  enum class Stage { constructed, starting, started, failed_everywhere, finished };
  Stage stage = Stage::constructed;
  std::chrono::steady_clock::time_point start;
};

namespace {
int world_size_of(MPI_Comm world) {
  int size = 0;
  MSD_MPI(MPI_Comm_size(world, &size), "querying the world size");
  return size;
}

// The node-aware layout once the launch has the ranks the configuration
// needs; otherwise the one-node layout, and the constructor reports the count.
RoleLayout layout_of(const Config& config, MPI_Comm world) {
  if (world_size_of(world) != config.world_size())
    return RoleLayout(config.topology.loaders, config.topology.shadow_loaders, config.clients(),
                      trainers_load(config.job.mode()));
  return plan_layout(config, node_of_each_rank(world, config.topology.ranks_per_node));
}

}  // namespace

// Every rank checks alone, so a wrong launch fails on every rank at once
// without any communication that could hang.
static void check_world_size(const Config& config, const RoleLayout& layout, int size) {
  if (size == layout.world_size()) return;
  const std::string parts =
      layout.colocated ? str(layout.clients, " clients")
                       : str("1 planner + ", layout.loaders, " loaders (topology.loaders) + ", layout.shadows,
                             " shadow loaders (topology.shadow_loaders) + ", layout.clients, " clients");
  throw ConfigError(str("this configuration needs ", layout.world_size(), " MPI ranks (", parts,
                        "; clients = dp*pp*cp*tp = ", config.topology.dp, "*", config.topology.pp, "*",
                        config.topology.cp, "*", config.topology.tp, "), but the job has ", size,
                        "; launch with mpirun -n ", layout.world_size(), " or use msd-run --print-world-size"));
}

JobImpl::JobImpl(const Config& config, MPI_Comm world)
    : ctx(config, layout_of(config, world), assign_sources(config.topology.loaders, weight_curves(config))) {
  start = std::chrono::steady_clock::now();
  check_world_size(config, ctx.layout, world_size_of(world));
  if (ctx.layout.colocated && !config.output.metrics.empty())
    throw ConfigError(str("output.metrics: the per-step metrics are the planner's, and job.mode = ", config.job.mode_name(),
                          " runs without one"));
  ctx.world = Comm::duplicate(world, "duplicating the world communicator");
  ctx.rank = ctx.world.rank();
  role = ctx.layout.role(ctx.rank);
  set_up_logging();
  stats.startup_rss_bytes = current_rss_bytes();
  sample_anon_shmem(true);
  split_communicators();
  // Start-up is measured from here: the splits are collective, so every
  // rank's origin is within one collective of the others'.
  ctx.origin = std::chrono::steady_clock::now();
  ctx.startup.origin_unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void JobImpl::start_stream() {
  stage = Stage::starting;
  preflight();
  const Config& config = ctx.config;
  // Loaders (or, colocated, every client) open their sources; everyone agrees
  // whether start-up worked before any work begins, so a bad source fails the
  // job cleanly on every rank.
  StartUp mine;
  if (ctx.layout.colocated) {
    mine = start_colocated();
  } else {
    settle_assignment();
    const uint64_t window_bytes = role == Role::loader ? config.loader.window_mb << 20 : 0;
    ctx.windows = Window(ctx.world.get(), window_bytes, "allocating loader windows");
    if (role == Role::loader) mine = start_loader();
    else if (role == Role::planner) mine = start_planner();
  }
  agree_and_start(mine);
  started = true;
  stage = Stage::started;
}

// Before any work (docs/errors.md "Checked before any work"): the paths the
// job writes, the owner locks on its checkpoint directory and trace (the
// planner's: a second job on them is refused naming the owner, before
// anything there is opened), the loader windows' room on each node. Every
// rank throws the same ConfigError when any check fails anywhere.
void JobImpl::preflight() {
  const uint64_t window_bytes = !ctx.layout.colocated && role == Role::loader ? ctx.config.loader.window_mb << 20 : 0;
  std::string error = check_window_room(ctx.world.get(), window_bytes, ctx.config);
  try {
    if (ctx.rank == 0 || role == Role::planner) check_output_paths(ctx.config);
    if (role == Role::planner && owner_locks.empty())
      for (const auto& [path, option] : owner_lock_paths(ctx.config))
        owner_locks.push_back(std::make_unique<OwnerLock>(path, option));
  } catch (const std::exception& e) {
    if (error.empty()) error = e.what();
  }
  error = agree_on_error(ctx.world.get(), error);
  if (error.empty()) return;
  owner_locks.clear();
  stage = Stage::failed_everywhere;
  throw ConfigError(error);
}

void JobImpl::set_up_logging() {
  set_log_level(parse_log_level(ctx.config.output.log_level));
  const std::string prefix = role == Role::planner ? "planner"
                             : role == Role::loader ? str("loader ", ctx.layout.loader_index(ctx.rank))
                                                    : str("client ", ctx.layout.client_index(ctx.rank));
  set_log_prefix(prefix);
  install_fail_fast(prefix, ctx.rank);
  log_debug("layout: ", format_layout_line(ctx.layout, ctx.tree, ctx.rank));
  if (ctx.rank == 0 && groups_split_across_nodes(ctx.layout, ctx.tree, false) > 0)
    log_warn(groups_split_across_nodes(ctx.layout, ctx.tree, false), " TP group(s) span more than one node; "
             "see msd-run --print-layout and topology.data_ranks (docs/layout.md)");
}

// Role and trainer communicators (collective over the world).
void JobImpl::split_communicators() {
  const int client_color = role == Role::client ? 0 : MPI_UNDEFINED;
  client_index = role == Role::client ? ctx.layout.client_index(ctx.rank) : -1;
  clients = Comm::split(ctx.world.get(), client_color, client_index, "splitting the client communicator");
  auto axis_comm = [&](Axis axis) {
    // Members share every coordinate but `axis`; colour = index of the first peer.
    int color = MPI_UNDEFINED, key = 0;
    if (role == Role::client) {
      color = ctx.tree.axis_peers(client_index, axis).front();
      key = ctx.tree.place(client_index).get(axis);
    }
    return Comm::split(ctx.world.get(), color, key, str("splitting the ", axis_name(axis), " communicator"));
  };
  dp = axis_comm(Axis::dp);
  tp = axis_comm(Axis::tp);
  cp = axis_comm(Axis::cp);
  pp = axis_comm(Axis::pp);
  ctx.loaders = Comm::split(ctx.world.get(), role == Role::loader ? 0 : MPI_UNDEFINED, ctx.rank,
                            "splitting the loader communicator");
  if (ctx.layout.colocated) return;
  auto sends_to_planner = [&](int rank) {
    const Role r = ctx.layout.role(rank);
    return r != Role::client || ctx.talks_to_planner(ctx.layout.client_index(rank));
  };
  ctx.to_planner = Comm::split(ctx.world.get(), sends_to_planner(ctx.rank) ? 0 : MPI_UNDEFINED, ctx.rank,
                               "splitting the communicator to the planner");
  for (int rank = 0; rank < ctx.layout.world_size(); ++rank) {
    if (!sends_to_planner(rank)) continue;
    if (rank == ctx.layout.planner_rank()) ctx.planner_in_to_planner = static_cast<int>(ctx.to_planner_world.size());
    ctx.to_planner_world.push_back(rank);
  }
}

namespace {
// The planner's text to every rank: its length (negative: an error message
// instead), then its bytes.
std::string broadcast_text(MPI_Comm world, int root, std::string text, bool error, const char* hint) {
  int64_t length = error ? -static_cast<int64_t>(text.size()) - 1 : static_cast<int64_t>(text.size());
  MPI_Request request;
  MSD_MPI(MPI_Ibcast(&length, 1, MPI_INT64_T, root, world, &request), hint);
  wait(request, hint);
  text.resize(static_cast<size_t>(length < 0 ? -length - 1 : length));
  MSD_MPI(MPI_Ibcast(text.data(), checked_cast<int>(text.size()), MPI_CHAR, root, world, &request), hint);
  wait(request, hint);
  if (length < 0) throw ConfigError(text);
  return text;
}
}  // namespace

// topology.scaling = partition: every rank takes the planner's plan text
// (topology.partition_plan's, or computed there from a profile of the
// sources) and derives the same assignment from it; the planner checks it
// first, so an error reaches every rank at once.
void JobImpl::settle_assignment() {
  const Config& config = ctx.config;
  if (config.topology.scaling != Scaling::partition) return;
  const int root = ctx.layout.planner_rank();
  std::string text;
  bool failed = false;
  if (ctx.rank == root) {
    try {
      if (config.topology.partition_plan.empty()) {
        log_info("topology.scaling = partition: profiling ", kStartUpProfileSamples, " samples of each source");
        text = start_up_plan(pipeline_options(config), demand_options(config), loader_fit(config));
      } else {
        const auto bytes = read_file(config.topology.partition_plan);
        text.assign(bytes.begin(), bytes.end());
        PartitionPlan plan = parse_plan_json(text, config.sources, "topology.partition_plan",
                                             str("'", config.topology.partition_plan, "'"));
        fit_to_loaders(plan, loader_fit(config));
      }
    } catch (const std::exception& e) {
      text = e.what();
      failed = true;
    }
  }
  text = broadcast_text(ctx.world.get(), root, std::move(text), failed, "sharing the partition plan");
  PartitionPlan plan = parse_plan_json(text, config.sources, "topology.partition_plan", "the plan");
  fit_to_loaders(plan, loader_fit(config));
  MSD_CHECK(plan.loader_ranks == static_cast<uint32_t>(config.topology.loaders));
  ctx.assignment = assign_from_plan(plan, config.sources.size());
  if (ctx.rank != root) return;
  for (size_t loader = 0; loader < ctx.assignment.sources_of_loader.size(); ++loader) {
    std::string names;
    for (uint32_t s : ctx.assignment.sources_of_loader[loader])
      names += (names.empty() ? "" : ", ") + config.sources[s].name;
    log_info("partition plan: loader ", loader, " serves ", names, " on ", ctx.assignment.threads_of_loader[loader],
             " thread(s)");
  }
}

JobImpl::StartUp JobImpl::start_colocated() {
  StartUp mine;
  try {
    auto impl = std::make_unique<ColocatedClient>(ctx, client_index);
    colocated = impl.get();
    client_impl = impl.get();
    stats.state_bytes = impl->state_bytes();
    mine.vocab_size = impl->vocab_size();
    client = std::make_unique<Client>(std::move(impl), ctx.config);
  } catch (const std::exception& e) {
    mine.error = e.what();
    mine.failed = true;
  }
  ctx.mark_startup(&StartupFigures::open_s);
  return mine;
}

JobImpl::StartUp JobImpl::start_loader() {
  StartUp mine;
  loader = std::make_unique<LoaderRole>(ctx);
  ctx.mark_startup(&StartupFigures::open_s);
  ctx.send_to_planner(kTagHello, encode(loader->hello()), "sending hello");
  ctx.mark_startup(&StartupFigures::hello_s);
  mine.failed = !loader->hello().error.empty();
  mine.vocab_size = loader->vocab_size();
  return mine;
}

// The planner hears every loader's hello (their sources, or why they failed)
// and, when all opened, builds its planning state.
JobImpl::StartUp JobImpl::start_planner() {
  StartUp mine;
  const std::vector<LoaderHello> hellos = receive_hellos();
  ctx.mark_startup(&StartupFigures::hello_s);
  std::set<std::string> errors;
  for (const auto& h : hellos)
    if (!h.hello.error.empty()) errors.insert(h.hello.error);
  for (const auto& e : errors) mine.error += (mine.error.empty() ? "" : "\n") + e;
  mine.failed = !errors.empty();
  if (mine.failed) return mine;
  try {
    planner = make_planner(hellos);
    ctx.mark_startup(&StartupFigures::ready_s);
    mine.first_step = static_cast<int64_t>(ctx.first_step);
  } catch (const std::exception& e) {
    mine.error = e.what();
    mine.failed = true;
  }
  return mine;
}

// Every loader's hello, within job.startup_timeout_s: a loader stuck opening
// its sources (or stopped) ends the job naming it.
std::vector<LoaderHello> JobImpl::receive_hellos() {
  std::set<int> loaders;  // ranks of to_planner
  for (size_t r = 0; r < ctx.to_planner_world.size(); ++r)
    if (ctx.layout.role(ctx.to_planner_world[r]) == Role::loader) loaders.insert(static_cast<int>(r));
  MSD_CHECK_EQ(loaders.size(), static_cast<size_t>(ctx.layout.loader_ranks()));
  const std::vector<Message> messages = receive_from_each(
      ctx.to_planner.get(), loaders, kTagHello, ctx.config.job.startup_timeout_s * 1000, "waiting for loader hellos");
  if (!loaders.empty()) {
    std::string missing;
    for (int r : loaders) missing += str(missing.empty() ? "" : ", ", ctx.to_planner_world.at(static_cast<size_t>(r)));
    throw Error(str("start-up: loader world rank(s) ", missing, " sent no hello within job.startup_timeout_s = ",
                    ctx.config.job.startup_timeout_s, " s (stuck opening their sources, or stopped)"));
  }
  std::vector<LoaderHello> hellos;
  for (const Message& message : messages) {
    const int world_rank = ctx.to_planner_world.at(static_cast<size_t>(message.source));
    hellos.push_back({world_rank, ctx.layout.loader_index(world_rank), decode_hello(message.bytes)});
  }
  return hellos;
}

// One reduction tells every rank whether start-up worked, the vocabulary size
// (for the image token), the step the run starts at and the identity of its
// loader checkpoints; then the clients start.
void JobImpl::agree_and_start(const StartUp& mine) {
  // The planner's loader checkpoint identity (63-bit values; 0 elsewhere).
  const LoaderCheckpointIdentity& id = ctx.checkpoint_identity;
  int64_t local[6] = {mine.failed ? 1 : 0,
                      mine.vocab_size,
                      mine.first_step,
                      static_cast<int64_t>(id.seed),
                      static_cast<int64_t>(id.config_digest),
                      static_cast<int64_t>(id.data_digest)};
  int64_t global[6] = {0, 0, 0, 0, 0, 0};
  MPI_Request request;
  MSD_MPI(MPI_Iallreduce(local, global, 6, MPI_INT64_T, MPI_MAX, ctx.world.get(), &request), "agreeing on start-up");
  // 10 s beyond the planner's bound on the hellos, so that its line, which
  // names the loader, comes first.
  const uint64_t bound_s = ctx.config.job.startup_timeout_s;
  if (!wait_for(request, bound_s == 0 ? 0 : (bound_s + 10) * 1000, "agreeing on start-up"))
    throw Error(str("start-up: world rank ", ctx.rank, " (", role_name(role), ") waited job.startup_timeout_s + 10 = ",
                    bound_s + 10, " s for the start-up agreement: another rank did not arrive"));
  if (global[0] != 0) {
    stage = Stage::failed_everywhere;
    // Rank 0 (the planner, or the first colocated client) has the message.
    throw ConfigError(ctx.rank == 0 ? mine.error : std::string("start-up failed on another rank"));
  }
  const Config& config = ctx.config;
  const int32_t token_id = config.image.token_id >= 0 ? static_cast<int32_t>(config.image.token_id)
                                                      : static_cast<int32_t>(std::max<int64_t>(global[1], 0));
  ctx.first_step = static_cast<uint64_t>(global[2]);
  ctx.checkpoint_identity = {static_cast<uint64_t>(global[3]), static_cast<uint64_t>(global[4]),
                             static_cast<uint64_t>(global[5])};
  ctx.mark_startup(&StartupFigures::agreed_s);
  if (loader) loader->resume(ctx.first_step);
  if (colocated) {
    colocated->start(token_id);
  } else if (role == Role::client) {
    auto impl = std::make_unique<DisaggregatedClient>(ctx, client_index, token_id, tp.get());
    client_impl = impl.get();
    client = std::make_unique<Client>(std::move(impl), ctx.config);
  }
}

// The planner, continuing from the latest checkpoint with --resume, or from
// the newest at or before --resume-step N and fast-forwarded to N (the
// checkpoint must come from a run whose batch stream this configuration
// continues, over the same data; a directory without one starts at step 0).
std::unique_ptr<PlannerRole> JobImpl::make_planner(const std::vector<LoaderHello>& hellos) {
  const std::vector<SourceInfo> infos = agree_on_sources(hellos, ctx.config);
  // Checkpoints and the trace record the data they were taken over.
  const CheckpointConfig& ckpt = ctx.config.checkpoint;
  // The loaders fingerprinted the data files, each its share: the planner
  // opens none of them (docs/scaling.md, "Start-up").
  DataFingerprint data;
  if (!ckpt.dir.empty() || !ckpt.trace.empty()) {
    data = fingerprint_of_sources(hellos, infos);
    fingerprint_vocabulary(ctx.config.tokenizer, data);
  }
  if (!ckpt.dir.empty())
    ctx.checkpoint_identity = {ctx.config.job.seed & kIdentityMask, stream_config_digest(ctx.config) & kIdentityMask,
                               fingerprint_digest(data) & kIdentityMask};
  std::optional<PlannerCheckpoint> resume;
  std::vector<std::string> changes;  // a changed mixture's, when the resume continues under one
  if (ckpt.resuming()) resume = find_resume_checkpoint(ctx.config, data, &changes);
  if (!resume) prepare_fresh_start(ctx.config);  // never over an earlier run's checkpoints
  // The first step delivered: the trainer's step, or the checkpoint's.
  ctx.first_step = ckpt.resume_step.value_or(resume ? resume->step : 0);
  return std::make_unique<PlannerRole>(ctx, infos, resume, std::move(data), !changes.empty());
}

Job::Job(const Config& config, MPI_Comm world) : impl_(std::make_unique<JobImpl>(config, world)) {
  impl_->start_stream();
}
Job::Job(const Config& config, MPI_Comm world, DeferStart) : impl_(std::make_unique<JobImpl>(config, world)) {}

void Job::start(std::optional<uint64_t> resume_step) {
  if (impl_->started) throw Error("Job::start() called twice (or on a Job constructed without DeferStart)");
  apply_resume_step(impl_->ctx.world.get(), resume_step, impl_->ctx.config);  // throws on every rank alike
  try {
    impl_->start_stream();
  } catch (...) {
    note_failure(std::current_exception());
    throw;
  }
}
bool Job::started() const { return impl_->started; }

// On the orderly path (finish() done, or never started, or a start-up every
// rank failed alike) the members free windows and communicators collectively.
// Mid-stream that would hang: the peers never join. The job ends instead,
// naming what msd saw fail, or saying how the Job was left.
Job::~Job() {
  if (impl_ && impl_->mid_stream()) abort_abandoned_job(std::uncaught_exceptions() > 0);
}

Role Job::role() const { return impl_->role; }
int Job::world_rank() const { return impl_->ctx.rank; }
const ClientPlaceTree& Job::tree() const { return impl_->ctx.tree; }
const Config& Job::config() const { return impl_->ctx.config; }
int Job::client_index() const { return impl_->client_index; }
MPI_Comm Job::clients_comm() const { return impl_->clients.get(); }
MPI_Comm Job::dp_comm() const { return impl_->dp.get(); }
MPI_Comm Job::tp_comm() const { return impl_->tp.get(); }
MPI_Comm Job::cp_comm() const { return impl_->cp.get(); }
MPI_Comm Job::pp_comm() const { return impl_->pp.get(); }

Client& Job::client() {
  if (!impl_->started) throw Error("Job::client() called before Job::start()");
  if (!impl_->client) throw Error(str("Job::client() called on a ", role_name(impl_->role), " rank"));
  return *impl_->client;
}

namespace {
// Job::serve: the planner's or a loader's loop until the job ends.
void serve_role(JobImpl& job) {
  if (job.role == Role::planner) {
    job.report = job.planner->serve();
    job.stats.role = static_cast<int32_t>(Role::planner);
    job.stats.steps = job.report.steps;
    job.stats.tokens = job.report.tokens;
    job.stats.wall_seconds = job.report.wall_seconds;
  } else if (job.role == Role::loader) {
    const uint64_t startup = job.stats.startup_rss_bytes;
    job.stats = job.loader->serve();
    job.stats.startup_rss_bytes = startup;
  } else {
    throw Error("Job::serve() called on a client rank; clients call client().next()");
  }
}
}  // namespace

void Job::serve() {
  if (!impl_->started) throw Error("Job::serve() called before Job::start()");
  try {
    serve_role(*impl_);
  } catch (...) {
    note_failure(std::current_exception());
    throw;
  }
}

namespace {
// Before the end's collectives: every live rank reports to the planner, which
// waits job.stall_timeout_s for them and ends the job naming the ones that
// did not come (stopped or stuck after their last step), instead of every
// rank waiting forever in the collectives below.
void check_arrivals(JobImpl& job, const std::vector<int>& gone) {
  const int planner = job.ctx.layout.planner_rank();
  MPI_Comm world = job.ctx.world.get();
  if (job.role != Role::planner) {
    MPI_Request request;
    MSD_MPI(MPI_Isend(nullptr, 0, MPI_BYTE, planner, kTagArrived, world, &request), "reporting at the end of the job");
    wait(request, "reporting at the end of the job");
    return;
  }
  std::set<int> missing;
  for (int rank = 0; rank < job.ctx.layout.world_size(); ++rank)
    if (rank != planner && std::find(gone.begin(), gone.end(), rank) == gone.end()) missing.insert(rank);
  receive_from_each(world, missing, kTagArrived, job.ctx.config.job.stall_timeout_s * 1000,
                    "waiting for the ranks at the end");
  if (missing.empty()) return;
  std::string names;
  for (int rank : missing) names += str(names.empty() ? "" : ", ", rank, " (", role_name(job.ctx.layout.role(rank)), ")");
  throw Error(str("world rank(s) ", names, " did not reach the end of the job within job.stall_timeout_s = ",
                  job.ctx.config.job.stall_timeout_s, " s of the last step"));
}

// The planner's end of job on a live loader or client, within
// job.stall_timeout_s + 10 s (the planner's own bounds fire first). A client
// whose trainer stopped early drops the plans the planner had sent ahead.
Message await_end_of_job(JobImpl& job) {
  const char* hint = "waiting for the planner's end of job";
  const uint64_t bound_s = job.ctx.config.job.stall_timeout_s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(bound_s + 10);
  const int planner = job.ctx.layout.planner_rank();
  const int tag = job.role == Role::client ? MPI_ANY_TAG : kTagFinish;
  while (true) {
    std::optional<Message> message;
    if (bound_s == 0) {
      message = receive(job.ctx.world.get(), planner, tag, hint);
    } else {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      message = receive_for(job.ctx.world.get(), planner, tag, static_cast<uint64_t>(std::max<int64_t>(left.count(), 1)), hint);
    }
    if (!message)
      throw Error(str("the planner (world rank ", planner, ") sent no end of job within job.stall_timeout_s + 10 = ",
                      bound_s + 10, " s: stuck or stopped"));
    if (message->tag == kTagFinish) return std::move(*message);
    if (message->tag != kTagPlan)
      throw ProtocolError(str("world rank ", job.ctx.rank, " got tag ", message->tag, " from the planner at the end of the job"));
  }
}

// The ranks alive at the end and their communicator: the planner decided who
// is left out (PlannerRole::stop_loaders) and told every other live rank.
void join_live_ranks(JobImpl& job) {
  if (job.ctx.layout.colocated) return;
  std::vector<int> gone = job.report.gone;
  if (job.role != Role::planner) gone = decode_ranks(await_end_of_job(job).bytes).ranks;
  check_arrivals(job, gone);
  for (int rank = 0; rank < job.ctx.layout.world_size(); ++rank)
    if (std::find(gone.begin(), gone.end(), rank) == gone.end()) job.ctx.live_ranks.push_back(rank);
  job.ctx.live = Comm::create_group(job.ctx.world.get(), job.ctx.live_ranks, kTagFinish, "joining the live ranks");
}
}  // namespace

bool Job::loaders_gone() const {
  const auto& live = impl_->ctx.live_ranks;
  return !live.empty() && static_cast<int>(live.size()) < impl_->ctx.layout.world_size();
}

MPI_Comm Job::live_comm() const { return impl_->ctx.live.get(); }

int Job::shutdown() {
  if (impl_->role == Role::planner && !impl_->report.gone.empty()) {
    log_warn("every step was delivered and the summary written; ", impl_->report.gone.size(),
             " loader(s) did not stop, so the job ends with MPI_Abort (exit status ", kExitOk, ")");
    MPI_Abort(MPI_COMM_WORLD, kExitOk);
  }
  return kExitOk;
}

namespace {
// A client whose trainer finishes before the stream's end (an evaluation
// loop, early stopping) ends its part of the stream here; the planner ends
// the stream at that step for every rank, or names a client that went on.
void end_client_early(JobImpl& job) {
  if (job.role != Role::client || job.client_impl == nullptr) return;
  job.client->sink().finish();  // the trainer's last batch, if it went to a device
  const uint64_t end = job.ctx.first_step + job.client->log().step_digests.size();
  if (end >= job.ctx.config.job.steps) return;
  log_info("finish() at step ", end, ", before the stream's end (job.steps = ", job.ctx.config.job.steps,
           "): the stream ends here");
  job.client_impl->stop_early();
}

Summary finish_job(JobImpl& job, const TrainerStats& trainer) {
  end_client_early(job);
  const FaultConfig& fault = job.ctx.config.fault;
  if (fault.kind == "finish_stall" && fault.rank == job.ctx.rank) {
    log_warn("fault injected: finish_stall for ", fault.stall_ms, " ms at the end of the job");
    std::this_thread::sleep_for(std::chrono::milliseconds(fault.stall_ms));
  }
  // What a stall after check_arrivals would hold (the collectives of the
  // summary, the end's checkpoint writes) ends the process after this.
  const uint64_t bound_s = job.ctx.config.job.stall_timeout_s;
  Watchdog watchdog("msd", "the end of the job", bound_s == 0 ? 0 : bound_s + 20);
  join_live_ranks(job);
  SummaryInput input;
  if (job.role == Role::client) {
    const ClientLog& log = job.client->log();
    job.stats.role = static_cast<int32_t>(Role::client);
    job.stats.steps = trainer.steps;
    job.stats.tokens = log.tokens;
    job.stats.wait_seconds = log.wait_seconds;
    job.stats.steps_read_ahead = log.steps_read_ahead;
    job.stats.compute_seconds = trainer.compute_seconds;
    job.stats.wall_seconds = trainer.wall_seconds;
    input.log = &log;
    // Colocated: each data group's first rank counts its bad samples (its
    // peers loaded the same ones).
    if (job.colocated && job.ctx.tree.group_members(job.ctx.tree.data_group(job.client_index)).front() == job.client_index)
      input.bad_samples = job.colocated->bad_samples();
  }
  if (job.role == Role::planner) {
    input.bad_samples = job.report.bad_samples;
    input.takeovers = job.report.takeovers;
    input.moves = job.report.moves;
    input.checkpoints = job.report.checkpoints;
    input.checkpoint_seconds = job.report.checkpoint_seconds;
    input.checkpoint_max_seconds = job.report.checkpoint_max_seconds;
    input.budget_binding_steps = job.report.budget_binding_steps;
    input.placement = job.report.placement;
    input.budget_exceeded_steps = job.report.budget_exceeded_steps;
    input.planner_work_seconds = job.report.work_seconds;
    input.planner_work_cpu_seconds = job.report.work_cpu_seconds;
    input.planner_placement_cpu_seconds = job.report.placement_cpu_seconds;
    input.planner_messages_received = job.report.messages_received;
    input.planner_messages_sent = job.report.messages_sent;
    input.planner_busy_passes = job.report.busy_passes;
    input.profiles = job.report.profiles;
    input.document_digests = job.report.document_digests;
    input.shuffles = job.report.shuffles;
  }
  job.stats.peak_rss_bytes = peak_rss_bytes();
  job.stats.startup = job.ctx.startup;
  sample_anon_shmem(true);
  job.stats.peak_anon_shmem_bytes = peak_anon_shmem_bytes();
  input.stats = job.stats;
  Summary summary = gather_summary(job.ctx, input);
  // Here, not in msd-run: a trainer's job (msd.Job) writes it too.
  const std::string& path = job.ctx.config.output.summary_json;
  if (job.ctx.rank == 0 && !path.empty()) {
    std::ofstream out(path);
    out << summary.json << "\n";
    if (!out) throw IoError(str("output.summary_json: cannot write ", path));
  }
  return summary;
}
}  // namespace

Summary Job::finish(const TrainerStats& trainer) {
  if (!impl_->started) throw Error("Job::finish() called before Job::start()");
  try {
    Summary summary = finish_job(*impl_, trainer);
    impl_->stage = JobImpl::Stage::finished;
    return summary;
  } catch (...) {
    note_failure(std::current_exception());
    throw;
  }
}

}  // namespace msd
