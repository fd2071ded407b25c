# NCCL beside the CUDA Toolkit: the imported target NCCL::nccl, when nccl.h
# and libnccl are found. msd's build includes this file (cmake/MsdCuda.cmake),
# and so does its installed package (msdConfig.cmake), which finds NCCL
# again by name instead of naming this machine's path.
if(NOT TARGET NCCL::nccl)
  find_path(MSD_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(MSD_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  if(MSD_NCCL_INCLUDE_DIR AND MSD_NCCL_LIBRARY)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${MSD_NCCL_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${MSD_NCCL_INCLUDE_DIR}")
  endif()
endif()
