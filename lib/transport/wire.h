// Control messages between planner, loaders and clients (docs/wire.md). Sample
// bytes never travel here: they go loader -> client through RMA windows
// (docs/window-slot.md). Encoding: little-endian fixed-width integers and
// doubles on every host (a big-endian host swaps), counts before arrays; every
// message starts with a version byte. Each message's fields are listed once,
// in wire order (wire_fields below each struct), and that one list serves
// encoding, decoding and the sizes both check.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"

namespace msd {

// 2: the plan's loss_tokens; 3: the hello's per-file samples and fingerprints
inline constexpr uint8_t kWireVersion = 3;

enum Tag : int {
  kTagHello = 1,    // loader -> planner: the sources it opened (or its error)
  kTagLoad = 2,     // planner -> loader: load these stream positions
  kTagMeta = 3,     // loader -> planner: what was loaded, where
  kTagRelease = 4,  // planner -> loader: these ranges of slots are free again
  kTagPlan = 5,     // planner -> client: the plan of one step
  kTagAck = 6,      // client -> planner: step built
  kTagStop = 7,     // planner -> loader: the job is over; loader -> planner: stopped (empty)
  kTagFault = 8,    // planner -> loader: injected fault (testing failover)
  kTagCheckpoint = 9,  // planner -> live loaders: write your part of this step's loader checkpoint (u64 step,
                       // u32 writers); loader -> planner: written (u64 step)
  kTagFinish = 11,     // planner -> live loaders and clients: ranks left out of the summary (ranks)
  kTagProfile = 13,    // loader -> planner: its sources' profiles (moving averages), at most once a second
                       // (ProfileMessage, lib/profile/message.h)
  kTagReassign = 14,   // planner -> loader: close these sources, open those; loader -> planner: what it opened (hello body)
  kTagArrived = 15,    // live loader or client -> planner (on the world): here for the end of the job (empty)
  kTagStopping = 16,   // client -> planner: the trainer finished early; the step it stops at (AckMessage)
  kTagIndexShared = 17,  // loader -> loader (on the loader communicator): its share of the index caches is built (empty)
  kTagRead = 20,       // client -> loader, network path: the window pieces of one step (lib/transport/reads.h)
  kTagReadReply = 21,  // loader -> client: those pieces' bytes, one message into the client's buffers
};

class WireWriter {
 public:
  WireWriter() { scalar(uint8_t{kWireVersion}); }
  // Writes into `into`, which the caller sized (1 + wire_bytes of what it
  // writes): a message placed straight where it is read (shared memory). A
  // write past its end is an Error.
  explicit WireWriter(std::span<uint8_t> into) : data_(into.data()), capacity_(into.size()), external_(true) {
    scalar(uint8_t{kWireVersion});
  }
  void u8(uint8_t v) { scalar(v); }
  void u32(uint32_t v) { scalar(v); }
  void u64(uint64_t v) { scalar(v); }
  void f64(double v) { scalar(v); }
  void string(const std::string& s);
  // One integer or double, little-endian.
  template <typename T>
  void scalar(T v) {
    std::memcpy(append(sizeof v), &v, sizeof v);
    if constexpr (std::endian::native == std::endian::big) std::reverse(data_ + at_ - sizeof v, data_ + at_);
  }
  // Room for `more` bytes beyond those written: a message of many items
  // grows once, not by doubling.
  void reserve(size_t more) {
    if (at_ + more > capacity_) grow(at_ + more);
  }
  // `n` bytes appended, for the caller to fill (a fixed-size record written
  // at once instead of field by field).
  uint8_t* append(size_t n) {
    if (at_ + n > capacity_) grow(std::max(2 * capacity_, at_ + n));
    at_ += n;
    return data_ + at_ - n;
  }
  WireWriter(const WireWriter&) = delete;  // data_ points into bytes_
  WireWriter& operator=(const WireWriter&) = delete;
  WireWriter(WireWriter&&) = default;  // a moved vector keeps its buffer
  WireWriter& operator=(WireWriter&&) = default;
  size_t size() const { return at_; }
  // The bytes written (the room reserved beyond them given back); not for a
  // writer into a caller's buffer.
  std::vector<uint8_t>& bytes() {
    bytes_.resize(at_);
    return bytes_;
  }

