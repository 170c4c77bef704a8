# Fully static executables from Debian's packages (CAPTF_STATIC, the
# release-static preset): the manager image holds the two binaries and the
# CA bundle and nothing else (docs/decisions/release.md, "A static manager").
#
# captf_link_static(TARGET) links TARGET with `-static`, which takes only
# static archives, so every library of the target's link closure must be
# one:
# - Imported targets of Debian's CMake packages (absl::*, OpenSSL::*,
#   ZLIB::ZLIB, protobuf::libprotobuf, gRPC::*, yaml-cpp, c-ares, re2) point
#   at shared objects, each with its static archive beside it
#   (libfoo.so.N -> libfoo.a): the closure walk substitutes the archive.
#   A shared object without one stops the configure step with its name.
# - pkg-config's imported targets (PkgConfig::LIBGIT2) and FindLibArchive's
#   name the shared object and nothing else: their link interface becomes
#   the closure `pkg-config --static` lists (libgit2: mbedTLS, http_parser,
#   pcre2, libssh2, whose own .pc omits its dependencies so they are added;
#   libarchive: nettle, lzma, zstd, bz2, ...), each as its archive. Debian
#   ships no archive of libacl and liblz4, which libarchive lists: they are
#   left out, which links because the manager reads tar, gzip and zstd only
#   (lint/oci/extract.cc) and never the disk-ACL or lz4 parts; a new use of
#   them fails at link time with the undefined symbols.
# - spdlog and fmt, shared only in Debian: Dependencies.cmake defines their
#   targets header-only under CAPTF_STATIC.
# - GSSAPI (MIT Kerberos, shared only), which libgit2.a calls for HTTP
#   Negotiate: static_gssapi.cc stands in for it in executables that link
#   libgit2; Negotiate is then unsupported and Basic auth is used
#   (docs/decisions/git-sources.md).
# glibc's static libc resolves host names through its built-in `files` and
# `dns` sources (/etc/hosts, /etc/resolv.conf: the pod's), without any NSS
# module to load.
#
# The walk runs deferred, at the end of the top-level directory, so every
# target of the closure is defined whichever folder defines it.

if(NOT CAPTF_STATIC)
  function(captf_link_static target)
    message(FATAL_ERROR "captf_link_static(${target}) needs CAPTF_STATIC=ON (the release-static preset)")
  endfunction()
  return()
endif()

# The archives of a pkg-config module's static closure (`pkg-config
# --static --libs`, as pkg_check_modules read it into PREFIX_STATIC_*), in
# its order. A library without an archive is left out with a status line.
function(_captf_pkg_static_archives prefix out)
  set(archives "")
  foreach(name IN LISTS ${prefix}_STATIC_LIBRARIES)
    string(MAKE_C_IDENTIFIER "${name}" id)
    find_library(CAPTF_STATIC_ARCHIVE_${id} NAMES lib${name}.a
                 HINTS ${${prefix}_STATIC_LIBRARY_DIRS} NO_CACHE)
    if(CAPTF_STATIC_ARCHIVE_${id})
      list(APPEND archives "${CAPTF_STATIC_ARCHIVE_${id}}")
    else()
      message(STATUS "static link: no lib${name}.a for ${prefix}, left out of the closure")
    endif()
  endforeach()
  set(${out} "${archives}" PARENT_SCOPE)
endfunction()

if(TARGET PkgConfig::LIBGIT2)
  _captf_pkg_static_archives(LIBGIT2 git2_closure)
  _captf_pkg_static_archives(LIBSSH2 ssh2_closure)
  set_target_properties(PkgConfig::LIBGIT2 PROPERTIES
    INTERFACE_LINK_LIBRARIES "${git2_closure};${ssh2_closure};Threads::Threads"
    INTERFACE_LINK_DIRECTORIES "")
endif()
if(TARGET LibArchive::LibArchive)
  pkg_check_modules(CAPTF_LIBARCHIVE REQUIRED libarchive)
  _captf_pkg_static_archives(CAPTF_LIBARCHIVE archive_closure)
  set_target_properties(LibArchive::LibArchive PROPERTIES
    INTERFACE_LINK_LIBRARIES "${archive_closure};Threads::Threads")
endif()

# Compiled once, linked into each static executable that links libgit2.
add_library(captf_static_gssapi OBJECT ${CMAKE_CURRENT_LIST_DIR}/static_gssapi.cc)
target_link_libraries(captf_static_gssapi PRIVATE project_options project_warnings)

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

# Breadth-first over LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES from
# `target`: every imported library's shared object becomes its archive.
function(_captf_link_static_closure target)
  set(queue ${target})
  set(seen "")
  while(queue)
    list(POP_FRONT queue item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    string(REGEX REPLACE "^::@\\([^)]*\\);?" "" item "${item}")
    if(item STREQUAL "" OR item IN_LIST seen)
      continue()
    endif()
    if(NOT TARGET ${item})
      if(item MATCHES "\\.so(\\.[0-9.]+)?$")
        message(FATAL_ERROR "${target} links the shared object ${item}, which -static cannot take")
      endif()
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
            message(FATAL_ERROR "${target} links ${item}: no static archive beside ${location}")
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
  if("PkgConfig::LIBGIT2" IN_LIST seen)
    target_link_libraries(${target} PRIVATE captf_static_gssapi)
  endif()
endfunction()

# captf_link_static(TARGET): TARGET, an executable, links fully static.
function(captf_link_static target)
  target_link_options(${target} PRIVATE -static)
  # A deferred call's arguments are evaluated when it runs: the name is
  # spelled into the call now.
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${PROJECT_SOURCE_DIR}]]
                                           CALL _captf_link_static_closure [[${target}]])")
endfunction()
