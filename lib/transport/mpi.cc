#include "transport/mpi.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <thread>

namespace msd {

int world_rank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void check_mpi(int rc, const char* call, std::string_view hint) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  int error_class = 0;
  MPI_Error_class(rc, &error_class);
  throw MpiError(str(hint, ": ", call, " failed: ", text, " (MPI error class ", error_class, ") on rank ",
                     world_rank()));
}

void Backoff::idle() {
  delay_us_ = delay_us_ == 0 ? 50 : std::min(delay_us_ * 2, 2000);
  std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
}

void wait(MPI_Request& request, std::string_view hint, MPI_Status* status) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    MSD_MPI(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), hint);
    if (done) return;
    backoff.idle();
  }
}

bool wait_for(MPI_Request& request, uint64_t timeout_ms, std::string_view hint) {
  if (timeout_ms == 0) {
    wait(request, hint);
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Backoff backoff;
  for (;;) {
    int done = 0;
    MSD_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE), hint);
    if (done) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    backoff.idle();
  }
}

bool unwinding() { return std::uncaught_exceptions() > 0; }

Comm::Comm(MPI_Comm comm) : comm_(comm) {
  if (comm_ != MPI_COMM_NULL) MSD_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "setting the error handler");
}

Comm Comm::duplicate(MPI_Comm comm, std::string_view hint) {
  MPI_Comm out = MPI_COMM_NULL;
  MSD_MPI(MPI_Comm_dup(comm, &out), hint);
  return Comm(out);
}

Comm Comm::split(MPI_Comm comm, int color, int key, std::string_view hint) {
  MPI_Comm out = MPI_COMM_NULL;
  MSD_MPI(MPI_Comm_split(comm, color, key, &out), hint);
  return Comm(out);
}

Comm Comm::split_by_node(MPI_Comm comm, std::string_view hint) {
  int rank = 0;
  MSD_MPI(MPI_Comm_rank(comm, &rank), hint);
  MPI_Comm out = MPI_COMM_NULL;
  MSD_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &out), hint);
  return Comm(out);
}

bool on_one_node(MPI_Comm comm, std::string_view hint) {
  int size = 0;
  MSD_MPI(MPI_Comm_size(comm, &size), hint);
  return Comm::split_by_node(comm, hint).size() == size;
}

Comm Comm::create_group(MPI_Comm comm, const std::vector<int>& ranks, int tag, std::string_view hint) {
  MPI_Group all = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MSD_MPI(MPI_Comm_group(comm, &all), hint);
  MSD_MPI(MPI_Group_incl(all, checked_cast<int>(ranks.size()), ranks.data(), &members), hint);
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = MPI_Comm_create_group(comm, members, tag, &out);
  MPI_Group_free(&members);
  MPI_Group_free(&all);
  MSD_MPI(rc, hint);
  return Comm(out);
}

Comm::~Comm() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Comm::Comm(Comm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

int Comm::rank() const {
  int rank = 0;
  MSD_MPI(MPI_Comm_rank(comm_, &rank), "querying a communicator's rank");
  return rank;
}

int Comm::size() const {
  int size = 0;
  MSD_MPI(MPI_Comm_size(comm_, &size), "querying a communicator's size");
  return size;
}

void send_bytes(MPI_Comm comm, int dest, int tag, std::span<const uint8_t> bytes, std::string_view hint) {
  // Small control messages: a blocking send returns once buffered (eager).
  // Large ones (plans of big steps) may rendezvous; the receivers poll often.
  MSD_MPI(MPI_Send(bytes.data(), checked_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm), hint);
}

void AsyncSender::send(int dest, int tag, std::vector<uint8_t> bytes, std::string_view hint) {
  MPI_Request request;
  MSD_MPI(MPI_Isend(bytes.data(), checked_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm_, &request), hint);
  requests_.push_back(request);
  buffers_.push_back(std::move(bytes));  // the vector's heap buffer does not move
  ++sent_;
  if (requests_.size() >= compact_at_) progress();
}

// One MPI_Testsome over every send in flight: one pass of MPI's progress
// engine (with mpi_yield_when_idle, one yield of the core at most), not one
// per request. The next compaction from send() waits until twice as many are
// in flight as remained, so sends to peers that do not receive yet (plans
// over the eager limit) cost amortized O(1) tests each, not O(in flight).
void AsyncSender::progress() {
  if (!requests_.empty()) {
    int count = 0;
    done_.resize(requests_.size());
    MSD_MPI(MPI_Testsome(checked_cast<int>(requests_.size()), requests_.data(), &count, done_.data(),
                         MPI_STATUSES_IGNORE),
            "completing sends");
    if (count > 0 && count != MPI_UNDEFINED) {
      // MPI_Testsome set the completed requests to MPI_REQUEST_NULL; keep the
      // others in order. Never move a buffer onto itself: a self-moved
      // std::vector is left empty and its storage freed while MPI may still
      // be reading it (a message too large to be sent eagerly).
      size_t kept = 0;
      for (size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] == MPI_REQUEST_NULL) continue;
        if (kept != i) {
          requests_[kept] = requests_[i];
          buffers_[kept] = std::move(buffers_[i]);
        }
        ++kept;
      }
      requests_.resize(kept);
      buffers_.resize(kept);
    }
  }
  compact_at_ = std::max<size_t>(64, 2 * requests_.size());
}

