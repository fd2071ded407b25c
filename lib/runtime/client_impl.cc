#include "runtime/client_impl.h"

#include <algorithm>
#include <chrono>

#include "plan/cost.h"

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

DisaggregatedClient::DisaggregatedClient(JobContext& job, int32_t image_token_id) : job_(job) {
  options_.image_token_id = image_token_id;
}

const Batch* DisaggregatedClient::next() {
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

Client::Client(std::unique_ptr<ClientImpl> impl, const Config& config) : impl_(std::move(impl)), config_(config) {}
Client::~Client() = default;
uint64_t Client::steps() const { return impl_->steps(); }

const Batch* Client::next() {
  const Batch* batch = impl_->next();
  if (batch == nullptr) return nullptr;
  const CostModel cost = CostModel::from(config_.model);
  double largest = 0.0;
  log_.step_digests.push_back(batch->digest);
  log_.wait_seconds += batch->wait_seconds;
  log_.source_samples.resize(config_.sources.size());
  log_.source_tokens.resize(config_.sources.size());
  for (const MicroBatch& mb : batch->micro_batches) {
    double units = 0.0;
    for (const DocSpan& doc : mb.docs) {
      const double c = cost.document(doc.length, doc.patches);
      units += c;
      largest = std::max(largest, c);
      log_.tokens += doc.length;
      log_.source_tokens.at(doc.source) += doc.length;
      if (doc.begin == 0) log_.source_samples.at(doc.source)++;
    }
    log_.step_costs.push_back(units);
  }
  // Plans always hold job.micro_batches micro-batches; keep the layout fixed.
  for (size_t m = batch->micro_batches.size(); m < config_.job.micro_batches; ++m) log_.step_costs.push_back(0.0);
  log_.step_costs.push_back(largest);
  return batch;
}

}  // namespace msd
