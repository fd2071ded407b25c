// The client (data-constructor) role behind msd::Client. ClientImpl is what
// both modes implement; DisaggregatedClient receives its data group's plan for
// each step, builds the batch from loader windows, and acknowledges it so the
// planner can release the slots (the colocated baseline is in colocated.h).
#pragma once

#include <cstdint>

#include "construct/batch_builder.h"
#include "msd/client.h"
#include "runtime/context.h"

namespace msd {

class ClientImpl {
 public:
  virtual ~ClientImpl() = default;
  virtual const Batch* next() = 0;
  virtual uint64_t steps() const = 0;
};

class DisaggregatedClient : public ClientImpl {
 public:
  // image_token_id: the token id placed at image-patch positions.
  DisaggregatedClient(JobContext& job, int32_t image_token_id);
  const Batch* next() override;
  uint64_t steps() const override { return job_.config.job.steps; }
  uint64_t bytes_fetched() const { return bytes_fetched_; }

 private:
  JobContext& job_;
  Batch batch_;
  uint64_t next_step_ = 0;
  uint64_t bytes_fetched_ = 0;
  BuildOptions options_;
};

}  // namespace msd
