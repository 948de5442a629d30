// Loop collapsing (ir/collapse_loops.h).
#include "ir/collapse_loops.h"

#include "ir/affine.h"

#include <functional>

namespace dccc::ir {
namespace {

using namespace affine;  // add, mul, coefficient, fold

/// `off` as e0 + cb * r, or null when it is not e0 + ca * a + cb * b with
/// ca = cb * B (every part free of a and b).
Expr collapse_offset(const Expr& off, const Var& a, const Var& b, const Expr& extent_b, const Var& r) {
  if (!affine_in(off, a) || !affine_in(off, b)) return nullptr;
  Expr ca = fold(coefficient(off, a)), cb = fold(coefficient(off, b));
  for (const Expr& c : {ca, cb})
    if (mentions(c, a) || mentions(c, b)) return nullptr;
  if (!same_expr(ca, fold(mul(cb, extent_b)))) return nullptr;
  Expr e0 = fold(substitute(off, {{a.get(), build::int_imm(0)}, {b.get(), build::int_imm(0)}}));
  return add(e0, mul(cb, build::var(r)));
}

bool mentions_ab(const Expr& e, const Var& a, const Var& b) { return e && (mentions(e, a) || mentions(e, b)); }

/// `for a { for b { body } }` (outer: the loop over a) as one loop, or null.
Stmt collapse_pair(const Stmt& outer) {
  if (outer->kind != StmtKind::For || outer->loop != LoopKind::Serial || outer->body.size() != 1) return nullptr;
  Stmt inner = unwrap(outer->body[0]);
  if (!inner || inner->kind != StmtKind::For || inner->loop != LoopKind::Serial || inner->body.size() != 1) return nullptr;
  const Var& a = outer->var;
  const Var& b = inner->var;
  if (mentions(inner->extent, a)) return nullptr;
  Var r = make_var(a->name + "_" + b->name);
  bool ok = true;
  std::function<Expr(const Expr&)> fe = [&](const Expr& e) -> Expr {
    return replace_exprs(e, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Load || !x->flat || x->args.size() != 1 || !mentions_ab(x->args[0], a, b)) return nullptr;
      Expr off = collapse_offset(x->args[0], a, b, inner->extent, r);
      if (!off) {
        ok = false;
        return x;
      }
      auto copy = std::make_shared<ExprNode>(*x);
      copy->args = {off};
      return copy;
    });
  };
  std::function<Stmt(const Stmt&)> fs = [&](const Stmt& s) -> Stmt {
    if (!s) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    if (copy->extent) copy->extent = fe(copy->extent);
    if (copy->value) copy->value = fe(copy->value);
    if (s->kind == StmtKind::Store && s->flat && s->args.size() == 1 && mentions_ab(s->args[0], a, b)) {
      Expr off = collapse_offset(fe(s->args[0]), a, b, inner->extent, r);
      if (off) copy->args = {off};
      else ok = false;
    } else {
      for (auto& x : copy->args) x = fe(x);
    }
    for (auto& c : copy->body) c = fs(c);
    return copy;
  };
  Stmt body = fs(inner->body[0]);
  if (!ok) return nullptr;
  // Any other mention (a value, a condition, an index of a multi-index
  // access, an inner extent) keeps the nest.
  bool other = false;
  each_stmt(body, [&](const StmtNode& s) {
    own_exprs(s, [&](const ExprNode& e) { other |= e.kind == ExprKind::VarRef && (e.var == a || e.var == b); });
  });
  if (other) return nullptr;
  return build::for_loop(r, fold(mul(outer->extent, inner->extent)), body, LoopKind::Serial);
}

}  // namespace

Stmt collapse_loops(const Stmt& s) {
  if (!s || s->body.empty()) return s;
  std::vector<Stmt> body;
  bool changed = false;
  for (const auto& c : s->body) {
    body.push_back(collapse_loops(c));
    changed |= body.back() != c;
  }
  Stmt cur = s;
  if (changed) {
    auto copy = std::make_shared<StmtNode>(*s);
    copy->body = std::move(body);
    cur = copy;
  }
  if (Stmt joined = collapse_pair(cur)) return joined;
  return cur;
}

}  // namespace dccc::ir
