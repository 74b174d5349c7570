# Helpers that register Blink's tests with ctest, with labels `unit`, `mpi`, `e2e`
# (and `lint`) so that `ctest -L mpi` runs a subset.
include(GoogleTest)
find_package(GTest 1.10 REQUIRED)

# How every MPI test is launched: as root in containers, more ranks than cores,
# no busy polling and no core binding (two ctest jobs would otherwise share cores
# that Open MPI pinned).
set(BLINK_MPIEXEC_FLAGS
  --allow-run-as-root --oversubscribe --bind-to none
  --mca mpi_yield_when_idle 1 --mca rmaps_base_oversubscribe 1
  CACHE STRING "Flags mpirun gets in the test suite")
set(BLINK_MPI_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_hwloc_base_binding_policy=none")

# Sanitized code runs several times slower (and LeakSanitizer's full stack
# unwinding on every allocation slower still): scale every test's time limit.
if(BLINK_SANITIZE)
  set(BLINK_TEST_TIMEOUT_FACTOR 10)
else()
  set(BLINK_TEST_TIMEOUT_FACTOR 1)
endif()
math(EXPR BLINK_UNIT_TIMEOUT "120 * ${BLINK_TEST_TIMEOUT_FACTOR}")

# blink_add_unit_test(<name> SOURCES <files...> [LIBS <targets...>])
function(blink_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE blink_internal blink_build_flags GTest::gtest_main ${ARG_LIBS})
  gtest_discover_tests(${name}
    TEST_PREFIX "${name}."
    PROPERTIES LABELS unit TIMEOUT ${BLINK_UNIT_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()

# blink_add_mpi_test(<name> SOURCES <files...> NP <counts...> [LIBS <targets...>])
# One ctest per rank count, named <name>.np<N>, run under mpirun.
function(blink_add_mpi_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;NP;LIBS;ENV" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * ${BLINK_TEST_TIMEOUT_FACTOR}")
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/mpi/mpi_gtest_main.cpp)
  target_link_libraries(${name} PRIVATE blink_internal blink_build_flags GTest::gtest ${ARG_LIBS})
  # Well under the ctest limit, so that ranks stuck after a failure end with a message.
  math(EXPR _watchdog "120 * ${BLINK_TEST_TIMEOUT_FACTOR}")
  target_compile_definitions(${name} PRIVATE MPI_TEST_WATCHDOG_SECONDS=${_watchdog})
  foreach(np IN LISTS ARG_NP)
    add_test(NAME ${name}.np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${BLINK_MPIEXEC_FLAGS} -np ${np} $<TARGET_FILE:${name}>)
    # ctest clamps PROCESSORS to -j, so a wide test runs alone on a small machine.
    set_tests_properties(${name}.np${np} PROPERTIES
      LABELS mpi PROCESSORS ${np} TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${BLINK_MPI_TEST_ENV};${ARG_ENV}")
  endforeach()
endfunction()
