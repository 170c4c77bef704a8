# Compiler settings live on INTERFACE targets, linked privately into
# first-party targets and never into generated protobuf code.
add_library(project_options INTERFACE)
add_library(project_warnings INTERFACE)

target_compile_options(project_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(CAPTF_WERROR)
  target_compile_options(project_warnings INTERFACE -Werror)
endif()

if(CAPTF_SANITIZE)
  target_compile_options(project_options INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(project_options INTERFACE -fsanitize=address,undefined)
endif()
target_compile_definitions(project_options INTERFACE
  $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>)

# captf_library(NAME SOURCES... [DEPS ...]): one static library per folder.
function(captf_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE project_options project_warnings)
endfunction()

# captf_executable(NAME SOURCES... [DEPS ...]): a thin main.
function(captf_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} project_options project_warnings)
  if(CAPTF_STATIC)
    target_link_options(${name} PRIVATE -static)
  endif()
endfunction()

# captf_test(NAME LABEL SOURCES... [DEPS ...]): one gtest binary labelled
# unit, integration, e2e or capi. Unit cases are registered one by one.
# A binary of a higher tier shares one rig between its cases (started once
# per binary), so it is registered as a single ctest test.
function(captf_test name label)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main
                        project_options project_warnings)
  set(env "CAPTF_SOURCE_DIR=${PROJECT_SOURCE_DIR};CAPTF_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(label STREQUAL "unit")
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
                         PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${env}")
  else()
    add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
    set_tests_properties(${name} PROPERTIES LABELS ${label} TIMEOUT 1800 ENVIRONMENT "${env}")
  endif()
endfunction()
