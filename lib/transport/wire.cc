#include "transport/wire.h"

#include <algorithm>

namespace msd {

void WireWriter::string(const std::string& s) {
  u32(checked_cast<uint32_t>(s.size()));
  write(s.data(), s.size());
}

WireReader::WireReader(std::span<const uint8_t> bytes, const char* what) : bytes_(bytes), what_(what) {
  uint8_t version = u8();
  if (version != kWireVersion)
    throw ProtocolError(str(what_, " message has wire version ", +version, ", expected ", +kWireVersion));
}

void WireReader::need(size_t n) const {
  if (pos_ + n > bytes_.size())
    throw ProtocolError(str(what_, " message truncated: needs ", n, " more bytes at offset ", pos_, " of ",
                            bytes_.size()));
}

std::string WireReader::string() {
  uint32_t n = count(1);
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
  pos_ += n;
  return s;
}

uint32_t WireReader::count(size_t min_item_bytes) {
  uint32_t n = u32();
  need(n * min_item_bytes);
  return n;
}

void WireReader::finish() const {
  if (pos_ != bytes_.size())
    throw ProtocolError(str(what_, " message has ", bytes_.size() - pos_, " trailing bytes"));
}

std::vector<uint8_t> encode(const HelloMessage& m) {
  WireWriter w;
  w.string(m.error);
  w.u32(checked_cast<uint32_t>(m.sources.size()));
  for (const auto& s : m.sources) {
    w.u32(s.source);
    w.u64(s.samples);
    w.u64(s.state_bytes);
    w.u32(checked_cast<uint32_t>(s.files.size()));
    for (const auto& f : s.files) {
      w.string(f.path);
      w.u64(f.bytes);
    }
  }
  return std::move(w.bytes());
}

HelloMessage decode_hello(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "hello");
  HelloMessage m;
  m.error = r.string();
  m.sources.resize(r.count(24));
  for (auto& s : m.sources) {
    s.source = r.u32();
    s.samples = r.u64();
    s.state_bytes = r.u64();
    s.files.resize(r.count(12));
    for (auto& f : s.files) {
      f.path = r.string();
      f.bytes = r.u64();
    }
  }
  r.finish();
  return m;
}

std::vector<uint8_t> encode_load(const std::vector<LoadItem>& items) {
  WireWriter w;
  w.reserve(4 + items.size() * (4 + 8 + 8));
  w.u32(checked_cast<uint32_t>(items.size()));
  for (const auto& item : items) {
    w.u32(item.source);
    w.u64(item.cursor);
    w.u64(item.index);
  }
  return std::move(w.bytes());
}

std::vector<LoadItem> decode_load(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "load");
  std::vector<LoadItem> items(r.count(20));
  for (auto& item : items) {
    item.source = r.u32();
    item.cursor = r.u64();
    item.index = r.u64();
  }
  r.finish();
  return items;
}

namespace {
constexpr size_t kMetaBytes = kSampleMetaBytes;

// Little-endian fields of a fixed-size record, at `p`, which they advance.
template <typename T>
void store(uint8_t*& p, T v) {
  if constexpr (std::endian::native == std::endian::big) {
    auto* b = reinterpret_cast<uint8_t*>(&v);
    std::reverse(b, b + sizeof v);
  }
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}
template <typename T>
T load(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    auto* b = reinterpret_cast<uint8_t*>(&v);
    std::reverse(b, b + sizeof v);
  }
  p += sizeof v;
  return v;
}

}  // namespace

// A SampleMeta is a record of kMetaBytes, written and read whole: the
// planner decodes every loaded sample's and encodes it again into a plan.
void put_sample_meta(WireWriter& w, const SampleMeta& m) {
  uint8_t* p = w.append(kMetaBytes);
  store(p, m.source);
  store(p, m.cursor);
  store(p, m.index);
  store(p, m.bad);
  store(p, static_cast<uint32_t>(m.loader_rank));
  store(p, m.slot_offset);
  store(p, m.slot_bytes);
  store(p, m.text_tokens);
  store(p, m.patches);
  store(p, m.patch_bytes);
}

