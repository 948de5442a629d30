// reorder_loops swaps two nested loops exactly when a slice read inside
// does not depend on the outer one and the iterations are independent;
// each case is a nest built by hand and judged here by reading it.
#include "ir/reorder_loops.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::buffer;

struct Nest {
  Func f;
  Buffer y = buffer("y", BufferKind::Input, 2);
  Buffer out = buffer("out", BufferKind::Local, 3);
  Buffer acc = buffer("acc", BufferKind::Scalar, 0);
  Var i = make_var("i"), h = make_var("h"), e = make_var("e"), j = make_var("j");
  Expr n = build::size("N");
  Nest() {
    f.name = "f";
    f.sizes = {{"N"}};
    f.buffers = {y, out, acc};
  }
  Expr v(const Var& x) { return build::var(x); }
  /// for i { for h (extent) { for e { acc = 0; for j { acc = acc + term }; out[i, h, e] = acc } } }
  void build(Expr term, Expr h_extent = nullptr) {
    Stmt red = build::for_loop(j, n, build::store(acc, {}, build::binary(BinOp::Add, build::load(acc, {}), term)));
    Stmt body = build::seq({build::store(acc, {}, build::float_imm(0, Scalar::F32)), red,
                            build::store(out, {v(i), v(h), v(e)}, build::load(acc, {}))});
    f.body = build::for_loop(i, n, build::for_loop(h, h_extent ? h_extent : n, build::for_loop(e, n, body)));
  }
  /// Runs the pass; the outer loop's variable afterwards.
  const VarNode* outer() {
    reorder_loops(f);
    EXPECT_EQ(verify(f, "reorder-loops"), std::vector<std::string>{});
    return f.body->var.get();
  }
};

TEST(ReorderLoops, SliceIndependentOfTheOuterLoopMovesItInside) {
  Nest n;
  n.build(build::load(n.y, {n.v(n.j), n.v(n.h)}));  // y[j, h]: the same for every i
  EXPECT_EQ(n.outer(), n.h.get());
  EXPECT_EQ(n.f.body->body[0]->var.get(), n.i.get());
  // e, the innermost left-side loop, stays innermost though y[j, h] does
  // not depend on i either.
  EXPECT_EQ(n.f.body->body[0]->body[0]->var.get(), n.e.get());
}

TEST(ReorderLoops, NoReusedSliceKeepsTheOrder) {
  Nest n;
  n.build(build::load(n.y, {n.v(n.i), n.v(n.j)}));  // y[i, j]: depends on i
  EXPECT_EQ(n.outer(), n.i.get());
}

TEST(ReorderLoops, InnerExtentReadingTheOuterVariableKeepsTheOrder) {
  Nest n;
  n.build(build::load(n.y, {n.v(n.j), n.v(n.h)}), build::binary(BinOp::Add, n.v(n.i), build::int_imm(1)));
  EXPECT_EQ(n.outer(), n.i.get());
}

TEST(ReorderLoops, ReadingTheStoredTensorKeepsTheOrder) {
  Nest n;
  // acc += y[j, h] * out[j, h, e]: iteration (i, h) reads rows other iterations write.
  n.build(build::binary(BinOp::Mul, build::load(n.y, {n.v(n.j), n.v(n.h)}), build::load(n.out, {n.v(n.j), n.v(n.h), n.v(n.e)})));
  EXPECT_EQ(n.outer(), n.i.get());
}

TEST(ReorderLoops, SharedScalarKeepsTheOrder) {
  Nest n;
  n.build(build::load(n.y, {n.v(n.j), n.v(n.h)}));
  // Read acc after the nest: the last iteration's value is observable.
  Buffer r = buffer("r", BufferKind::Output, 0);
  n.f.buffers.push_back(r);
  n.f.body = build::seq({n.f.body, build::store(r, {}, build::load(n.acc, {}))});
  reorder_loops(n.f);
  EXPECT_EQ(n.f.body->body[0]->var.get(), n.i.get());
}

}  // namespace
}  // namespace dccc::ir
