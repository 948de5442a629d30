// fuse_parallel_loops: every example runs bit for bit as before the pass in
// the interpreter (after the CPU passes, on ragged lengths with zero-length
// sequences, B = 1 and one long sequence); mha's five parallel loops become
// one; loops that read another iteration's slice or run over other extents
// stay apart, and compute as before. What the pass makes of given IR
// (a scalar shared by two loops included) is tested as IR text in
// tests/passes/fuse-parallel-loops.
#include "ir/fuse_parallel_loops.h"

#include <gtest/gtest.h>


#include "ir/mark_parallel.h"
#include "ir/reorder_loops.h"
#include "ir/tile_contractions.h"
#include "ir/transpose_operands.h"
#include "ir/verifier.h"
#include "ir/written_first.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

using testing::Lowered;
using testing::read_file;

/// The CPU passes, then fuse_parallel_loops; how many loops it fused.
int cpu_passes(Func& f) {
  mark_parallel(f);
  reorder_loops(f);
  transpose_operands(f);
  tile_contractions(f);
  int fused = fuse_parallel_loops(f);
  EXPECT_EQ(verify(f, "fuse-parallel-loops"), std::vector<std::string>{});
  return fused;
}

int parallel_loops(const Func& f) {
  int n = 0;
  for (const auto& s : items_of(f.body)) n += s->kind == StmtKind::For && s->loop == LoopKind::Parallel;
  return n;
}

TEST(FuseParallelLoops, ExamplesRunBitForBitAsBefore) {
  int fused = 0, ran = 0, skipped = 0;
  testing::compare_programs_transformed(
      {test_paths::examples_dir()},
      [&](Func& f, DiagnosticEngine&) {
        fused += cpu_passes(f);
        return true;
      },
      ran, skipped);
  EXPECT_GE(fused, 4);  // mha.toy's five loops at least
  EXPECT_GE(ran, testing::min_runs(40));
}

TEST(FuseParallelLoops, MhaBecomesOneParallelLoop) {
  Lowered l = testing::lower_source("mha.toy", read_file(test_paths::examples_dir() + "/mha.toy"));
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  mark_parallel(f);
  ASSERT_EQ(parallel_loops(f), 5);
  reorder_loops(f);
  transpose_operands(f);
  tile_contractions(f);
  EXPECT_EQ(fuse_parallel_loops(f), 4);
  EXPECT_EQ(items_of(f.body).size(), 1u);
  EXPECT_EQ(parallel_loops(f), 1);
  // The row statistics are still written in full before they are read.
  for (const auto& b : f.buffers) {
    if (b->name == "row_max" || b->name == "row_sum" || b->name == "kv.k.T") {
      EXPECT_TRUE(written_first(f, b.get())) << b->name;
    }
  }
}

TEST(FuseParallelLoops, LoopsThatMustStayApart) {
  const char* text = R"(
type Seqs = coupling { data: [b: B][len[b], H]f32, len: [B]i32 }
fn next_row(x: Seqs) [B, H]f32 {
    let y: [B, H]f32;
    y[b, h] = reduce(+, x.data[b][i, h]);
    let z: [B, H]f32;
    z[b, h] = y[(b + 1) % B, h] * 2.0;
    return z;
}
fn first_row(x: Seqs) [B, H]f32 {
    let y: [B, H]f32;
    y[b, h] = reduce(+, x.data[b][i, h]);
    let z: [B, H]f32;
    z[b, h] = reduce(+, y[c, h]);
    return z;
}
fn other_extent(x: Seqs, w: [C]f32) [C, B]f32 {
    let y: [B]f32;
    y[b] = reduce(+, x.data[b][i, h]);
    let z: [C, B]f32;
    z[c, b] = w[c] * y[b];
    return z;
}
fn together(x: Seqs) [B, H]f32 {
    let y: [B, H]f32;
    y[b, h] = reduce(+, x.data[b][i, h]);
    let z: [B, H]f32;
    z[b, h] = y[b, h] * 2.0 + reduce(max, x.data[b][i, h]);
    return z;
}
)";
  // next_row reads another iteration's row of y; first_row reads every row
  // (its reduction over c); other_extent runs over C; together fuses.
  Lowered l = testing::lower_source("apart.toy", text);
  ASSERT_TRUE(l.module);
  std::map<std::string, int> want{{"next_row", 0}, {"first_row", 0}, {"other_extent", 0}, {"together", 1}};
  for (auto& f : l.module->funcs) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(cpu_passes(f), want.at(f.name));
  }
  int ran = 0, skipped = 0;
  testing::compare_transformed(
      "apart.toy", text, [&](Func& f, DiagnosticEngine&) { return cpu_passes(f) == want.at(f.name); }, ran, skipped);
  EXPECT_GE(ran, testing::min_runs(8));
}

}  // namespace
}  // namespace dccc::ir