 private:
  void grow(size_t capacity);
  std::vector<uint8_t> bytes_;  // the bytes, unless written into a caller's buffer
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
  size_t at_ = 0;  // bytes written; capacity_ may be larger (room)
  bool external_ = false;
};

// Throws ProtocolError on a short or malformed message.
class WireReader {
 public:
  WireReader(std::span<const uint8_t> bytes, const char* what);
  uint8_t u8() { return scalar<uint8_t>(); }
  uint32_t u32() { return scalar<uint32_t>(); }
  uint64_t u64() { return scalar<uint64_t>(); }
  double f64() { return scalar<double>(); }
  std::string string();
  template <typename T>
  T scalar() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    if constexpr (std::endian::native == std::endian::big) {
      auto* p = reinterpret_cast<uint8_t*>(&v);
      std::reverse(p, p + sizeof v);
    }
    return v;
  }
  // The next `n` bytes, checked once (a fixed-size record read at once).
  const uint8_t* take(size_t n) {
    need(n);
    pos_ += n;
    return bytes_.data() + pos_ - n;
  }
  // Reads a count and checks that at least count * min_item_bytes remain.
  uint32_t count(size_t min_item_bytes);
  void finish() const;  // throws unless every byte was read

 private:
  void need(size_t n) const;
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  const char* what_;
};

// --- one field list for encoding and decoding -----------------------------------
//
// A message struct M comes with `auto wire_fields(M& m)`, the std::tie of its
// fields in wire order. A field is an integer or double (little-endian, its
// own width), a std::string (u32 length, bytes), a std::vector (u32 count,
// items), a std::pair, or another struct with wire_fields. write_wire and
// read_wire walk that list, and wire_bytes sizes it; a struct whose fields
// all have a fixed width is written and read as one record, its size checked
// once, and a vector of integers or doubles as one block. The list serves
// more than messages: TP sharing copies a Batch by its list
// (construct/tp_share.h).
namespace wire {

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
struct is_pair : std::false_type {};
template <typename A, typename B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <typename T>
using Fields = decltype(wire_fields(std::declval<T&>()));

// Bytes of T when all its fields have a fixed width; 0 otherwise.
template <typename T>
constexpr size_t fixed_bytes() {
  if constexpr (std::is_arithmetic_v<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string> || is_vector<T>::value || is_pair<T>::value) {
    return 0;
  } else {
    return []<typename... F>(std::tuple<F&...>*) {
      const size_t sizes[] = {fixed_bytes<std::remove_const_t<F>>()...};
      size_t sum = 0;
      for (size_t size : sizes) {
        if (size == 0) return size_t{0};
        sum += size;
      }
      return sum;
    }(static_cast<Fields<T>*>(nullptr));
  }
}

// The fewest bytes a T takes (a string or vector at least its count).
template <typename T>
constexpr size_t min_bytes() {
  if constexpr (std::is_arithmetic_v<T>) return sizeof(T);
  else if constexpr (std::is_same_v<T, std::string> || is_vector<T>::value) return 4;
  else if constexpr (is_pair<T>::value)
    return min_bytes<typename T::first_type>() + min_bytes<typename T::second_type>();
  else
    return []<typename... F>(std::tuple<F&...>*) {
      return (size_t{0} + ... + min_bytes<std::remove_const_t<F>>());
    }(static_cast<Fields<T>*>(nullptr));
}

// A vector whose items are copied as one block: integers or doubles (not
// bool) on a little-endian host, where memory order is wire order.
template <typename T>
constexpr bool bulk_items() {
  return std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && std::endian::native == std::endian::little;
}

template <typename T>
void store(uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  if constexpr (std::endian::native == std::endian::big) std::reverse(p, p + sizeof v);
  p += sizeof v;
}

template <typename T>
void load(const uint8_t*& p, T& v) {
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    auto* b = reinterpret_cast<uint8_t*>(&v);
    std::reverse(b, b + sizeof v);
  }
  p += sizeof v;
}

}  // namespace wire

template <typename T>
void write_wire(WireWriter& w, const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    w.scalar(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    w.string(v);
  } else if constexpr (wire::is_vector<T>::value) {
    using Item = typename T::value_type;
    w.u32(checked_cast<uint32_t>(v.size()));
    if constexpr (wire::bulk_items<Item>()) {
      if (!v.empty()) std::memcpy(w.append(v.size() * sizeof(Item)), v.data(), v.size() * sizeof(Item));
    } else {
      if constexpr (constexpr size_t n = wire::fixed_bytes<Item>(); n > 0) w.reserve(n * v.size());
      for (const auto& item : v) write_wire(w, item);
    }
  } else if constexpr (wire::is_pair<T>::value) {
    write_wire(w, v.first);
    write_wire(w, v.second);
  } else if constexpr (constexpr size_t n = wire::fixed_bytes<T>(); n > 0) {
    uint8_t* p = w.append(n);
    std::apply([&](const auto&... field) { (wire::store(p, field), ...); }, wire_fields(const_cast<T&>(v)));
  } else {  // the writer only reads the fields
    std::apply([&](const auto&... field) { (write_wire(w, field), ...); }, wire_fields(const_cast<T&>(v)));
  }
}

