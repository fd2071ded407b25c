// A trainer built against the installed msd package (tests/scripts/install.sh):
// its own CMake project, find_package(msd), msd::msd, and only msd/ headers.
// Each client rank prints what it received, counted from the batches' own
// fields: "trainer: client C steps S positions P sink D".
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "msd/client.h"

namespace {

// The public sink interface (msd/batch_sink.h): counts what reaches it.
class CountingSink final : public msd::BatchSink {
 public:
  void deliver(const msd::Batch& batch) override { delivered_ = batch.step + 1; }
  void finish() override { finished_ = true; }
  std::string name() const override { return "counting"; }
  uint64_t delivered() const { return finished_ ? delivered_ : 0; }

 private:
  uint64_t delivered_ = 0;
  bool finished_ = false;
};

int train(const msd::Config& config) {
  msd::Job job(config, MPI_COMM_WORLD);
  msd::TrainerStats stats;
  try {
    if (job.role() == msd::Role::client) {
      CountingSink sink;
      job.client().set_sink(&sink);
      uint64_t positions = 0;
      while (const msd::Batch* batch = job.client().next()) {
        if (batch->step != stats.steps) throw std::runtime_error("step " + std::to_string(batch->step) + " out of order");
        for (const msd::MicroBatch& mb : batch->micro_batches)
          for (const msd::DocSpan& doc : mb.docs) positions += doc.length;
        ++stats.steps;
      }
      std::printf("trainer: client %d steps %llu positions %llu sink %llu\n", job.client_index(),
                  static_cast<unsigned long long>(stats.steps), static_cast<unsigned long long>(positions),
                  static_cast<unsigned long long>(sink.delivered()));
      job.client().set_sink(nullptr);
    } else {
      job.serve();
    }
    job.finish(stats);
  } catch (const std::exception& e) {
    msd::abort_job(e);
  }
  return job.shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  msd::Invocation invocation;
  try {
    invocation = msd::parse_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainer: %s\n", e.what());
    return msd::exit_status(e);
  }
  if (invocation.print_world_size) {
    std::printf("%d\n", invocation.config.world_size());
    return 0;
  }
  MPI_Init(&argc, &argv);
  const int status = train(invocation.config);
  MPI_Finalize();
  return status;
}
