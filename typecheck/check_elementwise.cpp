// Checker: elementwise right sides: free (reduction) index collection and
// binding, index range inference, access bounds, index expressions as
// syms, and element types of expressions and built-in calls.

#include "typecheck/checker_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

namespace dccc {
namespace checker_internal {

/// Runs index inference and typing over an element-wise expression whose
/// left-side indices are already in `rc`; returns its element type.
TypePtr Checker::element_check(const Expr& e, FnCtx& ctx, RhsCtx& rc, StmtInfo* info) {
  std::vector<const Expr*> stack;
  std::vector<FreeUse> uses;
  collect(e, ctx, rc, stack, uses, false);
  if (!bind_free(uses, ctx, rc)) return types::error();
  if (!infer_ranges(ctx, rc)) return types::error();
  std::vector<Fact> facts = stmt_facts(ctx, rc);
  bool ok = true;
  for (const Access& a : rc.accesses) ok &= check_access_bounds(a, facts, ctx, rc);
  if (!ok) return types::error();
  TypePtr t = elem_type(e, ctx, rc);
  if (info) {
    info->indices.insert(info->indices.end(), rc.infos.begin(), rc.infos.end());
  }
  return t;
}

std::vector<Fact> Checker::stmt_facts(const FnCtx& ctx, const RhsCtx& rc) {
  std::vector<Fact> facts = ctx.facts;
  for (const auto& [v, r] : rc.ranges) {
    SymPtr var = sym::var(lookup_var(rc, v));
    facts.push_back({{}, sym::le(sym::constant(0), var)});
    facts.push_back({{}, sym::lt(var, r.first)});
  }
  return facts;
}

IndexVarPtr Checker::lookup_var(const RhsCtx& rc, const IndexVar* v) {
  for (const auto& [n, p] : rc.lhs)
    if (p.get() == v) return p;
  for (const auto& [e, p] : rc.free_var)
    if (p.get() == v) return p;
  return nullptr;
}

bool Checker::resolvable(const std::string& n, const FnCtx& ctx, const RhsCtx& rc) {
  return rc.lhs.count(n) || ctx.scope.count(n) || out_.int_consts.count(n) || out_.float_consts.count(n);
}

/// Pass 1: find tensor accesses and the free names used as indices.
void Checker::collect(const Expr& e, FnCtx& ctx, RhsCtx& rc, std::vector<const Expr*>& stack,
                      std::vector<FreeUse>& uses, bool in_len) {
  switch (e.kind) {
    case ExprKind::Name:
      if (!resolvable(e.name, ctx, rc)) uses.push_back({&e, stack, false});
      return;
    case ExprKind::Reduce: {
      static const std::set<std::string> ok_ops = {"+", "*", "max", "min"};
      if (!ok_ops.count(e.op)) diags_.report(DiagKind::BadReduceOp, e.op_range, e.op);
      stack.push_back(&e);
      collect(*e.operands[0], ctx, rc, stack, uses, false);
      stack.pop_back();
      return;
    }
    case ExprKind::Index: {
      Access a;
      a.expr = &e;
      const Expr* base = &e;
      while (base->kind == ExprKind::Index) {
        std::vector<const Expr*> g;
        for (size_t i = 1; i < base->operands.size(); ++i) g.push_back(base->operands[i].get());
        a.groups.insert(a.groups.begin(), std::move(g));
        base = base->operands[0].get();
      }
      a.base = base;
      for (const auto& g : a.groups)
        for (const Expr* ix : g) {
          if (ix->kind == ExprKind::Name && !resolvable(ix->name, ctx, rc)) uses.push_back({ix, stack, true});
          else collect(*ix, ctx, rc, stack, uses, false);
        }
      auto pv = path_value(*base, ctx.scope, false);
      if (!pv) {
        if (base->kind == ExprKind::Name && !resolvable(base->name, ctx, rc)) {
          if (rc.reported.insert(base->name).second) diags_.report(DiagKind::UnknownName, base->range, base->name);
        } else if (base->kind == ExprKind::Name || base->kind == ExprKind::Field) {
          path_value(*base, ctx.scope, true);
        } else {
          diags_.report(DiagKind::NotIndexable, base->range, "expression", "value");
        }
        rc.reported.insert("#access");
        return;
      }
      a.type = pv->second;
      if (a.type->kind == TypeKind::List && !in_len && a.groups.size() >= 1) {
        // list[b][i, ...]: the list index, then the element tensor's groups.
      }
      rc.accesses.push_back(std::move(a));
      return;
    }
    case ExprKind::Call: {
      bool len = e.name == "len";
      for (const auto& o : e.operands) collect(*o, ctx, rc, stack, uses, len);
      return;
    }
    case ExprKind::Construct:
    case ExprKind::TensorLit:
      return;  // reported by elem_type
    default:
      for (const auto& o : e.operands) collect(*o, ctx, rc, stack, uses, false);
      return;
  }
}

/// Assigns each free name a reduction variable: the innermost reduce that
/// contains all its uses within one top-level reduce.
bool Checker::bind_free(const std::vector<FreeUse>& uses, FnCtx& ctx, RhsCtx& rc) {
  bool ok = true;
  std::map<std::pair<std::string, const Expr*>, std::vector<const FreeUse*>> groups;
  std::vector<std::pair<std::string, const Expr*>> order;
  for (const auto& u : uses) {
    auto key = std::make_pair(u.name_expr->name, u.reduces.empty() ? nullptr : u.reduces.front());
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&u);
  }
  for (const auto& key : order) {
    const auto& g = groups[key];
    const std::string& name = key.first;
    if (!key.second) {
      bool direct = std::any_of(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; });
      bool elsewhere = std::any_of(uses.begin(), uses.end(), [&](const FreeUse& u) {
        return u.name_expr->name == name && !u.reduces.empty();
      });
      if (rc.reported.insert(name).second) {
        if (direct || elsewhere) diags_.report(DiagKind::UnboundIndex, g.front()->name_expr->range, name);
        else diags_.report(DiagKind::UnknownName, g.front()->name_expr->range, name);
      }
      ok = false;
      continue;
    }
    if (!std::any_of(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; })) {
      if (rc.reported.insert(name).second) diags_.report(DiagKind::UnknownName, g.front()->name_expr->range, name);
      ok = false;
      continue;
    }
    // Longest common prefix of the reduce stacks.
    size_t common = g.front()->reduces.size();
    for (const FreeUse* u : g) {
      size_t k = 0;
      while (k < common && k < u->reduces.size() && u->reduces[k] == g.front()->reduces[k]) ++k;
      common = k;
    }
    const Expr* binder = g.front()->reduces[common - 1];
    const FreeUse* first_direct = *std::find_if(g.begin(), g.end(), [](const FreeUse* u) { return u->direct; });
    auto var = std::make_shared<IndexVar>(IndexVar{name, first_direct->name_expr->range});
    for (const FreeUse* u : g) rc.free_var[u->name_expr] = var;
    rc.binds[binder].push_back(var);
  }
  (void)ctx;
  // A reduce that binds nothing reduces nothing.
  std::set<const Expr*> reduces;
  for (const auto& u : uses)
    for (const Expr* r : u.reduces) reduces.insert(r);
  return ok;
}

