// Checker: conformance of an argument to a formal type (binding size
// parameters), calls, coupling construction, and tensor/ragged literals.

#include "typecheck/checker_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>

namespace dccc {
namespace checker_internal {

/// Does `actual` fit where `formal` is expected? Sizes named in
/// `b.bindable` are bound on first sight; every other extent must be
/// provably equal. Reports with `kind` (or SizeConflict for bindings).
bool Checker::unify_type(const TypePtr& formal, const TypePtr& actual, Bindings& b, SourceRange at,
                         DiagKind kind, FnCtx& ctx, sym::Subst vars) {
  if (formal->kind == TypeKind::Error || actual->kind == TypeKind::Error) return false;
  auto mismatch = [&]() {
    diags_.report(kind, at,
                  fmt::format("expected a value of type `{}`, found `{}`", types::str(formal), types::str(actual)));
    return false;
  };
  switch (formal->kind) {
    case TypeKind::Scalar:
      if (actual->kind == TypeKind::Scalar) return actual->scalar == formal->scalar ? true : mismatch();
      if (actual->kind == TypeKind::IntValue && formal->scalar != Scalar::Bool) return true;
      if (actual->kind == TypeKind::FloatValue && is_float(formal->scalar)) return true;
      return mismatch();
    case TypeKind::IntValue:
      if (actual->kind == TypeKind::IntValue || (actual->kind == TypeKind::Scalar && is_int(actual->scalar))) return true;
      return mismatch();
    case TypeKind::Coupling: {
      if (actual->kind != TypeKind::Coupling || !same_coupling(formal->coupling, actual->coupling)) return mismatch();
      for (const auto& sp : formal->coupling->size_params) {
        auto f = formal->instance.sizes.find(sp);
        auto a = actual->instance.sizes.find(sp);
        if (f == formal->instance.sizes.end() || a == actual->instance.sizes.end()) continue;
        if (!unify_sym(f->second, a->second, b, at, kind, ctx)) return false;
      }
      return true;
    }
    case TypeKind::List:
      if (actual->kind != TypeKind::List) return mismatch();
      return unify_type(formal->element, actual->element, b, at, kind, ctx, vars);
    case TypeKind::Tensor: {
      if (actual->kind != TypeKind::Tensor || actual->scalar != formal->scalar ||
          actual->groups.size() != formal->groups.size())
        return mismatch();
      for (size_t g = 0; g < formal->groups.size(); ++g)
        if (formal->groups[g].dims.size() != actual->groups[g].dims.size()) return mismatch();
      for (size_t g = 0; g < formal->groups.size(); ++g) {
        for (size_t d = 0; d < formal->groups[g].dims.size(); ++d) {
          const DimT& fd = formal->groups[g].dims[d];
          const DimT& ad = actual->groups[g].dims[d];
          if (fd.index && ad.index) vars.vars[fd.index.get()] = sym::var(ad.index);
          if (!fd.extent || !ad.extent) continue;
          SymPtr fe = sym::substitute(fd.extent, vars);
          if (!unify_sym(fe, ad.extent, b, at, kind, ctx, actual)) return false;
        }
      }
      return true;
    }
    default:
      if (formal->kind == actual->kind) return true;
      return mismatch();
  }
}

bool Checker::same_coupling(const CouplingDef* a, const CouplingDef* b) {
  if (a == b) return true;
  if (a->fields.size() != b->fields.size()) return false;
  for (size_t i = 0; i < a->fields.size(); ++i) {
    if (a->fields[i].name != b->fields[i].name) return false;
    if (types::str(a->fields[i].type) != types::str(b->fields[i].type)) return false;
  }
  return true;
}

bool Checker::unify_sym(const SymPtr& formal, const SymPtr& actual, Bindings& b, SourceRange at,
                        DiagKind kind, FnCtx& ctx, const TypePtr& actual_type) {
  if (formal->kind == SymKind::Size && b.bindable.count(formal->name)) {
    auto it = b.sizes.find(formal->name);
    if (it == b.sizes.end()) {
      b.sizes[formal->name] = {actual, at};
      return true;
    }
    ProofResult r = prove(ctx.facts, sym::eq(it->second.first, actual), at);
    if (r == ProofResult::Proved) return true;
    if (r == ProofResult::Unknown) return false;
    diags_.report(DiagKind::SizeConflict, at, formal->name, code(sym::str(actual)), code(sym::str(it->second.first)));
    diags_.note(it->second.second, code(formal->name) + " is " + code(sym::str(it->second.first)) + " from here");
    return false;
  }
  sym::Subst s;
  for (const auto& [n, v] : b.sizes) s.sizes[n] = v.first;
  SymPtr f = sym::substitute(formal, s);
  // Extents under the dimension's named indices: quantify over them.
  std::vector<IndexVarPtr> vs;
  sym::vars(f, vs);
  sym::vars(actual, vs);
  std::vector<Fact> facts = ctx.facts;
  if (actual_type) {
    for (const auto& g : actual_type->groups)
      for (const auto& d : g.dims)
        if (d.index && d.extent) facts.push_back({{}, sym::lt(sym::var(d.index), d.extent)});
  }
  ProofResult r = prove(facts, sym::eq(f, actual), at);
  if (r == ProofResult::Proved) return true;
  if (r == ProofResult::Unknown) return false;
  diags_.report(kind, at, fmt::format("extent `{}` does not match the expected `{}`", sym::str(actual), sym::str(f)));
  return false;
}

bool Checker::conforms(const TypePtr& formal, const TypePtr& actual, SourceRange at, DiagKind kind,
                       FnCtx& ctx) {
  Bindings b;
  return unify_type(formal, actual, b, at, kind, ctx);
}

/// Type of a call's result. Where the callee returns (a field bound to) one
/// of its parameters, the result is the argument's storage: a coupling
/// result's instance names those arrays and a tensor result's path goes to
/// `source_path`.
TypePtr Checker::check_call(const Expr& e, FnCtx& ctx, std::optional<std::string>* source_path) {
  std::vector<std::pair<TypePtr, std::optional<std::string>>> args(e.operands.size());
  std::string name = e.name;
  bool evaluated = false;
  if (auto g = generic_fns_.find(e.name); g != generic_fns_.end()) {
    // The arguments' types select the instance.
    if (g->second->params.size() != e.operands.size()) {
      diags_.report(DiagKind::ArgumentCount, e.range, e.name, g->second->params.size(), e.operands.size());
      return types::error();
    }
    std::vector<TypePtr> ts;
    for (size_t i = 0; i < e.operands.size(); ++i) {
      args[i].first = value_type(*e.operands[i], ctx, "", nullptr, &args[i].second);
      if (args[i].first->kind == TypeKind::Error) return types::error();
      ts.push_back(args[i].first);
    }
    auto inst = pick_instance(e, *g->second, ts);
    if (!inst) return types::error();
    name = *inst;
    evaluated = true;
  }
  auto sig = signatures_.find(name);
  const CheckedFunction& callee = out_.functions[sig->second];
  if (callee.params.size() != e.operands.size()) {
    diags_.report(DiagKind::ArgumentCount, e.range, e.name, callee.params.size(), e.operands.size());
    return types::error();
  }
  Bindings b;
  b.bindable.insert(callee.size_params.begin(), callee.size_params.end());
  bool ok = true;
  for (size_t i = 0; i < e.operands.size(); ++i) {
    TypePtr at = evaluated ? args[i].first : value_type(*e.operands[i], ctx, "", nullptr, &args[i].second);
    args[i].first = at;
    if (at->kind == TypeKind::Error) {
      ok = false;
      continue;
    }
    ok &= unify_type(callee.params[i].second, at, b, e.operands[i]->range, DiagKind::TypeMismatch, ctx);
  }
  if (!ok) return types::error();
  sym::Subst s;
  for (const auto& [n, v] : b.sizes) s.sizes[n] = v.first;
  for (const auto& n : callee.size_params)
    if (!s.sizes.count(n)) s.sizes[n] = sym::size(fmt::format("{}#{}.{}", e.name, ++fresh_counter_, n));
  out_.call_sizes[&e] = s.sizes;
  TypePtr ret = types::substitute(callee.ret, s);
  if (ret->kind == TypeKind::Coupling) {
    auto copy = std::make_shared<Type>(*ret);
    for (auto& [n, v] : copy->instance.sizes) v = sym::substitute(v, s);
    copy->instance.arrays.clear();
    ret = copy;
  }
  for (const auto& [field, param] : callee.result_aliases) {
    const auto& [at, path] = args[param.first];
    std::string storage;
    if (param.second.empty()) {
      if (!path) continue;
      storage = *path;
    } else {
      if (at->kind != TypeKind::Coupling) continue;
      storage = field_identity(path ? *path : std::string(), at, param.second);
      if (storage.front() == '.') continue;  // a fresh field of an argument built in place
    }
    if (field.empty()) {
      if (source_path) *source_path = storage;
    } else if (ret->kind == TypeKind::Coupling) {
      std::const_pointer_cast<Type>(ret)->instance.arrays[field] = storage;
    }
  }
  return ret;
}

TypePtr Checker::check_construct(const Expr& e, FnCtx& ctx, const std::string& binding) {
  TypePtr ct = resolve_alias(e.name);
  if (!ct) {
    diags_.report(DiagKind::UnknownType, e.name_range, e.name);
    return types::error();
  }
  if (ct->kind == TypeKind::Error) return ct;
  if (ct->kind != TypeKind::Coupling) {
    diags_.report(DiagKind::NotAType, e.name_range, code(e.name) + " is not a coupling type; only couplings are constructed");
    return types::error();
  }
  const CouplingDef* def = ct->coupling;
  std::string self = binding.empty() ? fmt::format("{}#{}", e.name, ++fresh_counter_) : binding;
  std::map<std::string, const ast::FieldInit*> given;
  bool ok = true;
  for (const auto& f : e.fields) {
    if (!def->field(f.name.name)) {
      auto& d = diags_.report(DiagKind::NoSuchField, f.name.range, code(def->name), f.name.name);
      suggest_field(d, f.name.range, f.name.name, *def);
      diags_.note(def->range, code(def->name) + " is defined here");
      ok = false;
    } else if (!given.emplace(f.name.name, &f).second) {
      diags_.report(DiagKind::Redefinition, f.name.range, f.name.name);
      ok = false;
    }
  }
  for (const auto& f : def->fields)
    if (!given.count(f.name)) {
      diags_.report(DiagKind::MissingField, e.range, code(def->name), f.name);
      diags_.note(f.range, code(f.name) + " is declared here");
      ok = false;
    }
  if (!ok) return types::error();
  auto result = std::make_shared<Type>(*ct);
  result->instance = {};
  Bindings b;
  b.bindable.insert(def->size_params.begin(), def->size_params.end());
  for (const auto& sp : def->size_params)
    if (auto c = out_.int_consts.find(sp); c != out_.int_consts.end()) b.sizes[sp] = {sym::constant(c->second), {}};
  // Bound fields first (in dependency order), so fresh fields are compared
  // against extents that read the bound arrays.
  std::map<std::string, TypePtr> actual;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t idx : def->order) {
      const CouplingField& f = def->fields[idx];
      const ast::FieldInit* fi = given[f.name];
      bool fresh = fi->type != nullptr;
      if ((pass == 0) == fresh) continue;
      TypePtr at;
      // A ragged field given as a literal (`data: [[1.0, 2.0], [3.0]]`):
      // fresh storage whose rows are checked against the literal lengths.
      bool ragged_literal = !fresh && fi->value->kind == ExprKind::TensorLit && is_ragged_field(f);
      if (fresh) {
        std::set<std::string> reads;
        ExtentEnv env{ExtentMode::Body, nullptr, &ctx.scope, nullptr, {}, &ctx.facts, &reads, &ctx.output_sizes};
        at = resolve_type(*fi->type, env);
        ctx.frozen.insert(reads.begin(), reads.end());
        result->instance.arrays[f.name] = self + "." + f.name;
      } else if (ragged_literal) {
        at = f.type;  // replaced below, once the field's type is known
        result->instance.arrays[f.name] = self + "." + f.name;
      } else {
        std::optional<std::string> src;
        at = value_type(*fi->value, ctx, "", nullptr, &src);
        if (fi->value->kind == ExprKind::TensorLit && at->kind == TypeKind::Tensor && f.type->kind == TypeKind::Tensor)
          at = literal_as(*fi->value, at, f.type->scalar, f.name);
        if (src) {
          result->instance.arrays[f.name] = *src;
          if (length_fields(*def).count(f.name)) ctx.frozen.insert(*src);
        } else {
          result->instance.arrays[f.name] = self + "." + f.name;
        }
      }
      if (at->kind == TypeKind::Error) {
        ok = false;
        continue;
      }
      // The coupling's field type in terms of this value's arrays and the sizes bound so far.
      sym::Subst s;
      for (const auto& other : def->fields) {
        auto it = result->instance.arrays.find(other.name);
        s.arrays[other.name] = it != result->instance.arrays.end() ? it->second : self + "." + other.name;
      }
      TypePtr want = types::substitute(f.type, s);
      if (ragged_literal) {
        at = ragged_literal_type(f, *fi->value, want, given, b, ctx);
        if (at->kind == TypeKind::Error) {
          diags_.note(f.range, code(f.name) + " is declared as " + code(types::str(f.type)) + " here");
          ok = false;
          continue;
        }
      }
      SourceRange where = fi->type ? fi->type->range : fi->value->range;
      int errors = diags_.error_count();
      if (!unify_type(want, at, b, where, DiagKind::ConstructionMismatch, ctx)) {
        if (diags_.error_count() > errors) {
          auto& d = const_cast<Diagnostic&>(diags_.diagnostics().back());
          if (d.kind == DiagKind::ConstructionMismatch)
            d.message = "field " + code(f.name) + ": " + d.message;
        }
        diags_.note(f.range, code(f.name) + " is declared as " + code(types::str(f.type)) + " here");
        ok = false;
      }
      actual[f.name] = at;
    }
  }
  if (!ok) return types::error();
  // Length arrays written as integer literals are known: later accesses
  // may rely on their values (`s.data[2][0]` when `seqlen: [3, 0, 1]`).
  for (const auto& ln : length_fields(*def)) {
    auto g = given.find(ln);
    if (g == given.end() || !g->second->value || g->second->value->kind != ExprKind::TensorLit) continue;
    const Expr& lit = *g->second->value;
    for (size_t i = 0; i < lit.operands.size(); ++i)
      if (auto v = int_literal_value(*lit.operands[i]))
        ctx.facts.push_back({{}, sym::eq(sym::read(result->instance.arrays[ln], {sym::constant(static_cast<int64_t>(i))}),
                                         sym::constant(*v))});
  }
  for (const auto& sp : def->size_params) {
    auto it = b.sizes.find(sp);
    result->instance.sizes[sp] = it != b.sizes.end() ? it->second.first : sym::size(self + "." + sp);
  }
  return result;
}

