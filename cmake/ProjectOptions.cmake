# Compiler settings live on INTERFACE targets, linked privately into
# first-party targets and never into generated protobuf code.
add_library(project_options INTERFACE)
add_library(project_warnings INTERFACE)

target_compile_options(project_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  # GCC 12 reports null dereferences inside nlohmann::json's iterators once
  # they are inlined at -O2 and above (false positives from a system header),
  # so optimised builds go without it.
  $<$<CONFIG:Debug>:-Wnull-dereference>)
# -Werror belongs to the dev preset, which every CI run builds: GCC 12's
# flow-based warnings at -O3 (-Wrestrict, -Wmismatched-new-delete) misfire
# inside libstdc++, so optimised presets report warnings without failing.
if(CAPTF_WERROR)
  target_compile_options(project_warnings INTERFACE -Werror)
endif()

if(CAPTF_SANITIZE)
  target_compile_options(project_options INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(project_options INTERFACE -fsanitize=address,undefined)
  # Position-dependent executables: a PIE under UBSan carries some four
  # million relative relocations (each check's source location), about a
  # quarter of every test binary on disk and of its link
  # (docs/decisions/ci-budget.md, "Link less").
  target_compile_options(project_options INTERFACE -fno-pie)
  target_link_options(project_options INTERFACE -no-pie)
endif()
target_compile_definitions(project_options INTERFACE
  $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>)

# mold links every executable when installed (scripts/bootstrap.sh installs
# it): the dev preset links some forty ASan executables, each several times
# faster than with ld.bfd (docs/decisions/ci-budget.md, "Link less"). Not in
# the fuzz preset: mold 1.10 lays out the coverage PC tables of a libFuzzer
# binary so that libFuzzer refuses to start ("The size of coverage PC tables
# does not match the number of instrumented PCs").
find_program(CAPTF_MOLD mold)
if(CAPTF_MOLD AND NOT CAPTF_FUZZ)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=mold CAPTF_HAVE_FUSE_LD_MOLD)
  if(CAPTF_HAVE_FUSE_LD_MOLD)
    target_link_options(project_options INTERFACE -fuse-ld=mold)
  endif()
endif()

include(${CMAKE_CURRENT_LIST_DIR}/Unity.cmake)

# captf_library(NAME SOURCES... [DEPS ...]): one static library per folder.
function(captf_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE project_options project_warnings)
  captf_unity(${name})
endfunction()

# captf_executable(NAME SOURCES... [DEPS ...]): a thin main. Fully static
# under CAPTF_STATIC (cmake/Static.cmake).
function(captf_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} project_options project_warnings)
  captf_unity(${name})
  if(CAPTF_STATIC)
    captf_link_static(${name})
  endif()
endfunction()

# captf_test(NAME LABEL SOURCES... [DEPS ...]): one gtest binary labelled
# unit, integration, e2e, capi or fault (the fault matrix on a capi rig,
# docs/decisions/fault-matrix.md). Unit cases are registered one by one.
# A binary of a higher tier shares one rig between its cases (started once
# per process), so it is registered as one ctest test, or as SHARDS (below).
# captf_test_environment(OUT): the ENVIRONMENT of every test entry.
function(captf_test_environment out)
  set(env "CAPTF_SOURCE_DIR=${PROJECT_SOURCE_DIR};CAPTF_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(CAPTF_SANITIZE)
    list(APPEND env "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/test/lsan.supp")
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()

# A rig test (any label but unit) is one ctest test, or with SHARDS n, n
# tests `NAME-shard-I` that each run every n-th case (GoogleTest's own
# sharding) on a rig of their own, so a long binary's cases run side by side
# (docs/decisions/ci-budget.md, "Rig tests side by side"). COST n (minutes,
# roughly) starts a long rig test before the short ones on a machine whose
# ctest has no timings of its own yet, as on every cold CI run.
function(captf_test name label)
  cmake_parse_arguments(ARG "" "SHARDS;COST" "SOURCES;DEPS;ARGS" ${ARGN})
  if(NOT ARG_COST)
    set(ARG_COST 0)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main
                        project_options project_warnings)
  captf_unity(${name})
  captf_test_environment(env)
  if(label STREQUAL "unit")
    # gtest_discover_tests writes each item of a property's list as an
    # argument of its own, so ENVIRONMENT holds one variable and the
    # suppressions go in ENVIRONMENT_MODIFICATION, a property of their own.
    set(props LABELS unit TIMEOUT 120 ENVIRONMENT "CAPTF_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    if(CAPTF_SANITIZE)
      list(APPEND props ENVIRONMENT_MODIFICATION
           "LSAN_OPTIONS=set:suppressions=${PROJECT_SOURCE_DIR}/test/lsan.supp")
    endif()
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES ${props})
  else()
    if(NOT ARG_SHARDS)
      add_test(NAME ${name} COMMAND ${name} --gtest_color=no ${ARG_ARGS})
      set_tests_properties(${name} PROPERTIES LABELS ${label} TIMEOUT 1800 COST ${ARG_COST}
                                               ENVIRONMENT "${env}")
      return()
    endif()
    math(EXPR last "${ARG_SHARDS} - 1")
    foreach(index RANGE ${last})
      add_test(NAME ${name}-shard-${index} COMMAND ${name} --gtest_color=no ${ARG_ARGS})
      set_tests_properties(
        ${name}-shard-${index}
        PROPERTIES LABELS ${label} TIMEOUT 1800 COST ${ARG_COST} ENVIRONMENT
                   "${env};GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${index}")
    endforeach()
  endif()
endfunction()

# libFuzzer targets. In the `fuzz` preset CAPTF_FUZZ is on and every library
# is compiled with -fsanitize=fuzzer-no-link (coverage feedback) plus ASan
# and UBSan, so a target links libFuzzer's main alone. In every other preset
# the target links test/fuzz_replay_main.cc instead and replays its CORPUS
# once as a unit test (`<name>`), so it compiles with the product and its
# seeds stay crash-free under the build's sanitizers.
#   captf_fuzzer(NAME SOURCES ... DEPS ... CORPUS DIR_OR_FILE...)
# Fuzz: build/fuzz/<dir>/NAME -max_total_time=600 CORPUS_DIR [SEEDS...]
function(captf_fuzzer name)
  cmake_parse_arguments(F "" "" "SOURCES;DEPS;CORPUS" ${ARGN})
  if(CAPTF_FUZZ)
    add_executable(${name} ${F_SOURCES})
    target_link_libraries(${name} PRIVATE ${F_DEPS} project_options project_warnings)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    captf_unity(${name})
    return()
  endif()
  if(NOT CAPTF_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${F_SOURCES} ${PROJECT_SOURCE_DIR}/test/fuzz_replay_main.cc)
  target_link_libraries(${name} PRIVATE ${F_DEPS} project_options project_warnings)
  captf_unity(${name})
  set(corpus "")
  foreach(path IN LISTS F_CORPUS)
    list(APPEND corpus "${CMAKE_CURRENT_SOURCE_DIR}/${path}")
  endforeach()
  add_test(NAME ${name} COMMAND ${name} ${corpus})
  captf_test_environment(env)
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${env}")
endfunction()
