// Checker: type resolution (named, list and tensor types, aliases and
// their size parameters), extents and the reads inside them, index
// grouping, the prover entry points, and `coupling` type definitions.

#include "typecheck/checker_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "support/spelling.h"
#include "typecheck/dim_graph.h"

namespace dccc {
namespace checker_internal {

void suggest_name(Diagnostic& d, SourceRange range, const std::string& name, const std::vector<std::string>& candidates) {
  auto best = closest_name(name, candidates);
  if (!best) return;
  d.message += "; did you mean `" + *best + "`?";
  d.fixits.push_back({range, *best});
}

void suggest_field(Diagnostic& d, SourceRange range, const std::string& name, const CouplingDef& def) {
  std::vector<std::string> fields;
  for (const auto& f : def.fields) fields.push_back(f.name);
  suggest_name(d, range, name, fields);
}

TypePtr Checker::resolve_alias(const std::string& name) {
  if (auto it = out_.type_aliases.find(name); it != out_.type_aliases.end()) return it->second;
  auto decl = alias_decls_.find(name);
  if (decl == alias_decls_.end()) return nullptr;
  if (resolving_.count(name)) {
    diags_.report(DiagKind::NotAType, decl->second->name.range, "type alias " + code(name) + " refers to itself");
    return out_.type_aliases[name] = types::error();
  }
  resolving_.insert(name);
  const ast::TypeExpr& t = *decl->second->type;
  TypePtr result;
  if (t.kind == ast::TypeExprKind::Coupling) {
    result = resolve_coupling(t, name);
  } else {
    std::vector<std::string> sizes;
    ExtentEnv env{ExtentMode::Signature, nullptr, nullptr, &sizes, {}};
    result = resolve_type(t, env);
  }
  resolving_.erase(name);
  return out_.type_aliases[name] = result;
}

TypePtr Checker::resolve_type(const ast::TypeExpr& t, ExtentEnv& env) {
  switch (t.kind) {
    case ast::TypeExprKind::Named: {
      if (auto s = scalar_from_name(t.name.name)) return types::scalar(*s);
      if (auto a = resolve_alias(t.name.name)) {
        if (a->kind == TypeKind::Coupling) return instantiate_coupling(a, env);
        return instantiate_sizes(a, env);
      }
      if (out_.int_consts.count(t.name.name) || out_.float_consts.count(t.name.name) || fn_decls_.count(t.name.name)) {
        diags_.report(DiagKind::NotAType, t.name.range, code(t.name.name) + " is a value, not a type");
        return types::error();
      }
      diags_.report(DiagKind::UnknownType, t.name.range, t.name.name);
      return types::error();
    }
    case ast::TypeExprKind::AutoCoupling:
      diags_.report(DiagKind::NotAType, t.range, "`auto coupling` is not supported yet; name a coupling type");
      return types::error();
    case ast::TypeExprKind::Coupling:
      if (env.mode != ExtentMode::Coupling && env.mode != ExtentMode::Signature) {
        diags_.report(DiagKind::NotAType, t.range, "a `coupling` type must be declared with `type Name = coupling {...}`");
        return types::error();
      }
      return instantiate_coupling(resolve_coupling(t, "coupling"), env);
    case ast::TypeExprKind::List: {
      TypePtr elem = resolve_type(*t.element, env);
      if (elem->kind == TypeKind::Error) return elem;
      if (elem->kind != TypeKind::Tensor) {
        diags_.report(DiagKind::NotAType, t.element->range, "a `list` holds tensors, not " + types::str(elem));
        return types::error();
      }
      auto out = std::make_shared<Type>();
      out->kind = TypeKind::List;
      out->element = elem;
      return out;
    }
    case ast::TypeExprKind::Tensor: return resolve_tensor(t, env);
  }
  return types::error();
}

/// A tensor alias used in a signature: its size parameters join the function's.
TypePtr Checker::instantiate_sizes(const TypePtr& t, ExtentEnv& env) {
  if (t->kind != TypeKind::Tensor) return t;
  std::vector<SymPtr> extents;
  for (const auto& g : t->groups)
    for (const auto& d : g.dims)
      if (d.extent) extents.push_back(d.extent);
  sym::Subst s;
  for (const auto& e : extents) {
    std::function<void(const SymPtr&)> walk = [&](const SymPtr& x) {
      if (x->kind == SymKind::Size) bind_size_name(x->name, env, s);
      for (const auto& a : x->args) walk(a);
    };
    walk(e);
  }
  return types::substitute(t, s);
}

void Checker::bind_size_name(const std::string& name, ExtentEnv& env, sym::Subst& s) {
  if (auto c = out_.int_consts.find(name); c != out_.int_consts.end()) {
    s.sizes[name] = sym::constant(c->second);
    return;
  }
  if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), name) == env.size_params->end())
    env.size_params->push_back(name);
}

