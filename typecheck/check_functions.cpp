// Checker: function signatures, the callee-first body order, function
// bodies and their facts, and the `let`, `return` and expression
// statements.

#include "typecheck/checker_impl.h"

#include <algorithm>
#include <functional>
#include <memory>

namespace dccc {
namespace checker_internal {

/// Indices into out_.functions, every function after the functions its body
/// calls (declaration order otherwise; a recursive cycle keeps it, and
/// lowering rejects the recursion).
std::vector<size_t> Checker::callees_first() const {
  std::vector<size_t> order;
  std::vector<int> state(out_.functions.size(), 0);  // 0 new, 1 on the path, 2 done
  std::function<void(const Expr&, std::vector<size_t>&)> calls = [&](const Expr& e, std::vector<size_t>& out) {
    if (e.kind == ExprKind::Call)
      if (auto it = signatures_.find(e.name); it != signatures_.end()) out.push_back(it->second);
    // A call of a generic function may call any of its instances.
    if (e.kind == ExprKind::Call)
      if (auto it = generic_instances_.find(e.name); it != generic_instances_.end())
        out.insert(out.end(), it->second.begin(), it->second.end());
    for (const auto& o : e.operands) calls(*o, out);
    for (const auto& f : e.fields)
      if (f.value) calls(*f.value, out);
  };
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i]) return;
    state[i] = 1;
    std::vector<size_t> callees;
    for (const auto& st : out_.functions[i].decl->body) {
      if (st->target) calls(*st->target, callees);
      if (st->value) calls(*st->value, callees);
    }
    for (size_t c : callees) visit(c);
    state[i] = 2;
    order.push_back(i);
  };
  for (size_t i = 0; i < out_.functions.size(); ++i) visit(i);
  return order;
}

void Checker::check_signature(const ast::FnDecl& f) {
  if (!fn_decls_.count(f.name.name) || fn_decls_[f.name.name] != &f) return;
  CheckedFunction cf;
  cf.decl = &f;
  std::map<std::string, Value> scope;
  std::set<std::string> pnames;
  for (const auto& p : f.params) {
    if (!pnames.insert(p.name.name).second) {
      diags_.report(DiagKind::Redefinition, p.name.range, p.name.name);
      continue;
    }
    ExtentEnv env{ExtentMode::Signature, nullptr, &scope, &cf.size_params, {}};
    TypePtr t = resolve_type(*p.type, env);
    cf.params.push_back({p.name.name, t});
    scope[p.name.name] = Value{t, p.name.range, false, p.name.name};
  }
  if (f.ret) {
    ExtentEnv env{ExtentMode::Signature, nullptr, &scope, &cf.size_params, {}};
    cf.ret = resolve_type(*f.ret, env);
  } else {
    cf.ret = types::void_type();
  }
  if (f.name.name == "main" && (!f.params.empty() || f.ret)) {
    diags_.report(DiagKind::TypeMismatch, f.name.range, "`main` takes no parameters and returns nothing");
  }
  out_.functions.push_back(std::move(cf));
  signatures_[f.name.name] = out_.functions.size() - 1;
  if (f.instance_of) generic_instances_[f.instance_of->generic].push_back(out_.functions.size() - 1);
}

void Checker::check_body(CheckedFunction& cf) {
  const ast::FnDecl& f = *cf.decl;
  FnCtx ctx{&cf, {}, {}, {}, {}, {}, {}};
  frozen_ = &ctx.frozen;
  let_sizes_ = &ctx.let_sizes;
  struct Reset {
    const std::set<std::string>*& p;
    const std::set<std::string>*& q;
    ~Reset() { p = q = nullptr; }
  } reset{frozen_, let_sizes_};
  std::set<std::string> param_sizes;
  for (const auto& [name, t] : cf.params) {
    collect_sizes(t, param_sizes);
    add_value_facts(name, t, ctx);
  }
  bool param_error = std::any_of(cf.params.begin(), cf.params.end(),
                                 [](const auto& p) { return p.second->kind == TypeKind::Error; });
  for (const auto& s : cf.size_params) {
    if (param_sizes.count(s) || param_error) ctx.scope[s] = Value{types::int_value(), {}, true, s};
    else ctx.output_sizes.insert(s);
  }
  for (size_t i = 0; i < cf.params.size(); ++i)
    ctx.scope[cf.params[i].first] = Value{cf.params[i].second, f.params[i].name.range, false, cf.params[i].first};
  for (const auto& w : f.where)
    if (auto fact = where_fact(*w, ctx.scope, ctx.facts)) ctx.facts.push_back(*fact);
  cf.entry_facts = ctx.facts;
  for (const auto& s : f.body) check_stmt(*s, ctx);
  if (cf.ret->kind != TypeKind::Void && cf.ret->kind != TypeKind::Error && !ctx.returned)
    diags_.report(DiagKind::ReturnMismatch, f.name.range,
                  "function " + code(f.name.name) + " must return a value of type " + code(types::str(cf.ret)));
  cf.facts = ctx.facts;
  for (const auto& [n, v] : ctx.scope) cf.locals[n] = v.type;
}

