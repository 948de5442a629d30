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
  for (auto& [name, stem, p] : testing::compile_examples(DCCC_EXAMPLES_DIR)) {
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

// Calls between .toy functions are inlined: a ragged softmax built from
// three functions (a call as an argument, a construction returned
// directly), then used by a fourth with a dense argument.
TEST(LlvmBackend, InlinedCallsMatchFloat64Reference) {
  const std::string text = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn row_max(x: Seqs) [B, H]f32 {
    let m: [B, H]f32;
    m[b, h] = reduce(max, x.data[b][i, h]);
    return m;
}

fn exp_shift(x: Seqs, m: [B, H]f32) Seqs {
    let d: [b: B][x.seqlen[b], H]f32;
    d[b][i, h] = exp(x.data[b][i, h] - m[b, h]);
    return Seqs { data: d, seqlen: x.seqlen };
}

fn softmax(x: Seqs) Seqs {
    let e = exp_shift(x, row_max(x));
    let t: [B, H]f32;
    t[b, h] = reduce(+, e.data[b][i, h]);
    let y = Seqs { data: [b: B][e.seqlen[b], H]f32, seqlen: e.seqlen };
    y.data[b][i, h] = e.data[b][i, h] / t[b, h];
    return y;
}

fn weighted(q: Seqs, w: [H]f32) Seqs {
    let s = softmax(q);
    let o: [b: B][s.seqlen[b], H]f32;
    o[b][i, h] = s.data[b][i, h] * w[h] + 1.0;
    return Seqs { data: o, seqlen: s.seqlen };
}
)";
  Program p = compile("calls.toy", text);
  ASSERT_TRUE(p.module.has_value()) << "the program with calls must lower";
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  int compared = 0;
  for (const auto& f : p.module->funcs) {
    auto kernel = jit->kernel(f.name);
    ASSERT_NE(kernel, nullptr) << f.name;
    testing::run_differential(f, {Engine{"llvm", kernel}}, "calls.toy", compared);
  }
  EXPECT_GT(compared, 200);
}

}  // namespace
}  // namespace dccc::backend