/// A tensor literal's type `t` with its untyped numbers taken as `elem`
/// (`seqlen: [3, 1]` for a `[B]i64` field), or an error when one does not fit.
TypePtr Checker::literal_as(const Expr& lit, const TypePtr& t, Scalar elem,
                            const std::string& what) {
  auto le = literal_elem_.find(&lit);
  if (le == literal_elem_.end()) return t;
  int errors = diags_.error_count();
  assign_compatible(types::scalar(elem), le->second, lit.range, what);
  std::function<void(const Expr&)> each = [&](const Expr& x) {
    if (x.kind == ExprKind::TensorLit) for (const auto& o : x.operands) each(*o);
    else check_literal_fits(x, elem);
  };
  each(lit);
  if (diags_.error_count() > errors) return types::error();
  auto copy = std::make_shared<Type>(*t);
  copy->scalar = elem;
  return copy;
}

/// Elements of a tensor literal bind no indices, so every name in one must
/// be a value (elem_type leaves unknown names to the free-index pass,
/// which does not see literals). Reports each unknown name.
bool Checker::literal_names_known(const Expr& x, FnCtx& ctx) {
  bool ok = true;
  std::function<void(const Expr&)> walk = [&](const Expr& n) {
    if (n.kind == ExprKind::Reduce) return;  // binds its own indices
    if (n.kind == ExprKind::Name && !ctx.scope.count(n.name) && !out_.int_consts.count(n.name) &&
        !out_.float_consts.count(n.name)) {
      diags_.report(DiagKind::UnknownName, n.range, n.name);
      ok = false;
    }
    for (const auto& o : n.operands) walk(*o);
  };
  walk(x);
  return ok;
}

