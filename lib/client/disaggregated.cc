#include "client/disaggregated.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/memory.h"
#include "config/part_options.h"
#include "construct/batch_sink.h"
#include "construct/tp_device.h"
#include "plan/step/cost.h"
#include "plan/step/pack.h"
#include "runtime/fatal.h"

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
      tp_comm_(tp_comm),
      // A loader that answers no read is named within job.stall_timeout_s.
      reader_(job.windows, job.world.get(), job.config.job.stall_timeout_s * 1000, job.config.topology.network_reads) {
  options_.varlen = make_pack_options(job.config).varlen;  // the planner's rows (colocated ranks keep fixed ones)
  counts_needed_ = job.tree.is_tp_leader(client_index);
  if (job.tree.dim(Axis::tp) > 1 && job.config.topology.broadcast_at == BroadcastAt::tp)
    share_ = std::make_unique<TpShare>(tp_comm);
}

DisaggregatedClient::~DisaggregatedClient() {
  // A step read ahead that the trainer never asked for: its replies land in
  // batches_, so they are waited for before the batches go.
  if (!ahead_.pending() || unwinding()) return;
  try {
    reader_.finish();
  } catch (const std::exception& e) {
    log_warn("reads of step ", next_step_, " requested ahead: ", e.what());
  }
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

StepPlan DisaggregatedClient::checked_plan(const Message& message, uint64_t step) const {
  StepPlan plan = decode_plan(message.bytes);
  if (plan.step != step)
    throw ProtocolError(str("client rank ", job_.rank, " expected the plan of step ", step, ", got step ", plan.step));
  return plan;
}

// Step next_step_'s batch into `batch`: the reads requested by the previous
// next() completed (within job.stall_timeout_s, naming the loader), or its
// plan received and read now.
BuildStats DisaggregatedClient::build(int planner, bool read_ahead, Batch& batch) {
  if (read_ahead) {
    reader_.finish();
    return finish_build(ahead_);
  }
  const StepPlan plan = checked_plan(receive_plan(planner), next_step_);
  WindowFetcher fetcher(reader_);
  return build_batch(plan, fetcher, options_, batch);
}

// Requests step next_step_ + 1's bytes into the batch not handed out, if its
// plan is already here (never waiting for it): the planner sends plans up
// to job.prefetch_steps ahead. Only two-sided reads gain: a read from a
// node-shared window is a copy, and one-sided gets need no request.
void DisaggregatedClient::request_ahead(int planner) {
  const uint64_t step = next_step_ + 1;
  if (!reader_.two_sided() || step >= job_.config.job.steps) return;
  auto message = try_receive(job_.world.get(), planner, kTagPlan, "looking for the next step plan");
  if (!message) return;
  ahead_plan_ = checked_plan(*message, step);
  WindowFetcher fetcher(reader_);
  ahead_ = begin_build(ahead_plan_, fetcher, options_, batches_[1 - current_]);
  reader_.start();
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
  const bool read_ahead = ahead_.pending();
  if (read_ahead) current_ = 1 - current_;  // the previous batch may be reused from now on
  Batch& batch = batches_[current_];
  BuildStats stats;
  if (planned) stats = build(planner, read_ahead, batch);
  if (share_) {
    share_->share(batch);
    if (batch.step != next_step_)
      throw ProtocolError(str("client rank ", job_.rank, " got step ", batch.step, " from its TP leader, expected ",
                              next_step_));
  }
  batch.bytes_fetched = stats.bytes_fetched;
  batch.bytes_needed = counts_needed_ ? stats.bytes_needed : 0;  // a TP leader always builds
  batch.read_ahead = read_ahead;
  if (planned) request_ahead(planner);
  batch.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (planned) {
    const uint64_t rss = job_.config.output.metrics.empty() ? 0 : rss_.bytes();  // for per-step metrics
    job_.send_to_planner(kTagAck, encode(AckMessage{next_step_, batch.wait_seconds, rss}), "acknowledging a step");
  }
  ++next_step_;
  job_.end_startup();
  return &batch;
}

void DisaggregatedClient::attach(BatchSink& sink) {
  if (tp_sink_ != nullptr) {
    if (&sink != tp_sink_ && tp_plan_.path == TpBroadcastPlan::Path::nccl)
      throw Error(str("client rank ", job_.rank, ": the batch sink changed after its TP group chose the nccl path at ",
                      "its first step; set the sink (Client::set_sink) before the first next()"));
    return;
  }
  tp_sink_ = &sink;
  if (!share_) {
    tp_plan_.reason = job_.tree.dim(Axis::tp) > 1 ? "each TP rank builds its batch (topology.broadcast_at is not tp)"
                                                  : "a TP group of one rank";
    return;
  }
  TpDeviceSink* device = tp_device_of(sink);
  tp_plan_ = agree_tp_broadcast(tp_comm_, tp_rank_device(device));
  if (share_->is_leader())
    log_info("TP group of client rank ", job_.rank, ": batches reach its ", job_.tree.dim(Axis::tp), " ranks by the ",
             path_name(tp_plan_.path), " path (", tp_plan_.reason, ")");
  if (tp_plan_.path != TpBroadcastPlan::Path::nccl) return;
  device->join_tp_group(tp_comm_, tp_plan_);
  share_->share_header_only();
}

void DisaggregatedClient::deliver(BatchSink& sink, const Batch& batch) {
  if (tp_plan_.path == TpBroadcastPlan::Path::nccl && !share_->is_leader())
    tp_device_of(sink)->deliver_broadcast(batch, share_->payload_layout());
  else
    sink.deliver(batch);
}

void DisaggregatedClient::stop_early() {
  if (ahead_.pending()) {
    reader_.finish();  // the replies land in batches_: never left in flight
    (void)finish_build(ahead_);
  }
  if (job_.talks_to_planner(client_index_))
    job_.send_to_planner(kTagStopping, encode(AckMessage{next_step_, 0.0, 0}), "telling the planner this client stops");
}

Client::Client(std::unique_ptr<ClientImpl> impl, const Config& config)
    : impl_(std::move(impl)), config_(config), host_sink_(std::make_unique<HostSink>()), sink_(host_sink_.get()) {}
Client::~Client() = default;
uint64_t Client::steps() const { return impl_->steps(); }
void Client::set_sink(BatchSink* sink) { sink_ = sink != nullptr ? sink : host_sink_.get(); }

const Batch* Client::next() {
  const Batch* batch = nullptr;
  try {
    impl_->attach(*sink_);
    batch = impl_->next();
    if (batch != nullptr)
      impl_->deliver(*sink_, *batch);
    else
      sink_->finish();
  } catch (...) {
    note_failure(std::current_exception());  // named if the trainer lets it unwind through the Job
    throw;
  }
  sample_anon_shmem();  // colocated, the loader state is here (docs/summary.md)
  if (batch == nullptr) return nullptr;
  note_step(batch->step);
  const CostModel cost = make_cost_model(config_);
  double largest = 0.0;
  log_.step_digests.push_back(batch->digest);
  log_.step_bytes_fetched.push_back(batch->bytes_fetched);
  log_.step_bytes_needed.push_back(batch->bytes_needed);
  log_.wait_seconds += batch->wait_seconds;
  log_.steps_read_ahead += batch->read_ahead ? 1 : 0;
  log_.source_samples.resize(config_.sources.size());
  log_.source_tokens.resize(config_.sources.size());
  // job.micro_batches costs a step: with job.micro_batch_count = variable the
  // micro-batches beyond them add to the last (its rank's total is right).
  const size_t slots = std::max<size_t>(1, config_.job.micro_batches);
  const size_t first = log_.step_costs.size();
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
    if (log_.step_costs.size() - first < slots)
      log_.step_costs.push_back(units);
    else
      log_.step_costs.back() += units;
  }
  while (log_.step_costs.size() - first < slots) log_.step_costs.push_back(0.0);
  log_.step_costs.push_back(largest);
  return batch;
}

}  // namespace msd
