// A data group's step plan straight from the placement into wire bytes
// (kTagPlan, docs/wire.md): the samples its pieces use, in the order the
// pieces first use them, then its micro-batches with each piece's index into
// that list. The bytes are those of encode(StepPlan) for the same plan; no
// StepPlan is built on the way, so a step of thousands of groups costs no
// nested vectors resized group by group. No MPI. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/step/pack.h"
#include "transport/wire.h"

namespace msd {

// The labelled positions of a step's plans (the positions whose label is
// the next token of the same piece: text positions but a piece's last,
// docs/batch.md), pieces naming documents by their index in `samples`.
uint64_t loss_tokens(const std::vector<BucketPlan>& buckets, const std::vector<SampleMeta>& samples);

class PlanEncoder {
 public:
  // Starts a step whose pieces name documents by their index in `samples`
  // (REQUIRES: it outlives the step's encode calls); `loss_tokens`: the
  // step's labelled positions over every group (loss_tokens()).
  void start(uint64_t step, uint32_t seq_len, const std::vector<SampleMeta>& samples, uint64_t loss_tokens);
  // The plan of one group of the step; `tokens` gains its pieces' lengths.
  std::vector<uint8_t> encode(const BucketPlan& bucket, uint64_t& tokens);

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  uint64_t step_ = 0;
  uint32_t seq_len_ = 0;
  uint64_t loss_tokens_ = 0;
  const std::vector<SampleMeta>* samples_ = nullptr;
  std::vector<uint32_t> local_;  // step sample -> its index in the group's plan, kAbsent when unused
  std::vector<uint32_t> used_;   // the step samples of the group's plan, in its order
};

}  // namespace msd
