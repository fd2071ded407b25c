# Test registration helpers: unit tests (Catch2, no MPI) and MPI tests run
# through mpiexec at several rank counts, each with a timeout.
find_program(MSD_MPIEXEC NAMES mpiexec mpirun REQUIRED)

# Under MSD_SANITIZE every test gets the sanitizers' settings: any ASan or
# UBSan report fails the test, and LeakSanitizer ignores only leaks inside
# MPI, HDF5 and hwloc (tests/sanitizer/lsan.supp).
set(MSD_SANITIZER_ENV "")
if(MSD_SANITIZE)
  set(MSD_SANITIZER_ENV
      "OMPI_MCA_mca_base_component_disable_dlclose=1"
      "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
      "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/sanitizer/lsan.supp:print_suppressions=0")
endif()
# Under MSD_SANITIZE_THREAD any ThreadSanitizer report fails the test
# (halt_on_error); tests/sanitizer/tsan.supp ignores only reports whose frames
# lie in third-party libraries.
if(MSD_SANITIZE_THREAD)
  set(MSD_SANITIZER_ENV
      "OMPI_MCA_mca_base_component_disable_dlclose=1"
      "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tests/sanitizer/tsan.supp")
endif()
# Processes that run MPI unwind every allocation fully (fast_unwind_on_malloc=0)
# and keep Open MPI's components loaded: their leak stacks then name the
# library that allocated, which lsan.supp matches. Full unwinding makes
# allocation-heavy unit tests several times slower, so they keep the fast one.
function(msd_sanitizer_environment test)
  if(MSD_SANITIZER_ENV)
    get_test_property(${test} LABELS labels)
    set(unwind "")
    if(NOT labels STREQUAL "unit")
      set(unwind ":fast_unwind_on_malloc=0")
    endif()
    set(asan "")
    if(MSD_SANITIZE)
      set(asan "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1${unwind}")
    endif()
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT ${MSD_SANITIZER_ENV} ${asan})
  endif()
endfunction()

add_library(msd_catch_main OBJECT ${PROJECT_SOURCE_DIR}/tests/unit/catch_main.cc)
target_include_directories(msd_catch_main PUBLIC ${PROJECT_SOURCE_DIR}/tests)

# A test that cannot run here (a missing tool or reference) exits with this
# code and ctest reports it as skipped, never as passed (tests/unit/skip.h).
set(MSD_SKIP_RETURN_CODE 77)

# msd_add_unit_test(NAME SOURCES a.cc b.cc DEPS msd_x [TIMEOUT s] [SKIPPABLE tag ...])
# Each SKIPPABLE tag's cases (those that may MSD_SKIP) run as a test of their
# own, NAME.<tag>, reported as skipped when they skip; NAME runs the rest. The
# test main fails a run in which no case ran.
function(msd_add_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;DEPS;SKIPPABLE" ${ARGN})
  add_executable(${name} ${T_SOURCES} $<TARGET_OBJECTS:msd_catch_main>)
  set_property(GLOBAL APPEND PROPERTY MSD_CORE_TEST_TARGETS ${name})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${T_DEPS})
  target_compile_definitions(${name} PRIVATE MSD_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
                                             MSD_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(rest "")
  foreach(tag IN LISTS T_SKIPPABLE)
    add_test(NAME ${name}.${tag} COMMAND ${name} "[${tag}]")
    set_tests_properties(${name}.${tag} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS unit
                         SKIP_RETURN_CODE ${MSD_SKIP_RETURN_CODE})
    msd_sanitizer_environment(${name}.${tag})
    string(APPEND rest "~[${tag}]")
  endforeach()
  add_test(NAME ${name} COMMAND ${name} ${rest})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS unit)
  msd_sanitizer_environment(${name})
endfunction()

# The mpiexec prefix every MPI test and script uses: root-safe, oversubscribed
# (tests run more ranks than the machine has cores), ranks that wait yield.
set(MSD_MPIEXEC_FLAGS --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --mca osc sm,pt2pt)

# msd_core_test_target(TARGET ...): executables the unit, MPI and fuzz tests
# run; the target msd-core-tests builds just those (the sanitizer suite).
function(msd_core_test_target)
  set_property(GLOBAL APPEND PROPERTY MSD_CORE_TEST_TARGETS ${ARGN})
endfunction()

# msd_thread_test(NAME SOURCES a.cc ... DEPS msd_x [CASES spec]): the test
# files whose cases start threads, built under MSD_SANITIZE_THREAD as an
# executable and test NAME of their own (label thread), running the cases
# of the Catch2 test spec (all without CASES; names, wildcards, [tags],
# commas for "or"). The target msd-thread-tests builds just these
# executables: build/tsan compiles only these files and the parts they link,
# not the rest of each unit test. In other builds they are not registered:
# the same files run in their unit tests.
function(msd_thread_test name)
  cmake_parse_arguments(T "" "CASES" "SOURCES;DEPS" ${ARGN})
  if(NOT MSD_SANITIZE_THREAD)
    return()
  endif()
  add_executable(${name} ${T_SOURCES} $<TARGET_OBJECTS:msd_catch_main>)
  set_property(GLOBAL APPEND PROPERTY MSD_THREAD_TEST_TARGETS ${name})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${T_DEPS})
  target_compile_definitions(${name} PRIVATE MSD_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
                                             MSD_BINARY_DIR="${PROJECT_BINARY_DIR}")
  add_test(NAME ${name} COMMAND ${name} ${T_CASES})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS thread)
  msd_sanitizer_environment(${name})
endfunction()

# msd_add_mpi_test(NAME NP 2 4 8 COMMAND exe args... [TIMEOUT s])
# Registers NAME.npN for each N.
function(msd_add_mpi_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "NP;COMMAND" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  foreach(np IN LISTS T_NP)
    add_test(NAME ${name}.np${np}
             COMMAND ${MSD_MPIEXEC} -n ${np} ${MSD_MPIEXEC_FLAGS} ${T_COMMAND})
    set_tests_properties(${name}.np${np} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS mpi PROCESSORS 2)
    msd_sanitizer_environment(${name}.np${np})
  endforeach()
endfunction()

# msd_add_script_test(NAME SCRIPT file [ARGS ...] [TIMEOUT s] [SKIPPABLE]): a
# bash script given the build dir, the source dir and the mpiexec prefix in its
# environment. SKIPPABLE: the script exits with MSD_SKIP_RETURN_CODE (given to
# it as MSD_SKIP_CODE) when it cannot run here, and ctest reports a skip.
function(msd_add_script_test name)
  cmake_parse_arguments(T "SKIPPABLE" "TIMEOUT;SCRIPT" "ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  string(REPLACE ";" " " mpiexec_line "${MSD_MPIEXEC};${MSD_MPIEXEC_FLAGS}")
  add_test(NAME ${name} COMMAND bash ${T_SCRIPT} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS script PROCESSORS 2
    ENVIRONMENT "MSD_BUILD=${PROJECT_BINARY_DIR};MSD_SOURCE=${PROJECT_SOURCE_DIR};MSD_MPIEXEC=${mpiexec_line};MSD_SKIP_CODE=${MSD_SKIP_RETURN_CODE}")
  if(T_SKIPPABLE)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${MSD_SKIP_RETURN_CODE})
  endif()
  msd_sanitizer_environment(${name})
endfunction()
