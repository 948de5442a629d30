// fuse_elementwise (kernel fusion, producer into consumer): which tensors it
// fuses is decided here by reading each program, not by the pass; fused
// programs must compute the same bits as unfused ones (interpreter runs on
// random length patterns, zero-length sequences, B = 1, one long sequence).
#include "ir/fuse_elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

std::vector<std::string> fused_in(const std::string& text, const std::string& fn = "f") {
  return testing::fused_by(text, [](Func& f) { return fuse_elementwise(f); }, "fuse-elementwise", fn);
}

const char* kSeqs = "type S = coupling { data: [b: B][seqlen[b], D]f32, seqlen: [B]i32 }\n";

TEST(FuseElementwise, ExamplesAndRunProgramsComputeTheSameBits) {
  int ran = 0, skipped = 0, programs = 0;
  programs = testing::compare_programs_transformed(
      {test_paths::examples_dir(), test_paths::lang_run_dir()},
      [](Func& f, DiagnosticEngine&) {
        fuse_elementwise(f);
        auto problems = verify(f, "fuse-elementwise");
        for (const auto& p : problems) ADD_FAILURE() << p;
        return problems.empty();
      },
      ran, skipped);
  EXPECT_GE(programs, test_files::at_least(30));
  EXPECT_GE(ran, testing::min_runs(100)) << ran << " runs, " << skipped << " skipped";
}

TEST(FuseElementwise, MhaProbabilitiesAreFusedButReductionsAreNot) {
  Lowered l = lower_source("mha.toy", testing::read_file(std::filesystem::path(test_paths::examples_dir()) / "mha.toy"));
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs.at(0);
  // p = exp(scores - row_max) is element-wise; scores, row_max and row_sum
  // are reductions; out is the result.
  EXPECT_EQ(fuse_elementwise(f), std::vector<std::string>{"p"});
  for (const auto& b : f.buffers) EXPECT_NE(b->name, "p");
  EXPECT_EQ(verify(f, "fuse-elementwise"), std::vector<std::string>{});
}

TEST(FuseElementwise, ChainsFuseInOrder) {
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b], D]f32 {
  let t: [b: B][x.seqlen[b], D]f32;
  t[b][i, d] = x.data[b][i, d] * 2.0;
  let u: [b: B][x.seqlen[b], D]f32;
  u[b][i, d] = t[b][i, d] + 1.0;
  let y: [b: B][x.seqlen[b], D]f32;
  y[b][i, d] = u[b][i, d] * u[b][i, d];
  return y;
})"), (std::vector<std::string>{"t", "u"}));
}

TEST(FuseElementwise, KeepsWhatCannotBeRecomputedLater) {
  // A reduction is not element-wise.
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b]]f32 {
  let s: [b: B][x.seqlen[b]]f32;
  s[b][i] = reduce(+, x.data[b][i, d]);
  let y: [b: B][x.seqlen[b]]f32;
  y[b][i] = s[b][i] * 2.0;
  return y;
})"), std::vector<std::string>{});
  // Its value reads a tensor that a later statement overwrites.
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b], D]f32 {
  let a: [b: B][x.seqlen[b], D]f32;
  a[b][i, d] = x.data[b][i, d];
  let t: [b: B][x.seqlen[b], D]f32;
  t[b][i, d] = a[b][i, d] + 1.0;
  a[b][i, d] = x.data[b][i, d] * 3.0;
  let y: [b: B][x.seqlen[b], D]f32;
  y[b][i, d] = t[b][i, d] + a[b][i, d];
  return y;
})"), std::vector<std::string>{});
}

TEST(FuseElementwise, KeepsATensorReadBeforeItIsWrittenOrWrittenTwice) {
  // Read (as zeros) before its producer: fusing would change the result.
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b], D]f32 {
  let t: [b: B][x.seqlen[b], D]f32;
  let y: [b: B][x.seqlen[b], D]f32;
  y[b][i, d] = t[b][i, d] + x.data[b][i, d];
  t[b][i, d] = x.data[b][i, d] * 2.0;
  let z: [b: B][x.seqlen[b], D]f32;
  z[b][i, d] = y[b][i, d] + t[b][i, d];
  return z;
})"), std::vector<std::string>{});  // y reads t, which a later statement writes
  // Two writers.
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b], D]f32 {
  let t: [b: B][x.seqlen[b], D]f32;
  t[b][i, d] = x.data[b][i, d] * 2.0;
  t[b][i, d] = x.data[b][i, d] * 3.0;
  let y: [b: B][x.seqlen[b], D]f32;
  y[b][i, d] = t[b][i, d] + 1.0;
  return y;
})"), std::vector<std::string>{});
}

TEST(FuseElementwise, KeepsAnExpensiveValue) {
  // Four loads: evaluated once per read instead of once per element.
  EXPECT_EQ(fused_in(std::string(kSeqs) + R"(
fn f(x: S) [b: B][x.seqlen[b], D]f32 {
  let t: [b: B][x.seqlen[b], D]f32;
  t[b][i, d] = x.data[b][i, d] * x.data[b][i, d] + x.data[b][i, d] * x.data[b][i, d];
  let y: [b: B][x.seqlen[b], D]f32;
  y[b][i, d] = t[b][i, d] + 1.0;
  return y;
})"), std::vector<std::string>{});
}

}  // namespace
}  // namespace dccc::ir
