// Checker: `where` constraints (converted to facts for the prover) and
// the path values and coupling fields they and extents read.

#include "typecheck/checker_impl.h"

#include <memory>

namespace dccc {
namespace checker_internal {

/// Converts one `where` item to a Fact: `all(e)` quantifies e's free
/// indices over the dimensions they index.
std::optional<Fact> Checker::where_fact(const Expr& w, const std::map<std::string, Value>& scope,
                                        const std::vector<Fact>& facts) {
  const Expr* body = &w;
  bool quantified = false;
  if (w.kind == ExprKind::Call && w.name == "all") {
    if (w.operands.size() != 1) {
      diags_.report(DiagKind::ArgumentCount, w.range, "all", 1, w.operands.size());
      return std::nullopt;
    }
    body = w.operands[0].get();
    quantified = true;
  }
  WhereCtx ctx{scope, {}, {}, quantified, {}};
  SymPtr s = where_sym(*body, ctx);
  if (!s) return std::nullopt;
  if (!is_bool_sym(s)) {
    diags_.report(DiagKind::BadWhere, w.range, "a `where` constraint must be a comparison");
    return std::nullopt;
  }
  Fact f;
  std::vector<Fact> range_facts = facts;
  for (const auto& [name, vr] : ctx.quantified) {
    if (vr.second) {
      range_facts.push_back({{}, sym::le(sym::constant(0), sym::var(vr.first))});
      range_facts.push_back({{}, sym::lt(sym::var(vr.first), vr.second)});
    }
  }
  for (const auto& c : ctx.checks) {
    extent_depth_++;
    bool ok = prove_in_bounds(range_facts, c.index, c.extent, c.at, {});
    extent_depth_--;
    if (!ok) return std::nullopt;
  }
  for (const auto& [name, vr] : ctx.quantified) {
    if (!vr.second) {
      diags_.report(DiagKind::BadWhere, w.range, "cannot infer the range of " + code(name) + ": it never indexes an array directly (as in `a[" + name + "]`)");
      return std::nullopt;
    }
    f.vars.push_back({vr.first, vr.second});
  }
  f.body = s;
  return f;
}

bool Checker::is_bool_sym(const SymPtr& s) {
  switch (s->kind) {
    case SymKind::Eq: case SymKind::Ne: case SymKind::Lt: case SymKind::Le:
    case SymKind::And: case SymKind::Or: case SymKind::Not: case SymKind::True: return true;
    default: return false;
  }
}

/// Converts one operand of a `where` constraint, checked to have the kind
/// its operator takes: `&&`, `||` and `!` take comparisons (truth values);
/// arithmetic, comparisons and indices take integers. nullptr after
/// reporting otherwise.
SymPtr Checker::where_operand(const Expr& operand, WhereCtx& ctx, bool want_truth,
                              const std::string& op) {
  auto s = where_sym(operand, ctx);
  if (!s || is_bool_sym(s) == want_truth) return s;
  diags_.report(DiagKind::BadWhere, operand.range,
                want_truth ? op + " joins comparisons; this operand is an integer"
                           : op + " takes integers; this operand is a comparison");
  return nullptr;
}

SymPtr Checker::where_sym(const Expr& e, WhereCtx& ctx) {
  auto bin = [&](SymKind k, bool swap = false) -> SymPtr {
    bool truth = k == SymKind::And || k == SymKind::Or;
    std::string op = "`" + e.op + "`";
    auto a = where_operand(*e.operands[0], ctx, truth, op);
    if (!a) return nullptr;  // one error per constraint
    auto b = where_operand(*e.operands[1], ctx, truth, op);
    if (!b) return nullptr;
    return swap ? sym::op(k, {b, a}) : sym::op(k, {a, b});
  };
  switch (e.kind) {
    case ExprKind::Int: {
      auto v = int_literal(e);
      return v ? sym::constant(*v) : nullptr;
    }
    case ExprKind::Bool: return e.bool_value ? sym::truth() : sym::op(SymKind::Not, {sym::truth()});
    case ExprKind::Binary: {
      if (e.op == "+") return bin(SymKind::Add);
      if (e.op == "-") return bin(SymKind::Sub);
      if (e.op == "*") return bin(SymKind::Mul);
      if (e.op == "/") return bin(SymKind::Div);
      if (e.op == "%") return bin(SymKind::Mod);
      if (e.op == "==") return bin(SymKind::Eq);
      if (e.op == "!=") return bin(SymKind::Ne);
      if (e.op == "<") return bin(SymKind::Lt);
      if (e.op == "<=") return bin(SymKind::Le);
      if (e.op == ">") return bin(SymKind::Lt, true);
      if (e.op == ">=") return bin(SymKind::Le, true);
      if (e.op == "&&") return bin(SymKind::And);
      if (e.op == "||") return bin(SymKind::Or);
      break;
    }
    case ExprKind::Unary:
      if (e.op == "!") {
        auto a = where_operand(*e.operands[0], ctx, true, "`!`");
        return a ? sym::op(SymKind::Not, {a}) : nullptr;
      }
      if (e.op == "-") {
        auto a = where_operand(*e.operands[0], ctx, false, "unary `-`");
        return a ? sym::sub(sym::constant(0), a) : nullptr;
      }
      break;
    case ExprKind::Name: {
      if (auto q = ctx.quantified.find(e.name); q != ctx.quantified.end()) return sym::var(q->second.first);
      if (auto c = out_.int_consts.find(e.name); c != out_.int_consts.end()) return sym::constant(c->second);
      auto v = ctx.scope.find(e.name);
      if (v != ctx.scope.end()) {
        if (v->second.is_size) return sym::size(e.name);
        if (v->second.type->kind == TypeKind::Scalar && is_int(v->second.type->scalar))
          return sym::read(v->second.path, {});
        if (v->second.type->kind == TypeKind::Tensor)
          diags_.report(DiagKind::BadWhere, e.range, code(e.name) + " is an array; index it or use `sum(...)`");
        else
          diags_.report(DiagKind::BadWhere, e.range,
                        "`where` constraints are about integers; " + code(e.name) + " is `" + types::str(v->second.type) + "`");
        return nullptr;
      }
      if (ctx.allow_free) {
        auto var = std::make_shared<IndexVar>(IndexVar{e.name, e.range});
        ctx.quantified[e.name] = {var, nullptr};
        return sym::var(var);
      }
      diags_.report(DiagKind::UnknownName, e.range, e.name);
      return nullptr;
    }
    case ExprKind::Call:
      if (e.name == "sum" && e.operands.size() == 1) {
        auto pv = path_value(*e.operands[0], ctx.scope, true);
        if (!pv) return nullptr;
        if (pv->second->kind != TypeKind::Tensor || !is_int(pv->second->scalar)) {
          diags_.report(DiagKind::BadWhere, e.range, "`sum` takes an integer array");
          return nullptr;
        }
        return sym::read(pv->first + ".sum", {});
      }
      if (e.name == "all") {
        diags_.report(DiagKind::BadWhere, e.range, "`all(...)` must be a whole `where` item");
        return nullptr;
      }
      break;
    case ExprKind::Index: case ExprKind::Field: {
      auto [base, groups] = ast::index_chain(e);
      auto pv = path_value(*base, ctx.scope, true);
      if (!pv) return nullptr;
      const TypePtr& t = pv->second;
      if (groups.empty() && t->kind == TypeKind::Scalar && is_int(t->scalar)) return sym::read(pv->first, {});
      if (t->kind != TypeKind::Tensor || !is_int(t->scalar)) {
        diags_.report(DiagKind::BadWhere, e.range, "`where` may read only integer arrays, not `" + types::str(t) + "`");
        return nullptr;
      }
      if (!check_grouping(e, groups, t, pv->first)) return nullptr;
      std::vector<SymPtr> args;
      sym::Subst inner;
      size_t gi = 0;
      for (const auto& g : t->groups) {
        for (size_t di = 0; di < g.dims.size(); ++di) {
          const Expr* ix = groups[gi][di];
          SymPtr arg = where_operand(*ix, ctx, false, "an index");
          if (!arg) return nullptr;
          if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = arg;
          SymPtr extent = sym::substitute(g.dims[di].extent, inner);
          bool defines = false;
          if (ix->kind == ExprKind::Name) {
            auto q = ctx.quantified.find(ix->name);
            if (q != ctx.quantified.end() && !q->second.second) {
              q->second.second = extent;
              defines = true;
            }
          }
          if (!defines && extent) ctx.checks.push_back({arg, extent, ix->range});
          args.push_back(arg);
        }
        ++gi;
      }
      return sym::read(pv->first, std::move(args));
    }
    default: break;
  }
  diags_.report(DiagKind::BadWhere, e.range, "unsupported expression in a `where` constraint");
  return nullptr;
}

/// Resolves `x`, `x.f`, `x.f.g` to (array identity, type). For coupling
/// fields the identity follows the value's bindings ("output.seqlen" may be
/// "q.seqlen").
std::optional<std::pair<std::string, TypePtr>> Checker::path_value(
    const Expr& e, const std::map<std::string, Value>& scope, bool report) {
  if (e.kind == ExprKind::Name) {
    auto v = scope.find(e.name);
    if (v == scope.end()) {
      if (report) diags_.report(DiagKind::UnknownName, e.range, e.name);
      return std::nullopt;
    }
    out_.paths[&e] = v->second.path;
    return std::make_pair(v->second.path, v->second.type);
  }
  if (e.kind == ExprKind::Field) {
    auto base = path_value(*e.operands[0], scope, report);
    if (!base) return std::nullopt;
    const TypePtr& t = base->second;
    if (t->kind == TypeKind::Error) return std::nullopt;
    if (t->kind != TypeKind::Coupling) {
      if (report) diags_.report(DiagKind::NoSuchField, e.name_range, types::str(t), e.name);
      return std::nullopt;
    }
    const CouplingField* f = t->coupling->field(e.name);
    if (!f) {
      if (report) {
        auto& d = diags_.report(DiagKind::NoSuchField, e.name_range, code(t->coupling->name), e.name);
        suggest_field(d, e.name_range, e.name, *t->coupling);
        diags_.note(t->coupling->range, code(t->coupling->name) + " is defined here");
      }
      return std::nullopt;
    }
    out_.paths[&e] = field_identity(base->first, t, e.name);
    return std::make_pair(out_.paths[&e], field_type(base->first, t, *f));
  }
  if (report) diags_.report(DiagKind::NotAssignable, e.range, "expected a variable or a field");
  return std::nullopt;
}

std::string Checker::field_identity(const std::string& base, const TypePtr& t,
                                    const std::string& field) {
  auto it = t->instance.arrays.find(field);
  if (it != t->instance.arrays.end()) return it->second;
  return base + "." + field;
}

/// The type of field `f` of coupling value `base`: sibling reads renamed
/// to the value's arrays, sizes to the instance's.
TypePtr Checker::field_type(const std::string& base, const TypePtr& t, const CouplingField& f) {
  sym::Subst s;
  s.sizes = t->instance.sizes;
  for (const auto& other : t->coupling->fields) s.arrays[other.name] = field_identity(base, t, other.name);
  return types::substitute(f.type, s);
}

}  // namespace checker_internal
}  // namespace dccc
