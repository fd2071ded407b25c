#include "transport/wire.h"

#include <cstring>

namespace msd {

void WireWriter::grow(size_t capacity) {
  if (external_) throw Error(str("a wire message needs ", capacity, " bytes in a buffer of ", capacity_));
  bytes_.resize(capacity);
  data_ = bytes_.data();
  capacity_ = capacity;
}

void WireWriter::string(const std::string& s) {
  u32(checked_cast<uint32_t>(s.size()));
  if (!s.empty()) std::memcpy(append(s.size()), s.data(), s.size());
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

namespace {

template <typename M>
M decode_one(std::span<const uint8_t> bytes, const char* what) {
  M m;
  decode_fields(bytes, what, m);
  return m;
}

}  // namespace

std::vector<uint8_t> encode(const HelloMessage& m) { return encode_fields(m); }
std::vector<uint8_t> encode_load(const std::vector<LoadItem>& items) { return encode_fields(items); }
std::vector<uint8_t> encode_meta(const std::vector<SampleMeta>& items, const LoaderStatus& status) {
  return encode_fields(status, items);
}
std::vector<uint8_t> encode_release(const std::vector<SlotRange>& ranges) { return encode_fields(ranges); }
std::vector<uint8_t> encode(const StepPlan& m) { return encode_fields(m); }
std::vector<uint8_t> encode(const AckMessage& m) { return encode_fields(m); }
std::vector<uint8_t> encode(const FaultMessage& m) { return encode_fields(m); }
std::vector<uint8_t> encode(const RanksMessage& m) { return encode_fields(m); }
std::vector<uint8_t> encode(const ReassignMessage& m) { return encode_fields(m); }

HelloMessage decode_hello(std::span<const uint8_t> bytes) { return decode_one<HelloMessage>(bytes, "hello"); }
std::vector<LoadItem> decode_load(std::span<const uint8_t> bytes) {
  return decode_one<std::vector<LoadItem>>(bytes, "load");
}

std::vector<SampleMeta> decode_meta(std::span<const uint8_t> bytes, LoaderStatus* status) {
  LoaderStatus read;
  std::vector<SampleMeta> items;
  decode_fields(bytes, "sample metadata", read, items);
  if (status) *status = read;
  return items;
}

std::vector<SlotRange> decode_release(std::span<const uint8_t> bytes) {
  return decode_one<std::vector<SlotRange>>(bytes, "release");
}

StepPlan decode_plan(std::span<const uint8_t> bytes) {
  StepPlan m = decode_one<StepPlan>(bytes, "step plan");
  for (const MicroBatchWire& mb : m.micro_batches)
    for (const SequencePlan& sequence : mb.sequences)
      for (const PiecePlan& p : sequence.pieces)
        if (p.sample >= m.samples.size())
          throw ProtocolError(str("step plan ", m.step, " names sample ", p.sample, " of ", m.samples.size()));
  return m;
}

AckMessage decode_ack(std::span<const uint8_t> bytes) { return decode_one<AckMessage>(bytes, "ack"); }
FaultMessage decode_fault(std::span<const uint8_t> bytes) { return decode_one<FaultMessage>(bytes, "fault"); }
RanksMessage decode_ranks(std::span<const uint8_t> bytes) { return decode_one<RanksMessage>(bytes, "ranks"); }
ReassignMessage decode_reassign(std::span<const uint8_t> bytes) {
  return decode_one<ReassignMessage>(bytes, "reassign");
}

}  // namespace msd