void put_piece(WireWriter& w, const PiecePlan& piece) {
  uint8_t* p = w.append(12);
  store(p, piece.sample);
  store(p, piece.begin);
  store(p, piece.length);
}

namespace {
SampleMeta get_meta(WireReader& r) {
  const uint8_t* p = r.take(kMetaBytes);
  SampleMeta m;
  m.source = load<uint32_t>(p);
  m.cursor = load<uint64_t>(p);
  m.index = load<uint64_t>(p);
  m.bad = load<uint8_t>(p);
  m.loader_rank = static_cast<int32_t>(load<uint32_t>(p));
  m.slot_offset = load<uint64_t>(p);
  m.slot_bytes = load<uint32_t>(p);
  m.text_tokens = load<uint32_t>(p);
  m.patches = load<uint32_t>(p);
  m.patch_bytes = load<uint32_t>(p);
  return m;
}
}  // namespace

std::vector<uint8_t> encode_meta(const std::vector<SampleMeta>& items, const LoaderStatus& status) {
  WireWriter w;
  w.reserve(8 + 8 + 8 + 4 + items.size() * kMetaBytes);
  w.u64(status.rss_bytes);
  w.f64(status.busy_seconds);
  w.f64(status.wall_seconds);
  w.u32(checked_cast<uint32_t>(items.size()));
  for (const auto& m : items) put_sample_meta(w, m);
  return std::move(w.bytes());
}

std::vector<SampleMeta> decode_meta(std::span<const uint8_t> bytes, LoaderStatus* status) {
  WireReader r(bytes, "sample metadata");
  LoaderStatus read;
  read.rss_bytes = r.u64();
  read.busy_seconds = r.f64();
  read.wall_seconds = r.f64();
  if (status) *status = read;
  std::vector<SampleMeta> items(r.count(kMetaBytes));
  for (auto& m : items) m = get_meta(r);
  r.finish();
  return items;
}

std::vector<uint8_t> encode_release(const std::vector<SlotRange>& ranges) {
  WireWriter w;
  w.reserve(4 + ranges.size() * 16);
  w.u32(checked_cast<uint32_t>(ranges.size()));
  for (const SlotRange& range : ranges) {
    w.u64(range.offset);
    w.u64(range.bytes);
  }
  return std::move(w.bytes());
}

std::vector<SlotRange> decode_release(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "release");
  std::vector<SlotRange> ranges(r.count(16));
  for (auto& range : ranges) {
    range.offset = r.u64();
    range.bytes = r.u64();
  }
  r.finish();
  return ranges;
}

std::vector<uint8_t> encode(const StepPlan& m) {
  WireWriter w;
  size_t bytes = 8 + 4 + 4 + m.samples.size() * kMetaBytes + 4;
  for (const auto& mb : m.micro_batches) {
    bytes += 4;
    for (const auto& seq : mb.sequences) bytes += 4 + seq.pieces.size() * 12;
  }
  w.reserve(bytes);
  w.u64(m.step);
  w.u32(m.seq_len);
  w.u32(checked_cast<uint32_t>(m.samples.size()));
  for (const auto& s : m.samples) put_sample_meta(w, s);
  w.u32(checked_cast<uint32_t>(m.micro_batches.size()));
  for (const auto& mb : m.micro_batches) {
    w.u32(checked_cast<uint32_t>(mb.sequences.size()));
    for (const auto& seq : mb.sequences) {
      w.u32(checked_cast<uint32_t>(seq.pieces.size()));
      for (const auto& piece : seq.pieces) put_piece(w, piece);
    }
  }
  return std::move(w.bytes());
}