void AsyncSender::drain() {
  Backoff backoff;
  for (progress(); !requests_.empty(); progress()) backoff.idle();
}

bool AsyncSender::drain_for(uint64_t timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Backoff backoff;
  for (progress(); !requests_.empty(); progress()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    backoff.idle();
  }
  return true;
}

AsyncSender::~AsyncSender() {
  try {
    // A send to a peer that stopped receiving never completes; its buffer is
    // leaked rather than freed under MPI, and the job ends without it.
    if (!drain_for(2000)) {
      for (auto& buffer : buffers_) new std::vector<uint8_t>(std::move(buffer));
    }
  } catch (...) {
    // Destruction during an error: the job is being aborted anyway.
  }
}

namespace {
// The message a matched probe took out of the matching: received without a
// second search of the queues (a wildcard probe, then a receive by its
// source and tag, searched twice).
Message receive_matched(MPI_Message& matched, const MPI_Status& status, std::string_view hint) {
  int count = 0;
  MSD_MPI(MPI_Get_count(&status, MPI_BYTE, &count), hint);
  Message message;
  message.source = status.MPI_SOURCE;
  message.tag = status.MPI_TAG;
  message.bytes.resize(static_cast<size_t>(count));
  MSD_MPI(MPI_Mrecv(message.bytes.data(), count, MPI_BYTE, &matched, MPI_STATUS_IGNORE), hint);
  return message;
}
}  // namespace

std::optional<Message> try_receive(MPI_Comm comm, int source, int tag, std::string_view hint) {
  int flag = 0;
  MPI_Message matched = MPI_MESSAGE_NULL;
  MPI_Status status;
  MSD_MPI(MPI_Improbe(source, tag, comm, &flag, &matched, &status), hint);
  if (!flag) return std::nullopt;
  return receive_matched(matched, status, hint);
}

Message receive(MPI_Comm comm, int source, int tag, std::string_view hint) {
  Backoff backoff;
  for (;;) {
    if (auto message = try_receive(comm, source, tag, hint)) return std::move(*message);
    backoff.idle();
  }
}

std::optional<Message> receive_for(MPI_Comm comm, int source, int tag, uint64_t timeout_ms, std::string_view hint) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Backoff backoff;
  for (;;) {
    if (auto message = try_receive(comm, source, tag, hint)) return message;
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    backoff.idle();
  }
}

std::vector<Message> receive_from_each(MPI_Comm comm, std::set<int>& sources, int tag, uint64_t timeout_ms,
                                       std::string_view hint) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<Message> out;
  Backoff backoff;
  while (!sources.empty()) {
    if (auto message = try_receive(comm, MPI_ANY_SOURCE, tag, hint)) {
      sources.erase(message->source);
      out.push_back(std::move(*message));
      backoff.reset();
      continue;
    }
    if (timeout_ms > 0 && std::chrono::steady_clock::now() >= end) break;
    backoff.idle();
  }
  return out;
}

