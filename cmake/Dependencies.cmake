# Every library comes from Debian's packages (scripts/bootstrap.sh);
# docs/decisions/build-libraries.md says why each was chosen.
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(absl REQUIRED)
if(CAPTF_STATIC)
  # Debian ships spdlog and fmt as shared libraries only, which -static
  # cannot link: a static build compiles both header-only, under the targets
  # their packages would define, so no folder links them differently
  # (cmake/Static.cmake). Their headers are in the default include path.
  find_path(CAPTF_FMT_HEADERS fmt/format.h REQUIRED)
  find_path(CAPTF_SPDLOG_HEADERS spdlog/spdlog.h REQUIRED)
  foreach(fmt_target fmt::fmt fmt::fmt-header-only)
    add_library(${fmt_target} INTERFACE IMPORTED)
    set_target_properties(${fmt_target} PROPERTIES INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
  endforeach()
  foreach(spdlog_target spdlog::spdlog spdlog::spdlog_header_only)
    add_library(${spdlog_target} INTERFACE IMPORTED)
    set_target_properties(${spdlog_target} PROPERTIES
      INTERFACE_COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL"
      INTERFACE_LINK_LIBRARIES "Threads::Threads;fmt::fmt")
  endforeach()
else()
  find_package(spdlog REQUIRED)
  find_package(fmt REQUIRED)
endif()
find_package(ZLIB REQUIRED)
find_package(LibArchive REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 QUIET)
# libgit2 (Git module sources, contract/git.h) has no CMake package in
# Debian: pkg-config. libssh2 only for its static closure (cmake/Static.cmake):
# libgit2.pc lists -lssh2 without libssh2's own dependencies.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)
pkg_check_modules(LIBSSH2 REQUIRED libssh2)
if(CAPTF_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # JSON Schema validation of contract/schemas/ in the tests (header-only,
  # with its nlohmann/json adapter; docs/decisions/build-libraries.md).
  find_package(valijson REQUIRED)
  find_package(benchmark QUIET)
endif()

# captf_link_static(): the release-static preset's fully static executables.
include(${CMAKE_CURRENT_LIST_DIR}/Static.cmake)
