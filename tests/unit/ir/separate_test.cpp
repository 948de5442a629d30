// ir/separate.h: the algebra of the online-reductions pass on hand-built
// expressions. `s` (a load at j) depends on j, `m` and `l` (loads of
// results) on the results, `c` (a size) on neither.
#include "ir/separate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dccc::ir {
namespace {

struct Fixture {
  Var j = make_var("j");
  Buffer s = buffer("s"), m = buffer("m"), l = buffer("l");
  Expr sj = build::load(s, {build::var(j)});
  Expr mr = build::load(m, {build::int_imm(0)});
  Expr lr = build::load(l, {build::int_imm(0)});
  Expr c = build::cast(Scalar::F32, build::size("C"));

  static Buffer buffer(const std::string& name) {
    auto b = std::make_shared<BufferNode>();
    b->name = name;
    b->type = Scalar::F32;
    b->dims.push_back({make_var("d"), build::size("N")});
    return b;
  }
  Separator sep() {
    return Separator([this](const Expr& e) { return mentions(e, j); },
                     [this](const Expr& e) { return loads_from(e, m.get()) || loads_from(e, l.get()); });
  }
  static Expr sub(Expr a, Expr b) { return build::binary(BinOp::Sub, std::move(a), std::move(b)); }
  static Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }
  static Expr div(Expr a, Expr b) { return build::binary(BinOp::Div, std::move(a), std::move(b)); }
  static Expr ex(Expr a) { return build::unary(UnOp::Exp, std::move(a)); }
};

TEST(Separate, ExpOfADifferenceSplitsItsExponent) {
  Fixture f;
  Separator sep = f.sep();
  MulForm form;
  ASSERT_TRUE(sep.mul_form(f.mul(f.ex(f.sub(f.sj, f.mr)), f.sj), form, false)) << sep.why;
  ASSERT_EQ(form.exponent.items.size(), 1u);
  EXPECT_TRUE(same_expr(form.exponent.items[0].first, f.mr));
  EXPECT_TRUE(form.exponent.items[0].second);  // E = -m
  EXPECT_TRUE(form.p.empty());
}

TEST(Separate, ScaleAfterTheMaximumDistributes) {
  // exp((s - m) / c): E = -(m / c).
  Fixture f;
  Separator sep = f.sep();
  MulForm form;
  ASSERT_TRUE(sep.mul_form(f.ex(f.div(f.sub(f.sj, f.mr), f.c)), form, false)) << sep.why;
  ASSERT_EQ(form.exponent.items.size(), 1u);
  EXPECT_TRUE(same_expr(form.exponent.items[0].first, f.div(f.mr, f.c)));
  EXPECT_TRUE(form.exponent.items[0].second);
}

TEST(Separate, ADivisorThatReadsOnlyResultsIsAppliedAfterTheLoop) {
  // exp(s - m) / l * s: P = 1 / l.
  Fixture f;
  Separator sep = f.sep();
  MulForm form;
  ASSERT_TRUE(sep.mul_form(f.mul(f.div(f.ex(f.sub(f.sj, f.mr)), f.lr), f.sj), form, false)) << sep.why;
  ASSERT_EQ(form.p.size(), 1u);
  EXPECT_TRUE(form.p[0].second);  // divides
  EXPECT_TRUE(same_expr(form.p_exprs[0], f.lr));
}

TEST(Separate, AMaskWithAZeroBranchKeepsTheOtherBranchsForm) {
  Fixture f;
  Separator sep = f.sep();
  MulForm form;
  Expr masked = build::select(build::binary(BinOp::LT, build::var(f.j), build::int_imm(3)), f.ex(f.sub(f.sj, f.mr)),
                              build::float_imm(0, Scalar::F32));
  ASSERT_TRUE(sep.mul_form(masked, form, false)) << sep.why;
  EXPECT_EQ(form.exponent.items.size(), 1u);
}

TEST(Separate, MaxBodiesSplitIntoSums) {
  Fixture f;
  Separator sep = f.sep();
  AddForm form;
  ASSERT_TRUE(sep.add_form(f.mul(f.sub(f.sj, f.mr), f.c), form, false)) << sep.why;
  EXPECT_EQ(form.j.items.size(), 1u);
  EXPECT_EQ(form.r.items.size(), 1u);
}

TEST(Separate, WhatDoesNotSeparateIsNamed) {
  Fixture f;
  {
    Separator sep = f.sep();
    MulForm form;
    EXPECT_FALSE(sep.mul_form(build::unary(UnOp::Sqrt, f.sub(f.sj, f.mr)), form, false));
    EXPECT_NE(sep.why.find("`sqrt((s[j] - m[0]))` depends on both j and the results"), std::string::npos) << sep.why;
  }
  {
    Separator sep = f.sep();
    MulForm form;
    EXPECT_FALSE(sep.mul_form(f.ex(f.mul(f.sj, f.mr)), form, false));
    EXPECT_NE(sep.why.find("`(s[j] * m[0])` is a product"), std::string::npos) << sep.why;
  }
  {
    Separator sep = f.sep();
    MulForm form;
    EXPECT_FALSE(sep.mul_form(f.sub(f.sj, f.mr), form, false));
    EXPECT_NE(sep.why.find("is a sum of terms"), std::string::npos) << sep.why;
  }
  {
    Separator sep = f.sep();
    AddForm form;
    EXPECT_FALSE(sep.add_form(f.ex(f.sub(f.sj, f.mr)), form, false));
    EXPECT_NE(sep.why.find("is not a sum of terms"), std::string::npos) << sep.why;
  }
}

}  // namespace
}  // namespace dccc::ir
