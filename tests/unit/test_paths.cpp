// The one test source that carries the checkout's absolute paths
// (tests/unit/test_paths.h says why).
#include "tests/unit/test_paths.h"

#include <cstdlib>

namespace test_paths {
namespace {

std::string from_env(const char* name, const char* built) {
  const char* e = std::getenv(name);
  return e && *e ? e : built;
}

}  // namespace

std::string source_dir() { return from_env("DCCC_SOURCE_DIR", DCCC_TEST_SOURCE_DIR); }
std::string examples_dir() { return from_env("DCCC_EXAMPLES_DIR", DCCC_TEST_SOURCE_DIR "/examples"); }
std::string lang_run_dir() { return from_env("DCCC_LANG_RUN_DIR", DCCC_TEST_SOURCE_DIR "/tests/lang/run"); }
std::string runtime_include() { return from_env("DCCC_RUNTIME_INCLUDE", DCCC_TEST_SOURCE_DIR "/runtime/include"); }
std::string runtime_lib() { return from_env("DCCC_RUNTIME_LIB", DCCC_TEST_RUNTIME_LIB); }
std::string cuda_schedules_dirs() {
  return from_env("DCCC_CUDA_SCHEDULES_DIRS", DCCC_TEST_SOURCE_DIR "/tests/cuda/schedules:" DCCC_TEST_SOURCE_DIR "/tests/host");
}
std::string cxx() { return from_env("DCCC_CXX", DCCC_TEST_CXX); }
std::string emu_pch_dir() { return from_env("DCCC_EMU_PCH_DIR", DCCC_TEST_EMU_PCH_DIR); }
std::string ccache() {
  std::string c = from_env("DCCC_TEST_CCACHE", DCCC_TEST_CCACHE_PROGRAM);
  return c == "off" || c == "0" ? "" : c;
}

}  // namespace test_paths
