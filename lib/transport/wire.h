// Control messages between planner, loaders and clients (docs/wire.md). Sample
// bytes never travel here: they go loader -> client through RMA windows
// (docs/window-slot.md). Encoding: little-endian fixed-width integers and
// doubles on every host (a big-endian host swaps), counts before arrays; every
// message starts with a version byte.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "plan/profile.h"

namespace msd {

inline constexpr uint8_t kWireVersion = 1;

enum Tag : int {
  kTagHello = 1,    // loader -> planner: the sources it opened (or its error)
  kTagLoad = 2,     // planner -> loader: load these stream positions
  kTagMeta = 3,     // loader -> planner: what was loaded, where
  kTagRelease = 4,  // planner -> loader: these slots are free again
  kTagPlan = 5,     // planner -> client: the plan of one step
  kTagAck = 6,      // client -> planner: step built
  kTagStop = 7,     // planner -> loader: the job is over; loader -> planner: stopped (empty)
  kTagFault = 8,    // planner -> loader: injected fault (testing failover)
  kTagCheckpoint = 9,  // planner -> live loaders: write your part of this step's loader checkpoint (u64 step,
                       // u32 writers); loader -> planner: written (u64 step)
  kTagFinish = 11,     // planner -> live loaders and clients: ranks left out of the summary (ranks)
  kTagProfile = 13,    // loader -> planner: its sources' profiles (moving averages), at most once a second
  kTagReassign = 14,   // planner -> loader: close these sources, open those; loader -> planner: what it opened (hello body)
  kTagArrived = 15,    // live loader or client -> planner (on the world): here for the end of the job (empty)
  kTagRead = 20,       // client -> loader, network path: the window pieces of one step (lib/transport/reads.h)
  kTagReadReply = 21,  // loader -> client: those pieces' bytes, one message into the client's buffers
};

class WireWriter {
 public:
  WireWriter() { u8(kWireVersion); }
  void u8(uint8_t v) { put(v); }
  void u16(uint16_t v) { put(v); }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void f64(double v) { put(v); }
  void string(const std::string& s);
  // Room for `more` bytes beyond those written: a message of many items
  // grows once, not by doubling.
  void reserve(size_t more) {
    if (at_ + more > bytes_.size()) bytes_.resize(at_ + more);
  }
  // The bytes written (the room reserved beyond them given back).
  std::vector<uint8_t>& bytes() {
    bytes_.resize(at_);
    return bytes_;
  }

 private:
  // Writes into room made ahead (bytes_ is sized past at_): a field costs a
  // copy, not a vector insert.
  void write(const void* p, size_t n) {
    if (at_ + n > bytes_.size()) bytes_.resize(std::max(2 * bytes_.size(), at_ + n));
    std::memcpy(bytes_.data() + at_, p, n);
    at_ += n;
  }
  template <typename T>
  void put(T v) {
    if constexpr (std::endian::native == std::endian::big) {
      auto* p = reinterpret_cast<uint8_t*>(&v);
      std::reverse(p, p + sizeof v);
    }
    write(&v, sizeof v);
  }
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;  // bytes written; bytes_ may be larger (room)
};

// Throws ProtocolError on a short or malformed message.
class WireReader {
 public:
  WireReader(std::span<const uint8_t> bytes, const char* what);
  uint8_t u8() { return get<uint8_t>(); }
  uint16_t u16() { return get<uint16_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  double f64() { return get<double>(); }
  std::string string();
  // Reads a count and checks that at least count * min_item_bytes remain.
  uint32_t count(size_t min_item_bytes);
  void finish() const;  // throws unless every byte was read

 private:
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    auto* p = reinterpret_cast<uint8_t*>(&v);
    std::copy(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_),
              bytes_.begin() + static_cast<std::ptrdiff_t>(pos_ + sizeof(T)), p);
    if constexpr (std::endian::native == std::endian::big) std::reverse(p, p + sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(size_t n) const;
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  const char* what_;
};

// --- messages -----------------------------------------------------------------

// A file a loader opened for a source: its path and size.
struct SourceFile {
  std::string path;
  uint64_t bytes = 0;
  bool operator==(const SourceFile&) const = default;
};

struct SourceInfo {
  uint32_t source = 0;
  uint64_t samples = 0;
  uint64_t state_bytes = 0;
  std::vector<SourceFile> files;  // in the reader's order; every loader of the source must see the same
};

struct HelloMessage {
  std::string error;  // non-empty: this loader could not open its sources
  std::vector<SourceInfo> sources;
};

struct LoadItem {
  uint32_t source = 0;
  uint64_t cursor = 0;  // position in the source's sample stream
  uint64_t index = 0;   // file-order index (the permutation's image of cursor)
};

// Where a loaded sample sits in a loader's window and how big it is.
struct SampleMeta {
  uint32_t source = 0;
  uint64_t cursor = 0;
  uint64_t index = 0;
  uint8_t bad = 0;           // BadKind; 0 = loaded
  int32_t loader_rank = -1;  // world rank of the loader holding it
  uint64_t slot_offset = 0;  // byte offset of the slot in that window
  uint32_t slot_bytes = 0;
  uint32_t text_tokens = 0;
  uint32_t patches = 0;
  uint32_t patch_bytes = 0;  // bytes per patch (patch*patch*3)

