#include "bench/handoff.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include <time.h>
#include <unistd.h>

#include "bench/launch.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "transport/mpi.h"
#include "transport/progress.h"
#include "transport/reads.h"

namespace msd::bench {

std::vector<BatchShape> handoff_shapes(double scale) {
  auto scaled = [scale](uint32_t n) { return std::max<uint32_t>(64, static_cast<uint32_t>(n * scale)); };
  // What one fetch moves: a DP rank's (TP leader's) micro-batches of one step.
  return {{"short_context", scaled(4096), 8, 350},
          {"long_context", scaled(131072), 1, 8000},
          {"packed_8k", scaled(8192), 4, 1500}};
}

namespace {

struct Piece {
  uint64_t window_offset = 0;
  uint64_t batch_offset = 0;
  uint64_t bytes = 0;
};

// Documents of log-normal length (int32 tokens) filling the shape's
// sequences, at scattered 64-byte-aligned slots of a window twice the size.
std::vector<Piece> lay_out(const BatchShape& shape, uint64_t* window_bytes) {
  std::mt19937_64 rng(shape.seq_len * 31u + shape.sequences);
  std::lognormal_distribution<double> length(std::log(static_cast<double>(shape.median_tokens)), 0.9);
  std::vector<Piece> pieces;
  uint64_t batch = 0;
  for (uint32_t s = 0; s < shape.sequences; ++s)
    for (uint64_t left = shape.seq_len; left > 0;) {
      const uint64_t tokens = std::clamp<uint64_t>(static_cast<uint64_t>(length(rng)), 1, left);
      pieces.push_back({0, batch, tokens * 4});
      batch += tokens * 4;
      left -= tokens;
    }
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  uint64_t offset = 0;
  for (size_t i : order) {
    pieces[i].window_offset = offset;
    offset += (pieces[i].bytes + 63) / 64 * 64 + 64 * (rng() % 16);
  }
  *window_bytes = offset;
  return pieces;
}

using Clock = std::chrono::steady_clock;
constexpr int kTagDone = 1;
constexpr int kTagStream = 2;
constexpr int kTagStreamEnd = 3;

// Alternating passes of window reads and of memcpy until one of them has
// `seconds` (a slow path, e.g. MPI_Get over TCP, must not need a million
// passes of the fast memcpy's time). `pipeline` (two-sided reads): each
// pass starts its reads, into one of two buffers, and then waits for the
// previous pass's, as msd-run's client asks for step t+1 while step t is used.
ShapeRate measure(WindowReader& reader, const uint8_t* local, const BatchShape& shape, const std::vector<Piece>& pieces,
                  double seconds, bool pipeline, int* passes_out) {
  ShapeRate rate{shape.name, 0, static_cast<uint32_t>(pieces.size()), 0, 0};
  for (const auto& p : pieces) rate.batch_bytes += p.bytes;
  std::vector<uint8_t> batches[2] = {std::vector<uint8_t>(rate.batch_bytes), std::vector<uint8_t>(rate.batch_bytes)};
  std::vector<uint8_t> copied(rate.batch_bytes);
  pipeline = pipeline && reader.two_sided();
  double get_s = 0, copy_s = 0, best_s = 1e30;
  uint64_t passes = 0;
  while (passes < 3 || std::max(get_s, copy_s) < seconds) {
    auto t0 = Clock::now();
    uint8_t* batch = batches[passes % 2].data();
    for (const auto& p : pieces) reader.get(0, p.window_offset, batch + p.batch_offset, p.bytes);
    if (!pipeline) reader.complete();
    else if (reader.start(), reader.rounds() > 1) reader.finish();
    auto t1 = Clock::now();
    for (const auto& p : pieces) std::memcpy(copied.data() + p.batch_offset, local + p.window_offset, p.bytes);
    auto t2 = Clock::now();
    get_s += std::chrono::duration<double>(t1 - t0).count();
    best_s = std::min(best_s, std::chrono::duration<double>(t1 - t0).count());
    copy_s += std::chrono::duration<double>(t2 - t1).count();
    ++passes;
  }
  const auto last = Clock::now();
  reader.complete();  // pipelined: the last pass's reads
  get_s += std::chrono::duration<double>(Clock::now() - last).count();
  rate.get_bytes_per_s = static_cast<double>(rate.batch_bytes * passes) / get_s;
  rate.best_get_bytes_per_s = static_cast<double>(rate.batch_bytes) / best_s;
  rate.memcpy_bytes_per_s = static_cast<double>(rate.batch_bytes * passes) / copy_s;
  *passes_out = checked_cast<int>(passes);
  return rate;
}

void barrier(MPI_Comm comm, const char* hint) {
  MPI_Request request;
  MSD_MPI(MPI_Ibarrier(comm, &request), hint);
  wait(request, hint);
}

double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// What the loader (rank 0) does while the client reads: the serve loop's
// wait, the same ServePoll the loader uses (lib/loader/loader.cc), polling
// MPI until the client's message that it is done (the pass count), with the
// readers flag up, and answering two-sided reads with the loader's
// ReadServer. Returns that count; `cpu_s`/`wall_s`: what serving cost.
int serve_reads(MPI_Comm comm, Window& window, ServePoll::Mode mode, bool two_sided, double* cpu_s, double* wall_s) {
  ServePoll poll(!window.direct(), mode);
  std::unique_ptr<ReadServer> server;
  if (two_sided)
    server = std::make_unique<ReadServer>(window, comm, [](uint64_t, uint64_t) {
      return true;  // the bench's window is one slot, never released
    });
  const double cpu0 = process_cpu_seconds();
  const auto t0 = Clock::now();
  for (;;) {
    if (server && server->serve()) {
      poll.reset();
      continue;
    }
    if (auto message = try_receive(comm, 1, kTagDone, "waiting for the client's reads")) {
      *cpu_s = process_cpu_seconds() - cpu0;
      *wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
      int passes = 0;
      std::memcpy(&passes, message->bytes.data(), sizeof passes);
      return passes;
    }
    poll.idle(true);
  }
}

// Batches of `bytes` by a plain MPI_Send/MPI_Recv stream over the same
// transport, as many as the reads made (`passes`) but for at most `seconds`
// (direct copies make millions of passes in the time); the sender ends the
// stream with an empty message. The receiver's rate (bytes per second), and
// in `best` that of its fastest pass.
double two_sided(MPI_Comm comm, int rank, uint8_t* buffer, uint64_t bytes, int passes, double seconds, double* best) {
  const int count = checked_cast<int>(bytes);
  barrier(comm, "starting the two-sided stream");
  const auto t0 = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  if (rank == 0) {
    for (int i = 0; i < passes && (i == 0 || elapsed() < seconds); ++i)
      MSD_MPI(MPI_Send(buffer, count, MPI_BYTE, 1, kTagStream, comm), "two-sided send");
    MSD_MPI(MPI_Send(buffer, 0, MPI_BYTE, 1, kTagStreamEnd, comm), "ending the two-sided stream");
    return 0.0;
  }
  double best_s = 1e30;
  uint64_t received = 0;
  for (;;) {
    const auto pass = Clock::now();
    MPI_Status status;
    MSD_MPI(MPI_Recv(buffer, count, MPI_BYTE, 0, MPI_ANY_TAG, comm, &status), "two-sided receive");
    if (status.MPI_TAG == kTagStreamEnd) break;
    best_s = std::min(best_s, std::chrono::duration<double>(Clock::now() - pass).count());
    ++received;
  }
  *best = static_cast<double>(bytes) / best_s;
  return static_cast<double>(bytes) * static_cast<double>(received) / elapsed();
}

// The nodes of the loader (rank 0) and the client (rank 1), as
// MPI_Get_processor_name gives them, on one line of `path` (by the client).
void write_nodes(MPI_Comm comm, const std::string& path) {
  char names[2][MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  int rank = 0;
  MSD_MPI(MPI_Comm_rank(comm, &rank), "reading this rank");
  MSD_MPI(MPI_Get_processor_name(names[rank], &length), "naming this rank's node");
  MSD_MPI(MPI_Gather(names[rank], MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, comm),
          "gathering the ranks' nodes");
  if (rank != 1) return;
  std::ofstream out(path);
  out << names[0] << ' ' << names[1] << '\n';
  if (!out) throw IoError("cannot write " + path);
}

// The client (rank 1): rates, one check that the bytes are the loader's, then
// the pass count to the loader (which ends its serving).
ShapeRate read_and_check(MPI_Comm comm, WindowReader& reader, const std::vector<uint8_t>& local,
                         const BatchShape& shape, const std::vector<Piece>& pieces, double seconds, bool pipeline,
                         int* passes) {
  ShapeRate r = measure(reader, local.data(), shape, pieces, seconds, pipeline, passes);
  std::vector<uint8_t> check(r.batch_bytes), want(r.batch_bytes);
  for (const auto& p : pieces) {
    reader.get(0, p.window_offset, check.data() + p.batch_offset, p.bytes);
    std::memcpy(want.data() + p.batch_offset, local.data() + p.window_offset, p.bytes);
  }
  reader.complete();
  if (check != want) throw Error(str("handoff: ", shape.name, ": the client read other bytes than the window holds"));
  const auto* at = reinterpret_cast<const uint8_t*>(passes);
  send_bytes(comm, 0, kTagDone, {at, sizeof *passes}, "telling the loader the reads are done");
  return r;
}

}  // namespace

void handoff_worker(MPI_Comm world, double seconds, double scale, const std::string& out_path,
                    const std::string& poll_mode, const std::string& network_reads, bool pipeline) {
  Comm comm = Comm::duplicate(world, "duplicating the world for the handoff bench");
  if (comm.size() != 2) throw ConfigError("msd-bench handoff-worker runs on exactly 2 ranks");
  write_nodes(comm.get(), out_path + ".nodes");
  const ServePoll::Mode mode = ServePoll::parse_mode(poll_mode.c_str());
  const NetworkReads reads = parse_network_reads(network_reads);
  std::ofstream out;
  if (comm.rank() == 1) out.open(out_path);
  for (const BatchShape& shape : handoff_shapes(scale)) {
    uint64_t window_bytes = 0;
    const auto pieces = lay_out(shape, &window_bytes);
    Window window(comm.get(), comm.rank() == 0 ? window_bytes : 0, "allocating the loader window");
    std::vector<uint8_t> local(comm.rank() == 1 ? window_bytes : 0);
    auto fill = [](uint8_t* data, uint64_t bytes) {
      for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i % 251);
    };
    if (comm.rank() == 0) {
      fill(window.base(), window_bytes);
      window.sync_local();
    } else {
      fill(local.data(), window_bytes);
    }
    barrier(comm.get(), "waiting for the loader window to be filled");
    int passes = 0;
    double cpu_s = 0, wall_s = 0;
    ShapeRate r;
    WindowReader reader(window, comm.get(), 60000, reads);  // a reply within a minute, or the bench fails
    const bool requests = reader.two_sided();
    if (comm.rank() == 1) r = read_and_check(comm.get(), reader, local, shape, pieces, seconds, pipeline, &passes);
    else passes = serve_reads(comm.get(), window, mode, requests, &cpu_s, &wall_s);
    uint64_t batch_bytes = 0;
    for (const auto& p : pieces) batch_bytes += p.bytes;
    std::vector<uint8_t> stream(batch_bytes);
    double best_two_sided = 0;
    const double two_sided_rate = two_sided(comm.get(), comm.rank(), comm.rank() == 0 ? window.base() : stream.data(),
                                            batch_bytes, passes, seconds, &best_two_sided);
    double cost[2] = {cpu_s, wall_s};
    MSD_MPI(MPI_Bcast(cost, 2, MPI_DOUBLE, 0, comm.get()), "sharing the loader's CPU time");
    if (comm.rank() == 1)
      out << r.shape << ' ' << r.batch_bytes << ' ' << r.pieces << ' ' << r.get_bytes_per_s << ' '
          << r.memcpy_bytes_per_s << ' ' << two_sided_rate << ' ' << static_cast<double>(r.batch_bytes) * passes
          << ' ' << cost[0] << ' ' << cost[1] << ' ' << (window.direct() ? "direct" : !requests ? "mpi_get" : pipeline ? "two_sided_pipelined" : "two_sided")
          << ' ' << r.best_get_bytes_per_s << ' ' << best_two_sided << '\n';
    barrier(comm.get(), "waiting for the client to finish reading");
  }
  if (comm.rank() == 1 && !out) throw IoError("cannot write " + out_path);
}

namespace {

// The forced network path: UCX for messages and one-sided reads, TCP over
// `device` only (loopback on one host), no shared-memory transport
// (docs/multi-node.md).
std::string network_flags(const std::string& device) {
  std::string flags =
      "--oversubscribe --mca mpi_yield_when_idle 1 --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^vader,openib "
      "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=" + device + " -x UCX_WARN_UNUSED_ENV_VARS=n";
  return ::geteuid() == 0 ? "--allow-run-as-root " + flags : flags;
}

PathReport run_path(const std::string& name, const std::string& flags, const HandoffOptions& options) {
  PathReport report;
  report.path = name;
  const char* saved = std::getenv("MSD_MPIRUN_FLAGS");
  const std::string saved_flags = saved ? saved : "";
  if (!flags.empty()) ::setenv("MSD_MPIRUN_FLAGS", flags.c_str(), 1);
  const std::string out = str(options.work_dir, "/handoff-", name, ".txt");
  const std::string log = str(options.work_dir, "/handoff-", name, ".log");
  auto command = mpirun_command(2, executable_dir() + "/msd-bench",
                                {"handoff-worker", str(options.seconds), str(options.scale), out, options.serve_poll,
                                 options.network_reads, options.pipeline ? "pipeline" : "serial"});
  if (!flags.empty()) {
    if (saved) ::setenv("MSD_MPIRUN_FLAGS", saved_flags.c_str(), 1);
    else ::unsetenv("MSD_MPIRUN_FLAGS");
  }
  for (size_t i = 3; i + 1 < command.size() && command[i] != executable_dir() + "/msd-bench"; ++i)
    report.mpirun_flags += (report.mpirun_flags.empty() ? "" : " ") + command[i];
  // Bounded: a path that cannot make progress (a transport that stalls) is
  // reported as not run, never waited on.
  const double limit_s = 30 + 20 * options.seconds;
  command.insert(command.begin(), {"timeout", "--kill-after=5", str(limit_s)});
  std::remove((out + ".nodes").c_str());  // a worker that fails early leaves no nodes of an earlier run
  const int rc = run_command(command, log);
  std::ifstream in(out);
  ShapeRate r;
  double get_s = 0, copy_s = 0, stream_s = 0, bytes = 0, moved = 0, cpu_s = 0, wall_s = 0, best_s = 0,
         best_stream_s = 0;
  while (in >> r.shape >> r.batch_bytes >> r.pieces >> r.get_bytes_per_s >> r.memcpy_bytes_per_s >>
         r.two_sided_bytes_per_s >> r.moved_bytes >> r.loader_cpu_s >> r.loader_wall_s >> report.access >>
         r.best_get_bytes_per_s >> r.best_two_sided_bytes_per_s) {
    report.shapes.push_back(r);
    const auto b = static_cast<double>(r.batch_bytes);
    bytes += b;
    get_s += b / r.get_bytes_per_s;
    copy_s += b / r.memcpy_bytes_per_s;
    stream_s += b / r.two_sided_bytes_per_s;
    best_s += b / r.best_get_bytes_per_s;
    best_stream_s += b / r.best_two_sided_bytes_per_s;
    moved += r.moved_bytes;
    cpu_s += r.loader_cpu_s;
    wall_s += r.loader_wall_s;
  }
  std::ifstream nodes(out + ".nodes");
  for (std::string node; nodes >> node;) report.nodes.push_back(node);
  report.ran = rc == 0 && !report.shapes.empty();
  if (!report.ran && rc == 124) report.error = str("the worker did not finish within ", limit_s, " s; see ", log);
  else if (!report.ran) report.error = str("the worker exited with status ", rc, "; see ", log);
  if (!report.ran) return report;
  report.ratio_vs_memcpy = copy_s / get_s;  // (bytes / get_s) / (bytes / copy_s)
  report.mb_per_s = bytes / get_s / 1e6;
  report.two_sided_mb_per_s = bytes / stream_s / 1e6;
  report.ratio_vs_two_sided = stream_s / get_s;
  report.best_pass_mb_per_s = bytes / best_s / 1e6;
  report.two_sided_best_pass_mb_per_s = bytes / best_stream_s / 1e6;
  report.best_pass_ratio_vs_two_sided = best_stream_s / best_s;
  report.loader_cpu_s_per_gb = cpu_s / (moved / 1e9);
  report.loader_core_percent = wall_s > 0 ? 100 * cpu_s / wall_s : 0;
  return report;
}

}  // namespace

HandoffReport run_handoff_bench(const HandoffOptions& options) {
  HandoffReport report;
  if (options.shared_memory) report.paths.push_back(run_path("shared_memory", "", options));
  report.paths.push_back(run_path("network", network_flags(options.network_device), options));
  return report;
}

std::string handoff_json(const HandoffReport& report) {
  JsonWriter w;
  w.begin_object();
  w.begin_object("paths");
  for (const auto& path : report.paths) {
    w.begin_object(path.path);
    w.value("mpirun_flags", path.mpirun_flags).value("ran", path.ran);
    w.begin_array("nodes");
    for (const std::string& node : path.nodes) w.value("", node);
    w.end_array();
    if (!path.ran) w.value("error", path.error);
    else
      w.value("access", path.access)
          .value("ratio_vs_memcpy", path.ratio_vs_memcpy)
          .value("mb_per_s", path.mb_per_s)
          .value("two_sided_mb_per_s", path.two_sided_mb_per_s)
          .value("ratio_vs_two_sided", path.ratio_vs_two_sided)
          .value("best_pass_mb_per_s", path.best_pass_mb_per_s)
          .value("two_sided_best_pass_mb_per_s", path.two_sided_best_pass_mb_per_s)
          .value("best_pass_ratio_vs_two_sided", path.best_pass_ratio_vs_two_sided)
          .value("loader_cpu_s_per_gb", path.loader_cpu_s_per_gb)
          .value("loader_core_percent", path.loader_core_percent);
    w.begin_array("shapes");
    for (const auto& s : path.shapes)
      w.begin_object()
          .value("shape", s.shape)
          .value("batch_bytes", s.batch_bytes)
          .value("pieces", s.pieces)
          .value("get_bytes_per_s", s.get_bytes_per_s)
          .value("memcpy_bytes_per_s", s.memcpy_bytes_per_s)
          .value("ratio_vs_memcpy", s.get_bytes_per_s / s.memcpy_bytes_per_s)
          .value("two_sided_bytes_per_s", s.two_sided_bytes_per_s)
          .value("ratio_vs_two_sided", s.get_bytes_per_s / s.two_sided_bytes_per_s)
          .value("loader_cpu_s", s.loader_cpu_s)
          .value("loader_wall_s", s.loader_wall_s)
          .end_object();
    w.end_array().end_object();
  }
  w.end_object().end_object();
  return w.str();
}

std::string handoff_text(const HandoffReport& report) {
  std::string text = "handoff: a client reading a batch from a loader window (msd::Window) vs memcpy of the same pieces\n";
  char line[512];
  for (const auto& path : report.paths) {
    text += str(path.path, " (", path.mpirun_flags, ")\n");
    if (path.nodes.size() == 2) text += str("  loader on ", path.nodes[0], ", client on ", path.nodes[1], "\n");
    if (!path.ran) {
      text += "  did not run: " + path.error + "\n";
      continue;
    }
    const char* access = path.access == "direct" ? "direct copies from the node-shared window"
                         : path.access == "two_sided"
                             ? "one request and one reply per batch, one batch at a time (--serial)"
                         : path.access == "two_sided_pipelined"
                             ? "one request and one reply per batch, each requested before the previous one "
                               "is waited for (msd-run's client)"
                             : "MPI_Get + flush";
    text += str("  access: ", access, "\n");
    for (const auto& s : path.shapes) {
      std::snprintf(line, sizeof line, "  %-14s %9.1f KiB %6u pieces  get %8.2f GB/s  memcpy %8.2f GB/s  ratio %.3f\n",
                    s.shape.c_str(), static_cast<double>(s.batch_bytes) / 1024, s.pieces, s.get_bytes_per_s / 1e9,
                    s.memcpy_bytes_per_s / 1e9, s.get_bytes_per_s / s.memcpy_bytes_per_s);
      text += line;
    }
    text += str("  ratio_vs_memcpy ", path.ratio_vs_memcpy, " (all shapes' bytes over all shapes' time)\n");
    std::snprintf(line, sizeof line,
                  "  msd %.1f MB/s, two-sided MPI_Send/MPI_Recv %.1f MB/s: ratio_vs_two_sided %.3f\n"
                  "  fastest pass: msd %.1f MB/s, two-sided %.1f MB/s: best_pass_ratio_vs_two_sided %.3f\n"
                  "  loader CPU while serving: %.3f s per GB read, %.1f%% of a core\n",
                  path.mb_per_s, path.two_sided_mb_per_s, path.ratio_vs_two_sided, path.best_pass_mb_per_s,
                  path.two_sided_best_pass_mb_per_s, path.best_pass_ratio_vs_two_sided, path.loader_cpu_s_per_gb,
                  path.loader_core_percent);
    text += line;
  }
  return text;
}

}  // namespace msd::bench