TypePtr Checker::instantiate_coupling(const TypePtr& t, ExtentEnv& env) {
  if (t->kind != TypeKind::Coupling) return t;
  auto out = std::make_shared<Type>(*t);
  for (const auto& sp : t->coupling->size_params) {
    if (auto c = out_.int_consts.find(sp); c != out_.int_consts.end()) {
      out->instance.sizes[sp] = sym::constant(c->second);
      continue;
    }
    out->instance.sizes[sp] = sym::size(sp);
    if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), sp) == env.size_params->end())
      env.size_params->push_back(sp);
  }
  return out;
}

TypePtr Checker::resolve_tensor(const ast::TypeExpr& t, ExtentEnv& env) {
  auto elem = scalar_from_name(t.name.name);
  bool ok = true;
  if (!elem) {
    auto a = resolve_alias(t.name.name);
    if (a && a->kind == TypeKind::Scalar) {
      elem = a->scalar;
    } else if (a) {
      diags_.report(DiagKind::NotAType, t.name.range, "element type must be a scalar, not " + code(t.name.name));
      ok = false;
    } else {
      diags_.report(DiagKind::UnknownType, t.name.range, t.name.name);
      ok = false;
    }
  }
  auto out = std::make_shared<Type>();
  out->kind = TypeKind::Tensor;
  out->scalar = elem.value_or(Scalar::F32);
  size_t named_before = env.named.size();
  std::set<std::string> names_here;
  for (const auto& g : t.groups) {
    GroupT group;
    for (const auto& d : g.dims) {
      DimT dim;
      dim.range = d.range;
      if (d.extent) {
        dim.extent = resolve_extent(*d.extent, env);
        if (!dim.extent) {
          ok = false;
        } else {
          extent_depth_++;
          ProofResult r = prove(extent_facts(env), sym::le(sym::constant(0), dim.extent), d.extent->range);
          extent_depth_--;
          if (r == ProofResult::Refuted) {
            diags_.report(DiagKind::BadExtent, d.extent->range,
                          "extent " + code(sym::str(dim.extent)) + " may be negative");
            ok = false;
          } else if (r == ProofResult::Unknown) {
            ok = false;
          }
        }
      } else if (env.mode == ExtentMode::Body) {
        diags_.report(DiagKind::BadExtent, d.range, "`?` extents are only allowed in parameter types");
        ok = false;
      }
      if (d.index) {
        if (!names_here.insert(d.index->name).second) {
          diags_.report(DiagKind::Redefinition, d.index->range, d.index->name);
          ok = false;
        }
        dim.index = std::make_shared<IndexVar>(IndexVar{d.index->name, d.index->range});
        env.named.push_back({d.index->name, {dim.index, dim.extent ? dim.extent : sym::constant(0)}});
      }
      group.dims.push_back(std::move(dim));
    }
    out->groups.push_back(std::move(group));
  }
  env.named.resize(named_before);
  return ok ? TypePtr(out) : types::error();
}

/// Facts for proofs inside extents: the named dims in scope lie in range.
std::vector<Fact> Checker::extent_facts(const ExtentEnv& env) {
  std::vector<Fact> facts = env.facts ? *env.facts : std::vector<Fact>{};
  for (const auto& [n, vr] : env.named) {
    facts.push_back({{}, sym::le(sym::constant(0), sym::var(vr.first))});
    facts.push_back({{}, sym::lt(sym::var(vr.first), vr.second)});
  }
  return facts;
}

/// Convert an extent expression to a Sym, checking every name and read.
SymPtr Checker::resolve_extent(const Expr& e, ExtentEnv& env) {
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(extent_depth_);
  switch (e.kind) {
    case ExprKind::Int: {
      auto v = int_literal(e);
      return v ? sym::constant(*v) : nullptr;
    }
    case ExprKind::Name: return extent_name(e, env);
    case ExprKind::Binary: {
      static const std::map<std::string, SymKind> ops = {
          {"+", SymKind::Add}, {"-", SymKind::Sub}, {"*", SymKind::Mul}, {"/", SymKind::Div}, {"%", SymKind::Mod}};
      auto it = ops.find(e.op);
      if (it == ops.end()) break;
      auto a = resolve_extent(*e.operands[0], env);
      auto b = resolve_extent(*e.operands[1], env);
      if (!a || !b) return nullptr;
      return sym::op(it->second, {a, b});
    }
    case ExprKind::Call:
      if ((e.name == "max" || e.name == "min") && e.operands.size() == 2) {
        auto a = resolve_extent(*e.operands[0], env);
        auto b = resolve_extent(*e.operands[1], env);
        if (!a || !b) return nullptr;
        return sym::op(e.name == "max" ? SymKind::Max : SymKind::Min, {a, b});
      }
      break;
    case ExprKind::Index: return extent_read(e, env);
    case ExprKind::Field:
      if (env.mode != ExtentMode::Coupling) {
        // `q.n`: a scalar integer field of a coupling value.
        auto r = extent_read(e, env);
        return r;
      }
      break;
    default: break;
  }
  diags_.report(DiagKind::BadExtent, e.range,
                "an extent must be an integer expression of sizes, named indices and length arrays");
  return nullptr;
}

