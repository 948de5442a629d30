// transpose_operands: every example runs bit for bit as before the pass in
// the interpreter (with the CPU passes around it, on ragged lengths with
// zero-length sequences, B = 1 and one long sequence); in mha the key
// operand of `q k^T` is copied transposed inside the parallel `b` loop, its
// rows padded to 16, and `p v` is left alone; a dense `a b^T` gets its copy
// before the nest. Where the copies go and the operands left alone are also
// IR text tests (tests/passes/transpose-operands); these check what text
// does not show: runs against the interpreter and written_first.
#include "ir/transpose_operands.h"

#include <gtest/gtest.h>

#include "ir/ir_parser.h"
#include "ir/mark_parallel.h"
#include "ir/reorder_loops.h"
#include "ir/tile_contractions.h"
#include "ir/verifier.h"
#include "ir/written_first.h"
#include "tests/unit/ir/test_support.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

using testing::Lowered;

/// The CPU passes up to and including transpose_operands; how many copies.
int cpu_passes(Func& f, bool tile) {
  mark_parallel(f);
  reorder_loops(f);
  int made = transpose_operands(f);
  EXPECT_EQ(verify(f, "transpose-operands"), std::vector<std::string>{});
  if (tile) tile_contractions(f);
  return made;
}

TEST(TransposeOperands, ExamplesRunBitForBitAsBefore) {
  int made = 0, ran = 0, skipped = 0;
  for (bool tile : {false, true})
    testing::compare_programs_transformed(
        {test_paths::examples_dir()},
        [&](Func& f, DiagnosticEngine&) {
          made += cpu_passes(f, tile);
          return true;
        },
        ran, skipped);
  EXPECT_GE(made, 2);  // mha.toy's q k^T at least, with and without tiling
  EXPECT_GE(ran, testing::min_runs(40));
}

const char* kMha = R"(
type PackedQueries = coupling { data: [b: B][seqlen[b], H, D]f32, seqlen: [B]i32 }
type PackedKV = coupling { k: [b: B][seqlen[b], H, D]f32, v: [b: B][seqlen[b], H, D]f32, seqlen: [B]i32 }
fn mha(q: PackedQueries, kv: PackedKV) PackedQueries {
    let scores: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32;
    scores[b][i, h, j] = reduce(+, q.data[b][i, h, d] * kv.k[b][j, h, d]);
    let out = PackedQueries { data: [b: B][q.seqlen[b], H, D]f32, seqlen: q.seqlen };
    out.data[b][i, h, d] = reduce(+, scores[b][i, h, j] * kv.v[b][j, h, d]);
    return out;
}
)";

bool loads_buffer_named(const Stmt& s, const std::string& name) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) {
    own_exprs(x, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer->name == name; });
  });
  return found;
}

TEST(TransposeOperands, MhaCopiesTheKeysInsideTheParallelLoop) {
  Lowered l = testing::lower_source("mha.toy", kMha);
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  size_t before = f.buffers.size();
  size_t items = items_of(f.body).size();
  ASSERT_EQ(cpu_passes(f, false), 1);
  ASSERT_EQ(f.buffers.size(), before + 1);
  const Buffer& kt = f.buffers.back();
  EXPECT_EQ(kt->name, "kv.k.T");
  EXPECT_EQ(kt->kind, BufferKind::Local);
  ASSERT_EQ(kt->dims.size(), 4u);
  // [b][H, D, kv.seqlen[b]]: the key position moved last.
  EXPECT_TRUE(mentions(kt->dims[3].extent, kt->dims[0].var));
  EXPECT_EQ(items_of(f.body).size(), items);  // no new top-level statement
  std::vector<Stmt> top = items_of(f.body);
  // The scores statement: a parallel b loop whose body copies first, then
  // reads kv.k.T and no longer kv.k; the out statement still reads kv.v.
  const Stmt& scores = top[0];
  ASSERT_EQ(scores->kind, StmtKind::For);
  EXPECT_EQ(scores->loop, LoopKind::Parallel);
  std::vector<Stmt> body = items_of(scores->body[0]);
  ASSERT_EQ(body.size(), 2u);
  EXPECT_TRUE(touches(body[0], kt.get()));
  EXPECT_TRUE(loads_buffer_named(body[0], "kv.k"));
  EXPECT_FALSE(loads_buffer_named(body[1], "kv.k"));
  EXPECT_TRUE(loads_buffer_named(body[1], "kv.k.T"));
  EXPECT_TRUE(loads_buffer_named(top[1], "kv.v"));
  EXPECT_FALSE(loads_buffer_named(top[1], "kv.v.T"));
  // Rows padded to 16 in storage (the backend's lanes run into the
  // padding), which the copy fills too: written in full before it is read,
  // so no zero fill.
  EXPECT_EQ(kt->pad, (std::vector<int64_t>{1, 1, 1, 16}));
  EXPECT_TRUE(written_first(f, kt.get()));
}

