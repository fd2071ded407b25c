# MPI and end-to-end tests. They share one generated tiny dataset (a ctest
# fixture), so the data generator runs once per test run.
set(MSD_TINY_DATA ${PROJECT_BINARY_DIR}/testdata/tiny)
add_test(NAME datagen_tiny
         COMMAND msd-datagen --out ${MSD_TINY_DATA} --scale tiny --seed 7 --bad-samples 6 --force)
set_tests_properties(datagen_tiny PROPERTIES FIXTURES_SETUP tiny_data TIMEOUT 120)
msd_sanitizer_environment(datagen_tiny)

msd_core_test_target(msd-datagen)
add_executable(test_protocol mpi/test_protocol.cc)
target_link_libraries(test_protocol PRIVATE msd::msd)
msd_add_mpi_test(protocol NP 8 11 COMMAND $<TARGET_FILE:test_protocol> ${MSD_TINY_DATA} TIMEOUT 180)
set_tests_properties(protocol.np8 protocol.np11 PROPERTIES FIXTURES_REQUIRED tiny_data)
# The same with variable-length rows split per document piece over the CP ranks (THD).
msd_add_mpi_test(protocol_thd NP 8 11 COMMAND $<TARGET_FILE:test_protocol> ${MSD_TINY_DATA} thd TIMEOUT 180)
set_tests_properties(protocol_thd.np8 protocol_thd.np11 PROPERTIES FIXTURES_REQUIRED tiny_data)

msd_core_test_target(test_protocol)
add_executable(test_tp_share mpi/test_tp_share.cc)
target_link_libraries(test_tp_share PRIVATE msd::construct)
msd_core_test_target(test_tp_share)
msd_add_mpi_test(tp_share NP 2 3 COMMAND $<TARGET_FILE:test_tp_share> TIMEOUT 60)
add_executable(test_async_sender mpi/test_async_sender.cc)
target_link_libraries(test_async_sender PRIVATE msd::transport)
msd_core_test_target(test_async_sender)
msd_add_mpi_test(async_sender NP 2 COMMAND $<TARGET_FILE:test_async_sender> TIMEOUT 60)
msd_add_script_test(hybrid_delivery SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/hybrid_delivery.sh TIMEOUT 300)
set_tests_properties(hybrid_delivery PROPERTIES FIXTURES_REQUIRED tiny_data)
msd_add_script_test(bench_memory SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/bench_memory.sh TIMEOUT 300)
msd_add_script_test(bench_handoff SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/bench_handoff.sh TIMEOUT 300)
msd_add_script_test(bench_fanout SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/bench_fanout.sh TIMEOUT 300)
msd_add_script_test(bench_scaling SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/bench_scaling.sh TIMEOUT 300)
msd_add_script_test(bench_startup SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/bench_startup.sh TIMEOUT 300)

# The client's nccl path with a host-memory stand-in for the device sink
# (tests/scripts/tp_device_job.sh; the GPU one is tests/gpu/tp_nccl_trainer.cc).
add_executable(tp_device_trainer mpi/tp_device_trainer.cc)
target_link_libraries(tp_device_trainer PRIVATE msd::msd msd_construct)
msd_add_script_test(tp_device_job SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/tp_device_job.sh TIMEOUT 300)
set_tests_properties(tp_device_job PROPERTIES FIXTURES_REQUIRED tiny_data)

# A tiny C++ trainer that throws, unwinds or finishes early (tests/scripts/trainer_faults.sh).
add_executable(fault_trainer mpi/fault_trainer.cc)
target_link_libraries(fault_trainer PRIVATE msd::msd)
foreach(script determinism layout megatron_paths thd_delivery world_size config_errors bench_throughput shadow resume resume_mesh resume_step
        resume_locality
        hold_resume resume_mix
        bad_input window_backpressure stuck_loader checkpoint_join stuck_peer fail_fast startup_watchdog soak metrics
        scaling_partition scaling trainer_faults checkpoint_owner signals)
  msd_add_script_test(${script} SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/${script}.sh TIMEOUT 300)
  set_tests_properties(${script} PROPERTIES FIXTURES_REQUIRED tiny_data)
endforeach()
# A full file system: a small tmpfs under checkpoint.dir (skipped where mounting one is not allowed).
msd_add_script_test(disk_full SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/disk_full.sh TIMEOUT 120 SKIPPABLE)
set_tests_properties(disk_full PROPERTIES FIXTURES_REQUIRED tiny_data)
msd_add_script_test(slurm SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/slurm.sh TIMEOUT 300 SKIPPABLE)
set_tests_properties(slurm PROPERTIES FIXTURES_REQUIRED tiny_data)
# Two Slurm nodes on this machine (tools/cluster-local.sh), UCX over TCP between them.
msd_add_script_test(slurm_cluster SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/slurm_cluster.sh TIMEOUT 300 SKIPPABLE)
set_tests_properties(slurm_cluster PROPERTIES FIXTURES_REQUIRED tiny_data)

msd_add_script_test(replay SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/replay.sh TIMEOUT 300)
set_tests_properties(replay PROPERTIES FIXTURES_REQUIRED tiny_data)
# The Python package: pytest on the ranks of a job, and the example trainer.
if(MSD_PYTHON)
  # configs_and_demos: every file in configs/, tools/demo.sh and tools/train-demo.sh;
  # bench_trainer: tools/bench-trainer.sh (the real trainer bench) at a tiny size.
  msd_add_script_test(python_device SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/python_device.sh TIMEOUT 120)
  foreach(script python_job python_faults train_gpt configs_and_demos bench_trainer)
    msd_add_script_test(${script} SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/${script}.sh TIMEOUT 600)
    set_tests_properties(${script} PROPERTIES FIXTURES_REQUIRED tiny_data)
  endforeach()
endif()
msd_add_script_test(network_path SCRIPT ${PROJECT_SOURCE_DIR}/tests/scripts/network_path.sh TIMEOUT 300 SKIPPABLE)
set_tests_properties(network_path PROPERTIES FIXTURES_REQUIRED tiny_data)
