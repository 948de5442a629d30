#pragma once
// Where the unit tests find the checkout's programs, the runtime and the host
// compiler. Only tests/unit/test_paths.cpp holds the absolute paths (as its
// compile definitions), so every other test object compiles to the same
// thing in any checkout, and a clean clone's build takes it from ccache
// (scripts/build.sh sets CCACHE_BASEDIR; a path string in a preprocessed
// file would make each clone's object new). Each accessor reads an
// environment variable of the same name first, for a test binary run away
// from the checkout that built it (the GPU bundle, scripts/gpu_bundle.sh).

#include <string>

namespace test_paths {

std::string source_dir();           ///< DCCC_SOURCE_DIR: the checkout
std::string examples_dir();         ///< DCCC_EXAMPLES_DIR: <checkout>/examples
std::string lang_run_dir();         ///< DCCC_LANG_RUN_DIR: <checkout>/tests/lang/run
std::string runtime_include();      ///< DCCC_RUNTIME_INCLUDE: runtime/include
std::string runtime_lib();          ///< DCCC_RUNTIME_LIB: the built libdccrt.a
std::string cuda_schedules_dirs();  ///< DCCC_CUDA_SCHEDULES_DIRS: colon-separated folders
std::string cxx();                  ///< DCCC_CXX: the C++ compiler that built the tests
/// DCCC_EMU_PCH_DIR: the emulated programs' precompiled headers
/// (tests/unit/backend/CMakeLists.txt); empty where they are not built.
std::string emu_pch_dir();
/// DCCC_TEST_CCACHE: the ccache the tests compile generated programs
/// through (CMake option DCCC_TEST_CCACHE, on where ccache is installed);
/// empty for none, and where the variable is `off` or `0`.
std::string ccache();

}  // namespace test_paths
