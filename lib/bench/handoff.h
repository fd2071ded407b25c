// `msd-bench handoff`: how fast a client reads a batch out of a loader's RMA
// window (the real msd::WindowReader: copies, one request and reply, or
// MPI_Get + flush) against memcpy of the same
// pieces in the same process, on the one-node shared-memory settings and on
// the forced network path (UCX over TCP, docs/multi-node.md).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace msd::bench {

// A batch as the client fetches it: `pieces` documents (or pieces of them)
// of int32 tokens, scattered over the loader's window.
struct BatchShape {
  std::string name;
  uint32_t seq_len = 0;          // positions per sequence
  uint32_t sequences = 0;        // sequences per fetch (micro-batches x TP leader's share)
  uint32_t median_tokens = 0;    // median document length, tokens
};

struct HandoffOptions {
  double seconds = 1.0;      // least measured seconds per rate
  double scale = 1.0;        // multiplies seq_len (a tiny run for the test)
  std::string work_dir = "/tmp";
  std::string serve_poll = "sleep";  // the loader's wait while clients read (ServePoll::Mode)
  std::string network_reads = "two_sided";  // how the network path reads (NetworkReads): two_sided | one_sided
  // Two-sided: request each batch before the previous one is in (two
  // buffers), as msd-run's client does; false: one round trip per batch.
  bool pipeline = true;
  // The network path's interface (UCX_NET_DEVICES): loopback on one host;
  // under an allocation of two nodes (salloc -N2 -n2), their interface, and
  // mpirun puts the loader and the client on different nodes.
  std::string network_device = "lo";
  bool shared_memory = true;  // false: the network path only (--network-only)
};

struct ShapeRate {
  std::string shape;
  uint64_t batch_bytes = 0;
  uint32_t pieces = 0;
  double get_bytes_per_s = 0;
  double memcpy_bytes_per_s = 0;
  double two_sided_bytes_per_s = 0;  // the same bytes by MPI_Send/MPI_Recv, same transport, same run
  double moved_bytes = 0;            // read by the client in the measured passes
  double loader_cpu_s = 0;           // the loader's process CPU time while the client read them
  double loader_wall_s = 0;          // and the wall time it served them in
  // The fastest single pass of each: on a loaded host (other processes
  // taking the cores) the averages swing by 10x between runs, the fastest
  // pass much less.
  double best_get_bytes_per_s = 0;
  double best_two_sided_bytes_per_s = 0;
};

struct PathReport {
  std::string path;         // shared_memory | network
  std::string mpirun_flags;
  std::vector<std::string> nodes;  // MPI_Get_processor_name of the loader (rank 0) and the client
  // direct (node-shared window, copies) | two_sided_pipelined (request +
  // reply, a batch ahead: msd-run's client) | two_sided (--serial) | mpi_get
  std::string access;
  bool ran = false;
  std::string error;        // why it did not run
  std::vector<ShapeRate> shapes;
  double ratio_vs_memcpy = 0;  // sum of bytes / sum of time, over all shapes
  double mb_per_s = 0;            // msd's reads: all shapes' bytes over their read time, 1e6 bytes/s
  double two_sided_mb_per_s = 0;  // the same over the two-sided stream
  double ratio_vs_two_sided = 0;
  double best_pass_mb_per_s = 0;            // the same over each shape's fastest pass
  double two_sided_best_pass_mb_per_s = 0;
  double best_pass_ratio_vs_two_sided = 0;
  double loader_cpu_s_per_gb = 0;    // loader CPU seconds per 1e9 bytes read
  double loader_core_percent = 0;    // loader CPU over its serving wall time
};

struct HandoffReport {
  std::vector<PathReport> paths;
};

std::vector<BatchShape> handoff_shapes(double scale);

// Launches the worker under mpirun once per path (2 ranks each).
HandoffReport run_handoff_bench(const HandoffOptions& options);
std::string handoff_json(const HandoffReport& report);
std::string handoff_text(const HandoffReport& report);

// The worker, on 2 ranks of `world`: rank 0 holds the window, rank 1 reads.
// Rank 1 writes its rates, one line per shape, to `out_path`; rank 0 waits
// as a loader does, by ServePoll in `poll_mode`, answering two-sided reads
// (`network_reads`, NetworkReads) as a loader does; `pipeline`: the client
// requests each batch before it waits for the previous one. Collective.
void handoff_worker(MPI_Comm world, double seconds, double scale, const std::string& out_path,
                    const std::string& poll_mode, const std::string& network_reads, bool pipeline);

}  // namespace msd::bench
