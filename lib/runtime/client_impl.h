// The client (data-constructor) role behind msd::Client: receives its data
// group's plan for each step, builds the batch from loader windows, and
// acknowledges it so the planner can release the slots.
#pragma once

#include <cstdint>

#include "construct/batch_builder.h"
#include "msd/client.h"
#include "runtime/context.h"

namespace msd {

class ClientImpl {
 public:
  // image_token_id: the token id placed at image-patch positions.
  ClientImpl(JobContext& job, int32_t image_token_id);
  const Batch* next();
  uint64_t steps() const { return job_.config.job.steps; }
  uint64_t bytes_fetched() const { return bytes_fetched_; }

 private:
  JobContext& job_;
  Batch batch_;
  uint64_t next_step_ = 0;
  uint64_t bytes_fetched_ = 0;
  BuildOptions options_;
};

}  // namespace msd
