// mark_parallel marks exactly the outer loops whose iterations are
// independent: each case below is a loop nest built by hand, and whether it
// may run in parallel is decided here by reading it, not by the pass.
#include "ir/mark_parallel.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::buffer;

struct Case {
  Func f;
  Buffer x = buffer("x", BufferKind::Input, 1);
  Buffer y = buffer("y", BufferKind::Input, 2);
  Buffer a = buffer("a", BufferKind::Local, 1);
  Buffer acc = buffer("acc", BufferKind::Scalar, 0);
  Buffer result = buffer("result", BufferKind::Output, 0);
  Var i = make_var("i");
  Var j = make_var("j");
  Expr n = build::size("N");

  Case() {
    f.name = "f";
    f.sizes = {{"N"}};
    f.buffers = {x, y, a, acc, result};
  }
  Expr xi() { return build::load(x, {build::var(i)}); }
  /// Marks `items` as the function body; true when item `k` became parallel,
  /// and the IR still verifies.
  bool parallel(std::vector<Stmt> items, size_t k = 0) {
    f.body = build::seq(std::move(items));
    mark_parallel(f);
    EXPECT_EQ(verify(f, "mark-parallel"), std::vector<std::string>{});
    return f.body->body.at(k)->loop == LoopKind::Parallel;
  }
};

TEST(MarkParallel, ElementwiseLoopIsParallel) {
  Case c;
  // a[i] = x[i] * 2
  EXPECT_TRUE(c.parallel({build::for_loop(c.i, c.n, build::store(c.a, {build::var(c.i)},
                                                                   build::binary(BinOp::Mul, c.xi(), c.xi())))}));
}

TEST(MarkParallel, PrivateAccumulatorIsParallelButItsReductionLoopIsNot) {
  Case c;
  // for i { acc = 0; for j { acc = acc + y[i, j] }; a[i] = acc }
  Stmt red = build::for_loop(
      c.j, c.n,
      build::store(c.acc, {}, build::binary(BinOp::Add, build::load(c.acc, {}), build::load(c.y, {build::var(c.i), build::var(c.j)}))));
  Stmt nest = build::for_loop(c.i, c.n,
                              build::seq({build::store(c.acc, {}, build::float_imm(0, Scalar::F32)), red,
                                          build::store(c.a, {build::var(c.i)}, build::load(c.acc, {}))}));
  EXPECT_TRUE(c.parallel({nest}));
  EXPECT_EQ(c.f.body->body[0]->body[0]->body[1]->loop, LoopKind::Serial);
}

TEST(MarkParallel, TopLevelReductionIsNotParallel) {
  Case c;
  // acc = 0; for i { acc = acc + x[i] }; result = acc: iterations share acc.
  EXPECT_FALSE(c.parallel({build::store(c.acc, {}, build::float_imm(0, Scalar::F32)),
                           build::for_loop(c.i, c.n, build::store(c.acc, {}, build::binary(BinOp::Add, build::load(c.acc, {}), c.xi()))),
                           build::store(c.result, {}, build::load(c.acc, {}))},
                          1));
}

TEST(MarkParallel, ScalarReadAfterTheLoopIsNotParallel) {
  Case c;
  // for i { acc = x[i] }; result = acc: the last iteration's value is read.
  EXPECT_FALSE(c.parallel({build::for_loop(c.i, c.n, build::store(c.acc, {}, c.xi())),
                           build::store(c.result, {}, build::load(c.acc, {}))}));
}

TEST(MarkParallel, AccumulatorReadBeforeItIsWrittenIsNotPrivate) {
  Case c;
  // for i { acc = acc + x[i]; a[i] = acc }: each iteration reads the last one's acc.
  EXPECT_FALSE(c.parallel({build::for_loop(
      c.i, c.n,
      build::seq({build::store(c.acc, {}, build::binary(BinOp::Add, build::load(c.acc, {}), c.xi())),
                  build::store(c.a, {build::var(c.i)}, build::load(c.acc, {}))}))}));
}

TEST(MarkParallel, ReadingAnotherIterationsElementIsNotParallel) {
  Case c;
  // for i { a[i] = a[N - 1 - i] }: iteration i reads what iteration N - 1 - i writes.
  Expr mirror = build::binary(BinOp::Sub, build::binary(BinOp::Sub, c.n, build::int_imm(1)), build::var(c.i));
  EXPECT_FALSE(c.parallel({build::for_loop(c.i, c.n, build::store(c.a, {build::var(c.i)}, build::load(c.a, {mirror})))}));
  // Reading a buffer the loop does not write is fine: a[i] = x[N - 1 - i].
  Case d;
  Expr mirror_d = build::binary(BinOp::Sub, build::binary(BinOp::Sub, d.n, build::int_imm(1)), build::var(d.i));
  EXPECT_TRUE(d.parallel({build::for_loop(d.i, d.n, build::store(d.a, {build::var(d.i)}, build::load(d.x, {mirror_d})))}));
}

TEST(MarkParallel, WritesNotIndexedByTheLoopVariableAreNotParallel) {
  Case c;
  // for i { for j { a[j] = x[i] } }: every iteration writes all of a.
  EXPECT_FALSE(c.parallel({build::for_loop(c.i, c.n, build::for_loop(c.j, c.n, build::store(c.a, {build::var(c.j)}, c.xi())))}));
  // for i { result = x[i] }: a scalar result written by every iteration.
  Case d;
  EXPECT_FALSE(d.parallel({build::for_loop(d.i, d.n, build::store(d.result, {}, d.xi()))}));
}

TEST(MarkParallel, PrintsAreNotParallel) {
  Case c;
  EXPECT_FALSE(c.parallel({build::for_loop(c.i, c.n, build::print("", {c.xi()}))}));
}

}  // namespace
}  // namespace dccc::ir