std::optional<std::vector<Checker::IndexSlot>> Checker::access_slots(const Access& a, FnCtx& ctx,
                                                                     RhsCtx& rc, bool report) {
  TypePtr t = a.type;
  std::vector<IndexSlot> slots;
  std::vector<std::vector<const Expr*>> groups = a.groups;
  std::string shown = a.base->kind == ExprKind::Name ? a.base->name : expr_path_text(*a.base);
  if (t->kind == TypeKind::List) {
    // First group: the list index, ranging over len(list).
    if (groups.empty() || groups[0].size() != 1) {
      if (report)
        diags_.report(DiagKind::IndexCount, a.expr->range,
                      fmt::format("list {} takes one index first, as in `{}[b]`", code(shown), shown));
      return std::nullopt;
    }
    std::string list_path = path_value(*a.base, ctx.scope, false)->first;
    SymPtr b = to_sym(*groups[0][0], rc, ctx);
    slots.push_back({groups[0][0], sym::size("len(" + list_path + ")"), b});
    groups.erase(groups.begin());
    if (groups.empty()) return slots;  // len(list[b])
    TypePtr elem = t->element;
    auto copy = std::make_shared<Type>(*elem);
    if (!copy->groups.empty() && !copy->groups[0].dims.empty() && !copy->groups[0].dims[0].extent && b)
      copy->groups[0].dims[0].extent = sym::read(list_path + ".len", {b});
    t = copy;
  }
  if (t->kind == TypeKind::Coupling) {
    if (report)
      diags_.report(DiagKind::NotIndexable, a.expr->range, shown, code(types::str(t)) + "; index one of its fields");
    return std::nullopt;
  }
  if (t->kind != TypeKind::Tensor) {
    if (report && t->kind != TypeKind::Error) diags_.report(DiagKind::NotIndexable, a.expr->range, shown, code(types::str(t)));
    return std::nullopt;
  }
  if (!check_grouping(*a.expr, groups, t, shown)) return std::nullopt;
  sym::Subst inner;
  size_t gi = 0;
  for (const auto& g : t->groups) {
    for (size_t di = 0; di < g.dims.size(); ++di) {
      const Expr* ix = groups[gi][di];
      SymPtr s = to_sym(*ix, rc, ctx);
      SymPtr extent = sym::substitute(g.dims[di].extent, inner);
      if (g.dims[di].index && s) inner.vars[g.dims[di].index.get()] = s;
      slots.push_back({ix, extent, s});
    }
    ++gi;
  }
  return slots;
}

