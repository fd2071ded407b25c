#include "planner/plan_encoder.h"

#include <algorithm>

#include "common/error.h"

namespace msd {

uint64_t loss_tokens(const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples) {
  uint64_t labelled = 0;
  for (const BucketPlan& bucket : buckets)
    for (const MicroBatchPlan& mb : bucket.micro_batches)
      for (const PackedSequence& sequence : mb.sequences)
        for (const Piece& piece : sequence.pieces) {
          // Labels at [max(begin, patches), begin + length - 1).
          const uint64_t first = std::max<uint64_t>(piece.begin, samples.at(piece.doc).patches);
          const uint64_t end = uint64_t{piece.begin} + piece.length - 1;
          labelled += end > first ? end - first : 0;
        }
  return labelled;
}

void PlanEncoder::start(uint64_t step, uint32_t seq_len, const std::vector<SampleMeta>& samples, uint64_t loss_tokens) {
  step_ = step;
  seq_len_ = seq_len;
  loss_tokens_ = loss_tokens;
  samples_ = &samples;
  local_.assign(samples.size(), kAbsent);
}

std::vector<uint8_t> PlanEncoder::encode(const BucketPlan& bucket, uint64_t& tokens) {
  used_.clear();
  size_t bytes = 8 + 4 + 8 + 4 + 4;
  for (const MicroBatchPlan& mb : bucket.micro_batches) {
    bytes += 4;
    for (const PackedSequence& sequence : mb.sequences) {
      bytes += 4 + sequence.pieces.size() * wire::fixed_bytes<PiecePlan>();
      for (const Piece& piece : sequence.pieces) {
        uint32_t& index = local_.at(piece.doc);
        if (index == kAbsent) {
          index = static_cast<uint32_t>(used_.size());
          used_.push_back(piece.doc);
        }
      }
    }
  }
  WireWriter w;
  w.reserve(bytes + used_.size() * kSampleMetaBytes);
  w.u64(step_);
  w.u32(seq_len_);
  w.u64(loss_tokens_);
  w.u32(checked_cast<uint32_t>(used_.size()));
  for (uint32_t doc : used_) write_wire(w, (*samples_)[doc]);
  w.u32(checked_cast<uint32_t>(bucket.micro_batches.size()));
  for (const MicroBatchPlan& mb : bucket.micro_batches) {
    w.u32(checked_cast<uint32_t>(mb.sequences.size()));
    for (const PackedSequence& sequence : mb.sequences) {
      w.u32(checked_cast<uint32_t>(sequence.pieces.size()));
      for (const Piece& piece : sequence.pieces) {
        write_wire(w, PiecePlan{local_[piece.doc], piece.begin, piece.length});
        tokens += piece.length;
      }
    }
  }
  for (uint32_t doc : used_) local_[doc] = kAbsent;
  return std::move(w.bytes());
}

}  // namespace msd