template <typename T>
void read_wire(WireReader& r, T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    v = r.scalar<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = r.string();
  } else if constexpr (wire::is_vector<T>::value) {
    using Item = typename T::value_type;
    v.resize(r.count(wire::min_bytes<Item>()));
    if constexpr (wire::bulk_items<Item>()) {
      if (!v.empty()) std::memcpy(v.data(), r.take(v.size() * sizeof(Item)), v.size() * sizeof(Item));
    } else {
      for (auto& item : v) read_wire(r, item);
    }
  } else if constexpr (wire::is_pair<T>::value) {
    read_wire(r, v.first);
    read_wire(r, v.second);
  } else if constexpr (constexpr size_t n = wire::fixed_bytes<T>(); n > 0) {
    const uint8_t* p = r.take(n);
    std::apply([&](auto&... field) { (wire::load(p, field), ...); }, wire_fields(v));
  } else {
    std::apply([&](auto&... field) { (read_wire(r, field), ...); }, wire_fields(v));
  }
}

// The bytes write_wire writes for `v`.
template <typename T>
size_t wire_bytes(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return 4 + v.size();
  } else if constexpr (wire::is_vector<T>::value) {
    if constexpr (constexpr size_t n = wire::fixed_bytes<typename T::value_type>(); n > 0) {
      return 4 + n * v.size();
    } else {
      size_t sum = 4;
      for (const auto& item : v) sum += wire_bytes(item);
      return sum;
    }
  } else if constexpr (wire::is_pair<T>::value) {
    return wire_bytes(v.first) + wire_bytes(v.second);
  } else if constexpr (constexpr size_t n = wire::fixed_bytes<T>(); n > 0) {
    return n;
  } else {
    return std::apply([](const auto&... field) { return (size_t{0} + ... + wire_bytes(field)); },
                      wire_fields(const_cast<T&>(v)));
  }
}

// A whole message: the version byte, then `fields...` in order.
template <typename... T>
std::vector<uint8_t> encode_fields(const T&... fields) {
  WireWriter w;
  (write_wire(w, fields), ...);
  return std::move(w.bytes());
}

// Reads `fields...` in order from a whole message; every byte must be read.
template <typename... T>
void decode_fields(std::span<const uint8_t> bytes, const char* what, T&... fields) {
  WireReader r(bytes, what);
  (read_wire(r, fields), ...);
  r.finish();
}

// --- messages -----------------------------------------------------------------
// Each struct's wire_fields is its layout on the wire (docs/wire.md).

// A file a loader opened for a source: its path and size.
struct SourceFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t samples = 0;  // the reader's samples of the file
  bool operator==(const SourceFile&) const = default;
};
inline auto wire_fields(SourceFile& m) { return std::tie(m.path, m.bytes, m.samples); }

// A data file's fingerprint (source/fingerprint.h), taken by the loader whose
// share of the source's files holds it (docs/scaling.md, "Start-up").
struct FileDigest {
  uint32_t file = 0;  // index in SourceInfo::files
  std::string path;   // the file's (for an indexed source: its .idx, or its .bin)
  uint64_t bytes = 0;
  uint64_t digest = 0;
  bool operator==(const FileDigest&) const = default;
};
inline auto wire_fields(FileDigest& m) { return std::tie(m.file, m.path, m.bytes, m.digest); }

struct SourceInfo {
  uint32_t source = 0;
  uint64_t samples = 0;
  uint64_t state_bytes = 0;
  std::vector<SourceFile> files;  // in the reader's order; every loader of the source must see the same
  // This loader's share of the files' fingerprints (with checkpoint.dir or
  // checkpoint.trace; else empty), in file order.
  std::vector<FileDigest> fingerprints;
};
inline auto wire_fields(SourceInfo& m) { return std::tie(m.source, m.samples, m.state_bytes, m.files, m.fingerprints); }

struct HelloMessage {
  std::string error;  // non-empty: this loader could not open its sources
  std::vector<SourceInfo> sources;
};
inline auto wire_fields(HelloMessage& m) { return std::tie(m.error, m.sources); }

struct LoadItem {
  uint32_t source = 0;
  uint64_t cursor = 0;  // position in the source's sample stream
  uint64_t index = 0;   // file-order index (the permutation's image of cursor)
};
inline auto wire_fields(LoadItem& m) { return std::tie(m.source, m.cursor, m.index); }

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
inline auto wire_fields(SampleMeta& m) {
  return std::tie(m.source, m.cursor, m.index, m.bad, m.loader_rank, m.slot_offset, m.slot_bytes, m.text_tokens,
                  m.patches, m.patch_bytes);
}
// A SampleMeta is one record of this many bytes (PlanEncoder reserves by it).
inline constexpr size_t kSampleMetaBytes = wire::fixed_bytes<SampleMeta>();
static_assert(kSampleMetaBytes == 49, "docs/wire.md gives SampleMeta as 49 bytes");

