// Affine pieces of vloop offsets shared by ir/collapse_loops and the GPU planners
// (plan_contraction.cpp, plan_attention.cpp): i64 sums and products folded
// where a side is 0 or 1, and the coefficient of a variable.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace dccc::ir::affine {

using ir::BinOp;
using ir::ExprKind;

inline bool is_int(const ir::Expr& e, int64_t v) { return e->kind == ExprKind::IntImm && e->int_value == v; }

inline ir::Expr add(const ir::Expr& a, const ir::Expr& b) {
  if (is_int(a, 0)) return b;
  if (is_int(b, 0)) return a;
  return ir::build::binary(BinOp::Add, a, b);
}
inline ir::Expr sub(const ir::Expr& a, const ir::Expr& b) {
  if (is_int(b, 0)) return a;
  return ir::build::binary(BinOp::Sub, a, b);
}
inline ir::Expr mul(const ir::Expr& a, const ir::Expr& b) {
  if (is_int(a, 0) || is_int(b, 0)) return ir::build::int_imm(0);
  if (is_int(a, 1)) return b;
  if (is_int(b, 1)) return a;
  return ir::build::binary(BinOp::Mul, a, b);
}

/// d e / d v for an expression affine in v, free of v (folded where a
/// side is 0 or 1, so a unit stride reads as the literal 1).
inline ir::Expr coefficient(const ir::Expr& e, const ir::Var& v) {
  if (!ir::mentions(e, v)) return ir::build::int_imm(0);
  if (e->kind == ExprKind::VarRef) return ir::build::int_imm(1);
  const ir::Expr &a = e->args[0], &b = e->args[1];
  if (e->binop == BinOp::Add) return add(coefficient(a, v), coefficient(b, v));
  if (e->binop == BinOp::Sub) return sub(coefficient(a, v), coefficient(b, v));
  if (!ir::mentions(a, v)) return mul(a, coefficient(b, v));
  return mul(coefficient(a, v), b);
}

/// `e` with products by 0 and 1 and sums with 0 folded (a base offset
/// after its row and k were set to 0).
inline ir::Expr fold(const ir::Expr& e) {
  if (e->kind != ExprKind::Binary || e->type != Scalar::I64) return e;
  ir::Expr a = fold(e->args[0]), b = fold(e->args[1]);
  if (e->binop == BinOp::Add) return add(a, b);
  if (e->binop == BinOp::Mul) return mul(a, b);
  if (e->binop == BinOp::Sub) return sub(a, b);
  return a == e->args[0] && b == e->args[1] ? e : ir::build::binary(e->binop, a, b);
}

inline bool mentions_any(const ir::Expr& e, const std::vector<ir::Var>& vars) {
  for (const auto& v : vars)
    if (ir::mentions(e, v)) return true;
  return false;
}

}  // namespace dccc::ir::affine
