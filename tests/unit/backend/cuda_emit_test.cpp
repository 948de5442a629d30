// The CUDA emitter's text, without a GPU (label `unit`): which kernels
// mha's chain as written gets and which loops run in parallel. What the kernels compute
// is checked on a GPU by cuda_backend_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backend/abi/c_abi.h"
#include "backend/cuda/cuda_abi.h"
#include "backend/cuda/cuda_codegen.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::Program;

std::string mha_text() {
  std::ifstream in(test_paths::examples_dir() + "/mha.toy");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `text` through the CUDA pass list less online-reductions: these tests are
/// about the kernels of mha's chain as written (scores, row maximum, sums),
/// which the online pass would otherwise compute in one loop.
Program compile(const std::string& name, const std::string& text, bool cpu_passes, bool cuda_passes) {
  if (cpu_passes || !cuda_passes) return testing::compile(name, text, cpu_passes, cuda_passes);
  Program p;
  if (!testing::front_end(p, name, text)) return p;
  ir::PipelineOptions o;
  o.default_pad = 0;
  o.simplify = false;
  o.target = ir::Target::Cuda;
  testing::run_passes(p, testing::without_passes(o, {"online-reductions"}));
  return p;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CudaEmit, MaterialisedAttentionHasARowKernelPerReduction) {
  Program p = compile("mha.toy", mha_text(), /*cpu_passes=*/false, /*cuda_passes=*/true);
  ASSERT_TRUE(p.module);
  std::string cu = emit_cuda(*p.module);
  // Four kernels, one a statement but `p` (computed in its readers by
  // fuse-elementwise): the scores and PV on the tensor cores, the row
  // maximum and the row sum each a row kernel of its own -- besides the
  // prologue's dcc__set_bytes (f_on_stream's scalar arguments). Nothing
  // folds a row into memory with atomics, and no MMA sums a column of ones.
  // (A kernel with an sm_90a form of other threads declares its function
  // twice, under #if DCC_WGMMA and #else: the scores', on tf32 wgmma.)
  EXPECT_EQ(count(cu, "__global__ void") - count(cu, "#else\n__global__ void"), 5u) << cu;
  EXPECT_EQ(count(cu, "__global__ void dcc__set_bytes("), 1u) << cu;
  EXPECT_EQ(count(cu, "dcc_mma_tiles_tf32<"), 6u) << cu;  // 3xTF32: three MMAs a step, in two kernels
  EXPECT_EQ(count(cu, "dcc_wgmma_ss_tf32<128>(&part"), 3u) << cu;  // the scores' sm_90a form (PV's factor is computed)
  EXPECT_EQ(cu.find("atomicM"), std::string::npos) << cu;
  EXPECT_EQ(cu.find("uint32_t ones["), std::string::npos) << cu;
}

TEST(CudaEmit, MaxUpdatesOfOneElementInALoopStaySerial) {
  // `row_max@(0) = max(row_max@(0), f32(j))` in a loop over j writes one
  // element in every iteration: the loop is not parallel, and the update
  // is a plain store (no kernel folds it in with an atomic).
  Program p = compile("mha.toy", mha_text(), /*cpu_passes=*/false, /*cuda_passes=*/true);
  ASSERT_TRUE(p.module);
  ir::Func& f = p.module->funcs[0];
  ir::Buffer row_max;
  for (const auto& b : f.buffers)
    if (b->name == "row_max") row_max = b;
  ASSERT_TRUE(row_max);
  ir::Var j = ir::make_var("jj");
  ir::Expr zero = ir::build::int_imm(0);
  ir::Stmt update = ir::build::flat_store(
      row_max, zero,
      ir::build::binary(ir::BinOp::Max, ir::build::flat_load(row_max, zero), ir::build::cast(Scalar::F32, ir::build::var(j))));
  ir::Stmt loop = ir::build::for_loop(j, ir::build::size("H"), update, ir::LoopKind::Parallel);
  EXPECT_FALSE(is_parallel_loop(loop));
  std::vector<ir::Stmt> items = ir::items_of(f.body);
  items.push_back(loop);
  f.body = ir::build::seq(items);
  std::string cu = emit_cuda(*p.module);
  EXPECT_EQ(cu.find("atomicM"), std::string::npos) << cu;
  EXPECT_NE(cu.find("= fmaxf("), std::string::npos) << cu;
}

TEST(CudaEmit, OnlyWhatTheKernelsUseIsAllocatedPerCall) {
  // mha's kernels keep every scalar in registers and divide no integers:
  // no device memory for the scalars, no error flag to read back.
  Program p = compile("mha.toy", mha_text(), /*cpu_passes=*/false, /*cuda_passes=*/true);
  ASSERT_TRUE(p.module);
  std::string cu = emit_cuda(*p.module);
  EXPECT_EQ(cu.find("the size of `acc0`"), std::string::npos) << cu;
  EXPECT_NE(cu.find("the size of `scores`"), std::string::npos) << cu;
  EXPECT_EQ(cu.find("a.err"), std::string::npos) << cu;
  // An integer division sets the flag; the launcher reads it back.
  Program d = compile("div.toy", "fn f(x: [n: N]i32, y: [n: N]i32) [n: N]i32 {\n"
                                 "    let out: [n: N]i32;\n    out[i] = x[i] / y[i];\n    return out;\n}\n",
                      false, true);
  ASSERT_TRUE(d.module);
  std::string dc = emit_cuda(*d.module);
  EXPECT_NE(dc.find("dcc_idiv("), std::string::npos) << dc;
  EXPECT_NE(dc.find("dalloc(sizeof(int), (void**)&a.err)"), std::string::npos) << dc;
  EXPECT_NE(dc.find("\"integer division by zero\""), std::string::npos) << dc;
}

TEST(CudaEmit, TheKernelsNamesAreKeptFromTheLibrarysFunctions) {
  // cuda_device_abi() tells assign_c_names the global names this backend
  // defines per function beside the launcher: FN__args and FN__k0, ...
  auto clash = [](const std::string& second) -> std::string {
    const std::string body = "(x: [N]f32) -> [N]f32 {\n    let y: [N]f32;\n    y[i] = x[i];\n    return y;\n}\n";
    Program p = compile("clash.toy", "fn g" + body + "fn " + second + body, false, true);
    EXPECT_TRUE(p.module);
    if (!p.module) return "";
    try {
      assign_c_names(*p.module, &cuda_device_abi());
    } catch (const BackendUnsupported& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(clash("g__args"), "the C name `g__args` for both the kernel arguments of `g` and the function `g__args` (rename one)");
  EXPECT_EQ(clash("g__k3"), "the C name `g__k3` for both the function `g__k3` and a kernel of `g` (rename one)");
  EXPECT_EQ(clash("g__cuda"), "the C name `g__cuda` for both the kernel of `g` and the function `g__cuda` (rename one)");
  EXPECT_EQ(clash("g__kernel"), "");
}

}  // namespace
}  // namespace dccc::backend
