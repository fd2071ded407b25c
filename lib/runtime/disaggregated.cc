#include "runtime/disaggregated.h"

#include <algorithm>
#include <chrono>

#include "common/memory.h"
#include "plan/step/cost.h"
#include "plan/step/pack.h"

namespace msd {

namespace {
class WindowFetcher : public ByteFetcher {
 public:
  explicit WindowFetcher(WindowReader& reader) : reader_(reader) {}
  void get(int rank, uint64_t offset, void* out, uint64_t bytes) override { reader_.get(rank, offset, out, bytes); }
  void complete() override { reader_.complete(); }

 private:
  WindowReader& reader_;
};
}  // namespace

BuildOptions build_options_for(const ClientPlaceTree& tree, int client_index, int32_t image_token_id) {
  BuildOptions options;
  options.image_token_id = image_token_id;
  options.cp_rank = static_cast<uint32_t>(tree.place(client_index).cp);
  options.cp_size = static_cast<uint32_t>(tree.dim(Axis::cp));
  options.inputs = tree.is_first_stage(client_index);
  options.targets = tree.is_last_stage(client_index);
  return options;
}

DisaggregatedClient::DisaggregatedClient(JobContext& job, int client_index, int32_t image_token_id, MPI_Comm tp_comm)
    : job_(job),
      client_index_(client_index),
      next_step_(job.first_step),
      options_(build_options_for(job.tree, client_index, image_token_id)),
      // A loader that answers no read is named within job.stall_timeout_s.
      reader_(job.windows, job.world.get(), job.config.job.stall_timeout_s * 1000, job.config.topology.network_reads) {
  options_.varlen = make_pack_options(job.config).varlen;  // the planner's rows (colocated ranks keep fixed ones)
  counts_needed_ = job.tree.is_tp_leader(client_index);
  if (job.tree.dim(Axis::tp) > 1 && job.config.topology.broadcast_at == BroadcastAt::tp)
    share_ = std::make_unique<TpShare>(tp_comm);
}

// Bounded by job.stall_timeout_s + 10 s: the planner's own bound on a
// client's acknowledgement fires first, so a stuck client is named by the
// planner, and a stuck planner by its clients.
Message DisaggregatedClient::receive_plan(int planner) {
  const char* hint = "waiting for the next step plan";
  const uint64_t timeout_s = job_.config.job.stall_timeout_s;
  if (timeout_s == 0) return receive(job_.world.get(), planner, kTagPlan, hint);
  auto message = receive_for(job_.world.get(), planner, kTagPlan, (timeout_s + 10) * 1000, hint);
  if (!message)
    throw Error(str("the planner (world rank ", planner, ") sent no plan for step ", next_step_, " within ",
                    timeout_s + 10, " s (job.stall_timeout_s + 10 s): stuck or stopped"));
  return std::move(*message);
}

const Batch* DisaggregatedClient::next() {
  if (next_step_ >= job_.config.job.steps) return nullptr;
  const auto start = std::chrono::steady_clock::now();
  const int planner = job_.layout.planner_rank();
  if (job_.config.fault.kind == "crash" && job_.config.fault.rank == job_.rank && job_.config.fault.step == next_step_)
    throw Error(str("injected crash (fault.kind = crash) at step ", next_step_));
  // A TP follower that shares its leader's batch gets no plan: it takes the
  // step from the leader (JobContext::talks_to_planner).
  const bool planned = job_.talks_to_planner(client_index_);
  BuildStats stats;
  if (planned) {
    const StepPlan plan = decode_plan(receive_plan(planner).bytes);
    if (plan.step != next_step_)
      throw ProtocolError(str("client rank ", job_.rank, " expected the plan of step ", next_step_, ", got step ",
                              plan.step));
    WindowFetcher fetcher(reader_);
    stats = build_batch(plan, fetcher, options_, batch_);
  }
  if (share_) {
    share_->share(batch_);
    if (batch_.step != next_step_)
      throw ProtocolError(str("client rank ", job_.rank, " got step ", batch_.step, " from its TP leader, expected ",
                              next_step_));
  }
  batch_.bytes_fetched = stats.bytes_fetched;
  batch_.bytes_needed = counts_needed_ ? stats.bytes_needed : 0;  // a TP leader always builds
  batch_.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (planned) {
    const uint64_t rss = job_.config.output.metrics.empty() ? 0 : rss_.bytes();  // for per-step metrics
    job_.send_to_planner(kTagAck, encode(AckMessage{next_step_, batch_.wait_seconds, rss}), "acknowledging a step");
  }
  ++next_step_;
  return &batch_;
}

Client::Client(std::unique_ptr<ClientImpl> impl, const Config& config) : impl_(std::move(impl)), config_(config) {}
Client::~Client() = default;
uint64_t Client::steps() const { return impl_->steps(); }

const Batch* Client::next() {
  const Batch* batch = impl_->next();
  sample_anon_shmem();  // colocated, the loader state is here (docs/summary.md)
  if (batch == nullptr) return nullptr;
  const CostModel cost = make_cost_model(config_);
  double largest = 0.0;
  log_.step_digests.push_back(batch->digest);
  log_.step_bytes_fetched.push_back(batch->bytes_fetched);
  log_.step_bytes_needed.push_back(batch->bytes_needed);
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