std::string Checker::expr_path_text(const Expr& e) {
  if (e.kind == ExprKind::Name) return e.name;
  if (e.kind == ExprKind::Field) return expr_path_text(*e.operands[0]) + "." + e.name;
  return "expression";
}

/// Pass 2: every reduction variable's range, from the dimensions it indexes.
bool Checker::infer_ranges(FnCtx& ctx, RhsCtx& rc) {
  struct Candidate {
    SymPtr extent;
    SourceRange at;
  };
  std::map<const IndexVar*, std::vector<Candidate>> cands;
  std::vector<IndexVarPtr> order;
  bool ok = true;
  for (const Access& a : rc.accesses) {
    auto slots = access_slots(a, ctx, rc, true);
    if (!slots) {
      ok = false;
      continue;
    }
    for (const auto& s : *slots) {
      if (s.index->kind != ExprKind::Name) continue;
      auto fv = rc.free_var.find(s.index);
      if (fv == rc.free_var.end() || !s.extent) continue;
      if (!cands.count(fv->second.get())) order.push_back(fv->second);
      cands[fv->second.get()].push_back({s.extent, s.index->range});
    }
  }
  if (!ok) return false;
  // Canonical range: the first ragged use, else the first use.
  std::map<const IndexVar*, Candidate> canon;
  for (const auto& v : order) {
    auto& cs = cands[v.get()];
    auto it = std::find_if(cs.begin(), cs.end(), [](const Candidate& c) { return sym::is_ragged(c.extent); });
    canon[v.get()] = it != cs.end() ? *it : cs.front();
    rc.ranges[v.get()] = {canon[v.get()].extent, canon[v.get()].at};
  }
  std::vector<Fact> facts = stmt_facts(ctx, rc);
  for (const auto& v : order) {
    const Candidate& c0 = canon[v.get()];
    bool ragged = sym::is_ragged(c0.extent);
    for (const auto& c : cands[v.get()]) {
      if (&c == &c0 || (c.at.line == c0.at.line && c.at.col == c0.at.col)) continue;
      SymPtr goal = (ragged && !sym::is_ragged(c.extent)) ? sym::le(c0.extent, c.extent) : sym::eq(c.extent, c0.extent);
      ProofResult r = prove(facts, goal, c.at);
      if (r == ProofResult::Unknown) return false;
      if (r != ProofResult::Proved) {
        diags_.report(DiagKind::RangeMismatch, c.at, v->name, code(sym::str(c.extent)), code(sym::str(c0.extent)));
        diags_.note(c0.at, code(v->name) + " ranges over " + code(sym::str(c0.extent)) + " here");
        ok = false;
      }
    }
  }
  // Record reduction indices in binding order.
  for (const auto& v : order) {
    IndexInfo info;
    info.var = v;
    info.extent = canon[v.get()].extent;
    info.reduced = true;
    info.range_from = canon[v.get()].at;
    for (const auto& [r, vs] : rc.binds)
      if (std::find(vs.begin(), vs.end(), v) != vs.end()) {
        info.reduce_expr = r;
        info.reduce_op = r->op;
      }
    rc.infos.push_back(info);
  }
  for (const auto& [r, vs] : rc.binds) (void)vs;
  return ok;
}

