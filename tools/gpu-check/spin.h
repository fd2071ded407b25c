// The device check's synthetic compute (spin.cu): a kernel that occupies
// every SM for a given time and reads the batch's tokens, so that it depends
// on the batch's copy as a trainer's first layer does.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace msd {

// Enqueues on `stream` a kernel that runs about `ms` milliseconds on every SM
// and sums `count` int32 values at `tokens` into `*sink_out`. C++17 (nvcc).
cudaError_t launch_spin(double ms, const int32_t* tokens, uint64_t count, unsigned long long* sink_out,
                        cudaStream_t stream);

}  // namespace msd
