#include "runtime/emulator.h"

#include <chrono>
#include <thread>
#include <vector>

#include "plan/cost.h"
#include "transport/mpi.h"

namespace msd {

double emulated_compute_seconds(const Batch& batch, const Config& config) {
  const CostModel cost = make_cost_model(config);
  double units = 0.0;
  for (const MicroBatch& mb : batch.micro_batches)
    for (const DocSpan& doc : mb.docs) units += cost.document(doc.length, doc.patches);
  return units * cost.flops_per_unit / (config.emulator.tflops * 1e12);
}

TrainerStats run_trainer_emulator(Job& job) {
  using Clock = std::chrono::steady_clock;
  TrainerStats stats;
  Client& client = job.client();
  // A stand-in gradient: small, so the sync costs latency, not bandwidth.
  std::vector<float> gradient(1024, 1.0f), reduced(1024);
  const auto start = Clock::now();
  while (const Batch* batch = client.next()) {
    const double compute = emulated_compute_seconds(*batch, job.config());
    stats.compute_seconds += compute;
    std::this_thread::sleep_for(std::chrono::duration<double>(compute));
    MPI_Request request;
    MSD_MPI(MPI_Iallreduce(gradient.data(), reduced.data(), static_cast<int>(gradient.size()), MPI_FLOAT, MPI_SUM,
                           job.dp_comm(), &request),
            "emulated gradient allreduce over dp_comm");
    wait(request, "emulated gradient allreduce over dp_comm");
    ++stats.steps;
  }
  stats.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace msd