/// Pass 3: every index that is not a reduction variable's defining use is
/// proven inside its dimension.
bool Checker::check_access_bounds(const Access& a, const std::vector<Fact>& facts, FnCtx& ctx,
                                  RhsCtx& rc) {
  auto slots = access_slots(a, ctx, rc, false);
  if (!slots) return false;
  for (const auto& s : *slots) {
    if (!s.sym) {
      TypePtr it = elem_type(*s.index, ctx, rc);
      if (it->kind == TypeKind::Error) return false;
      if (it->kind == TypeKind::IntValue || (it->kind == TypeKind::Scalar && is_int(it->scalar)))
        diags_.report(DiagKind::OutOfBounds, s.index->range, "this index",
                      "[0, " + (s.extent ? sym::str(s.extent) : std::string("?")) + ")");
      else
        diags_.report(DiagKind::NonIntegerIndex, s.index->range, code(types::str(it)));
      return false;
    }
    if (s.index->kind == ExprKind::Name && rc.free_var.count(s.index)) continue;  // checked by infer_ranges
    if (!s.extent) continue;
    if (!prove_in_bounds(facts, s.sym, s.extent, s.index->range, rc.ranges)) return false;
  }
  return true;
}

/// An integer expression as a Sym, or null when it is not one.
SymPtr Checker::to_sym(const Expr& e, const RhsCtx& rc, FnCtx& ctx) {
  switch (e.kind) {
    case ExprKind::Int: {
      errno = 0;
      unsigned long long v = std::strtoull(e.text.c_str(), nullptr, 10);
      if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) return nullptr;
      return sym::constant(static_cast<int64_t>(v));
    }
    case ExprKind::Name: {
        if (auto it = rc.lhs.find(e.name); it != rc.lhs.end()) {
        out_.index_refs[&e] = it->second;
        return sym::var(it->second);
      }
      if (auto it = rc.free_var.find(&e); it != rc.free_var.end()) {
        out_.index_refs[&e] = it->second;
        return sym::var(it->second);
      }
      if (auto c = out_.int_consts.find(e.name); c != out_.int_consts.end()) return sym::constant(c->second);
      auto v = ctx.scope.find(e.name);
      if (v != ctx.scope.end() && v->second.is_size) return sym::size(e.name);
      // Another integer scalar: an unknown but fixed value for the proof.
      if (v != ctx.scope.end() && v->second.type->kind == TypeKind::Scalar && is_int(v->second.type->scalar))
        return sym::read(v->second.path, {});
      return nullptr;
    }
    case ExprKind::Unary:
      if (e.op == "-") {
        auto a = to_sym(*e.operands[0], rc, ctx);
        return a ? sym::sub(sym::constant(0), a) : nullptr;
      }
      if (e.op == "+") return to_sym(*e.operands[0], rc, ctx);
      return nullptr;
    case ExprKind::Binary: {
      static const std::map<std::string, SymKind> ops = {
          {"+", SymKind::Add}, {"-", SymKind::Sub}, {"*", SymKind::Mul}, {"/", SymKind::Div}, {"%", SymKind::Mod}};
      auto it = ops.find(e.op);
      if (it == ops.end()) return nullptr;
      auto a = to_sym(*e.operands[0], rc, ctx);
      auto b = to_sym(*e.operands[1], rc, ctx);
      if (!a || !b) return nullptr;
      return sym::op(it->second, {a, b});
    }
    case ExprKind::Call:
      if (e.name == "len" && e.operands.size() == 1) {
        const Expr& arg = *e.operands[0];
        if (auto pv = path_value(arg, ctx.scope, false); pv && pv->second->kind == TypeKind::List)
          return sym::size("len(" + pv->first + ")");
        if (arg.kind == ExprKind::Index && arg.operands.size() == 2) {
          auto pv = path_value(*arg.operands[0], ctx.scope, false);
          auto b = to_sym(*arg.operands[1], rc, ctx);
          if (pv && pv->second->kind == TypeKind::List && b) return sym::read(pv->first + ".len", {b});
        }
      }
      if ((e.name == "max" || e.name == "min") && e.operands.size() == 2) {
        auto a = to_sym(*e.operands[0], rc, ctx);
        auto b = to_sym(*e.operands[1], rc, ctx);
        if (!a || !b) return nullptr;
        return sym::op(e.name == "max" ? SymKind::Max : SymKind::Min, {a, b});
      }
      if ((e.name == "i32" || e.name == "i64") && e.operands.size() == 1) return to_sym(*e.operands[0], rc, ctx);
      return nullptr;
    case ExprKind::Index:
    case ExprKind::Field: {
      // A read of an integer array whose contents are fixed (a length array).
      auto [base, groups] = ast::index_chain(e);
      auto pv = path_value(*base, ctx.scope, false);
      if (!pv) return nullptr;
      const TypePtr& t = pv->second;
      if (groups.empty()) {
        if (t->kind == TypeKind::Scalar && is_int(t->scalar)) return sym::read(pv->first, {});
        return nullptr;
      }
      if (t->kind != TypeKind::Tensor || !is_int(t->scalar)) return nullptr;
      std::vector<SymPtr> args;
      for (const auto& g : groups)
        for (const Expr* ix : g) {
          auto s = to_sym(*ix, rc, ctx);
          if (!s) return nullptr;
          args.push_back(s);
        }
      if (args.size() != t->rank()) return nullptr;
      return sym::read(pv->first, std::move(args));
    }
    default: return nullptr;
  }
}

