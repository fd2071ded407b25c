#include "transport/reads.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "transport/wire.h"

namespace msd {

namespace {
// A kTagRead request (docs/wire.md) is a vector of these, in the order the
// reply carries the pieces: where in the loader's window, and how many bytes.
struct ReadPiece {
  uint64_t offset = 0;
  uint32_t bytes = 0;
};
auto wire_fields(ReadPiece& p) { return std::tie(p.offset, p.bytes); }
// How long a reader, and a loader with replies in flight, poll back to back.
constexpr std::chrono::milliseconds kSpin{50};

// A hindexed datatype of bytes: `displacements` from the buffer MPI is given.
MPI_Datatype pieces_type(const std::vector<int>& lengths, const std::vector<MPI_Aint>& displacements,
                         std::string_view hint) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MSD_MPI(MPI_Type_create_hindexed(checked_cast<int>(lengths.size()), lengths.data(), displacements.data(), MPI_BYTE,
                                   &type),
          hint);
  MSD_MPI(MPI_Type_commit(&type), hint);
  return type;
}
}  // namespace

NetworkReads parse_network_reads(std::string_view name) {
  if (const std::optional<NetworkReads> reads = find_option_value<NetworkReads>(name)) return *reads;
  throw ConfigError(str("network reads '", name, "': expected two_sided or one_sided"));
}

WindowReader::WindowReader(Window& window, MPI_Comm comm, uint64_t timeout_ms, NetworkReads network)
    : window_(window), comm_(comm), timeout_ms_(timeout_ms),
      two_sided_(!window.direct() && network == NetworkReads::two_sided) {}

void WindowReader::get(int rank, uint64_t offset, void* out, uint64_t bytes) {
  if (!two_sided_) {
    window_.get(rank, offset, out, bytes);
    return;
  }
  auto& pieces = queued_[rank];
  auto* to = static_cast<uint8_t*>(out);
  while (bytes > 0) {  // a reply holds at most kMaxReplyBytes
    const uint64_t chunk = std::min(bytes, kMaxReplyBytes);
    pieces.push_back({offset, chunk, to});
    offset += chunk;
    to += chunk;
    bytes -= chunk;
  }
}

void WindowReader::complete() {
  start();
  do finish();
  while (!rounds_.empty());
}

void WindowReader::start() {
  if (!two_sided_) return;
  Round round;
  for (auto& [rank, pieces] : queued_) {
    if (pieces.empty()) continue;  // only empty reads of this loader
    size_t begin = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i <= pieces.size(); ++i) {
      const bool full = i < pieces.size() && i > begin && bytes + pieces[i].bytes > kMaxReplyBytes;
      if (i == pieces.size() || full) {
        request(rank, {pieces.begin() + static_cast<std::ptrdiff_t>(begin), pieces.begin() + static_cast<std::ptrdiff_t>(i)},
                round);
        begin = i;
        bytes = 0;
      }
      if (i < pieces.size()) bytes += pieces[i].bytes;
    }
  }
  queued_.clear();
  rounds_.push_back(std::move(round));
}

void WindowReader::finish() {
  if (!two_sided_) {
    window_.flush_all();
    return;
  }
  if (rounds_.empty()) return;
  wait_replies(rounds_.front());
  rounds_.pop_front();
}

// Posts the reply's receive into the pieces' buffers first (the bytes land
// in place, never as an unexpected message), then sends the request.
void WindowReader::request(int rank, const std::vector<Piece>& pieces, Round& round) {
  std::vector<MPI_Request>& requests = round.requests;
  round.ranks.push_back(rank);
  const std::string hint = str("reading ", pieces.size(), " pieces of loader rank ", rank, "'s window");
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  std::vector<ReadPiece> wanted;
  for (const Piece& p : pieces) {
    wanted.push_back({p.offset, checked_cast<uint32_t>(p.bytes)});
    lengths.push_back(checked_cast<int>(p.bytes));
    MPI_Aint address = 0;
    MSD_MPI(MPI_Get_address(p.out, &address), hint);
    addresses.push_back(address);
  }
  MPI_Datatype type = pieces_type(lengths, addresses, hint);
  requests.emplace_back(MPI_REQUEST_NULL);
  MSD_MPI(MPI_Irecv(MPI_BOTTOM, 1, type, rank, kTagReadReply, comm_, &requests.back()), hint);
  MSD_MPI(MPI_Type_free(&type), hint);
  round.sent.push_back(encode_fields(wanted));
  requests.emplace_back(MPI_REQUEST_NULL);
  MSD_MPI(MPI_Isend(round.sent.back().data(), checked_cast<int>(round.sent.back().size()), MPI_BYTE, rank, kTagRead, comm_,
                    &requests.back()),
          hint);
}

