// The CUDA sink on a device (label gpu): every field of every delivered
// batch arrives in device memory byte for byte, through both slots, growing
// buffers, and a trainer stream that reads while the next copy is issued.
// Exits 77 (skipped) where cudaGetDeviceCount finds no device.
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "construct/batch_builder.h"
#include "construct/cuda_sink.h"

namespace {

int failures = 0;
#define EXPECT(cond)                                                     \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                        \
    }                                                                    \
  } while (0)

// A batch of `sequences` rows whose values depend on the step.
msd::Batch make_batch(uint64_t step, uint32_t sequences, uint32_t patches) {
  msd::Batch batch;
  batch.step = step;
  batch.micro_batches.resize(2);
  for (auto& mb : batch.micro_batches) {
    mb.sequences = sequences;
    mb.seq_len = 64;
    const size_t n = size_t{sequences} * mb.seq_len;
    mb.tokens.resize(n);
    std::iota(mb.tokens.begin(), mb.tokens.end(), static_cast<int32_t>(step * 1000));
    mb.labels.assign(n, static_cast<int32_t>(step));
    mb.positions.resize(n);
    std::iota(mb.positions.begin(), mb.positions.end(), 0);
    mb.loss_mask.assign(n, static_cast<uint8_t>(step & 1));
    mb.cu_seqlens = {0, static_cast<int32_t>(n)};
    mb.patch_bytes = 48;
    mb.patch_positions.assign(patches, 3);
    mb.patches.assign(size_t{patches} * 48, static_cast<uint8_t>(step));
  }
  batch.digest = msd::batch_digest(batch);
  return batch;
}

// Reads every field of the delivered batch back from the device, after the
// compute stream (where the copy is ordered) reaches it.
void check_delivered(msd::CudaSink& sink, const msd::Batch& batch, cudaStream_t compute) {
  msd::check_cuda(cudaStreamSynchronize(compute), "waiting for the compute stream");
  for (uint32_t m = 0; m < batch.micro_batches.size(); ++m) {
    for (const msd::FieldBytes& f : msd::field_bytes(batch.micro_batches[m])) {
      EXPECT(sink.field_bytes(m, f.field) == f.bytes);
      std::vector<uint8_t> back(f.bytes);
      if (f.bytes == 0) continue;
      msd::check_cuda(cudaMemcpy(back.data(), sink.device_field(m, f.field), f.bytes, cudaMemcpyDeviceToHost),
                      "reading a field back");
      EXPECT(std::memcmp(back.data(), f.data, f.bytes) == 0);
    }
  }
}

}  // namespace

int main() {
  if (msd::cuda_device_count() == 0) {
    std::printf("test_cuda_sink: skipped: no CUDA device (cudaGetDeviceCount found none)\n");
    return 77;
  }
  try {
    cudaStream_t compute;
    msd::check_cuda(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "creating a stream");
    msd::CudaSink::Options options;
    options.compute_stream = compute;
    options.timing = true;
    msd::CudaSink sink(options);
    for (uint64_t step = 0; step < 12; ++step) {
      // Growing every few steps: both slots reallocate while the other is held.
      const msd::Batch batch = make_batch(step, 1 + static_cast<uint32_t>(step / 3) * 40, step % 2 ? 5 : 0);
      sink.deliver(batch);
      EXPECT(sink.buffers().held_slot() == static_cast<int>(step % 2));
      EXPECT(sink.copy_ms() >= 0);
      check_delivered(sink, batch, compute);
    }
    EXPECT(sink.reallocations() >= 2);
    sink.finish();
    EXPECT(sink.buffers().held_slot() == -1);
    (void)cudaStreamDestroy(compute);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_cuda_sink: %s\n", e.what());
    return 1;
  }
  if (failures == 0) std::printf("test_cuda_sink: passed\n");
  return failures == 0 ? 0 : 1;
}
