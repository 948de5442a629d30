// Differential tests of the LLVM backend: every function of every example
// is JIT-compiled and run on random length patterns (random lengths,
// zero-length sequences, B = 1, one very long sequence); its f32 results
// must match a float64 reference within 1e-5 relative error. The harness
// (differential.h) is shared with the CUDA backend's test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/llvm/jit.h"
#include "tests/unit/backend/differential.h"

namespace dccc::backend {
namespace {

using testing::compile;
using testing::Engine;
using testing::Program;

TEST(LlvmBackend, ExamplesMatchFloat64Reference) {
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DCCC_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".toy") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string name = entry.path().filename().string();
    Program p = compile(name, text.str());
    if (!p.module) continue;  // uses something the code generator does not handle yet
    std::string error;
    auto jit = JitProgram::compile(*p.module, error);
    ASSERT_TRUE(jit) << name << ": " << error;
    for (const auto& f : p.module->funcs) {
      if (f.name == "main") continue;
      auto kernel = jit->kernel(f.name);
      ASSERT_NE(kernel, nullptr) << f.name;
      testing::run_differential(f, {Engine{"llvm", kernel}}, name, compared);
    }
  }
  EXPECT_GT(compared, 10000);
}

}  // namespace
}  // namespace dccc::backend