Window::Window(MPI_Comm comm, uint64_t bytes, std::string_view hint) : bytes_(bytes) {
  if (!allocate_shared(comm, bytes)) {
    void* base = nullptr;
    MSD_MPI(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &base, &win_), hint);
    base_ = static_cast<uint8_t*>(base);
  }
  MSD_MPI(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), hint);
  MSD_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), hint);
}

// One node-shared segment when every rank of `comm` is on this node and the
// library offers it; false (nothing allocated) otherwise. Every rank gets the
// same answer: the node test is the same everywhere, and a library without
// shared windows fails the collective call on every rank alike.
bool Window::allocate_shared(MPI_Comm comm, uint64_t bytes) {
  if (!on_one_node(comm, "finding the ranks of this node")) return false;
  int size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Errhandler previous;
  MPI_Comm_get_errhandler(comm, &previous);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  void* base = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, comm, &base, &win_);
  MPI_Comm_set_errhandler(comm, previous);
  MPI_Errhandler_free(&previous);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    win_ = MPI_WIN_NULL;
    return false;
  }
  base_ = static_cast<uint8_t*>(base);
  shared_bases_.resize(static_cast<size_t>(size));
  shared_sizes_.resize(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    MPI_Aint segment = 0;
    int unit = 0;
    void* at = nullptr;
    MSD_MPI(MPI_Win_shared_query(win_, rank, &segment, &unit, &at), "locating a shared window segment");
    shared_bases_[static_cast<size_t>(rank)] = static_cast<const uint8_t*>(at);
    shared_sizes_[static_cast<size_t>(rank)] = static_cast<uint64_t>(segment);
  }
  return true;
}

void Window::reset() noexcept {
  if (win_ != MPI_WIN_NULL && !unwinding()) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  win_ = MPI_WIN_NULL;
  base_ = nullptr;
  bytes_ = 0;
  shared_bases_.clear();
  shared_sizes_.clear();
}

Window::~Window() { reset(); }

Window::Window(Window&& other) noexcept
    : win_(std::exchange(other.win_, MPI_WIN_NULL)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      shared_bases_(std::exchange(other.shared_bases_, {})),
      shared_sizes_(std::exchange(other.shared_sizes_, {})) {}

Window& Window::operator=(Window&& other) noexcept {
  if (this != &other) {
    reset();
    win_ = std::exchange(other.win_, MPI_WIN_NULL);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    shared_bases_ = std::exchange(other.shared_bases_, {});
    shared_sizes_ = std::exchange(other.shared_sizes_, {});
  }
  return *this;
}

void Window::sync_local() { MSD_MPI(MPI_Win_sync(win_), "syncing a window's memory (MPI_Win_sync)"); }

void Window::get(int target, uint64_t offset, void* out, uint64_t bytes) {
  if (direct()) {
    const auto t = static_cast<size_t>(target);
    if (t >= shared_bases_.size() || offset > shared_sizes_[t] || bytes > shared_sizes_[t] - offset)
      throw Error(str("reading ", bytes, " bytes at offset ", offset, " of rank ", target,
                      "'s window: outside its ", t < shared_sizes_.size() ? shared_sizes_[t] : 0, " bytes"));
    if (!reads_ordered_) {
      MSD_MPI(MPI_Win_sync(win_), "ordering window reads after their announcement");
      reads_ordered_ = true;
    }
    std::memcpy(out, shared_bases_[t] + offset, bytes);
    return;
  }
  // MPI counts are int: large reads go in chunks.
  auto* dest = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    uint64_t chunk = std::min<uint64_t>(bytes, uint64_t{1} << 30);
    MSD_MPI(MPI_Get(dest, static_cast<int>(chunk), MPI_BYTE, target, static_cast<MPI_Aint>(offset),
                    static_cast<int>(chunk), MPI_BYTE, win_),
            str("reading ", chunk, " bytes at offset ", offset, " of loader rank ", target, "'s window"));
    dest += chunk;
    offset += chunk;
    bytes -= chunk;
  }
}

void Window::flush_all() {
  reads_ordered_ = false;
  if (!direct()) MSD_MPI(MPI_Win_flush_all(win_), "completing window reads");
}

}  // namespace msd