void Checker::collect_sizes(const TypePtr& t, std::set<std::string>& out) {
  if (!t) return;
  std::function<void(const SymPtr&)> walk = [&](const SymPtr& s) {
    if (!s) return;
    if (s->kind == SymKind::Size) out.insert(s->name);
    for (const auto& a : s->args) walk(a);
  };
  if (t->kind == TypeKind::Tensor)
    for (const auto& g : t->groups)
      for (const auto& d : g.dims) walk(d.extent);
  if (t->kind == TypeKind::List) collect_sizes(t->element, out);
  if (t->kind == TypeKind::Coupling)
    for (const auto& [n, s] : t->instance.sizes) walk(s);
}

/// Fields whose values determine other fields' extents (length arrays).
std::set<std::string> Checker::length_fields(const CouplingDef& def) {
  std::set<std::string> out;
  for (const auto& f : def.fields) {
    if (f.type->kind != TypeKind::Tensor) continue;
    for (const auto& g : f.type->groups)
      for (const auto& d : g.dims) {
        std::vector<SymPtr> rs;
        sym::reads(d.extent, rs);
        for (const auto& r : rs) out.insert(r->name.substr(0, r->name.find('.')));
      }
  }
  return out;
}

/// Facts a parameter or constructed value brings: its coupling's `where`,
/// and its length arrays become frozen.
void Checker::add_value_facts(const std::string& path, const TypePtr& t, FnCtx& ctx) {
  if (t->kind != TypeKind::Coupling) return;
  sym::Subst s;
  s.sizes = t->instance.sizes;
  for (const auto& f : t->coupling->fields) {
    s.arrays[f.name] = field_identity(path, t, f.name);
    s.arrays[f.name + ".sum"] = field_identity(path, t, f.name) + ".sum";
    if (length_fields(*t->coupling).count(f.name)) ctx.frozen.insert(field_identity(path, t, f.name));
  }
  for (const auto& w : t->coupling->where) {
    Fact f;
    for (const auto& [v, r] : w.vars) f.vars.push_back({v, sym::substitute(r, s)});
    f.body = sym::substitute(w.body, s);
    ctx.facts.push_back(f);
  }
}

void Checker::check_stmt(const ast::Stmt& s, FnCtx& ctx) {
  switch (s.kind) {
    case ast::StmtKind::Let: check_let(s, ctx); break;
    case ast::StmtKind::Assign: check_assign(s, ctx); break;
    case ast::StmtKind::Return: check_return(s, ctx); break;
    case ast::StmtKind::Expr: check_expr_stmt(s, ctx); break;
  }
}

bool Checker::name_taken(const std::string& n, const FnCtx& ctx) {
  return ctx.scope.count(n) || out_.int_consts.count(n) || out_.float_consts.count(n);
}

