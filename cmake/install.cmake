# What `cmake --install build --prefix P` installs (and `cpack -G DEB`
# packages):
#   bin/dccc                       the compiler (tools/)
#   lib/dccc/libdccrt.a            the runtime dccc links into libraries
#   include/dccc/dccrt.h           the runtime's header
#   LIBDIR/libdccrt.so.X.Y         the runtime as a shared library (+ .so link)
#   LIBDIR/cmake/dccc/             dcccConfig.cmake: find_package(dccc) gives
#                                  dccc::dccc, dccc::dccrt, dccc_add_library()
#   LIBDIR/pkgconfig/dccrt.pc      pkg-config for the shared runtime
#   share/dccc/examples/           the example programs and hosts
#   share/dccc/std/                the standard library (`import "std/nn.toy"`;
#                                  frontend/imports.h finds it beside bin/)
#   lib/python3/dist-packages/dccc the Python package (python/dccc; its
#                                  dccc.compile finds bin/dccc beside it)
#   share/doc/dccc/                README, docs/
# An installed dccc finds lib/dccc and include/dccc relative to its own
# executable (tools/runtime_paths.h), so the prefix is relocatable; the
# CMake and pkg-config files locate the prefix relative to themselves too.
include(CMakePackageConfigHelpers)

# Installing (and cpack, which installs into its staging folder) copies what
# is built and builds nothing: CTest's install/deb test packages a build
# another ninja may be testing at the same time.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(DCCC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dccc)
install(EXPORT dcccTargets NAMESPACE dccc:: DESTINATION ${DCCC_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/dcccConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/dcccConfig.cmake
                              INSTALL_DESTINATION ${DCCC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dcccConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dcccConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/dcccConfigVersion.cmake
              cmake/dcccAddLibrary.cmake
        DESTINATION ${DCCC_CMAKE_DIR} COMPONENT dev)

# pkg-config: the prefix relative to the .pc file, so it moves with it.
file(RELATIVE_PATH DCCC_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" DCCC_PC_TO_PREFIX "${DCCC_PC_TO_PREFIX}")
configure_file(cmake/dccrt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dccrt.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dccrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dccc/examples COMPONENT compiler
        FILES_MATCHING PATTERN "*.toy" PATTERN "*.c" PATTERN "*.cpp" PATTERN "*.cu" PATTERN "*.h")
install(DIRECTORY stdlib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dccc/std COMPONENT compiler
        FILES_MATCHING PATTERN "*.toy")
# The Python package where Debian's python3 looks for packages of /usr
# (/usr/lib/python3/dist-packages); for another prefix, PYTHONPATH names it.
# Not CMAKE_INSTALL_LIBDIR: that is lib/x86_64-linux-gnu under /usr.
set(DCCC_PYTHON_DIR lib/python3/dist-packages CACHE STRING "where the Python package is installed, under the prefix")
install(DIRECTORY python/dccc DESTINATION ${DCCC_PYTHON_DIR} COMPONENT compiler
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT compiler)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT compiler FILES_MATCHING PATTERN "*.md")

include(cmake/package.cmake)
