// msd-replay's logic: offline, with no MPI and no data access, from a trace
// (trace.h) and optionally a planner checkpoint (planner_checkpoint.h).
//
// verify re-derives every recorded step from the trace header's configuration
// and seed — mixing quotas, each source's stream cursors and file-order
// indexes, bad cursors skipped as recorded, the packing and balancing over
// data groups and micro-batches with the run's cost model — and compares it
// with what the run recorded, row by row. The recorded bad flags, positions
// and patches of samples are the inputs it cannot re-derive without the data.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "checkpoint/planner_checkpoint.h"
#include "checkpoint/trace.h"
#include "msd/config.h"

namespace msd {

// The configuration of a trace (its header's config_ini read back through
// parse_command_line; a trace whose configuration never names
// source.NAME.shuffle, from before the option, gets the uniform order it
// took). Throws ConfigError.
Config trace_config(const TraceHeader& header);

struct Divergence {
  uint64_t step = 0;
  int group = -1;                // data group, -1 when the step's samples differ (every group)
  std::vector<int> clients;      // client indices of that group (all clients when group is -1)
  std::vector<int> world_ranks;  // their MPI world ranks in the run's role layout
  std::string what;              // what differs: expected against recorded
};

struct VerifyReport {
  uint64_t first_step = 0;     // first step checked
  uint64_t steps_checked = 0;  // steps equal to the re-plan, from first_step on
  std::optional<Divergence> divergence;  // the first one; none: the trace is the re-plan
};

// Re-plans the trace's steps and compares. A trace that starts at a step > 0
// (begun again by a resume) needs the planner checkpoint of that step as the
// starting state (`start`); throws ConfigError when it is missing or of
// another step. Throws IoError for an unreadable trace.
VerifyReport verify_trace(const TraceReader& trace, const std::optional<PlannerCheckpoint>& start = std::nullopt);
void print_verify_report(const VerifyReport& report, std::ostream& out);

// verify's data check: when every source of the trace's configuration
// resolves, the data's fingerprint now against the one its header recorded.
struct DataCheck {
  bool checked = false;
  std::string not_checked;               // why not, when !checked
  std::vector<std::string> differences;  // fingerprint_differences; empty: the same data
};
DataCheck check_trace_data(const TraceReader& trace);

// Exit statuses of `msd-replay verify` (docs/trace.md, "msd-replay").
inline constexpr int kVerifyIdentical = 0;
inline constexpr int kVerifyDivergence = 1;    // intact files, but the re-plan differs
inline constexpr int kVerifyTampered = 4;      // a file changed after it was written
inline constexpr int kVerifyDataChanged = 5;   // no divergence, but the data is not the data of the run
inline constexpr int kVerifyCut = 6;           // no divergence, but the run did not close the trace (killed)

// The whole of `msd-replay verify TRACE [--checkpoint FILE]`: the integrity of
// the trace (header and step chain) and of the checkpoint, then the re-plan,
// then the data check; prints each result to `out` and returns the exit
// status. `checkpoint_path` empty: planner-<first step>.h5 beside a trace that
// begins after step 0. Throws ConfigError / IoError like verify_trace.
int verify_command(const std::string& trace_path, std::string checkpoint_path, std::ostream& out);

// Which samples client `client` (its index among clients, 0 .. dp*pp*cp*tp-1)
// saw at `step`: its data group's pieces with source, index and layout.
// Throws ConfigError for a client or step outside the trace.
void print_client_step(const TraceReader& trace, int client, uint64_t step, std::ostream& out);

// Per step and source: realized samples and positions against the
// schedule's target samples (global_batch * weight). CSV to `out`.
void print_mix(const TraceReader& trace, std::ostream& out);

// Per step: cost max/mean over data groups, and the worst micro-batch index's
// max/mean; then the mean and worst over steps. CSV to `out`.
void print_balance(const TraceReader& trace, std::ostream& out);

// One row per piece: step, group, micro_batch, sequence, sample, source,
// source_name, cursor, index, begin, length, cost, from_step (the step
// whose stream consumed the document: earlier for one the hold delayed). format: "csv" or "json"
// (an array of objects). Throws ConfigError for another format.
void export_trace(const TraceReader& trace, const std::string& format, std::ostream& out);

}  // namespace msd
