# Batched ("unity") compilation of first-party sources
# (docs/decisions/ci-budget.md, "Compile less").
#
# captf_unity(TARGET) replaces TARGET's first-party .cc sources by generated
# batch files of at most CAPTF_UNITY_BATCH_SIZE sources each, every one a
# list of `#include "folder/file.cc"` lines. A batch parses the heavy headers
# (nlohmann/json, GoogleTest, Abseil, ...) once instead of once per source,
# and emits each inline function they instantiate once: on the dev preset's
# ASan + UBSan code that halves the compile time of a test folder.
#
# CMake's own UNITY_BUILD is not used because it writes absolute paths into
# the batch files, so a second checkout of the same commit (every CI run is
# a fresh clone) would miss the compiler cache for every batch; these batch
# files name each source by its path from the repository root, which is an
# include directory of every target (CMakeLists.txt).
#
# Generated sources (protobuf) and single-source targets stay as they are.
# scripts/tidy.py reads the batch files back to check each source on its own.
# CAPTF_UNITY_BATCH_SIZE=0 turns batching off (a plain build, one object per
# source), which is what to use when chasing a missing #include.
set(CAPTF_UNITY_BATCH_SIZE 8 CACHE STRING
    "First-party sources compiled per batch (cmake/Unity.cmake); 0: no batches")

function(captf_unity target)
  if(NOT CAPTF_UNITY_BATCH_SIZE OR CAPTF_UNITY_BATCH_SIZE LESS 2)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(batched "")
  set(kept "")
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    file(RELATIVE_PATH relative "${PROJECT_SOURCE_DIR}" "${path}")
    string(FIND "${path}" "${PROJECT_BINARY_DIR}/" in_build)
    if(path MATCHES "\\.cc$" AND NOT relative MATCHES "^\\.\\./" AND in_build EQUAL -1)
      list(APPEND batched "${relative}")
    else()
      list(APPEND kept "${source}")
    endif()
  endforeach()
  list(LENGTH batched count)
  if(count LESS 2)
    return()
  endif()
  set(batch 0)
  set(in_batch 0)
  set(content "")
  set(unity_sources "")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.unity")
  foreach(relative IN LISTS batched)
    string(APPEND content "#include \"${relative}\"\n")
    math(EXPR in_batch "${in_batch} + 1")
    if(in_batch EQUAL CAPTF_UNITY_BATCH_SIZE)
      file(CONFIGURE OUTPUT "${dir}/batch_${batch}.cc" CONTENT "${content}")
      list(APPEND unity_sources "${dir}/batch_${batch}.cc")
      math(EXPR batch "${batch} + 1")
      set(in_batch 0)
      set(content "")
    endif()
  endforeach()
  if(in_batch GREATER 0)
    file(CONFIGURE OUTPUT "${dir}/batch_${batch}.cc" CONTENT "${content}")
    list(APPEND unity_sources "${dir}/batch_${batch}.cc")
  endif()
  set_property(TARGET ${target} PROPERTY SOURCES ${kept} ${unity_sources})
endfunction()