SymPtr Checker::extent_name(const Expr& e, ExtentEnv& env) {
  const std::string& n = e.name;
  for (auto it = env.named.rbegin(); it != env.named.rend(); ++it)
    if (it->first == n) return sym::var(it->second.first);
  if (auto c = out_.int_consts.find(n); c != out_.int_consts.end()) return sym::constant(c->second);
  if (out_.float_consts.count(n)) {
    diags_.report(DiagKind::BadExtent, e.range, "extent " + code(n) + " is not an integer");
    return nullptr;
  }
  if (env.mode == ExtentMode::Coupling) {
    if (env.coupling->field_asts.count(n)) {
      auto r = env.coupling->resolved.find(n);
      if (r != env.coupling->resolved.end() && r->second->kind == TypeKind::Scalar) {
        if (!is_int(r->second->scalar)) {
          diags_.report(DiagKind::NonIntegerLength, e.range, n, scalar_name(r->second->scalar));
          return nullptr;
        }
        return sym::read(n, {});
      }
      if (r != env.coupling->resolved.end() && r->second->kind == TypeKind::Error) return nullptr;
      diags_.report(DiagKind::BadExtent, e.range, "length array " + code(n) + " must be indexed, as in " + code(n + "[b]"));
      return nullptr;
    }
  }
  if (env.scope) {
    auto v = env.scope->find(n);
    if (v != env.scope->end()) {
      if (v->second.is_size) return sym::size(n);
      diags_.report(DiagKind::BadExtent, e.range, code(n) + " is a value of type " + types::str(v->second.type) + ", not a size");
      return nullptr;
    }
  }
  if (env.mode == ExtentMode::Body) {
    if (env.pending_sizes && env.pending_sizes->count(n)) {
      diags_.report(DiagKind::UninitializedUse, e.range, n);
      diags_.note({}, "size " + code(n) + " appears only in the return type; define it with `let " + n + " = ...;` first");
      return nullptr;
    }
    diags_.report(DiagKind::UnknownName, e.range, n);
    return nullptr;
  }
  if (env.size_params && std::find(env.size_params->begin(), env.size_params->end(), n) == env.size_params->end())
    env.size_params->push_back(n);
  return sym::size(n);
}

