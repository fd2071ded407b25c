# What `cmake --install BUILD --prefix P` puts under P for a C++ trainer
# (component dev; README "Using the installed package"):
#   lib/libmsd_<part>.a          the static library of every part but lib/bench
#   include/msd/*.h              the public API, and nothing of lib/
#   lib/cmake/msd/               msdConfig.cmake, its version file and the
#                                targets: find_package(msd) gives msd::msd
# The parts' link dependencies (MPI, parallel HDF5, Boost, ICU, TurboJPEG,
# zlib, libzstd, snappy, threads; the CUDA runtime with MSD_WITH_CUDA) are
# found again by msdConfig.cmake (cmake/msdConfig.cmake.in), by name: the
# package holds no path of this machine's libraries. A part added with
# msd_part() joins the export by itself; a library of lib/ made otherwise
# must be added to `exported` below.
include(CMakePackageConfigHelpers)

get_property(exported GLOBAL PROPERTY MSD_PARTS)
list(REMOVE_ITEM exported msd_bench)  # msd-bench's alone
list(APPEND exported msd msd_plan)
set_target_properties(msd_plan PROPERTIES EXPORT_NAME plan)
set(MSD_PACKAGE_CUDA OFF)
set(MSD_PACKAGE_NCCL OFF)
if(TARGET msd_construct_cuda)
  list(APPEND exported msd_construct_cuda)
  set(MSD_PACKAGE_CUDA ON)
  set(MSD_PACKAGE_NCCL ${MSD_WITH_NCCL})
endif()
# The public headers are C++20.
target_compile_features(msd INTERFACE cxx_std_20)

set(MSD_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/msd)
install(TARGETS ${exported} EXPORT msdTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/msd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.h")
install(EXPORT msdTargets NAMESPACE msd:: DESTINATION ${MSD_CMAKE_INSTALL_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/msdConfig.cmake.in ${PROJECT_BINARY_DIR}/msdConfig.cmake
                              INSTALL_DESTINATION ${MSD_CMAKE_INSTALL_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/msdConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/msdConfig.cmake ${PROJECT_BINARY_DIR}/msdConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MsdNccl.cmake
        DESTINATION ${MSD_CMAKE_INSTALL_DIR} COMPONENT dev)