void Checker::check_let(const ast::Stmt& s, FnCtx& ctx) {
  const std::string& name = s.name.name;
  bool defines_output_size = ctx.output_sizes.count(name) > 0;
  if (!defines_output_size && (name_taken(name, ctx) || scalar_from_name(name) || is_builtin(name))) {
    diags_.report(DiagKind::Redefinition, s.name.range, name);
    auto v = ctx.scope.find(name);
    if (v != ctx.scope.end() && v->second.def.valid()) diags_.note(v->second.def, "previous definition is here");
    return;
  }
  TypePtr annot;
  if (s.type) {
    std::set<std::string> reads;
    ExtentEnv env{ExtentMode::Body, nullptr, &ctx.scope, nullptr, {}, &ctx.facts, &reads, &ctx.output_sizes};
    annot = resolve_type(*s.type, env);
    ctx.frozen.insert(reads.begin(), reads.end());
  }
  if (!s.type && !s.value) {
    diags_.report(DiagKind::NotAType, s.range, "`let " + name + ";` needs a type or a value");
    ctx.scope[name] = Value{types::error(), s.name.range, false, name};
    return;
  }
  TypePtr vt;
  StmtInfo info;
  info.stmt = &s;
  std::optional<std::string> source_path;
  if (s.value) {
    vt = value_type(*s.value, ctx, name, &info, &source_path);
    if (annot && s.value->kind == ExprKind::TensorLit && vt->kind == TypeKind::Tensor && annot->kind == TypeKind::Tensor) {
      // A literal's untyped numbers take the annotated element type.
      TypePtr elem = literal_elem_[s.value.get()];
      int errors = diags_.error_count();
      // An empty literal (`[]`, `[[], []]`) has no number to disagree with.
      std::function<bool(const Expr&)> has_number = [&](const Expr& x) {
        if (x.kind != ExprKind::TensorLit) return true;
        return std::any_of(x.operands.begin(), x.operands.end(), [&](const auto& o) { return has_number(*o); });
      };
      if (has_number(*s.value)) assign_compatible(types::scalar(annot->scalar), elem, s.value->range, name);
      std::function<void(const Expr&)> each = [&](const Expr& x) {
        if (x.kind == ExprKind::TensorLit) for (const auto& o : x.operands) each(*o);
        else check_literal_fits(x, annot->scalar);
      };
      each(*s.value);
      if (diags_.error_count() > errors) vt = types::error();
      else {
        auto copy = std::make_shared<Type>(*vt);
        copy->scalar = annot->scalar;
        vt = copy;
      }
    }
    if (annot && vt->kind != TypeKind::Error && annot->kind != TypeKind::Error) {
      DiagKind k = s.value->kind == ExprKind::TensorLit ? DiagKind::ShapeMismatch : DiagKind::TypeMismatch;
      if (!conforms(annot, vt, s.value->range, k, ctx)) vt = types::error();
      else if (annot->kind == TypeKind::Scalar) check_literal_fits(*s.value, annot->scalar);
    }
  }
  TypePtr t = annot ? annot : vt;
  if (vt && annot && annot->kind == TypeKind::Coupling && vt->kind == TypeKind::Coupling) t = vt;
  if (annot && vt && annot->kind == TypeKind::Scalar) t = annot;
  if (!annot && vt) {
    if (vt->kind == TypeKind::FloatValue) t = types::scalar(Scalar::F32);
    if (vt->kind == TypeKind::Void) {
      diags_.report(DiagKind::TypeMismatch, s.value->range, "the expression gives no value");
      t = types::error();
    }
  }
  if (annot && annot->kind == TypeKind::Coupling && !s.value) {
    diags_.report(DiagKind::NotAType, s.range,
                  "a coupling value must be constructed: `" + name + " = " + types::str(annot) + " { ... }`");
    t = types::error();
  }
  Value v{t, s.name.range, false, name};
  bool is_int_value = t->kind == TypeKind::IntValue || (t->kind == TypeKind::Scalar && is_int(t->scalar));
  if (is_int_value && s.value) {
    // An integer `let` is a size: usable in extents, with its value as a fact.
    v.is_size = true;
    ctx.let_sizes.insert(name);
    if (t->kind == TypeKind::IntValue && annot == nullptr) v.type = types::int_value();
    RhsCtx empty;
    if (SymPtr val = to_sym(*s.value, empty, ctx)) ctx.facts.push_back({{}, sym::eq(sym::size(name), val)});
  }
  if (defines_output_size) {
    if (!is_int_value) {
      diags_.report(DiagKind::TypeMismatch, s.name.range, "size " + code(name) + " must be given an integer value");
    }
    ctx.output_sizes.erase(name);
    v.is_size = true;
  }
  // `let a = e;` of a tensor (or a call that returns one of its arguments)
  // names e's storage: writes through `a`, the facts about it and its
  // being frozen or read-only all follow that storage.
  if (t->kind == TypeKind::Tensor && source_path) v.path = *source_path;
  if (t->kind == TypeKind::Coupling && source_path) {
    // A copy of another coupling value shares its arrays.
    auto copy = std::make_shared<Type>(*t);
    for (const auto& f : t->coupling->fields) copy->instance.arrays[f.name] = field_identity(*source_path, t, f.name);
    v.type = copy;
  }
  if (t->kind == TypeKind::Coupling) add_value_facts(name, v.type, ctx);
  if (t->kind == TypeKind::Scalar && !s.value) uninitialized_.insert(name);
  ctx.scope[name] = v;
  info.value_type = v.type;
  ctx.fn->stmts.push_back(std::move(info));
}