struct PiecePlan {
  uint32_t sample = 0;  // index into StepPlan::samples
  uint32_t begin = 0;   // first position of the document in this piece
  uint32_t length = 0;
};
inline auto wire_fields(PiecePlan& m) { return std::tie(m.sample, m.begin, m.length); }

struct SequencePlan {
  std::vector<PiecePlan> pieces;
};
inline auto wire_fields(SequencePlan& m) { return std::tie(m.pieces); }

struct MicroBatchWire {
  std::vector<SequencePlan> sequences;
};
inline auto wire_fields(MicroBatchWire& m) { return std::tie(m.sequences); }

// One data group's plan for one step: the samples it uses and their packing.
struct StepPlan {
  uint64_t step = 0;
  uint32_t seq_len = 0;
  // The step's labelled positions over every data group (Batch::
  // global_loss_tokens); 0: not known (plans the colocated client makes).
  uint64_t loss_tokens = 0;
  std::vector<SampleMeta> samples;
  std::vector<MicroBatchWire> micro_batches;
};
inline auto wire_fields(StepPlan& m) { return std::tie(m.step, m.seq_len, m.loss_tokens, m.samples, m.micro_batches); }

struct AckMessage {
  uint64_t step = 0;
  double wait_seconds = 0.0;  // how long the client waited for this step's data
  uint64_t rss_bytes = 0;     // the client's resident set size (0 without output.metrics)
};
inline auto wire_fields(AckMessage& m) { return std::tie(m.step, m.wait_seconds, m.rss_bytes); }

// A loader's figures for per-step metrics, on every metadata message: its
// resident set size, and seconds spent reading and transforming samples out
// of seconds since it started serving (0 without output.metrics).
struct LoaderStatus {
  uint64_t rss_bytes = 0;
  double busy_seconds = 0.0;
  double wall_seconds = 0.0;
};
inline auto wire_fields(LoaderStatus& m) { return std::tie(m.rss_bytes, m.busy_seconds, m.wall_seconds); }

// [offset, offset + bytes) of a loader's window: one slot, or several
// adjacent ones (each `bytes` as SlotAllocator placed it, 64-byte units).
struct SlotRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool operator==(const SlotRange&) const = default;
};
inline auto wire_fields(SlotRange& m) { return std::tie(m.offset, m.bytes); }

struct FaultMessage {
  std::string kind;  // hang | stall | fail
  uint64_t stall_ms = 0;
};
inline auto wire_fields(FaultMessage& m) { return std::tie(m.kind, m.stall_ms); }

// A step and a list of world ranks (kTagFinish).
struct RanksMessage {
  uint64_t step = 0;
  std::vector<int32_t> ranks;
};
inline auto wire_fields(RanksMessage& m) { return std::tie(m.step, m.ranks); }

// A loader moved between sources (topology.scaling = online): it closes the
// sources in `close` (their index and buffers are freed) and opens those in
// `open`. The planner sends it only once the loader has answered every
// request for a source it closes.
struct ReassignMessage {
  std::vector<uint32_t> close, open;
};
inline auto wire_fields(ReassignMessage& m) { return std::tie(m.close, m.open); }

// The messages by name. Decoding throws ProtocolError naming the message on
// a short, long or malformed one.
std::vector<uint8_t> encode(const HelloMessage& m);
std::vector<uint8_t> encode_load(const std::vector<LoadItem>& items);
std::vector<uint8_t> encode_meta(const std::vector<SampleMeta>& items, const LoaderStatus& status = {});
std::vector<uint8_t> encode_release(const std::vector<SlotRange>& ranges);
std::vector<uint8_t> encode(const StepPlan& m);
std::vector<uint8_t> encode(const AckMessage& m);
std::vector<uint8_t> encode(const FaultMessage& m);
std::vector<uint8_t> encode(const RanksMessage& m);
std::vector<uint8_t> encode(const ReassignMessage& m);

HelloMessage decode_hello(std::span<const uint8_t> bytes);
std::vector<LoadItem> decode_load(std::span<const uint8_t> bytes);
std::vector<SampleMeta> decode_meta(std::span<const uint8_t> bytes, LoaderStatus* status = nullptr);
std::vector<SlotRange> decode_release(std::span<const uint8_t> bytes);
StepPlan decode_plan(std::span<const uint8_t> bytes);  // also checks that every piece names one of its samples
AckMessage decode_ack(std::span<const uint8_t> bytes);
FaultMessage decode_fault(std::span<const uint8_t> bytes);
RanksMessage decode_ranks(std::span<const uint8_t> bytes);
ReassignMessage decode_reassign(std::span<const uint8_t> bytes);

}  // namespace msd
