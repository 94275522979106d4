# Debian packages from an install tree (`cpack -G DEB`; scripts/package.sh builds them from a
# clean /usr configuration). One package per install COMPONENT, in Debian's naming:
#   runtime -> libweft0     libweft.so.0*                      (the soname's package)
#   dev     -> libweft-dev  headers, libweft.so, weft.pc, find_package(weft) files
#   tools   -> weft-tools   weftrun, weft_tune, the *_perf programs
# Anything else (the torch backend, the examples) is left out of the packages. docs/PACKAGING.md
# says what each package holds and how it is checked.

set(WEFT_PACKAGE_MAINTAINER "The weft authors <weft@localhost>" CACHE STRING
  "The packages' Maintainer field (name <email>)")
set(WEFT_PACKAGE_HOMEPAGE "" CACHE STRING "The packages' Homepage field (left out when empty)")
set(WEFT_PACKAGE_RELEASE 1 CACHE STRING "The Debian revision appended to the version (0.1.0-1)")

# Debian policy keeps RPATHs out of /usr: the loader finds libweft in the system libdir there. The
# perf tools' $ORIGIN RPATH (perf/CMakeLists.txt) is for installs under any other prefix.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND TARGET all_reduce_perf)
  get_property(perf_targets DIRECTORY ${PROJECT_SOURCE_DIR}/perf PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${perf_targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      set_target_properties(${target} PROPERTIES INSTALL_RPATH "")
    endif()
  endforeach()
endif()

# Debian wants a copyright file in every package's doc folder.
foreach(entry runtime:libweft0 dev:libweft-dev tools:weft-tools)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 component)
  list(GET entry 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE RENAME copyright COMPONENT ${component}
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package})
endforeach()

set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "The weft authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${WEFT_PACKAGE_MAINTAINER}")
# Empty: each package's summary is the first line of its own description below (CPack would put
# the project's in front of each).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # <package>_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE ${WEFT_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${WEFT_PACKAGE_MAINTAINER}")
if(WEFT_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${WEFT_PACKAGE_HOMEPAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies (libc6, libssl3, libhwloc15, libstdc++6, ...) come from dpkg-shlibdeps.
# libweft.so.0 itself is found in the build tree, where no package owns it; the component
# dependencies below name libweft0 instead, at this exact version.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libweft0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# A shlibs file (libweft0's only: no other package holds a shared object), so that programs
# built against libweft get "libweft0 (>= <version>)" from dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# ldconfig runs through dpkg's trigger, as Debian asks of a library package.
file(WRITE ${PROJECT_BINARY_DIR}/deb/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/triggers)
# libibverbs and libpmix are loaded at run time when present, so they are suggestions only.
set(suggests "")
if(WEFT_RDMA_BUILT)
  list(APPEND suggests libibverbs1)
endif()
if(WEFT_PMIX_BUILT)
  list(APPEND suggests libpmix2)
endif()
list(JOIN suggests ", " CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "NCCL-like collective communication library
weft runs all-reduce, all-gather, broadcast, reduce-scatter, all-to-all and
point-to-point calls among processes, over shared memory, TCP and RDMA.

This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libweft-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "NCCL-like collective communication library - development files
weft runs all-reduce, all-gather, broadcast, reduce-scatter, all-to-all and
point-to-point calls among processes, over shared memory, TCP and RDMA.

This package holds the C headers, the libweft.so link, weft.pc for
pkg-config and the CMake package files for find_package(weft).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME weft-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "NCCL-like collective communication library - launcher, benchmarks
weft runs all-reduce, all-gather, broadcast, reduce-scatter, all-to-all and
point-to-point calls among processes, over shared memory, TCP and RDMA.

This package holds weftrun, the launcher; weft_tune, which prints the
tuner's choices; and the *_perf benchmarks, weft's nccl-tests.")

include(CPack)