/// True when some extent of the field depends on an outer index or a length array.
bool Checker::is_ragged_field(const CouplingField& f) {
  if (f.type->kind != TypeKind::Tensor) return false;
  if (f.type->groups.size() > 1) return true;
  for (const auto& g : f.type->groups)
    for (const auto& d : g.dims)
      if (d.extent && sym::is_ragged(d.extent)) return true;
  return false;
}

/// The value of an integer literal (`3`, `-3`), if `e` is one.
std::optional<int64_t> Checker::int_literal_value(const Expr& e) {
  if (e.kind == ExprKind::Unary && e.op == "-" && !e.operands.empty()) {
    auto v = int_literal_value(*e.operands[0]);
    if (v) return -*v;
    return std::nullopt;
  }
  if (e.kind != ExprKind::Int) return std::nullopt;
  try {
    size_t used = 0;
    int64_t v = std::stoll(e.text, &used);
    if (used == e.text.size()) return v;
  } catch (...) {
  }
  return std::nullopt;
}

/// A ragged field of a construction given as a nested literal, one list
/// per sequence (`data: [[1.0, 2.0], [3.0]], seqlen: [2, 1]`). The length
/// arrays its extents read must be literals of the same construction; every
/// list must have exactly the number of elements its extent gives there.
/// Returns the field's type with the sizes the literal fixes, or an error.
TypePtr Checker::ragged_literal_type(const CouplingField& f, const Expr& lit, const TypePtr& want,
                                     const std::map<std::string, const ast::FieldInit*>& given,
                                     Bindings& b, FnCtx& ctx) {
  std::map<std::string, int64_t> sizes;  // size parameters with known values
  for (const auto& [n, v] : b.sizes)
    if (v.first->kind == SymKind::Const) sizes[n] = v.first->value;
  std::map<const IndexVar*, int64_t> env;
  std::vector<std::pair<std::string, int64_t>> outer;  // named indices, for messages
  bool failed = false;
  auto fail = [&](SourceRange at, const std::string& msg) {
    if (!failed) diags_.report(DiagKind::ConstructionMismatch, at, "field " + code(f.name) + ": " + msg);
    failed = true;
    return std::nullopt;
  };
  std::function<std::optional<int64_t>(const SymPtr&)> eval = [&](const SymPtr& e) -> std::optional<int64_t> {
    switch (e->kind) {
      case SymKind::Const: return e->value;
      case SymKind::Size: {
        auto it = sizes.find(e->name);
        if (it != sizes.end()) return it->second;
        if (auto c = out_.int_consts.find(e->name); c != out_.int_consts.end()) return c->second;
        return fail(lit.range, "the size " + code(e->name) + " is not known where this literal needs it");
      }
      case SymKind::Var: {
        auto it = env.find(e->var.get());
        if (it != env.end()) return it->second;
        return fail(lit.range, "the extent " + code(sym::str(e)) + " cannot be evaluated in a literal");
      }
      case SymKind::Read: {
        auto g = given.find(e->name);
        const Expr* x = g != given.end() && g->second->value ? g->second->value.get() : nullptr;
        if (!x || x->kind != ExprKind::TensorLit)
          return fail(lit.range, "a ragged tensor literal needs " + code(e->name) +
                                     " written as a literal in the same construction (`" + e->name + ": [...]`)");
        for (const auto& a : e->args) {
          auto i = eval(a);
          if (!i) return std::nullopt;
          if (x->kind != ExprKind::TensorLit || *i < 0 || *i >= static_cast<int64_t>(x->operands.size()))
            return fail(lit.range, fmt::format("the extent `{}` reads {} at {}, which the literal {} does not have",
                                               sym::str(e), e->name, *i, code(e->name)));
          x = x->operands[static_cast<size_t>(*i)].get();
        }
        auto v = int_literal_value(*x);
        if (!v) return fail(x->range, "a length used by a ragged tensor literal must be an integer literal");
        return v;
      }
      case SymKind::Add:
      case SymKind::Sub:
      case SymKind::Mul:
      case SymKind::Div:
      case SymKind::Mod:
      case SymKind::Min:
      case SymKind::Max: {
        auto x = eval(e->args[0]);
        auto y = x ? eval(e->args[1]) : std::nullopt;
        if (!y) return std::nullopt;
        if ((e->kind == SymKind::Div || e->kind == SymKind::Mod) && *y == 0)
          return fail(lit.range, "the extent " + code(sym::str(e)) + " divides by zero");
        int64_t r = 0;
        bool overflow = false;
        switch (e->kind) {
          case SymKind::Add: overflow = __builtin_add_overflow(*x, *y, &r); break;
          case SymKind::Sub: overflow = __builtin_sub_overflow(*x, *y, &r); break;
          case SymKind::Mul: overflow = __builtin_mul_overflow(*x, *y, &r); break;
          case SymKind::Div:
          case SymKind::Mod:
            overflow = *x == INT64_MIN && *y == -1;
            if (!overflow) r = e->kind == SymKind::Div ? *x / *y : *x % *y;
            break;
          case SymKind::Min: r = std::min(*x, *y); break;
          default: r = std::max(*x, *y); break;
        }
        if (overflow) return fail(lit.range, "the extent " + code(sym::str(e)) + " overflows 64 bits");
        return r;
      }
      default: return fail(lit.range, "the extent " + code(sym::str(e)) + " cannot be evaluated in a literal");
    }
  };
  std::vector<const DimT*> dims;
  for (const auto& g : f.type->groups)
    for (const auto& d : g.dims) dims.push_back(&d);
  Scalar elem = f.type->scalar;
  std::function<void(const Expr&, size_t)> walk = [&](const Expr& x, size_t d) {
    if (failed) return;
    if (d == dims.size()) {
      if (x.kind == ExprKind::TensorLit) {
        fail(x.range, "a value is expected here, found a list (the literal has more levels than the field)");
        return;
      }
      RhsCtx rc;
      TypePtr t = literal_names_known(x, ctx) ? elem_type(x, ctx, rc) : types::error();
      if (t->kind == TypeKind::Error) {
        failed = true;
        return;
      }
      if (t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue && t->kind != TypeKind::FloatValue) {
        diags_.report(DiagKind::TypeMismatch, x.range, "tensor literal elements must be scalars");
        failed = true;
        return;
      }
      int errors = diags_.error_count();
      assign_compatible(types::scalar(elem), t, x.range, f.name, &x);
      if (diags_.error_count() > errors) failed = true;
      return;
    }
    const DimT& dim = *dims[d];
    std::string there;
    for (const auto& [n, v] : outer) there += fmt::format("{}{} = {}", there.empty() ? " for " : ", ", n, v);
    if (x.kind != ExprKind::TensorLit) {
      fail(x.range, "a list is expected here (dimension " + std::to_string(d + 1) + " of the field)");
      return;
    }
    int64_t n = static_cast<int64_t>(x.operands.size());
    if (!dim.extent) {
      fail(x.range, "a `?` extent cannot be given as a literal");
      return;
    }
    std::optional<int64_t> extent;
    if (dim.extent->kind == SymKind::Size && !sizes.count(dim.extent->name) &&
        !out_.int_consts.count(dim.extent->name)) {
      sizes[dim.extent->name] = n;  // the literal fixes a size nothing else gives
      extent = n;
    } else {
      extent = eval(dim.extent);
    }
    if (!extent) return;
    if (*extent != n) {
      fail(x.range, fmt::format("this list has {} element(s) but the extent `{}` is {}{}", n,
                                sym::str(dim.extent), *extent, there));
      return;
    }
    for (int64_t i = 0; i < n && !failed; ++i) {
      if (dim.index) {
        env[dim.index.get()] = i;
        outer.push_back({dim.index->name, i});
      }
      walk(*x.operands[static_cast<size_t>(i)], d + 1);
      if (dim.index) outer.pop_back();
    }
  };
  walk(lit, 0);
  if (failed) return types::error();
  sym::Subst fixed;
  for (const auto& [n, v] : sizes) fixed.sizes[n] = sym::constant(v);
  return types::substitute(want, fixed);
}