/// Type of a whole value (let initialiser, return value, argument).
TypePtr Checker::value_type(const Expr& e, FnCtx& ctx, const std::string& binding, StmtInfo* info,
                            std::optional<std::string>* source_path) {
  switch (e.kind) {
    case ExprKind::Name: {
      auto v = ctx.scope.find(e.name);
      if (v != ctx.scope.end() && !v->second.is_size && v->second.type->kind != TypeKind::Scalar) {
        out_.paths[&e] = v->second.path;
        if (source_path) *source_path = v->second.path;
        return v->second.type;
      }
      break;
    }
    case ExprKind::Field: {
      auto pv = path_value(e, ctx.scope, false);
      if (pv && pv->second->kind != TypeKind::Scalar) {
        if (source_path) *source_path = pv->first;
        return pv->second;
      }
      if (!pv) {
        path_value(e, ctx.scope, true);
        return types::error();
      }
      break;
    }
    case ExprKind::Construct: return check_construct(e, ctx, binding);
    case ExprKind::TensorLit: return literal_type(e, ctx);
    case ExprKind::Call:
      if (const CheckedFunction* shape = shape_of(e.name)) {
        const CheckedFunction& callee = *shape;
        bool whole = callee.ret->kind != TypeKind::Scalar ||
                     std::any_of(callee.params.begin(), callee.params.end(),
                                 [](const auto& p) { return p.second->kind != TypeKind::Scalar; });
        if (whole) return check_call(e, ctx, source_path);
      }
      break;
    case ExprKind::Index: {
      // A list element is a whole tensor.
      const Expr* base = &e;
      while (base->kind == ExprKind::Index) base = base->operands[0].get();
      auto pv = path_value(*base, ctx.scope, false);
      if (pv && pv->second->kind == TypeKind::List && e.operands[0].get() == base) {
        RhsCtx rc;
        element_check(e, ctx, rc, info);
        return pv->second->element;
      }
      break;
    }
    default: break;
  }
  RhsCtx rc;
  return element_check(e, ctx, rc, info);
}

void Checker::check_return(const ast::Stmt& s, FnCtx& ctx) {
  const TypePtr& ret = ctx.fn->ret;
  ctx.returned = true;
  if (!s.value) {
    if (ret->kind != TypeKind::Void && ret->kind != TypeKind::Error)
      diags_.report(DiagKind::ReturnMismatch, s.range, "`return` needs a value of type " + code(types::str(ret)));
    return;
  }
  if (ret->kind == TypeKind::Void) {
    diags_.report(DiagKind::ReturnMismatch, s.value->range,
                  "function " + code(ctx.fn->decl->name.name) + " returns nothing, but a value is returned");
    return;
  }
  StmtInfo info;
  info.stmt = &s;
  std::optional<std::string> source;
  TypePtr vt = value_type(*s.value, ctx, "", &info, &source);
  if (vt->kind == TypeKind::Error || ret->kind == TypeKind::Error) return;
  conforms(ret, vt, s.value->range, DiagKind::ReturnMismatch, ctx);
  note_result_aliases(vt, source, *ctx.fn);
  info.value_type = vt;
  ctx.fn->stmts.push_back(std::move(info));
}

/// Records which parts of a returned value are a parameter's storage.
void Checker::note_result_aliases(const TypePtr& vt, const std::optional<std::string>& source,
                                  CheckedFunction& fn) {
  auto param_of = [&](const std::string& storage) -> std::optional<std::pair<size_t, std::string>> {
    auto dot = storage.find('.');
    std::string root = storage.substr(0, dot);
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].first == root) return std::make_pair(i, dot == std::string::npos ? "" : storage.substr(dot + 1));
    return std::nullopt;
  };
  if (vt->kind == TypeKind::Tensor && source) {
    if (auto p = param_of(*source)) fn.result_aliases.emplace("", *p);
  } else if (vt->kind == TypeKind::Coupling) {
    for (const auto& f : vt->coupling->fields)
      if (auto p = param_of(field_identity(source ? *source : std::string(), vt, f.name)))
        fn.result_aliases.emplace(f.name, *p);
  }
}

void Checker::check_expr_stmt(const ast::Stmt& s, FnCtx& ctx) {
  const Expr& e = *s.value;
  StmtInfo info;
  info.stmt = &s;
  if (e.kind == ExprKind::Call && e.name == "print") {
    for (const auto& a : e.operands) {
      TypePtr t = value_type(*a, ctx, "", &info);
      if (t->kind == TypeKind::Void)
        diags_.report(DiagKind::TypeMismatch, a->range, "the expression gives no value to print");
    }
    info.value_type = types::void_type();
    ctx.fn->stmts.push_back(std::move(info));
    return;
  }
  if (e.kind == ExprKind::Call && shape_of(e.name)) {
    info.value_type = value_type(e, ctx, "", &info);
    ctx.fn->stmts.push_back(std::move(info));
    return;
  }
  diags_.report(DiagKind::NotAssignable, e.range, "this expression has no effect; assign it, `let` it or `print` it");
}

}  // namespace checker_internal
}  // namespace dccc