  uint32_t positions() const { return patches + text_tokens; }
};

struct PiecePlan {
  uint32_t sample = 0;  // index into StepPlan::samples
  uint32_t begin = 0;   // first position of the document in this piece
  uint32_t length = 0;
};

struct SequencePlan {
  std::vector<PiecePlan> pieces;
};

struct MicroBatchWire {
  std::vector<SequencePlan> sequences;
};

// One data group's plan for one step: the samples it uses and their packing.
struct StepPlan {
  uint64_t step = 0;
  uint32_t seq_len = 0;
  std::vector<SampleMeta> samples;
  std::vector<MicroBatchWire> micro_batches;
};

struct AckMessage {
  uint64_t step = 0;
  double wait_seconds = 0.0;  // how long the client waited for this step's data
  uint64_t rss_bytes = 0;     // the client's resident set size (0 without output.metrics)
};

// A loader's figures for per-step metrics, on every metadata message: its
// resident set size, and seconds spent reading and transforming samples out
// of seconds since it started serving (0 without output.metrics).
struct LoaderStatus {
  uint64_t rss_bytes = 0;
  double busy_seconds = 0.0;
  double wall_seconds = 0.0;
};

std::vector<uint8_t> encode(const HelloMessage& m);
std::vector<uint8_t> encode_load(const std::vector<LoadItem>& items);
std::vector<uint8_t> encode_meta(const std::vector<SampleMeta>& items, const LoaderStatus& status = {});
std::vector<uint8_t> encode_release(const std::vector<uint64_t>& slot_offsets);
std::vector<uint8_t> encode(const StepPlan& m);
std::vector<uint8_t> encode(const AckMessage& m);

struct FaultMessage {
  std::string kind;  // hang | stall | fail
  uint64_t stall_ms = 0;
};
std::vector<uint8_t> encode(const FaultMessage& m);

// A step and a list of world ranks (kTagFinish).
struct RanksMessage {
  uint64_t step = 0;
  std::vector<int> ranks;
};
std::vector<uint8_t> encode(const RanksMessage& m);
RanksMessage decode_ranks(std::span<const uint8_t> bytes);

// A loader moved between sources (topology.scaling = online): it closes the
// sources in `close` (their index and buffers are freed) and opens those in
// `open`. The planner sends it only once the loader has answered every
// request for a source it closes.
struct ReassignMessage {
  std::vector<uint32_t> close, open;
};
std::vector<uint8_t> encode(const ReassignMessage& m);
ReassignMessage decode_reassign(std::span<const uint8_t> bytes);
FaultMessage decode_fault(std::span<const uint8_t> bytes);

// A loader's profile of each source it serves (kTagProfile).
struct ProfileMessage {
  std::vector<std::pair<uint32_t, SourceProfile>> sources;  // (source id, profile)
};
std::vector<uint8_t> encode(const ProfileMessage& m);
ProfileMessage decode_profile(std::span<const uint8_t> bytes);

HelloMessage decode_hello(std::span<const uint8_t> bytes);
std::vector<LoadItem> decode_load(std::span<const uint8_t> bytes);
std::vector<SampleMeta> decode_meta(std::span<const uint8_t> bytes, LoaderStatus* status = nullptr);
std::vector<uint64_t> decode_release(std::span<const uint8_t> bytes);
StepPlan decode_plan(std::span<const uint8_t> bytes);
AckMessage decode_ack(std::span<const uint8_t> bytes);

}  // namespace msd
