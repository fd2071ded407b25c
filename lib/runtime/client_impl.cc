#include "runtime/client_impl.h"

#include <chrono>

namespace msd {

namespace {
class WindowFetcher : public ByteFetcher {
 public:
  explicit WindowFetcher(Window& window) : window_(window) {}
  void get(int rank, uint64_t offset, void* out, uint64_t bytes) override { window_.get(rank, offset, out, bytes); }
  void complete() override { window_.flush_all(); }

 private:
  Window& window_;
};
}  // namespace

ClientImpl::ClientImpl(JobContext& job, int32_t image_token_id) : job_(job) {
  options_.image_token_id = image_token_id;
}

const Batch* ClientImpl::next() {
  if (next_step_ >= job_.config.job.steps) return nullptr;
  const auto start = std::chrono::steady_clock::now();
  const int planner = job_.layout.planner_rank();
  Message message = receive(job_.world.get(), planner, kTagPlan, "waiting for the next step plan");
  StepPlan plan = decode_plan(message.bytes);
  if (plan.step != next_step_)
    throw ProtocolError(str("client rank ", job_.rank, " expected the plan of step ", next_step_, ", got step ", plan.step));
  WindowFetcher fetcher(job_.windows);
  BuildStats stats = build_batch(plan, fetcher, options_, batch_);
  bytes_fetched_ += stats.bytes_fetched;
  batch_.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  send_bytes(job_.world.get(), planner, kTagAck, encode(AckMessage{plan.step, batch_.wait_seconds}),
             "acknowledging a step");
  ++next_step_;
  return &batch_;
}

Client::Client(std::unique_ptr<ClientImpl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;
const Batch* Client::next() { return impl_->next(); }
uint64_t Client::steps() const { return impl_->steps(); }

}  // namespace msd
