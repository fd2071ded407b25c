#include "spin.h"

namespace msd {
namespace {

__global__ void spin(long long cycles, const int32_t* tokens, uint64_t count, unsigned long long* sink_out) {
  const long long start = clock64();
  unsigned long long sum = 0;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride)
    sum += static_cast<unsigned>(tokens[i]);
  while (clock64() - start < cycles) {
  }
  if (sum != 0) atomicAdd(sink_out, sum);
}

}  // namespace

cudaError_t launch_spin(double ms, const int32_t* tokens, uint64_t count, unsigned long long* sink_out,
                        cudaStream_t stream) {
  int device = 0, clock_khz = 0, sms = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  if (status == cudaSuccess) status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (status != cudaSuccess) return status;
  const auto cycles = static_cast<long long>(ms * clock_khz);
  spin<<<sms, 128, 0, stream>>>(cycles, tokens, count, sink_out);
  return cudaGetLastError();
}

}  // namespace msd