TEST(TransposeOperands, DenseCopyGoesBeforeTheNest) {
  const char* text = R"(
fn abt(a: [M, K]f32, b: [N, K]f32) [M, N]f32 {
    let c: [M, N]f32;
    c[i, j] = reduce(+, a[i, r] * b[j, r]);
    return c;
}
)";
  Lowered l = testing::lower_source("abt.toy", text);
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  size_t items = items_of(f.body).size();
  ASSERT_EQ(cpu_passes(f, false), 1);
  std::vector<Stmt> top = items_of(f.body);
  ASSERT_EQ(top.size(), items + 1);
  const Buffer& bt = f.buffers.back();
  EXPECT_EQ(bt->name, "b.T");
  EXPECT_TRUE(touches(top[0], bt.get()));
  EXPECT_EQ(bt->pad, (std::vector<int64_t>{1, 16}));
  EXPECT_TRUE(written_first(f, bt.get()));
  int ran = 0, skipped = 0;
  testing::compare_transformed(
      "abt.toy", text, [&](Func& g, DiagnosticEngine&) { return cpu_passes(g, true) == 1; }, ran, skipped);
  EXPECT_GE(ran, static_cast<int>(testing::patterns().size()));  // every pattern ran (one under ASan)
}

TEST(TransposeOperands, LoopOverMoreThanTheFirstDimensionCopiesBeforeIt) {
  // Two batches after one another, as hfuse makes them: a copy of slice o
  // inside the loop would read t out of bounds for o >= N, so it goes before
  // the loop. Where it goes is an IR text test
  // (tests/passes/transpose-operands/loop_over_more_than_the_first_dimension.vloop);
  // here: the copy is written in full before it is read (written_first),
  // which the IR text does not show.
  const char* text = R"(func f() {
  sizes N;
  input a: f32 [d0: N, d1: N];
  input t: f32 [d0.1: N, d1.1: N, d2.1: N];
  output c: f32 [d0.2: N, d1.2: N, d2.2: N];
  scalar acc: f32;
  for o in 0 .. (N + N) {
    if (o < N) {
      for i in 0 .. N {
        for j in 0 .. N {
          acc[] = 0.0f32;
          for r in 0 .. N {
            acc[] = (acc[] + (a[i, r] * t[o, j, r]));
          }
          c[o, i, j] = acc[];
        }
      }
    }
  }
}
)";
  SourceFile file("t.vloop", text);
  DiagnosticEngine diags(&file);
  auto m = parse_vloop(file, diags);
  ASSERT_TRUE(m);
  Func& f = m->funcs[0];
  ASSERT_EQ(transpose_operands(f), 1);
  const Buffer& tt = f.buffers.back();
  EXPECT_EQ(tt->name, "t.T");
  EXPECT_TRUE(written_first(f, tt.get()));
}

}  // namespace
}  // namespace dccc::ir