// Polls until every reply is in, within timeout_ms_ of the call. Over TCP
// each fragment of a reply needs this rank's progress as well as the
// loader's, so the first kSpin polls back to back (yielding the core), as
// MPI_Win_flush_all and MPI_Recv would; the reader is a trainer's rank
// waiting for its batch. Past that the loader is slow, and it polls every
// 100 us.
void WindowReader::wait_replies(Round& round) {
  std::vector<MPI_Request>& requests = round.requests;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    int done = 0;
    MSD_MPI(MPI_Testall(checked_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
            "waiting for the loaders' read replies");
    if (done) break;
    const auto waited = Clock::now() - start;
    if (timeout_ms_ > 0 && waited >= std::chrono::milliseconds(timeout_ms_)) {
      const auto late = std::find_if(requests.begin(), requests.end(), [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
      const int rank = round.ranks.at(static_cast<size_t>(late - requests.begin()) / 2);
      // The job ends on this error; the requests' bytes (round.sent) stay
      // with the reader until then.
      for (MPI_Request& r : requests)
        if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
      throw Error(str("loader rank ", rank, " did not answer this rank's window read within ", timeout_ms_,
                      " ms (job.stall_timeout_s): stuck or stopped"));
    }
    if (waited < kSpin) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

ReadServer::ReadServer(Window& window, MPI_Comm comm, Holds holds)
    : window_(window), comm_(comm), holds_(std::move(holds)) {}

ReadServer::~ReadServer() {
  if (replies_.empty() || unwinding()) return;
  // A client that stopped receiving would hold these forever: bounded, and
  // then left to MPI_Finalize or the job's abort.
  for (MPI_Request& r : replies_)
    if (r != MPI_REQUEST_NULL && !wait_for(r, 10000, "finishing read replies")) return;
}

// Over TCP a reply moves only while this rank drives MPI, fragment by
// fragment: a loader that sleeps between passes would hold every fragment
// for its interval. So once it answered, it sends until its replies are out
// (polling back to back, as MPI_Send would), for at most kSpin a pass; a
// client that stopped receiving leaves the rest to later passes.
bool ReadServer::serve() {
  bool did = false;
  while (auto message = try_receive(comm_, MPI_ANY_SOURCE, kTagRead, "waiting for window read requests")) {
    answer(*message);
    did = true;
  }
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!replies_.empty()) {
    did = finish() || did;
    if (replies_.empty() || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::yield();
  }
  return did;
}

// One reply: the pieces, in the request's order, copied back to back.
void ReadServer::answer(const Message& message) {
  std::vector<ReadPiece> wanted;
  decode_fields(message.bytes, "window read request", wanted);
  uint64_t total = 0;
  for (const auto& [offset, bytes] : wanted) {
    if (!holds_(offset, bytes))
      throw ProtocolError(str("client rank ", message.source, " asked loader rank ", world_rank(), " for ", bytes,
                              " bytes at window offset ", offset, ", which no live slot holds"));
    total += bytes;
  }
  uint8_t* const buffer = buffers_.emplace_back(std::make_unique_for_overwrite<uint8_t[]>(total)).get();
  const auto* window = static_cast<const uint8_t*>(window_.base());
  uint8_t* at = buffer;
  for (const auto& [offset, bytes] : wanted) at = std::copy_n(window + offset, bytes, at);
  replies_.emplace_back(MPI_REQUEST_NULL);
  MSD_MPI(MPI_Isend(buffer, checked_cast<int>(total), MPI_BYTE, message.source, kTagReadReply, comm_,
                    &replies_.back()),
          str("answering client rank ", message.source, "'s read of ", wanted.size(), " pieces"));
}

// Frees the replies MPI is done with.
bool ReadServer::finish() {
  int count = 0;
  done_.resize(replies_.size());
  MSD_MPI(MPI_Testsome(checked_cast<int>(replies_.size()), replies_.data(), &count, done_.data(), MPI_STATUSES_IGNORE),
          "completing read replies");
  if (count <= 0) return false;  // MPI_UNDEFINED: none active
  size_t kept = 0;
  for (size_t i = 0; i < replies_.size(); ++i) {
    if (replies_[i] == MPI_REQUEST_NULL) continue;
    replies_[kept] = replies_[i];
    buffers_[kept] = std::move(buffers_[i]);
    ++kept;
  }
  replies_.resize(kept);
  buffers_.resize(kept);
  return true;
}

}  // namespace msd