TypePtr Checker::literal_type(const Expr& e, FnCtx& ctx) {
  // Shape: nested lists of equal length; elements scalars of one type.
  std::vector<int64_t> shape;
  TypePtr elem;
  bool ok = true;
  std::function<void(const Expr&, size_t)> walk = [&](const Expr& x, size_t depth) {
    if (!ok) return;
    if (x.kind == ExprKind::TensorLit) {
      if (depth == shape.size()) {
        if (elem) {
          diags_.report(DiagKind::ShapeMismatch, x.range, "tensor literal mixes numbers and nested lists");
          ok = false;
          return;
        }
        shape.push_back(static_cast<int64_t>(x.operands.size()));
      } else if (depth > shape.size() || shape[depth] != static_cast<int64_t>(x.operands.size())) {
        diags_.report(DiagKind::ShapeMismatch, x.range,
                      fmt::format("rows of a tensor literal must have equal lengths: this one has {}, the first has {}",
                                  x.operands.size(), depth < shape.size() ? shape[depth] : 0));
        ok = false;
        return;
      }
      for (const auto& o : x.operands) walk(*o, depth + 1);
      return;
    }
    if (depth != shape.size()) {
      diags_.report(DiagKind::ShapeMismatch, x.range, "tensor literal mixes numbers and nested lists");
      ok = false;
      return;
    }
    RhsCtx rc;
    if (!literal_names_known(x, ctx)) {
      ok = false;
      return;
    }
    TypePtr t = elem_type(x, ctx, rc);
    if (t->kind == TypeKind::Error) {
      ok = false;
      return;
    }
    if (t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue && t->kind != TypeKind::FloatValue) {
      diags_.report(DiagKind::TypeMismatch, x.range, "tensor literal elements must be scalars");
      ok = false;
      return;
    }
    elem = elem ? unify(elem, t, x.range, "tensor literal") : t;
    if (elem->kind == TypeKind::Error) ok = false;
  };
  walk(e, 0);
  if (!ok) return types::error();
  auto out = std::make_shared<Type>();
  out->kind = TypeKind::Tensor;
  if (!elem || elem->kind == TypeKind::FloatValue) out->scalar = Scalar::F32;
  else if (elem->kind == TypeKind::IntValue) out->scalar = Scalar::I32;
  else out->scalar = elem->scalar;
  GroupT g;
  for (int64_t n : shape) g.dims.push_back({nullptr, sym::constant(n), e.range});
  out->groups.push_back(g);
  literal_elem_.emplace(&e, elem ? elem : types::float_value());
  return out;
}

}  // namespace checker_internal
}  // namespace dccc