/// `seqlen[b]`, `q.seqlen[b]`, `q.n`: a read of an integer array or field.
SymPtr Checker::extent_read(const Expr& e, ExtentEnv& env) {
  auto [base, groups] = ast::index_chain(e);
  std::string array;
  TypePtr type;
  if (env.mode == ExtentMode::Coupling) {
    if (base->kind != ExprKind::Name || !env.coupling->field_asts.count(base->name)) {
      auto& d = diags_.report(DiagKind::UnknownField, base->range,
                              base->kind == ExprKind::Name ? base->name : std::string("?"), env.coupling->current_field);
      if (base->kind == ExprKind::Name) {
        std::vector<std::string> fields;
        for (const auto& [field, ast] : env.coupling->field_asts) fields.push_back(field);
        suggest_name(d, base->range, base->name, fields);
      }
      if (env.coupling->ast) diags_.note(env.coupling->ast->range, "the coupling's fields are declared here");
      return nullptr;
    }
    array = base->name;
    auto r = env.coupling->resolved.find(array);
    if (r == env.coupling->resolved.end()) return nullptr;  // cyclic; reported elsewhere
    type = r->second;
  } else {
    if (!env.scope) {
      diags_.report(DiagKind::BadExtent, e.range, "a type alias outside a coupling cannot read arrays");
      return nullptr;
    }
    auto pv = path_value(*base, *env.scope, true);
    if (!pv) return nullptr;
    array = pv->first;
    type = pv->second;
  }
  if (type->kind == TypeKind::Error) return nullptr;
  std::string shown = array;
  if (type->kind == TypeKind::Scalar && groups.empty()) {
    if (!is_int(type->scalar)) {
      diags_.report(DiagKind::NonIntegerLength, base->range, shown, scalar_name(type->scalar));
      return nullptr;
    }
    if (env.reads) env.reads->insert(array);
    return sym::read(array, {});
  }
  if (type->kind != TypeKind::Tensor) {
    diags_.report(DiagKind::NonIntegerLength, base->range, shown, types::str(type));
    return nullptr;
  }
  if (!is_int(type->scalar)) {
    diags_.report(DiagKind::NonIntegerLength, base->range, shown, scalar_name(type->scalar));
    return nullptr;
  }
  if (!check_grouping(e, groups, type, shown)) return nullptr;
  // Each index must range over exactly the array's dimension (a plain
  // named index) or provably stay inside it (any other expression).
  std::vector<SymPtr> args;
  sym::Subst inner;
  size_t gi = 0;
  std::vector<Fact> facts = extent_facts(env);
  for (const auto& g : type->groups) {
    for (size_t di = 0; di < g.dims.size(); ++di) {
      const Expr* ix = groups[gi][di];
      SymPtr arg = resolve_extent(*ix, env);
      if (!arg) return nullptr;
      SymPtr extent = sym::substitute(g.dims[di].extent, inner);
      if (g.dims[di].index) inner.vars[g.dims[di].index.get()] = arg;
      if (arg->kind == SymKind::Var && extent) {
        SymPtr range;
        for (const auto& [n, vr] : env.named)
          if (vr.first == arg->var) range = vr.second;
        if (range && prove(facts, sym::eq(range, extent), ix->range) != ProofResult::Proved) {
          diags_.report(DiagKind::LengthDomainMismatch, ix->range, shown, arg->var->name, code(sym::str(range)),
                        code(sym::str(extent)));
          diags_.note(arg->var->where, code(arg->var->name) + " is bound here");
          return nullptr;
        }
      } else if (extent) {
        if (!prove_in_bounds(facts, arg, extent, ix->range, {})) return nullptr;
      }
      args.push_back(arg);
    }
    ++gi;
  }
  if (env.reads) env.reads->insert(array);
  return sym::read(array, std::move(args));
}

/// Reports IndexCount / IndexGrouping when `groups` do not fit `type`.
bool Checker::check_grouping(const Expr& at, const std::vector<std::vector<const Expr*>>& groups,
                             const TypePtr& type, const std::string& shown) {
  size_t given = 0;
  for (const auto& g : groups) given += g.size();
  bool same = groups.size() == type->groups.size();
  for (size_t i = 0; same && i < groups.size(); ++i) same = groups[i].size() == type->groups[i].dims.size();
  if (same) return true;
  std::string want;
  for (const auto& g : type->groups) {
    want += "[";
    for (size_t i = 0; i < g.dims.size(); ++i) want += i ? ", _" : "_";
    want += "]";
  }
  if (given == type->rank()) {
    diags_.report(DiagKind::IndexGrouping, at.range,
                  fmt::format("{} is indexed as `{}`; group its indices like its type: `{}`", code(shown),
                              group_shape(groups), want));
  } else {
    diags_.report(DiagKind::IndexCount, at.range,
                  fmt::format("{} has {} dimension(s) but {} index(es) are given; expected `{}`", code(shown),
                              type->rank(), given, want));
  }
  return false;
}

std::string Checker::group_shape(const std::vector<std::vector<const Expr*>>& groups) {
  std::string s;
  for (const auto& g : groups) {
    s += "[";
    for (size_t i = 0; i < g.size(); ++i) s += i ? ", _" : "_";
    s += "]";
  }
  return s;
}

ProofResult Checker::prove(const std::vector<Fact>& facts, const SymPtr& goal, SourceRange at) {
  ProofResult r = prover_.prove(facts, goal);
  if (r == ProofResult::Unknown) diags_.report(DiagKind::ProofUnknown, at, code(sym::str(goal)));
  return r;
}

