// msd-gpu-check: the CUDA sink on one GPU, without MPI (tools/gpu-check.sh,
// docs/gpu.md). Builds real batches with msd's construct code (build_batch
// over documents written into an in-memory window the way loaders write
// slots), then measures, on the same bytes:
//   - H2D through the sink (pinned staging, cudaMemcpyAsync on its copy
//     stream) against a plain cudaMemcpy from pinned memory;
//   - how much of each step's copy the GPU ran under the previous step's
//     compute (a synthetic kernel of the demo's step time on every SM that
//     reads the batch's tokens), from the events' timeline;
//   - the step time.
// Writes one JSON object. Exits 77 with one line when no CUDA device is seen.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "construct/batch_builder.h"
#include "construct/cuda_sink.h"
#include "spin.h"
#include "transport/slot.h"

namespace msd {
namespace {

constexpr int kSkipExitCode = 77;

struct Args {
  int steps = 60;
  double compute_ms = 0;  // set from the command line; gpu-check.sh passes the demo's step time
  uint32_t seq_len = 4096;
  uint32_t micro_batches = 2;
  uint32_t sequences = 4;  // per micro-batch
  uint32_t distinct = 8;   // distinct batches, delivered in turn
  uint64_t seed = 1;
  std::string out;
};

// Windows in memory, filled like a loader's slots.
class MemoryWindow : public ByteFetcher {
 public:
  std::vector<uint8_t> bytes;
  void get(int, uint64_t offset, void* out, uint64_t size) override { std::memcpy(out, bytes.data() + offset, size); }
  void complete() override {}
};

SampleMeta put_document(MemoryWindow& window, std::mt19937_64& rng, uint32_t tokens, uint32_t patches) {
  constexpr uint32_t kPatchBytes = 16 * 16 * 3;
  const uint64_t offset = (window.bytes.size() + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  const uint64_t size = SlotLayout::bytes(tokens, patches, kPatchBytes);
  window.bytes.resize(offset + size);
  auto* token_out = reinterpret_cast<int32_t*>(window.bytes.data() + offset + SlotLayout::tokens_offset());
  for (uint32_t i = 0; i < tokens; ++i) token_out[i] = static_cast<int32_t>(rng() % 50000) + 1;
  uint8_t* pixels = window.bytes.data() + offset + SlotLayout::patches_offset(tokens);
  for (uint64_t i = 0; i < uint64_t{patches} * kPatchBytes; ++i) pixels[i] = static_cast<uint8_t>(rng());
  SampleMeta meta;
  meta.loader_rank = 1;
  meta.slot_offset = offset;
  meta.slot_bytes = static_cast<uint32_t>(size);
  meta.text_tokens = tokens;
  meta.patches = patches;
  meta.patch_bytes = patches ? kPatchBytes : 0;
  return meta;
}

// One step: documents of mixed lengths (a quarter with images), packed back
// to back into micro_batches x sequences rows of seq_len, split at row ends.
Batch make_batch(const Args& args, uint64_t step, std::mt19937_64& rng) {
  MemoryWindow window;
  StepPlan plan;
  plan.step = step;
  plan.seq_len = args.seq_len;
  plan.micro_batches.resize(args.micro_batches);
  std::lognormal_distribution<double> length(6.5, 1.2);
  uint32_t left = 0, begin = 0;  // of the current document
  for (auto& mb : plan.micro_batches) {
    for (uint32_t s = 0; s < args.sequences; ++s) {
      SequencePlan sequence;
      uint32_t room = args.seq_len;
      while (room > 0) {
        if (left == 0) {
          const uint32_t patches = rng() % 4 == 0 ? 16 : 0;
          const auto tokens = static_cast<uint32_t>(std::clamp(length(rng), 16.0, 4.0 * args.seq_len));
          plan.samples.push_back(put_document(window, rng, tokens, patches));
          plan.samples.back().index = plan.samples.size();
          left = tokens + patches;
          begin = 0;
        }
        const uint32_t piece = std::min(left, room);
        sequence.pieces.push_back({static_cast<uint32_t>(plan.samples.size() - 1), begin, piece});
        begin += piece;
        left -= piece;
        room -= piece;
      }
      mb.sequences.push_back(std::move(sequence));
    }
  }
  Batch batch;
  build_batch(plan, window, BuildOptions{}, batch);
  return batch;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(const std::vector<double>& v) {
  if (v.empty()) return {};
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// cudaMemcpy of `bytes` from pinned memory, `repeats` times: GB/s each.
std::vector<double> memcpy_gbps(uint64_t bytes, int repeats) {
  void *host = nullptr, *device = nullptr;
  check_cuda(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "allocating pinned memory");
  check_cuda(cudaMalloc(&device, bytes), "allocating device memory");
  std::memset(host, 1, bytes);
  std::vector<double> gbps;
  for (int r = 0; r < repeats + 3; ++r) {
    const auto start = std::chrono::steady_clock::now();
    check_cuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r >= 3) gbps.push_back(static_cast<double>(bytes) / s / 1e9);  // the first 3 warm up
  }
  (void)cudaFreeHost(host);
  (void)cudaFree(device);
  return gbps;
}

// Fraction of [start, end] covered by the union of `busy` intervals.
double covered(double start, double end, const std::vector<std::pair<double, double>>& busy) {
  double inside = 0;
  for (const auto& [b, e] : busy) inside += std::max(0.0, std::min(end, e) - std::max(start, b));
  return end > start ? std::min(1.0, inside / (end - start)) : 1.0;
}

}  // namespace
}  // namespace msd

namespace msd {
namespace {

struct Timeline {
  std::vector<double> step_ms, hidden, copy_ms, host_ms, kernel_ms;
};

// The trainer's loop, one step ahead of the GPU as PyTorch runs: next()
// (the sink stages and issues step t's copy), enqueue step t's compute,
// then wait for step t-1's compute to end. Step t's copy interval is read
// before step t+1's delivery reuses its events.
Timeline overlapped(const Args& args, const std::vector<Batch>& batches, cudaStream_t compute) {
  CudaSink::Options options;
  options.compute_stream = compute;
  options.timing = true;
  CudaSink sink(options);
  unsigned long long* sum = nullptr;
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&sum), sizeof *sum), "allocating the kernel's output");
  cudaEvent_t reference;
  check_cuda(cudaEventCreate(&reference), "creating the reference event");
  check_cuda(cudaEventRecord(reference, compute), "recording the reference event");
  std::vector<cudaEvent_t> begins(args.steps), ends(args.steps);
  std::vector<CudaSink::Interval> copies(args.steps);
  Timeline timeline;
  for (int t = 0; t < args.steps; ++t) {
    check_cuda(cudaEventCreate(&begins[t]), "creating an event");
    check_cuda(cudaEventCreate(&ends[t]), "creating an event");
    if (t > 0) copies[t - 1] = sink.copy_interval(reference);
    const auto start = std::chrono::steady_clock::now();
    sink.deliver(batches[t % batches.size()]);
    timeline.host_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    const auto* tokens = static_cast<const int32_t*>(sink.device_field(0, BatchField::tokens));
    check_cuda(cudaEventRecord(begins[t], compute), "recording a step's start");
    check_cuda(launch_spin(args.compute_ms, tokens, sink.field_bytes(0, BatchField::tokens) / 4, sum, compute),
               "launching the synthetic compute");
    check_cuda(cudaEventRecord(ends[t], compute), "recording a step's end");
    if (t > 0) check_cuda(cudaEventSynchronize(ends[t - 1]), "waiting for the previous step");
  }
  copies[args.steps - 1] = sink.copy_interval(reference);
  sink.finish();
  check_cuda(cudaStreamSynchronize(compute), "waiting for the last step");
  std::vector<std::pair<double, double>> kernels;
  for (int t = 0; t < args.steps; ++t) {
    float b = 0, e = 0;
    check_cuda(cudaEventElapsedTime(&b, reference, begins[t]), "reading a step's start");
    check_cuda(cudaEventElapsedTime(&e, reference, ends[t]), "reading a step's end");
    kernels.emplace_back(b, e);
    timeline.kernel_ms.push_back(e - b);
    if (t > 0) timeline.step_ms.push_back(e - kernels[t - 1].second);
    timeline.copy_ms.push_back(copies[t].end_ms - copies[t].start_ms);
  }
  // Step 0's copy has no compute before it to hide under: left out.
  for (int t = 1; t < args.steps; ++t) timeline.hidden.push_back(covered(copies[t].start_ms, copies[t].end_ms, kernels));
  for (int t = 0; t < args.steps; ++t) {
    (void)cudaEventDestroy(begins[t]);
    (void)cudaEventDestroy(ends[t]);
  }
  (void)cudaEventDestroy(reference);
  (void)cudaFree(sum);
  return timeline;
}

// The sink's copies alone (no compute): GPU time of each copy, and the
// same bytes by cudaMemcpy from pinned memory, timed alike.
void isolated(const Args& args, const std::vector<Batch>& batches, cudaStream_t compute, std::vector<double>& sink_gbps,
              std::vector<double>& memcpy_gbps_out, std::vector<double>& ratio) {
  CudaSink::Options options;
  options.compute_stream = compute;
  options.timing = true;
  CudaSink sink(options);
  std::map<uint64_t, double> baseline;  // bytes -> median GB/s of cudaMemcpy
  for (int t = 0; t < args.steps; ++t) {
    sink.deliver(batches[t % batches.size()]);
    const uint64_t bytes = sink.layout().bytes;
    const double gbps = static_cast<double>(bytes) / sink.copy_ms() / 1e6;
    check_cuda(cudaStreamSynchronize(compute), "waiting for the compute stream");
    if (!baseline.count(bytes)) {
      const std::vector<double> plain = memcpy_gbps(bytes, 20);
      memcpy_gbps_out.insert(memcpy_gbps_out.end(), plain.begin(), plain.end());
      baseline[bytes] = median(plain);
    }
    if (t < 3) continue;  // warm-up
    sink_gbps.push_back(gbps);
    ratio.push_back(gbps / baseline[bytes]);
  }
  sink.finish();
}

void write_spread(std::ostream& out, const char* key, const std::vector<double>& values) {
  const Spread s = spread(values);
  out << "  \"" << key << "\": {\"median\": " << s.median << ", \"min\": " << s.min << ", \"max\": " << s.max << "},\n";
}

int run(const Args& args) {
  const int devices = cuda_device_count();
  if (devices == 0) {
    std::cerr << "msd-gpu-check: skipped: no CUDA device (cudaGetDeviceCount found none)\n";
    return kSkipExitCode;
  }
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "reading the device's properties");
  std::mt19937_64 rng(args.seed);
  std::vector<Batch> batches;
  std::vector<double> batch_bytes;
  for (uint32_t i = 0; i < args.distinct; ++i) {
    batches.push_back(make_batch(args, i, rng));
    batch_bytes.push_back(static_cast<double>(staging_layout(batches.back()).bytes));
  }
  // Delivered in turn, batches must move forward: renumber per delivery.
  cudaStream_t compute;
  check_cuda(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "creating the compute stream");
  std::vector<double> sink_gbps, plain_gbps, ratio;
  std::vector<Batch> stream;
  for (int t = 0; t < args.steps; ++t) {
    stream.push_back(batches[t % batches.size()]);
    stream.back().step = static_cast<uint64_t>(t);
  }
  isolated(args, stream, compute, sink_gbps, plain_gbps, ratio);
  const Timeline timeline = overlapped(args, stream, compute);
  double copy_total = 0, hidden_total = 0;
  for (size_t i = 0; i < timeline.hidden.size(); ++i) {
    copy_total += timeline.copy_ms[i + 1];
    hidden_total += timeline.copy_ms[i + 1] * timeline.hidden[i];
  }
  std::ofstream file;
  if (!args.out.empty()) file.open(args.out);
  std::ostream& out = args.out.empty() ? std::cout : file;
  out << "{\n  \"device\": \"" << prop.name << "\",\n  \"steps\": " << args.steps << ",\n"
      << "  \"batch_shape\": {\"micro_batches\": " << args.micro_batches << ", \"sequences\": " << args.sequences
      << ", \"seq_len\": " << args.seq_len << "},\n";
  write_spread(out, "batch_bytes", batch_bytes);
  write_spread(out, "h2d_gbps", sink_gbps);
  write_spread(out, "memcpy_gbps", plain_gbps);
  write_spread(out, "h2d_vs_memcpy", ratio);
  out << "  \"hidden_fraction\": " << (copy_total > 0 ? hidden_total / copy_total : 1.0) << ",\n";
  write_spread(out, "hidden_fraction_per_step", timeline.hidden);
  out << "  \"compute_ms\": " << args.compute_ms << ",\n";
  write_spread(out, "compute_ms_measured", timeline.kernel_ms);
  write_spread(out, "copy_ms_overlapped", timeline.copy_ms);
  write_spread(out, "deliver_host_ms", timeline.host_ms);
  write_spread(out, "step_ms", timeline.step_ms);
  out << "  \"aims\": {\"h2d_vs_memcpy\": 0.8, \"hidden_fraction\": 0.9}\n}\n";
  (void)cudaStreamDestroy(compute);
  return 0;
}

}  // namespace
}  // namespace msd

int main(int argc, char** argv) {
  msd::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--steps" && has_value) args.steps = std::stoi(argv[++i]);
    else if (a == "--compute-ms" && has_value) args.compute_ms = std::stod(argv[++i]);
    else if (a == "--seq-len" && has_value) args.seq_len = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--micro-batches" && has_value) args.micro_batches = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--sequences" && has_value) args.sequences = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--seed" && has_value) args.seed = std::stoull(argv[++i]);
    else if (a == "--out" && has_value) args.out = argv[++i];
    else {
      std::cerr << "usage: msd-gpu-check --compute-ms MS [--steps N] [--seq-len L] [--micro-batches M] "
                   "[--sequences S] [--seed S] [--out FILE]\n";
      return 2;
    }
  }
  if (args.steps < 8 || !(args.compute_ms > 0) || args.seq_len == 0 || args.micro_batches == 0 || args.sequences == 0) {
    std::cerr << "msd-gpu-check: --compute-ms must be > 0 and --steps at least 8\n";
    return 2;
  }
  try {
    return msd::run(args);
  } catch (const std::exception& e) {
    std::cerr << "msd-gpu-check: " << e.what() << "\n";
    return 1;
  }
}
