#include "client/emulator.h"

#include <chrono>
#include <thread>
#include <vector>

#include "config/part_options.h"
#include "transport/mpi.h"

namespace msd {

double emulated_compute_seconds(const Batch& batch, const DeviceModel& model, const Parallel& parallel) {
  std::vector<MicroBatchShape> shapes;
  shapes.reserve(batch.micro_batches.size());
  for (const MicroBatch& mb : batch.micro_batches) shapes.push_back(shape_of(mb));
  return rank_time(model, parallel, shapes).seconds;
}

double emulated_compute_seconds(const Batch& batch, const Config& config) {
  return emulated_compute_seconds(batch, make_device_model(config), parallel_of(config));
}

TrainerStats run_trainer_emulator(Job& job) {
  using Clock = std::chrono::steady_clock;
  TrainerStats stats;
  Client& client = job.client();
  const DeviceModel model = make_device_model(job.config());
  const Parallel parallel = parallel_of(job.config());
  const double scale = job.config().emulator.time_scale;
  const double allreduce = gradient_allreduce_seconds(model, parallel) * scale;
  // A stand-in gradient: small, so the real sync costs latency, not bandwidth;
  // the modeled all-reduce is slept after it.
  std::vector<float> gradient(1024, 1.0f), reduced(1024);
  const auto start = Clock::now();
  while (const Batch* batch = client.next()) {
    const double compute = emulated_compute_seconds(*batch, model, parallel) * scale;
    stats.compute_seconds += compute;
    std::this_thread::sleep_for(std::chrono::duration<double>(compute));
    MPI_Request request;
    MSD_MPI(MPI_Iallreduce(gradient.data(), reduced.data(), static_cast<int>(gradient.size()), MPI_FLOAT, MPI_SUM,
                           job.dp_comm(), &request),
            "emulated gradient allreduce over dp_comm");
    wait(request, "emulated gradient allreduce over dp_comm");
    std::this_thread::sleep_for(std::chrono::duration<double>(allreduce));
    ++stats.steps;
  }
  stats.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace msd
