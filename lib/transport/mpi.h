// All MPI use goes through here: every call checked (MPI_ERRORS_RETURN is set
// on every communicator and window msd creates, so the check can fire), owning
// handles, and waits that back off instead of spinning — loader and planner
// ranks share cores with the trainer.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace msd {

// Throws MpiError "<hint>: <MPI_Error_string> (MPI error class N) on rank R".
void check_mpi(int rc, const char* call, std::string_view hint);
#define MSD_MPI(call, hint) ::msd::check_mpi((call), #call, (hint))

int world_rank();

// Sleeps a little longer each time nothing happened (50 us up to 2 ms), and
// starts over once something did.
class Backoff {
 public:
  void idle();
  void reset() { delay_us_ = 0; }

 private:
  int delay_us_ = 0;
};

// Waits for a request without burning a core.
void wait(MPI_Request& request, std::string_view hint, MPI_Status* status = nullptr);
// The same for at most `timeout_ms` (0: no bound); false when it did not complete.
bool wait_for(MPI_Request& request, uint64_t timeout_ms, std::string_view hint);

// Whether an exception is unwinding the stack: destructors then skip
// collective frees (MPI_Win_free), which a failed peer would never join, so
// that the exception reaches abort_job with its cause.
bool unwinding();

// An owned communicator (MPI_Comm_free on destruction); never owns
// MPI_COMM_WORLD itself (the constructor from world duplicates it).
class Comm {
 public:
  Comm() = default;
  static Comm duplicate(MPI_Comm comm, std::string_view hint);
  static Comm split(MPI_Comm comm, int color, int key, std::string_view hint);  // color may be MPI_UNDEFINED
  // The sub-communicator of `ranks` (of `comm`, in that order). Collective over
  // those ranks only (MPI_Comm_create_group): a rank left out never joins, so
  // a stopped or hung peer cannot block the others.
  static Comm create_group(MPI_Comm comm, const std::vector<int>& ranks, int tag, std::string_view hint);
  // The ranks of `comm` that share this rank's node memory
  // (MPI_COMM_TYPE_SHARED), in comm's order. Collective over comm.
  static Comm split_by_node(MPI_Comm comm, std::string_view hint);
  ~Comm();
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  MPI_Comm get() const { return comm_; }
  bool valid() const { return comm_ != MPI_COMM_NULL; }
  int rank() const;
  int size() const;

 private:
  explicit Comm(MPI_Comm comm);
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Point-to-point messages of raw bytes (wire.h encodes them).
void send_bytes(MPI_Comm comm, int dest, int tag, std::span<const uint8_t> bytes, std::string_view hint);

// Non-blocking sends whose buffers it owns until MPI is done with them. A
// rank that must keep serving others (the planner) never blocks on a slow or
// stalled peer: a large message to a busy rank would otherwise rendezvous.
class AsyncSender {
 public:
  explicit AsyncSender(MPI_Comm comm) : comm_(comm) {}
  ~AsyncSender();  // waits (with backoff) for what is still in flight
  AsyncSender(const AsyncSender&) = delete;
  AsyncSender& operator=(const AsyncSender&) = delete;

  void send(int dest, int tag, std::vector<uint8_t> bytes, std::string_view hint);
  void progress();  // frees the buffers of completed sends (one MPI_Testsome)
  void drain();     // waits for every send to complete
  // Waits at most `timeout_ms`; false when sends remain (to a peer that
  // stopped receiving: their buffers are then kept, never freed under MPI).
  bool drain_for(uint64_t timeout_ms);
  size_t in_flight() const { return requests_.size(); }
  uint64_t sent() const { return sent_; }  // messages sent so far

 private:
  MPI_Comm comm_;
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<int> done_;    // MPI_Testsome's indices
  size_t compact_at_ = 64;   // send() calls progress() at this many in flight
  uint64_t sent_ = 0;
};

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<uint8_t> bytes;
};
// Receives a message if one is waiting (any source and tag when given
// MPI_ANY_*); returns nullopt otherwise. Never blocks.
std::optional<Message> try_receive(MPI_Comm comm, int source, int tag, std::string_view hint);
// Blocks (with backoff) until a message matching source/tag arrives.
Message receive(MPI_Comm comm, int source, int tag, std::string_view hint);
// The same, for at most `timeout_ms`; nullopt when nothing came.
std::optional<Message> receive_for(MPI_Comm comm, int source, int tag, uint64_t timeout_ms, std::string_view hint);
// One message of `tag` from each rank of `comm` in `sources`, in any order,
// within `timeout_ms` of the call (0: no bound). Returns those that came, in
// arrival order; `sources` is left holding the ranks that sent none in time.
std::vector<Message> receive_from_each(MPI_Comm comm, std::set<int>& sources, int tag, uint64_t timeout_ms,
                                       std::string_view hint);

// Whether every rank of `comm` is on this node: the same answer on every
// rank. Collective over comm.
bool on_one_node(MPI_Comm comm, std::string_view hint);

// An RMA window with a passive-target access epoch to all ranks open for its
// whole life (lock_all at creation, unlock_all at destruction). Collective
// over the communicator for creation and destruction.
//
// When every rank of the communicator shares one node's memory and the MPI
// library can allocate a shared window (osc sm), it is one
// MPI_Win_allocate_shared segment and reads are plain copies out of the
// target's memory (after an MPI_Win_sync, which orders them after whatever
// message announced the bytes); otherwise MPI_Win_allocate, and reads are
// MPI_Get completed by flush_all. Both ranks agree on the choice, since the
// decision depends only on the communicator and the MPI library.
class Window {
 public:
  Window() = default;
  Window(MPI_Comm comm, uint64_t bytes, std::string_view hint);
  ~Window();
  Window(Window&& other) noexcept;
  Window& operator=(Window&& other) noexcept;
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  MPI_Win get() const { return win_; }
  // True when reads are direct copies from node-shared memory.
  bool direct() const { return !shared_bases_.empty(); }
  // Direct only: `rank`'s segment, for readers that copy from it themselves
  // (after sync_local, which orders the copy after the message announcing it).
  const uint8_t* segment(int rank) const { return shared_bases_.at(static_cast<size_t>(rank)); }

  // Makes this rank's stores to its own window memory visible to later
  // reads by others, and others' stores to this rank's later reads
  // (MPI_Win_sync, unified memory model).
  void sync_local();
  // Queues a read of `bytes` from `target`'s window at `offset` into `out`
  // (direct: copies at once).
  void get(int target, uint64_t offset, void* out, uint64_t bytes);
  // Completes every get queued to every target.
  void flush_all();

 private:
  bool allocate_shared(MPI_Comm comm, uint64_t bytes);
  void reset() noexcept;
  MPI_Win win_ = MPI_WIN_NULL;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  std::vector<const uint8_t*> shared_bases_;  // per rank, when direct
  std::vector<uint64_t> shared_sizes_;
  bool reads_ordered_ = false;  // direct: MPI_Win_sync since the last flush_all
};

}  // namespace msd
