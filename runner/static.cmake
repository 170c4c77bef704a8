# Linking the runner fully static from Debian's packages.
#
# The imported targets Debian's CMake packages define (absl::*, OpenSSL::*,
# ZLIB::ZLIB, protobuf::libprotobuf) point at shared objects, which `-static`
# cannot link; each has a static archive beside it (libfoo.so.N -> libfoo.a),
# which captf_runner_link_static() substitutes in the whole link closure of
# a target.
#
# libgit2 (captf_git, the fetch step): pkg-config's imported target
# PkgConfig::LIBGIT2 names libgit2.so by full path and nothing else, so its
# link interface is replaced by the static closure `pkg-config --static`
# gives (LIBGIT2_STATIC_LIBRARIES: git2 mbedtls mbedx509 mbedcrypto
# http_parser ssh2 rt pcre2-8 z) followed by libssh2's own (libgit2.pc lists
# -lssh2 without its dependencies: ssl crypto gpg-error dl z), as plain
# names: under -static the linker takes each libfoo.a. libgit2.a also calls
# GSSAPI (HTTP Negotiate), which Debian ships shared only: static_gssapi.cc
# stands in for it (no mechanism available).
#
# gRPC (the run reports' client, runner/report.cc): Debian ships static
# archives of gRPC and its dependencies (libgrpc++.a, libgrpc.a, libgpr.a,
# libupb.a, libaddress_sorting.a, libre2.a, libcares.a), which the same
# substitution takes.

function(_captf_static_archive_of shared out)
  get_filename_component(dir "${shared}" DIRECTORY)
  get_filename_component(name "${shared}" NAME)
  string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive "${name}")
  if(archive STREQUAL name)
    set(${out} "" PARENT_SCOPE)
  else()
    set(${out} "${dir}/${archive}" PARENT_SCOPE)
  endif()
endfunction()

function(captf_runner_link_static target)
  target_sources(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/static_gssapi.cc)
  if(TARGET PkgConfig::LIBGIT2)
    set_target_properties(PkgConfig::LIBGIT2 PROPERTIES
      INTERFACE_LINK_LIBRARIES "${LIBGIT2_STATIC_LIBRARIES};${LIBSSH2_STATIC_LIBRARIES};Threads::Threads"
      INTERFACE_LINK_DIRECTORIES "${LIBGIT2_STATIC_LIBRARY_DIRS};${LIBSSH2_STATIC_LIBRARY_DIRS}")
  endif()

  set(queue ${target})
  set(seen "")
  while(queue)
    list(POP_FRONT queue item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    string(REGEX REPLACE "^::@\\([^)]*\\);?" "" item "${item}")
    if(item STREQUAL "" OR item IN_LIST seen OR NOT TARGET ${item})
      continue()
    endif()
    list(APPEND seen ${item})
    get_target_property(imported ${item} IMPORTED)
    get_target_property(type ${item} TYPE)
    if(imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
      foreach(prop IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
                   IMPORTED_LOCATION_RELWITHDEBINFO IMPORTED_LOCATION_DEBUG
                   IMPORTED_LOCATION_NOCONFIG)
        get_target_property(location ${item} ${prop})
        if(location AND location MATCHES "\\.so(\\.[0-9.]+)?$")
          _captf_static_archive_of("${location}" archive)
          if(NOT EXISTS "${archive}")
            message(FATAL_ERROR "${item}: no static archive beside ${location}")
          endif()
          set_target_properties(${item} PROPERTIES ${prop} "${archive}")
        endif()
      endforeach()
    endif()
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(links ${item} ${prop})
      if(links)
        list(APPEND queue ${links})
      endif()
    endforeach()
  endwhile()
endfunction()