TypePtr Checker::unify(const TypePtr& a, const TypePtr& b, SourceRange at,
                       const std::string& what) {
  if (a->kind == TypeKind::Error || b->kind == TypeKind::Error) return types::error();
  auto numeric_value = [](TypeKind k) { return k == TypeKind::IntValue || k == TypeKind::FloatValue; };
  if (a->kind == TypeKind::Scalar && b->kind == TypeKind::Scalar) {
    if (a->scalar == b->scalar) return a;
    diags_.report(DiagKind::TypeMismatch, at,
                  fmt::format("{} has operands of types `{}` and `{}`; convert one, e.g. `{}(...)`", what,
                              scalar_name(a->scalar), scalar_name(b->scalar), scalar_name(a->scalar)));
    return types::error();
  }
  if (a->kind == TypeKind::Scalar && numeric_value(b->kind)) return adapt(a, b, at, what);
  if (b->kind == TypeKind::Scalar && numeric_value(a->kind)) return adapt(b, a, at, what);
  if (numeric_value(a->kind) && numeric_value(b->kind))
    return (a->kind == TypeKind::FloatValue || b->kind == TypeKind::FloatValue) ? types::float_value() : types::int_value();
  diags_.report(DiagKind::TypeMismatch, at,
                fmt::format("{} needs scalar operands, found `{}` and `{}`", what, types::str(a), types::str(b)));
  return types::error();
}

