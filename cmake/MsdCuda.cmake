# MSD_WITH_CUDA: the CUDA sink (lib/construct/cuda_sink.*), the NCCL
# broadcast within a TP group (lib/construct/tp_nccl.*, when NCCL is found)
# and the device check's binary (tools/gpu-check/); docs/gpu.md. sm_90 by
# default, and the CUDA runtime linked statically, so that the binaries start
# (and the gpu tests skip) where there is no driver.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
enable_language(CUDA)
# The .cu files are C++17 (CMake 3.25 has no flag for nvcc's C++20); they
# include no msd header but their own.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/MsdNccl.cmake)
if(TARGET NCCL::nccl)
  set(MSD_WITH_NCCL ON)
  message(STATUS "msd: CUDA ${CUDAToolkit_VERSION} for sm_${CMAKE_CUDA_ARCHITECTURES}, NCCL ${MSD_NCCL_LIBRARY}")
else()
  set(MSD_WITH_NCCL OFF)
  message(STATUS "msd: CUDA ${CUDAToolkit_VERSION} for sm_${CMAKE_CUDA_ARCHITECTURES}, no NCCL (TP groups use the host path)")
endif()
