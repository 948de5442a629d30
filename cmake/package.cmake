# `cpack -G DEB` (run in the build directory; scripts/make_deb.sh does it):
# one dccc_VERSION_ARCH.deb holding everything cmake/install.cmake installs,
# under /usr. Depends comes from dpkg-shlibdeps (the shared libraries dccc
# and libdccrt.so link: libllvm19, libz3-4, libantlr4-runtime4.9, libfmt9,
# libedit2, libstdc++6, libc6, ...) plus what `dccc -o` runs: a C compiler
# and the C library's development files (libmvec, libm). The Python package
# (/usr/lib/python3/dist-packages/dccc) needs python3 and NumPy: recommended,
# not required, since the compiler works without them.
set(CPACK_PACKAGE_NAME dccc)
set(CPACK_PACKAGE_VENDOR "the dccc project")
set(CPACK_PACKAGE_CONTACT "dccc maintainers <dccc@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "compiler for DCC, a language of coupled ragged tensors")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "dccc compiles DCC programs (.toy), whose ragged tensors are coupling types, to CPU shared libraries with a "
       "C ABI (LLVM) or to CUDA kernels; it checks every access in bounds with Z3.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "gcc | c-compiler, libc6-dev")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-cuda-toolkit, cmake (>= 3.20), pkg-config")
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