/// An untyped value next to a concrete scalar takes the scalar's type when it fits.
TypePtr Checker::adapt(const TypePtr& concrete, const TypePtr& untyped, SourceRange at,
                       const std::string& what) {
  Scalar s = concrete->scalar;
  if (s == Scalar::Bool || (untyped->kind == TypeKind::FloatValue && !is_float(s))) {
    diags_.report(DiagKind::TypeMismatch, at,
                  fmt::format("{} mixes `{}` with {}", what, scalar_name(s),
                              untyped->kind == TypeKind::FloatValue ? "a float" : "an integer"));
    return types::error();
  }
  return concrete;
}

bool Checker::is_numeric(const TypePtr& t) {
  return t->kind == TypeKind::IntValue || t->kind == TypeKind::FloatValue ||
         (t->kind == TypeKind::Scalar && t->scalar != Scalar::Bool);
}

TypePtr Checker::elem_type(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
  TypePtr t = elem_type_of(e, ctx, rc);
  out_.expr_types[&e] = t;
  return t;
}

TypePtr Checker::elem_type_of(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
  switch (e.kind) {
    case ExprKind::Int: {
      if (!int_literal(e)) return types::error();
      return types::int_value();
    }
    case ExprKind::Float: return float_literal(e) ? types::float_value() : types::error();
    case ExprKind::Bool: return types::scalar(Scalar::Bool);
    case ExprKind::Name: {
      if (auto it = rc.lhs.find(e.name); it != rc.lhs.end()) {
        out_.index_refs[&e] = it->second;
        return types::int_value();
      }
      if (auto it = rc.free_var.find(&e); it != rc.free_var.end()) {
        out_.index_refs[&e] = it->second;
        return types::int_value();
      }
      if (out_.int_consts.count(e.name)) return types::int_value();
      if (out_.float_consts.count(e.name)) return types::float_value();
      auto v = ctx.scope.find(e.name);
      if (v == ctx.scope.end()) return types::error();  // reported by collect
      if (v->second.is_size) return types::int_value();
      const TypePtr& t = v->second.type;
      if (t->kind == TypeKind::Scalar) {
        if (uninitialized_.count(e.name)) {
          diags_.report(DiagKind::UninitializedUse, e.range, e.name);
          uninitialized_.erase(e.name);
          return types::error();
        }
        return t;
      }
      if (t->kind == TypeKind::Error) return t;
      diags_.report(DiagKind::IndexCount, e.range,
                    fmt::format("{} is a `{}`; index it to get an element", code(e.name), types::str(t)));
      return types::error();
    }
    case ExprKind::Field: {
      auto pv = path_value(e, ctx.scope, true);
      if (!pv) return types::error();
      if (pv->second->kind == TypeKind::Scalar) return pv->second;
      diags_.report(DiagKind::IndexCount, e.range,
                    fmt::format("{} is a `{}`; index it to get an element", code(expr_path_text(e)), types::str(pv->second)));
      return types::error();
    }
    case ExprKind::Index: {
      const Expr* base = &e;
      while (base->kind == ExprKind::Index) base = base->operands[0].get();
      auto pv = path_value(*base, ctx.scope, false);
      if (!pv) return types::error();
      if (pv->second->kind == TypeKind::List) return pv->second->element->kind == TypeKind::Tensor ? types::scalar(pv->second->element->scalar) : types::error();
      if (pv->second->kind != TypeKind::Tensor) return types::error();
      return types::scalar(pv->second->scalar);
    }
    case ExprKind::Unary: {
      if (e.op == "-" && e.operands[0]->kind == ExprKind::Int) {
        out_.expr_types[e.operands[0].get()] = types::int_value();
        return int_literal(*e.operands[0], true) ? types::int_value() : types::error();
      }
      TypePtr t = elem_type(*e.operands[0], ctx, rc);
      if (t->kind == TypeKind::Error) return t;
      if (e.op == "!") {
        if (is_boolean(t)) return t;
        diags_.report(DiagKind::TypeMismatch, e.range, "`!` needs a `bool`, found `" + types::str(t) + "`");
        return types::error();
      }
      if (is_numeric(t)) return t;
      diags_.report(DiagKind::TypeMismatch, e.range, "`" + e.op + "` needs a number, found `" + types::str(t) + "`");
      return types::error();
    }
    case ExprKind::Binary: {
      TypePtr a = elem_type(*e.operands[0], ctx, rc);
      TypePtr b = elem_type(*e.operands[1], ctx, rc);
      if (a->kind == TypeKind::Error || b->kind == TypeKind::Error) return types::error();
      const std::string& op = e.op;
      if (op == "&&" || op == "||") {
        if (is_boolean(a) && is_boolean(b)) return a;
        diags_.report(DiagKind::TypeMismatch, e.op_range, "`" + op + "` needs `bool` operands");
        return types::error();
      }
      if (op == "==" || op == "!=") {
        if (is_boolean(a) && is_boolean(b)) return a;
      }
      if (!is_numeric(a) || !is_numeric(b)) {
        diags_.report(DiagKind::TypeMismatch, e.op_range,
                      fmt::format("`{}` needs numbers, found `{}` and `{}`", op, types::str(a), types::str(b)));
        return types::error();
      }
      TypePtr t = unify(a, b, e.op_range, "`" + op + "`");
      if (t->kind == TypeKind::Error) return t;
      if (t->kind == TypeKind::Scalar) {
        if (!check_literal_fits(*e.operands[0], t->scalar) || !check_literal_fits(*e.operands[1], t->scalar))
          return types::error();
      }
      if (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=")
        return types::scalar(Scalar::Bool);
      return t;
    }
    case ExprKind::Reduce: {
      TypePtr t = elem_type(*e.operands[0], ctx, rc);
      auto it = rc.binds.find(&e);
      if (it == rc.binds.end() || it->second.empty()) {
        diags_.report(DiagKind::EmptyReduce, e.range);
        return types::error();
      }
      if (t->kind == TypeKind::Error) return t;
      if (!is_numeric(t)) {
        diags_.report(DiagKind::TypeMismatch, e.range, "`reduce` needs a number, found `" + types::str(t) + "`");
        return types::error();
      }
      return t;
    }
    case ExprKind::Call: return call_type(e, ctx, rc);
    case ExprKind::Construct:
      diags_.report(DiagKind::TypeMismatch, e.range, "a construction is a whole value; bind it with `let`");
      return types::error();
    case ExprKind::TensorLit:
      diags_.report(DiagKind::TypeMismatch, e.range, "a tensor literal is a whole value; bind it with `let`");
      return types::error();
  }
  return types::error();
}

TypePtr Checker::call_type(const Expr& e, FnCtx& ctx, RhsCtx& rc) {
  const std::string& n = e.name;
  auto arity = [&](size_t want) {
    if (e.operands.size() == want) return true;
    diags_.report(DiagKind::ArgumentCount, e.range, n, want, e.operands.size());
    return false;
  };
  std::vector<TypePtr> args;
  auto eval_args = [&]() {
    bool ok = true;
    for (const auto& o : e.operands) {
      args.push_back(elem_type(*o, ctx, rc));
      ok &= args.back()->kind != TypeKind::Error;
    }
    return ok;
  };
  if (auto s = scalar_from_name(n)) {
    if (!arity(1) || !eval_args()) return types::error();
    if (!is_numeric(args[0]) && !is_boolean(args[0])) {
      diags_.report(DiagKind::TypeMismatch, e.range, "cannot convert `" + types::str(args[0]) + "` to `" + n + "`");
      return types::error();
    }
    return types::scalar(*s);
  }
  if (is_math1(n)) {
    if (!arity(1) || !eval_args()) return types::error();
    const TypePtr& a = args[0];
    if (a->kind == TypeKind::IntValue || a->kind == TypeKind::FloatValue) return n == "abs" ? a : types::float_value();
    if (a->kind == TypeKind::Scalar && is_float(a->scalar)) return a;
    if (n == "abs" && a->kind == TypeKind::Scalar && is_int(a->scalar)) return a;
    diags_.report(DiagKind::TypeMismatch, e.range,
                  fmt::format("`{}` needs a float, found `{}`; convert it, e.g. `f32(...)`", n, types::str(a)));
    return types::error();
  }
  if (n == "pow" || n == "max" || n == "min") {
    if (!arity(2) || !eval_args()) return types::error();
    if (!is_numeric(args[0]) || !is_numeric(args[1])) {
      diags_.report(DiagKind::TypeMismatch, e.range, "`" + n + "` needs numbers");
      return types::error();
    }
    return unify(args[0], args[1], e.range, "`" + n + "`");
  }
  if (n == "select") {
    if (!arity(3) || !eval_args()) return types::error();
    if (!is_boolean(args[0])) {
      diags_.report(DiagKind::TypeMismatch, e.operands[0]->range,
                    "the condition of `select` must be a `bool`, found `" + types::str(args[0]) + "`");
      return types::error();
    }
    if (is_boolean(args[1]) && is_boolean(args[2])) return args[1];
    return unify(args[1], args[2], e.range, "`select`");
  }
  if (n == "len") {
    if (!arity(1)) return types::error();
    if (!to_sym(e, rc, ctx)) {
      diags_.report(DiagKind::TypeMismatch, e.range, "`len` takes a list or one element of a list");
      return types::error();
    }
    return types::int_value();
  }
  if (n == "print" || n == "all" || n == "sum") {
    diags_.report(DiagKind::TypeMismatch, e.range, code(n) + " cannot be used inside an expression");
    return types::error();
  }
  auto sig = signatures_.find(n);
  bool evaluated = false;
  if (auto g = generic_fns_.find(n); g != generic_fns_.end()) {
    // The arguments' element types select the instance.
    if (!arity(g->second->params.size()) || !eval_args()) return types::error();
    auto inst = pick_instance(e, *g->second, args);
    if (!inst) return types::error();
    sig = signatures_.find(*inst);
    evaluated = true;
  }
  if (sig == signatures_.end()) {
    diags_.report(DiagKind::UnknownFunction, e.name_range, n);
    return types::error();
  }
  const CheckedFunction& callee = out_.functions[sig->second];
  if (!arity(callee.params.size()) || (!evaluated && !eval_args())) return types::error();
  for (size_t i = 0; i < args.size(); ++i) {
    const TypePtr& p = callee.params[i].second;
    if (p->kind != TypeKind::Scalar) {
      diags_.report(DiagKind::TypeMismatch, e.operands[i]->range,
                    fmt::format("{} takes a `{}` here; call it with `let` outside the element-wise expression", code(n),
                                types::str(p)));
      return types::error();
    }
    if (unify(p, args[i], e.operands[i]->range, "argument " + std::to_string(i + 1))->kind == TypeKind::Error)
      return types::error();
    if (args[i]->kind == TypeKind::Scalar && args[i]->scalar != p->scalar) return types::error();
  }
  if (callee.ret->kind != TypeKind::Scalar) {
    diags_.report(DiagKind::TypeMismatch, e.range, code(n) + " returns `" + types::str(callee.ret) + "`, not a scalar");
    return types::error();
  }
  return callee.ret;
}

}  // namespace checker_internal
}  // namespace dccc
