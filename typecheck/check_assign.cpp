// Checker: assignment statements (left-side indices, element types,
// read-only and frozen storage, literal ranges).

#include "typecheck/checker_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace dccc {
namespace checker_internal {

void Checker::check_assign(const ast::Stmt& s, FnCtx& ctx) {
  const Expr& target = *s.target;
  auto [base, groups] = ast::index_chain(target);
  if (base->kind != ExprKind::Name && base->kind != ExprKind::Field) {
    diags_.report(DiagKind::NotAssignable, target.range, "the left side must be a variable, a field or an element of one");
    return;
  }
  if (base->kind == ExprKind::Name && !ctx.scope.count(base->name) &&
      (out_.int_consts.count(base->name) || out_.float_consts.count(base->name))) {
    diags_.report(DiagKind::NotAssignable, base->range, "constant " + code(base->name) + " cannot be assigned");
    return;
  }
  auto pv = path_value(*base, ctx.scope, true);
  if (!pv) return;
  const std::string root = base->kind == ExprKind::Name ? base->name : root_name(*base);
  bool is_param = std::any_of(ctx.fn->params.begin(), ctx.fn->params.end(), [&](const auto& p) { return p.first == root; });
  if (is_param) {
    diags_.report(DiagKind::NotAssignable, base->range, "parameter " + code(root) + " is read-only; write into a `let`");
    return;
  }
  auto v = ctx.scope.find(root);
  if (v != ctx.scope.end() && v->second.is_size) {
    diags_.report(DiagKind::NotAssignable, base->range, "size " + code(root) + " cannot be assigned");
    return;
  }
  TypePtr t = pv->second;
  if (t->kind == TypeKind::Error) return;
  StmtInfo info;
  info.stmt = &s;
  RhsCtx rc;
  if (t->kind == TypeKind::Scalar && groups.empty()) {
    TypePtr rt = element_check(*s.value, ctx, rc, &info);
    uninitialized_.erase(root);
    if (rt->kind != TypeKind::Error) assign_compatible(t, rt, s.value->range, expr_path_text(*base), s.value.get());
    info.value_type = t;
    ctx.fn->stmts.push_back(std::move(info));
    return;
  }
  if (t->kind != TypeKind::Tensor) {
    diags_.report(DiagKind::NotAssignable, target.range,
                  fmt::format("cannot assign to {} of type `{}`; assign to its fields element-wise",
                              code(expr_path_text(*base)), types::str(t)));
    return;
  }
  // Another name for a parameter's storage is as read-only as the
  // parameter; a length array is frozen under every name.
  const std::string storage_root = pv->first.substr(0, pv->first.find('.'));
  // A copy the lambda can capture (clang before 16 cannot capture a structured binding).
  const Expr* written = base;
  auto note_alias = [&](const std::string& what) {
    if (storage_root == root) return;
    auto alias = ctx.scope.find(root);
    if (alias != ctx.scope.end() && alias->second.def.valid())
      diags_.note(alias->second.def, code(expr_path_text(*written)) + " names the storage of " + what);
  };
  if (ctx.frozen.count(pv->first)) {
    diags_.report(DiagKind::LengthReassigned, target.range, pv->first);
    note_alias(code(pv->first));
    return;
  }
  if (std::any_of(ctx.fn->params.begin(), ctx.fn->params.end(), [&](const auto& p) { return p.first == storage_root; })) {
    diags_.report(DiagKind::NotAssignable, base->range,
                  "parameter " + code(storage_root) + " is read-only; write into a `let`");
    note_alias("parameter " + code(storage_root));
    return;
  }
  if (!check_grouping(target, groups, t, expr_path_text(*base))) return;
  // Left-side indices: fresh names, each over its dimension.
  sym::Subst inner;
  size_t gi = 0;
  bool ok = true;
  for (const auto& g : t->groups) {
    for (size_t di = 0; di < g.dims.size(); ++di) {
      const Expr* ix = groups[gi][di];
      if (ix->kind != ExprKind::Name) {
        diags_.report(DiagKind::NotAssignable, ix->range,
                      "left-side indices must be fresh names, one per dimension (found an expression)");
        ok = false;
        continue;
      }
      if (resolvable(ix->name, ctx, rc)) {
        diags_.report(DiagKind::NotAssignable, ix->range,
                      rc.lhs.count(ix->name) ? "index " + code(ix->name) + " appears twice on the left side"
                                             : "left-side index " + code(ix->name) + " must be a fresh name, but it names a value");
        ok = false;
        continue;
      }
      auto var = std::make_shared<IndexVar>(IndexVar{ix->name, ix->range});
      out_.index_refs[ix] = var;
      SymPtr extent = sym::substitute(g.dims[di].extent, inner);
      if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = sym::var(var);
      rc.lhs[ix->name] = var;
      rc.ranges[var.get()] = {extent, g.dims[di].range};
      IndexInfo ii;
      ii.var = var;
      ii.extent = extent;
      ii.range_from = g.dims[di].range;
      info.indices.push_back(ii);
    }
    ++gi;
  }
  if (!ok) return;
  TypePtr rt = element_check(*s.value, ctx, rc, &info);
  if (rt->kind != TypeKind::Error)
    assign_compatible(types::scalar(t->scalar), rt, s.value->range, expr_path_text(*base), s.value.get());
  // Assigning an array invalidates every fact that mentions it (a stale
  // `seqlen[b] == len(xs[b])` would prove reads that are now out of
  // bounds). An integer array defined by an integer expression that does
  // not read the array itself gives the new fact, so later extents can be
  // proven from it.
  drop_facts_mentioning(pv->first, ctx);
  if (is_int(t->scalar)) {
    SymPtr val = to_sym(*s.value, rc, ctx);
    std::vector<SymPtr> rs;
    if (val) sym::reads(val, rs);
    bool self = std::any_of(rs.begin(), rs.end(), [&](const SymPtr& r) { return r->name == pv->first; });
    if (val && !self) {
      Fact f;
      std::vector<SymPtr> args;
      for (const auto& ii : info.indices)
        if (!ii.reduced) {
          f.vars.push_back({ii.var, ii.extent});
          args.push_back(sym::var(ii.var));
        }
      f.body = sym::eq(sym::read(pv->first, args), val);
      ctx.facts.push_back(f);
      ctx.assigned.insert(pv->first);
    }
  }
  info.value_type = types::scalar(t->scalar);
  ctx.fn->stmts.push_back(std::move(info));
}

void Checker::drop_facts_mentioning(const std::string& array, FnCtx& ctx) {
  auto mentions = [&](const Fact& f) {
    std::vector<SymPtr> rs;
    sym::reads(f.body, rs);
    for (const auto& [v, r] : f.vars) sym::reads(r, rs);
    return std::any_of(rs.begin(), rs.end(), [&](const SymPtr& r) { return r->name == array; });
  };
  ctx.facts.erase(std::remove_if(ctx.facts.begin(), ctx.facts.end(), mentions), ctx.facts.end());
}

std::string Checker::root_name(const Expr& e) {
  const Expr* b = &e;
  while (b->kind == ExprKind::Field || b->kind == ExprKind::Index) b = b->operands[0].get();
  return b->kind == ExprKind::Name ? b->name : std::string();
}

/// A literal (possibly negated) that takes type `t` must fit in it.
bool Checker::check_literal_fits(const Expr& e, Scalar t) {
  const Expr* lit = &e;
  bool neg = false;
  if (e.kind == ExprKind::Unary && e.op == "-") {
    lit = e.operands[0].get();
    neg = true;
  }
  if (lit->kind == ExprKind::Int && (t == Scalar::I32 || is_float(t))) {
    errno = 0;
    unsigned long long v = std::strtoull(lit->text.c_str(), nullptr, 10);
    bool bad = t == Scalar::I32 && v > (neg ? 2147483648ull : 2147483647ull);
    if (bad) {
      diags_.report(DiagKind::LiteralOutOfRange, e.range, (neg ? "-" : "") + lit->text, scalar_name(t));
      return false;
    }
  }
  if (lit->kind == ExprKind::Float && is_float(t) && t != Scalar::F64) {
    double limit = t == Scalar::F16 ? 65504.0 : 3.4028234663852886e38;
    if (std::isfinite(lit->float_value) && std::fabs(lit->float_value) > limit) {
      diags_.report(DiagKind::LiteralOutOfRange, e.range, (neg ? "-" : "") + lit->text, scalar_name(t));
      return false;
    }
  }
  return true;
}

void Checker::assign_compatible(const TypePtr& target, const TypePtr& value, SourceRange at,
                                const std::string& what, const Expr* value_expr) {
  if (value->kind == TypeKind::Scalar && value->scalar == target->scalar) return;
  if (value_expr && (value->kind == TypeKind::IntValue || value->kind == TypeKind::FloatValue) &&
      target->kind == TypeKind::Scalar && !check_literal_fits(*value_expr, target->scalar))
    return;
  if (value->kind == TypeKind::IntValue && target->scalar != Scalar::Bool) return;
  if (value->kind == TypeKind::FloatValue && is_float(target->scalar)) return;
  diags_.report(DiagKind::TypeMismatch, at,
                fmt::format("cannot assign a value of type `{}` to {} of element type `{}`", types::str(value), code(what),
                            scalar_name(target->scalar)));
}

}  // namespace checker_internal
}  // namespace dccc
