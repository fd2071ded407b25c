// msd-run: one training job's data path end to end. Rank 0 plans, the next
// topology.loaders ranks load, the rest run the trainer emulator on msd::Client.
#include <mpi.h>

#include <cstdio>
#include <iostream>

#include "common/log.h"
#include "msd/client.h"
#include "client/emulator.h"
#include "runtime/fatal.h"
#include "job/nodes.h"
#include "runtime/watchdog.h"

namespace {

// Set once the Job exists: errors before that were raised on every rank alike.
bool job_started = false;

int run(const msd::Invocation& inv, msd::Watchdog& watchdog) {
  watchdog.phase("the job's start-up (the loaders' hello, the start-up agreement, windows)");
  msd::Job job(inv.config, MPI_COMM_WORLD);
  watchdog.disarm();  // the stall detectors bound every wait from here
  job_started = true;
  try {
    msd::TrainerStats trainer;
    if (job.role() == msd::Role::client) trainer = msd::run_trainer_emulator(job);
    else job.serve();
    msd::Summary summary = job.finish(trainer);
    if (job.world_rank() == 0) std::cout << summary.text << std::flush;  // finish() wrote output.summary_json
    return job.shutdown();
  } catch (const std::exception& e) {
    // Here, before the Job's destructor frees windows and communicators
    // collectively: a failed peer would never join them.
    msd::abort_job(e);
  }
}

// Offline (topology.ranks_per_node, else one node): no MPI.
int print_layout(const msd::Config& config) {
  try {
    const msd::RoleLayout layout = msd::plan_layout(config);
    const auto& t = config.topology;
    std::cout << msd::format_layout(layout, msd::ClientPlaceTree(t.dp, t.pp, t.cp, t.tp, t.order),
                                    t.data_ranks);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msd-run: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  msd::Invocation inv;
  try {
    inv = msd::parse_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msd-run: %s\n", e.what());
    return 2;
  }
  if (inv.help) {
    std::cout << inv.usage;
    return 0;
  }
  if (inv.print_world_size) {
    std::cout << inv.config.world_size() << "\n";
    return 0;
  }
  if (inv.print_layout) return print_layout(inv.config);
  msd::set_log_level(msd::parse_log_level(inv.config.output.log_level));
  // Beyond the planner's bound on the hellos (it names the loader), and the
  // agreement's (10 s more).
  const uint64_t bound_s = inv.config.job.startup_timeout_s;
  msd::Watchdog watchdog("msd-run", "start-up", bound_s == 0 ? 0 : bound_s + 20);
  watchdog.phase("MPI_Init");
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    rc = run(inv, watchdog);
  } catch (const msd::ConfigError& e) {
    if (!job_started) {
      // Raised on every rank at start-up, before any work: exit together.
      if (rank == 0) std::fprintf(stderr, "msd-run: %s\n", e.what());
      msd::claim_signal_line();  // a launcher's SIGTERM to ranks still finalizing is no news
      MPI_Finalize();
      return msd::kExitConfig;
    }
    msd::abort_job(e);
  } catch (const std::exception& e) {
    // Start-up failed on this rank alone: agreeing would risk a hang.
    msd::abort_job(e);
  }
  MPI_Finalize();
  return rc;
}
