# Every library comes from Debian's packages (scripts/bootstrap.sh);
# docs/decisions/build-libraries.md says why each was chosen.
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(absl REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_package(LibArchive REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 QUIET)
# libgit2 (Git module sources, contract/git.h) has no CMake package in
# Debian: pkg-config. libssh2 only for its static closure (runner/static.cmake):
# libgit2.pc lists -lssh2 without libssh2's own dependencies.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)
pkg_check_modules(LIBSSH2 REQUIRED libssh2)
if(CAPTF_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark QUIET)
endif()