StepPlan decode_plan(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "step plan");
  StepPlan m;
  m.step = r.u64();
  m.seq_len = r.u32();
  m.samples.resize(r.count(kMetaBytes));
  for (auto& s : m.samples) s = get_meta(r);
  m.micro_batches.resize(r.count(4));
  for (auto& mb : m.micro_batches) {
    mb.sequences.resize(r.count(4));
    for (auto& seq : mb.sequences) {
      seq.pieces.resize(r.count(12));
      for (auto& p : seq.pieces) {
        p.sample = r.u32();
        p.begin = r.u32();
        p.length = r.u32();
        if (p.sample >= m.samples.size())
          throw ProtocolError(str("step plan ", m.step, " names sample ", p.sample, " of ", m.samples.size()));
      }
    }
  }
  r.finish();
  return m;
}

std::vector<uint8_t> encode(const AckMessage& m) {
  WireWriter w;
  w.u64(m.step);
  w.f64(m.wait_seconds);
  w.u64(m.rss_bytes);
  return std::move(w.bytes());
}

AckMessage decode_ack(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "ack");
  AckMessage m;
  m.step = r.u64();
  m.wait_seconds = r.f64();
  m.rss_bytes = r.u64();
  r.finish();
  return m;
}

std::vector<uint8_t> encode(const FaultMessage& m) {
  WireWriter w;
  w.string(m.kind);
  w.u64(m.stall_ms);
  return std::move(w.bytes());
}

FaultMessage decode_fault(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "fault");
  FaultMessage m;
  m.kind = r.string();
  m.stall_ms = r.u64();
  r.finish();
  return m;
}

std::vector<uint8_t> encode(const ProfileMessage& m) {
  WireWriter w;
  w.u32(checked_cast<uint32_t>(m.sources.size()));
  for (const auto& [source, p] : m.sources) {
    w.u32(source);
    w.f64(p.read_seconds_per_sample);
    w.f64(p.transform_seconds_per_sample);
    w.f64(p.bytes_per_sample);
    w.f64(p.open_bytes);
    w.u64(p.samples_measured);
    w.f64(p.positions_per_sample);
    w.f64(p.shared_bytes);
    w.f64(p.patches_per_sample);
  }
  return std::move(w.bytes());
}

ProfileMessage decode_profile(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "profile");
  ProfileMessage m;
  const uint32_t n = r.count(68);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t source = r.u32();
    SourceProfile p;
    p.read_seconds_per_sample = r.f64();
    p.transform_seconds_per_sample = r.f64();
    p.bytes_per_sample = r.f64();
    p.open_bytes = r.f64();
    p.samples_measured = r.u64();
    p.positions_per_sample = r.f64();
    p.shared_bytes = r.f64();
    p.patches_per_sample = r.f64();
    m.sources.emplace_back(source, p);
  }
  r.finish();
  return m;
}

std::vector<uint8_t> encode(const RanksMessage& m) {
  WireWriter w;
  w.u64(m.step);
  w.u32(checked_cast<uint32_t>(m.ranks.size()));
  for (int rank : m.ranks) w.u32(checked_cast<uint32_t>(rank));
  return std::move(w.bytes());
}

std::vector<uint8_t> encode(const ReassignMessage& m) {
  WireWriter w;
  for (const auto* list : {&m.close, &m.open}) {
    w.u32(checked_cast<uint32_t>(list->size()));
    for (uint32_t s : *list) w.u32(s);
  }
  return std::move(w.bytes());
}

ReassignMessage decode_reassign(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "reassign");
  ReassignMessage m;
  for (auto* list : {&m.close, &m.open}) {
    const uint32_t count = r.count(4);
    for (uint32_t i = 0; i < count; ++i) list->push_back(r.u32());
  }
  r.finish();
  return m;
}

RanksMessage decode_ranks(std::span<const uint8_t> bytes) {
  WireReader r(bytes, "ranks");
  RanksMessage m;
  m.step = r.u64();
  const uint32_t count = r.u32();
  for (uint32_t i = 0; i < count; ++i) m.ranks.push_back(checked_cast<int>(r.u32()));
  r.finish();
  return m;
}

}  // namespace msd
