# Injected by the `fuzz` preset (CMAKE_PROJECT_INCLUDE): runs right after
# project() and before anything else in the top-level CMakeLists.txt.
#
# 1. C: LLVM's CMake package (backend/llvm) probes for libedit with
#    check_include_file, a C compile. The other presets enable C through the
#    runtime's C ABI test; the fuzz preset builds no tests, so enable it here.
enable_language(C)

# 2. Debian's ANTLR 4.9 runtime headers do not compile with clang:
# misc/InterpreterDataReader.h user-defines `InterpreterData() {}`, whose
# member dfa::Vocabulary has a deleted default constructor (a const
# std::vector member that clang, unlike gcc, does not consider
# const-default-constructible). antlr4-runtime.h includes that header
# unconditionally. With clang we therefore compile against a copy of the
# headers in the build tree with that one constructor defaulted (and so
# deleted, harmlessly: nothing calls it). The system headers are untouched.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  return()
endif()
find_path(_dccc_system_antlr4 antlr4-runtime.h PATH_SUFFIXES antlr4-runtime REQUIRED)
set(_dccc_copy ${CMAKE_BINARY_DIR}/antlr4-runtime-clang)
set(_dccc_header ${_dccc_copy}/misc/InterpreterDataReader.h)
if(NOT EXISTS ${_dccc_header})
  file(COPY ${_dccc_system_antlr4}/ DESTINATION ${_dccc_copy})
  file(READ ${_dccc_header} _dccc_text)
  string(REPLACE "InterpreterData() {};" "InterpreterData() = default;" _dccc_patched "${_dccc_text}")
  if(_dccc_patched STREQUAL _dccc_text)
    message(STATUS "fuzz_preset: InterpreterDataReader.h needs no patch")
  endif()
  file(WRITE ${_dccc_header} "${_dccc_patched}")
endif()
set(ANTLR4_INCLUDE_DIR ${_dccc_copy} CACHE PATH "ANTLR4 runtime headers (patched copy for clang)" FORCE)
