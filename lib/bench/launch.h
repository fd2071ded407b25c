// Launching msd-run from a benchmark: the MPI command line msd is measured
// with (tools/mpirun.sh uses the same settings) and reading back its summary.
#pragma once

#include <string>
#include <vector>

#include "source/jsonl/json.h"

namespace msd::bench {

// The directory of the running executable (msd-run is built beside msd-bench
// under app/).
std::string executable_dir();

// `mpirun -n RANKS <flags> PROGRAM ARGS...`. Flags come from MSD_MPIRUN_FLAGS
// when set, else: --oversubscribe, mpi_yield_when_idle, shared-memory
// transports and one-sided component, and --allow-run-as-root for root.
std::vector<std::string> mpirun_command(int ranks, const std::string& program, const std::vector<std::string>& args);

// Runs a command (no shell), with its output going to `log_path`. Returns the
// exit status; throws Error when it cannot be started.
int run_command(const std::vector<std::string>& command, const std::string& log_path);

// Creates a directory unless it exists; throws IoError when it cannot.
void make_dir(const std::string& path);

// A Megatron indexed corpus at `prefix` (.bin/.idx, uint16) of `documents`
// documents of min_tokens + [0, spread) token ids below `vocab`, drawn from
// splitmix64 seeded with `seed`; left as it is when `prefix`.idx exists.
// Returns the .idx path.
std::string write_random_corpus(const std::string& prefix, uint64_t documents, uint32_t min_tokens, uint32_t spread,
                                uint32_t vocab, uint64_t seed);

// Reads and parses a JSON file; throws IoError naming it.
JsonValue read_json_file(const std::string& path);
// A number member of an object path ("a.b.c"), or NaN when absent.
double json_number(const JsonValue& root, const std::string& path);

}  // namespace msd::bench
