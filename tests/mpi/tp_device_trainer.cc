// The client's nccl path without a GPU (tests/scripts/tp_device_job.sh): a
// C++ trainer over msd::Job whose clients deliver into a host-memory stand-in
// for a device sink. It declares NCCL, so a TP group of them agrees on the
// nccl path; its "broadcast" is an MPI_Bcast over tp_comm of the leader's
// staged buffer into the follower's, laid out from the header alone. So the
// decision, the header-only share, the routing of each step to deliver() or
// deliver_broadcast() and the packed layout run as on GPUs; every step, each
// client rebuilds the batch from its header and buffer and checks the
// leader's digest.
//
//   tp_device_trainer [msd-run options...]   (topology.tp > 1)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "construct/batch_builder.h"
#include "construct/batch_sink.h"
#include "construct/tp_device.h"
#include "mpi/job_trainer.h"
#include "msd/client.h"

namespace {

class MpiStandInSink final : public msd::BatchSink, public msd::TpDeviceSink {
 public:
  void deliver(const msd::Batch& batch) override {
    layout_ = msd::staging_layout(batch);
    buffer_.assign(layout_.bytes, 0);
    msd::stage_batch(batch, layout_, buffer_.data());
    if (joined_) broadcast();
    header_ = batch;
  }
  std::string name() const override { return "mpi-stand-in"; }
  bool has_nccl() const override { return true; }
  void join_tp_group(MPI_Comm tp_comm, const msd::TpBroadcastPlan& plan) override {
    comm_ = tp_comm;
    root_ = plan.root;
    joined_ = plan.path == msd::TpBroadcastPlan::Path::nccl;
  }
  void deliver_broadcast(const msd::Batch& header, const msd::StagingLayout& layout) override {
    layout_ = layout;
    buffer_.assign(layout_.bytes, 0);
    broadcast();
    header_ = header;
    ++broadcasts_received_;
  }

  // The batch as a trainer reads it from this sink: the header's host fields
  // and the staged fields from the buffer.
  msd::Batch batch() const {
    msd::Batch batch = header_;
    for (uint32_t m = 0; m < batch.micro_batches.size(); ++m) {
      int f = 0;
      auto fill = [&](auto& values) {
        const msd::StagedField& staged = layout_.at(m, static_cast<msd::BatchField>(f++));
        values.resize(staged.bytes / sizeof(values[0]));
        if (staged.bytes > 0) std::memcpy(values.data(), buffer_.data() + staged.offset, staged.bytes);
      };
      std::apply([&](auto&... fields) { (fill(fields), ...); }, msd::staged_fields(batch.micro_batches[m]));
    }
    return batch;
  }
  bool joined() const { return joined_; }
  uint64_t broadcasts_received() const { return broadcasts_received_; }

 private:
  void broadcast() {
    if (layout_.bytes > 0)
      MPI_Bcast(buffer_.data(), static_cast<int>(layout_.bytes), MPI_BYTE, root_, comm_);
  }
  msd::Batch header_;
  msd::StagingLayout layout_;
  std::vector<uint8_t> buffer_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int root_ = 0;
  bool joined_ = false;
  uint64_t broadcasts_received_ = 0;
};

int check_batches(msd::Job& job, msd::TrainerStats& stats) {
  int failures = 0;
  int tp_rank = 0;
  MPI_Comm_rank(job.tp_comm(), &tp_rank);
  MpiStandInSink sink;
  job.client().set_sink(&sink);
  while (const msd::Batch* batch = job.client().next()) {
    const bool header_only = batch->micro_batches.empty() || batch->micro_batches[0].tokens.empty();
    if (!sink.joined() || header_only != (tp_rank != 0)) {
      std::fprintf(stderr, "tp rank %d: step %llu: joined %d, host tokens %s\n", tp_rank,
                   static_cast<unsigned long long>(batch->step), sink.joined() ? 1 : 0,
                   header_only ? "absent" : "present");
      ++failures;
    }
    failures += test::digest_failures(tp_rank, *batch, msd::batch_digest(sink.batch()), "from the sink");
    ++stats.steps;
  }
  if (tp_rank != 0 && sink.broadcasts_received() != stats.steps) {
    std::fprintf(stderr, "tp rank %d: %llu broadcasts for %llu steps\n", tp_rank,
                 static_cast<unsigned long long>(sink.broadcasts_received()),
                 static_cast<unsigned long long>(stats.steps));
    ++failures;
  }
  if (failures == 0)
    std::printf("tp_device_trainer: tp rank %d: %llu steps, digests match\n", tp_rank,
                static_cast<unsigned long long>(stats.steps));
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  return test::job_trainer_main(argc, argv, [](const msd::Config&) { return 0; }, check_batches);
}
