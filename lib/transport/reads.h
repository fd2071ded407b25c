// How a client reads pieces of loaders' windows, and how a loader answers.
//
// With a node-shared window (Window::direct()) a read is a copy out of the
// loader's segment. Across a network, one MPI_Get per piece needs the
// loader's MPI progress for every piece over TCP (UCX emulates the get in
// software), which held reads to a fifth of a two-sided stream
// (docs/multi-node.md, "Handoff speed"). There a client instead sends each
// loader one read request per step listing its pieces (kTagRead, docs/wire.md)
// and receives one reply (kTagReadReply) straight into its buffers: the
// loader sends the pieces back to back, copied out of its window. Every rank makes
// the same choice, from Window::direct(), which every rank agrees on, and
// topology.network_reads (NetworkReads, msd/options.h), one_sided keeping
// MPI_Get per piece.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "msd/options.h"
#include "transport/mpi.h"

namespace msd {

// "two_sided" | "one_sided"; throws ConfigError otherwise.
NetworkReads parse_network_reads(std::string_view name);

// The client side: get() queues a read, complete() finishes every queued
// one. Not thread-safe. Over the network the reads of each loader become one
// request (at most kMaxReplyBytes each; a larger batch takes several).
class WindowReader {
 public:
  static constexpr uint64_t kMaxReplyBytes = uint64_t{1} << 30;  // MPI counts are int

  // `comm`: the window's communicator (world ranks in msd-run).
  // `timeout_ms`: the bound on a loader's reply (0: none); past it,
  // complete() throws Error naming the loader.
  // Lives as long as the client, so that the requests of a read that timed
  // out are still owned when the job ends on its error.
  WindowReader(Window& window, MPI_Comm comm, uint64_t timeout_ms, NetworkReads network = NetworkReads::two_sided);
  void get(int rank, uint64_t offset, void* out, uint64_t bytes);
  // Completes every read queued (start() then finish() until none is open).
  void complete();
  // Sends the requests for the reads queued since the last start(), without
  // waiting: a round. The next reads may be queued and started before
  // finish(); the loaders answer a client's requests in order.
  void start();
  // Waits for the oldest started round (one-sided: every read queued).
  void finish();
  size_t rounds() const { return rounds_.size(); }
  bool two_sided() const { return two_sided_; }

 private:
  struct Piece {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint8_t* out = nullptr;
  };
  // Requests in flight: per request the reply's receive, then the
  // request's send (whose bytes `sent` holds), and the loader's rank.
  struct Round {
    std::vector<MPI_Request> requests;
    std::vector<int> ranks;
    std::vector<std::vector<uint8_t>> sent;
  };
  void request(int rank, const std::vector<Piece>& pieces, Round& round);
  void wait_replies(Round& round);

  Window& window_;
  MPI_Comm comm_;
  uint64_t timeout_ms_;
  bool two_sided_;
  std::map<int, std::vector<Piece>> queued_;  // loader rank -> pieces, in request order
  std::deque<Round> rounds_;                  // started, oldest first
};

// The loader side of two-sided reads: answers every waiting request with one
// MPI_Isend of the pieces copied back to back into a reply buffer of its
// own. A contiguous reply takes UCX's fast path (over TCP it moved 2.1x the
// bytes of an hindexed datatype over the window, docs/multi-node.md), and
// once copied no slot is read by MPI, so a release never waits for a reply.
// `holds(offset, bytes)` says whether a live slot holds a piece: a read
// outside every live slot is a ProtocolError. Not thread-safe; one per
// loader.
class ReadServer {
 public:
  using Holds = std::function<bool(uint64_t offset, uint64_t bytes)>;
  ReadServer(Window& window, MPI_Comm comm, Holds holds);
  ~ReadServer();  // replies still in flight are waited for (bounded), unless unwinding
  ReadServer(const ReadServer&) = delete;
  ReadServer& operator=(const ReadServer&) = delete;

  // Answers the requests waiting now and frees finished replies; true when
  // it did anything.
  bool serve();
  size_t in_flight() const { return replies_.size(); }

 private:
  void answer(const Message& message);
  bool finish();

  Window& window_;
  MPI_Comm comm_;
  Holds holds_;
  std::vector<MPI_Request> replies_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;  // per reply, its bytes until MPI is done with them
  std::vector<int> done_;
};

}  // namespace msd