/// Proves 0 <= idx < extent; reports OutOfBounds with a note on where a
/// plain index variable's range came from.
bool Checker::prove_in_bounds(
    const std::vector<Fact>& facts, const SymPtr& idx, const SymPtr& extent, SourceRange at,
    const std::map<const IndexVar*, std::pair<SymPtr, SourceRange>>& ranges) {
  ProofResult lo = prove(facts, sym::le(sym::constant(0), idx), at);
  if (lo == ProofResult::Unknown) return false;
  ProofResult hi = lo == ProofResult::Proved ? prove(facts, sym::lt(idx, extent), at) : ProofResult::Refuted;
  if (hi == ProofResult::Unknown) return false;
  if (lo == ProofResult::Proved && hi == ProofResult::Proved) return true;
  std::string what = code(sym::str(idx));
  if (idx->kind == SymKind::Var) {
    auto it = ranges.find(idx->var.get());
    if (it != ranges.end()) what += " (ranging over " + code(sym::str(it->second.first)) + ")";
  }
  diags_.report(DiagKind::OutOfBounds, at, what, "[0, " + sym::str(extent) + ")");
  if (idx->kind == SymKind::Var) {
    auto it = ranges.find(idx->var.get());
    if (it != ranges.end() && it->second.second.valid())
      diags_.note(it->second.second, code(idx->var->name) + " gets its range " + code(sym::str(it->second.first)) + " here");
  }
  return false;
}

TypePtr Checker::resolve_coupling(const ast::TypeExpr& t, const std::string& name) {
  auto def = std::make_unique<CouplingDef>();
  def->name = name;
  def->range = t.range;
  CouplingScope cs;
  cs.ast = &t;
  cs.size_params = &def->size_params;
  DimGraph graph;
  bool ok = true;
  for (const auto& f : t.fields) {
    if (cs.field_asts.count(f.name.name)) {
      diags_.report(DiagKind::Redefinition, f.name.range, f.name.name);
      ok = false;
      continue;
    }
    cs.field_asts[f.name.name] = f.type.get();
    graph.add_node(f.name.name);
  }
  // Edges: every sibling an extent mentions, found syntactically first so
  // that cycles are reported before anything depends on the order.
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < graph.size(); ++i) ids[graph.name(i)] = i;
  std::map<std::pair<size_t, size_t>, SourceRange> edge_at;
  for (size_t i = 0; i < graph.size(); ++i) {
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (e.kind == ExprKind::Name && ids.count(e.name)) {
        graph.add_edge(i, ids[e.name]);
        edge_at.emplace(std::make_pair(i, ids[e.name]), e.range);
      }
      for (const auto& o : e.operands) walk(*o);
    };
    std::function<void(const ast::TypeExpr&)> walk_type = [&](const ast::TypeExpr& ty) {
      for (const auto& g : ty.groups)
        for (const auto& d : g.dims)
          if (d.extent) walk(*d.extent);
      if (ty.element) walk_type(*ty.element);
    };
    walk_type(*cs.field_asts[graph.name(i)]);
  }
  auto cycle = graph.find_cycle();
  if (cycle) {
    size_t from = (*cycle)[0], to = (*cycle)[1];
    diags_.report(DiagKind::CyclicExtent, edge_at[{from, to}], graph.name(from), graph.path_str(*cycle));
    for (size_t k = 1; k + 1 < cycle->size(); ++k)
      diags_.note(edge_at[{(*cycle)[k], (*cycle)[k + 1]}],
                  code(graph.name((*cycle)[k])) + " depends on " + code(graph.name((*cycle)[k + 1])) + " here");
    ok = false;
  } else {
    for (size_t n : graph.topo_order()) {
      ExtentEnv env{ExtentMode::Coupling, &cs, nullptr, &def->size_params, {}};
      cs.current_field = graph.name(n);
      TypePtr ft = resolve_type(*cs.field_asts[graph.name(n)], env);
      cs.resolved[graph.name(n)] = ft;
      if (ft->kind == TypeKind::Error) ok = false;
      def->order.push_back(n);
    }
    for (const auto& f : t.fields)
      if (cs.resolved.count(f.name.name)) def->fields.push_back({f.name.name, cs.resolved[f.name.name], f.name.range});
  }
  for (const auto& l : t.layout) {
    if (l.name != "packed" && l.name != "padded" && l.name != "interleaved") {
      diags_.report(DiagKind::UnknownLayout, l.range, l.name);
      ok = false;
    }
    def->layout.push_back(l.name);
  }
  if (ok) {
    // `where` facts over bare field names.
    std::map<std::string, Value> scope;
    for (const auto& f : def->fields) scope[f.name] = Value{f.type, f.range, false, f.name};
    for (const auto& sp : def->size_params) scope[sp] = Value{types::int_value(), {}, true, sp};
    for (const auto& w : t.where)
      if (auto fact = where_fact(*w, scope, {})) def->where.push_back(*fact);
      else ok = false;
  }
  auto type = std::make_shared<Type>();
  type->kind = ok ? TypeKind::Coupling : TypeKind::Error;
  type->coupling = def.get();
  out_.couplings.push_back(std::move(def));
  return type;
}

}  // namespace checker_internal
}  // namespace dccc
