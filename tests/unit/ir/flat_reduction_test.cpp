// ir/flat_reduction.h: which nests are reduction nests the backends may
// reorder. A fin may read its own output at the element it stores (a sum
// kept in the output across nests, as the online-reductions pass's blocks
// do: out[d] = out[d] * rescale + block sum); any other read of an output
// inside the nest keeps it a plain loop.
#include <gtest/gtest.h>

#include "ir/flat_reduction.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

struct Nest {
  Buffer x = testing::buffer("x", BufferKind::Input, 2);
  Buffer t = testing::buffer("t", BufferKind::Output, 1);
  Buffer acc = testing::buffer("acc", BufferKind::Scalar, 0);
  Buffer c = testing::buffer("c", BufferKind::Scalar, 0);
  Var d = make_var("d"), j = make_var("j");

  /// for d { acc = 0; for j { acc = acc + x[j, d] }; t[d] = fin(acc) }
  Stmt loop(const Expr& init, const Expr& fin) const {
    Stmt step = build::store(acc, {}, build::binary(BinOp::Add, build::load(acc, {}),
                                                    build::load(x, {build::var(j), build::var(d)})));
    Stmt body = build::seq({build::store(acc, {}, init), build::for_loop(j, build::size("N"), step),
                            build::store(t, {build::var(d)}, fin)});
    return build::for_loop(d, build::size("N"), body);
  }
  Expr zero() const { return build::float_imm(0, Scalar::F32); }
  Expr t_at(const Expr& i) const { return build::load(t, {i}); }
  Expr kept(const Expr& i) const {
    return build::binary(BinOp::Add, build::binary(BinOp::Mul, t_at(i), build::load(c, {})), build::load(acc, {}));
  }
};

TEST(FlatReduction, FinMayReadTheElementItStores) {
  Nest n;
  EXPECT_TRUE(match_flat_reduction(*n.loop(n.zero(), build::load(n.acc, {}))));
  auto plan = match_flat_reduction(*n.loop(n.zero(), n.kept(build::var(n.d))));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->fins.size(), 1u);
}

TEST(FlatReduction, OtherReadsOfTheOutputRefuse) {
  Nest n;
  // Another element: t[d + 1] may already hold a later lane's result.
  Expr next = build::binary(BinOp::Add, build::var(n.d), build::int_imm(1));
  EXPECT_FALSE(match_flat_reduction(*n.loop(n.zero(), n.kept(next))));
  // The init reading t.
  EXPECT_FALSE(match_flat_reduction(*n.loop(n.t_at(build::var(n.d)), build::load(n.acc, {}))));
}

}  // namespace
}  // namespace dccc::ir
