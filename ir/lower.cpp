// Lowering (ir/lower.h): the entry point, and of one function's lowering
// (ir/lower_function.h) its parameters, entry checks, buffers, symbolic
// extents and the inlining of calls; statements are ir/lower_stmt.cpp,
// expressions ir/lower_expr.cpp.
#include "ir/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/lower_function.h"

namespace dccc::ir::lowering {

FuncLowerer::FuncLowerer(const CheckedProgram& cp, const CheckedFunction& cf, DiagnosticEngine& diags,
                         std::set<std::pair<int, int>>& reported)
    : cp_(cp), cf_(cf), diags_(diags), f_(&own_), reported_(&reported) {
  for (const auto& s : cf.stmts) infos_[s.stmt] = &s;
  for (size_t i = 0; i < cp.functions.size(); ++i) by_name_[cp.functions[i].decl->name.name] = &cp.functions[i];
}

Func FuncLowerer::run() {
  f_->name = cf_.decl->name.name;
  f_->at = cf_.decl->name.range;
  // Sizes the arguments carry; those only the return type names (`B` of
  // `let B = len(xs)`) are values the body computes.
  std::set<std::string> carried;
  std::function<void(const SymPtr&)> walk = [&](const SymPtr& s) {
    if (!s) return;
    if (s->kind == SymKind::Size) carried.insert(s->name);
    for (const auto& a : s->args) walk(a);
  };
  std::function<void(const TypePtr&)> walk_type = [&](const TypePtr& t) {
    if (!t) return;
    for (const auto& g : t->groups)
      for (const auto& d : g.dims) walk(d.extent);
    if (t->kind == TypeKind::Coupling)
      for (const auto& sp : t->coupling->size_params) {
        auto it = t->instance.sizes.find(sp);
        if (it != t->instance.sizes.end()) walk(it->second);
        else carried.insert(sp);
      }
    walk_type(t->element);
  };
  for (const auto& [n, t] : cf_.params) walk_type(t);
  for (const auto& s : cf_.size_params)
    if (carried.count(s)) f_->sizes.push_back({s});
  for (size_t i = 0; i < cf_.params.size(); ++i) lower_param(cf_.params[i].first, cf_.params[i].second);
  for (const auto& fact : cf_.entry_facts) f_->checks.push_back(lower_check(fact));
  std::vector<Stmt> body;
  for (const auto& s : cf_.decl->body) body.push_back(lower_stmt(*s));
  f_->body = build::seq(std::move(body));
  return std::move(own_);
}

FuncLowerer::FuncLowerer(FuncLowerer& parent, const CheckedFunction& callee)
    : cp_(parent.cp_),
      cf_(callee),
      diags_(parent.diags_),
      f_(parent.f_),
      reported_(parent.reported_),
      parent_(&parent),
      by_name_(parent.by_name_) {
  for (const auto& s : callee.stmts) infos_[s.stmt] = &s;
  for (FuncLowerer* p = &parent; p; p = p->parent_) ++depth_;
  prefix_ = fmt::format("{}{}.", parent.prefix_, callee.decl->name.name);
}

Value FuncLowerer::inline_call(const ast::Expr& e, const CheckedFunction& callee, const std::vector<Value>& args,
                               std::vector<Stmt>& out) {
  for (FuncLowerer* p = this; p; p = p->parent_)
    if (&p->cf_ == &callee || p->depth_ > 64)
      unsupported(e.range, "the recursive call of `" + e.name + "` (calls are inlined)");
  FuncLowerer child(*this, callee);
  auto cs = cp_.call_sizes.find(&e);
  std::vector<std::pair<std::string, std::string>> defined_by_callee;  // callee size -> fresh caller size
  for (const auto& n : callee.size_params) {
    SymPtr v = cs != cp_.call_sizes.end() && cs->second.count(n) ? cs->second.at(n) : nullptr;
    if (!v) unsupported(e.range, "calling `" + e.name + "` here (its size `" + n + "` is not known)");
    const std::string fresh_prefix = e.name + "#", fresh_suffix = "." + n;
    bool fresh = v->kind == SymKind::Size && v->name.size() > fresh_prefix.size() + fresh_suffix.size() &&
                 v->name.compare(0, fresh_prefix.size(), fresh_prefix) == 0 &&
                 v->name.compare(v->name.size() - fresh_suffix.size(), fresh_suffix.size(), fresh_suffix) == 0;
    if (fresh) defined_by_callee.push_back({n, v->name});
    else child.size_subst_[n] = sym_expr(v, e.range);
  }
  for (size_t i = 0; i < callee.params.size(); ++i) {
    const auto& [name, t] = callee.params[i];
    const Value& a = args[i];
    if (t->kind == TypeKind::Coupling && a.kind == Value::Coupling) {
      for (const auto& f : t->coupling->fields) {
        auto it = a.fields.find(f.name);
        if (it == a.fields.end()) unsupported(e.operands[i]->range, "this argument");
        child.arrays_[identity_of(t, f.name, name)] = it->second;
      }
      child.couplings_[name] = a.fields;
    } else if (t->kind == TypeKind::Tensor && a.kind == Value::Tensor) {
      child.arrays_[name] = a.buffer;
    } else if (t->kind == TypeKind::Scalar && a.kind == Value::Scalar) {
      child.scalars_[name] = a.buffer;
    } else {
      unsupported(e.operands[i]->range, "an argument of type `" + types::str(t) + "`");
    }
  }
  for (const auto& fact : callee.entry_facts) {
    EntryCheck c = child.lower_check(fact);
    c.text += " (calling `" + e.name + "`)";
    out.push_back(build::located(child.assertion(c), e.range));
  }
  size_t record = f_->inlined.size(), first_buffer = f_->buffers.size();
  f_->inlined.push_back({callee.decl->name.name, parent_ ? cf_.decl->name.name : std::string(), e.range, {}});
  for (const auto& s : callee.decl->body) {
    out.push_back(child.lower_stmt(*s));
    if (s->kind == ast::StmtKind::Return) break;
  }
  for (size_t k = first_buffer; k < f_->buffers.size(); ++k)
    if (const Buffer& b = f_->buffers[k]; b->kind == BufferKind::Local && !b->dims.empty() && b->name.compare(0, child.prefix_.size(), child.prefix_) == 0 &&
        b->name.find('.', child.prefix_.size()) == std::string::npos)
      f_->inlined[record].tensors.push_back(b->name);
  for (const auto& [n, fresh] : defined_by_callee) size_alias_[fresh] = child.sym_expr(sym::size(n), e.range);
  return child.result_;
}

Stmt FuncLowerer::assertion(const EntryCheck& c) {
  Stmt s = build::assert_that(c.cond, c.text);
  for (auto it = c.vars.rbegin(); it != c.vars.rend(); ++it) s = build::for_loop(it->first, it->second, s);
  return build::seq({c.pre, s});
}

Value FuncLowerer::value_of(const ast::Expr& a, const TypePtr& formal, const std::string& name, const StmtInfo& info,
                            std::vector<Stmt>& out) {
  if (formal->kind == TypeKind::Scalar) {
    Value v;
    v.kind = Value::Scalar;
    v.buffer = scalar_buffer(name, formal->scalar);
    out.push_back(build::store(v.buffer, {}, lower_expr(a, formal->scalar, info, out)));
    return v;
  }
  if (a.kind == ExprKind::Call) {
    auto it = by_name_.find(cp_.callee_name(a));
    if (it != by_name_.end()) return call_value(a, *it->second, info, out);
  }
  auto p = cp_.paths.find(&a);
  if (p == cp_.paths.end() || (a.kind != ExprKind::Name && a.kind != ExprKind::Field))
    unsupported(a.range, "this argument; bind it with `let` first");
  Value v;
  if (formal->kind == TypeKind::Tensor) {
    v.kind = Value::Tensor;
    v.buffer = array(p->second, a.range);
    return v;
  }
  if (formal->kind == TypeKind::Coupling) {
    auto c = couplings_.find(p->second);
    if (c == couplings_.end()) unsupported(a.range, "this coupling argument");
    v.kind = Value::Coupling;
    v.fields = c->second;
    return v;
  }
  unsupported(a.range, "an argument of type `" + types::str(formal) + "`");
}

Value FuncLowerer::call_value(const ast::Expr& e, const CheckedFunction& callee, const StmtInfo& info,
                              std::vector<Stmt>& out) {
  if (e.operands.size() != callee.params.size()) unsupported(e.range, "this call");
  std::vector<Value> args;
  for (size_t i = 0; i < e.operands.size(); ++i)
    args.push_back(value_of(*e.operands[i], callee.params[i].second, e.name + "." + callee.params[i].first, info, out));
  return inline_call(e, callee, args, out);
}

Buffer FuncLowerer::scalar_buffer(const std::string& name, Scalar t) {
  auto b = std::make_shared<BufferNode>();
  b->name = prefix_ + name;
  b->type = t;
  b->kind = BufferKind::Scalar;
  f_->buffers.push_back(b);
  return b;
}

std::map<std::string, Buffer> FuncLowerer::coupling_fields(const TypePtr& t, const std::string& base, SourceRange at) {
  std::map<std::string, Buffer> out;
  for (const auto& f : t->coupling->fields) out[f.name] = array(identity_of(t, f.name, base), at);
  return out;
}

void FuncLowerer::unsupported(SourceRange at, const std::string& what) {
  // A callee inlined into several functions is reported once.
  if (reported_->insert({at.line, at.col}).second) diags_.report(DiagKind::Unsupported, at, what);
  throw Abandon{};
}

// ------------------------------------------------------------ buffers
Buffer FuncLowerer::new_buffer(const std::string& name, const std::string& identity, const TypePtr& t, BufferKind kind,
                               SourceRange at) {
  auto b = std::make_shared<BufferNode>();
  b->name = prefix_ + name;
  b->kind = kind;
  b->at = at;
  if (t->kind == TypeKind::Scalar) {
    b->type = t->scalar;
    if (kind == BufferKind::Local) b->kind = BufferKind::Scalar;
  } else if (t->kind == TypeKind::IntValue) {
    b->type = Scalar::I64;
    if (kind == BufferKind::Local) b->kind = BufferKind::Scalar;
  } else if (t->kind == TypeKind::Tensor) {
    b->type = t->scalar;
    int k = 0;
    for (const auto& g : t->groups) {
      for (const auto& d : g.dims) {
        if (!d.extent) unsupported(at, "a `?` extent");
        Var v = d.index ? var_for(d.index) : make_var(fmt::format("d{}", k));
        b->dims.push_back({v, sym_expr(d.extent, at)});
        b->pad.push_back(1);
        ++k;
      }
    }
  } else {
    unsupported(at, "a value of type `" + types::str(t) + "`");
  }
  f_->buffers.push_back(b);
  if (!identity.empty()) arrays_[identity] = b;
  return b;
}

Var FuncLowerer::var_for(const IndexVarPtr& iv) {
  auto it = vars_.find(iv.get());
  if (it != vars_.end()) return it->second;
  return vars_[iv.get()] = make_var(iv->name);
}

Buffer FuncLowerer::array(const std::string& identity, SourceRange at) {
  auto it = arrays_.find(identity);
  if (it == arrays_.end()) unsupported(at, "reading `" + identity + "` here");
  return it->second;
}

TypePtr FuncLowerer::field_type(const TypePtr& ct, const CouplingField& f, const std::string& base) {
  sym::Subst s;
  s.sizes = ct->instance.sizes;
  for (const auto& other : ct->coupling->fields) s.arrays[other.name] = identity_of(ct, other.name, base);
  return types::substitute(f.type, s);
}

std::string FuncLowerer::identity_of(const TypePtr& ct, const std::string& field, const std::string& base) {
  auto it = ct->instance.arrays.find(field);
  return it != ct->instance.arrays.end() ? it->second : base + "." + field;
}

void FuncLowerer::tensor_sizes(const TypePtr& t, Param& p, SourceRange at) {
  std::function<void(const SymPtr&)> walk = [&](const SymPtr& s) {
    if (!s) return;
    if (s->kind == SymKind::Size) {
      for (const auto& [n, e] : p.sizes)
        if (n == s->name) return;
      p.sizes.push_back({s->name, sym_expr(s, at)});
    }
    for (const auto& a : s->args) walk(a);
  };
  for (const auto& g : t->groups)
    for (const auto& d : g.dims) walk(d.extent);
}

void FuncLowerer::coupling_sizes(const TypePtr& t, Param& p, SourceRange at) {
  for (const auto& sp : t->coupling->size_params) {
    auto it = t->instance.sizes.find(sp);
    p.sizes.push_back({sp, it != t->instance.sizes.end() ? sym_expr(it->second, at) : build::size(sp)});
  }
}

void FuncLowerer::lower_param(const std::string& name, const TypePtr& t) {
  SourceRange at = cf_.decl->name.range;
  for (const auto& ap : cf_.decl->params)
    if (ap.name.name == name) at = ap.name.range;
  Param p;
  p.name = name;
  p.at = at;
  if (t->kind == TypeKind::Coupling) {
    p.kind = Param::Coupling;
    p.type_name = t->coupling->name;
    std::map<std::string, Buffer> by_field;
    for (size_t idx : t->coupling->order) {
      const CouplingField& f = t->coupling->fields[idx];
      std::string id = identity_of(t, f.name, name);
      by_field[f.name] = new_buffer(id, id, field_type(t, f, name), BufferKind::Input, f.range.line ? f.range : at);
    }
    for (const auto& f : t->coupling->fields) p.fields.push_back({f.name, by_field[f.name]});
    couplings_[name] = by_field;
    coupling_sizes(t, p, at);
  } else if (t->kind == TypeKind::Tensor) {
    SourceRange decl = at;  // the parameter's own name, for layout diagnostics
    for (const auto& dp : cf_.decl->params)
      if (dp.name.name == name) decl = dp.name.range;
    p.fields.push_back({"data", new_buffer(name, name, t, BufferKind::Input, decl)});
    tensor_sizes(t, p, at);
  } else if (t->kind == TypeKind::Scalar) {
    p.kind = Param::Scalar;
    p.fields.push_back({"value", new_buffer(name, name, t, BufferKind::Input, at)});
    scalars_[name] = p.fields.back().second;
  } else if (t->kind == TypeKind::List && t->element && t->element->kind == TypeKind::Tensor && !parent_) {
    lower_list_param(name, t->element, p, at);
  } else {
    unsupported(at, "a parameter of type `" + types::str(t) + "`");
  }
  f_->params.push_back(std::move(p));
}

void FuncLowerer::lower_list_param(const std::string& name, const TypePtr& elem, Param& p, SourceRange at) {
  p.kind = Param::List;
  const std::string count = name + ".count";  // the checker's `len(xs)`
  f_->sizes.push_back({count});
  list_sizes_["len(" + name + ")"] = count;
  p.sizes.push_back({"count", build::size(count)});
  auto len = std::make_shared<BufferNode>();
  len->at = at;
  len->name = name + ".len";
  len->type = Scalar::I32;
  len->kind = BufferKind::Input;
  len->dims.push_back({make_var("d0"), build::size(count)});
  len->pad.push_back(1);
  f_->buffers.push_back(len);
  arrays_[len->name] = len;
  auto data = std::make_shared<BufferNode>();
  data->at = at;
  data->name = name;
  data->type = elem->scalar;
  data->kind = BufferKind::Input;
  Var b = make_var("b");
  data->dims.push_back({b, build::size(count)});
  data->pad.push_back(1);
  bool first = true;
  for (const auto& g : elem->groups) {
    for (const auto& d : g.dims) {
      Expr extent;
      if (first && !d.extent) extent = build::cast(Scalar::I64, build::load(len, {build::var(b)}));
      else if (!d.extent) unsupported(at, "a `?` extent other than the first of a list element");
      else extent = sym_expr(d.extent, at);
      first = false;
      data->dims.push_back({d.index ? var_for(d.index) : make_var(fmt::format("d{}", data->dims.size())), extent});
      data->pad.push_back(1);
    }
  }
  f_->buffers.push_back(data);
  arrays_[name] = data;
  p.fields.push_back({"data", data});
  p.fields.push_back({"len", len});
  tensor_sizes(elem, p, at);
}

bool FuncLowerer::mentions_var(const Expr& e) {
  if (!e) return false;
  if (e->kind == ir::ExprKind::VarRef) return true;
  for (const auto& a : e->args)
    if (mentions_var(a)) return true;
  return false;
}

bool FuncLowerer::invariant(const Expr& e) {
  if (!e) return true;
  if (e->kind == ir::ExprKind::Load && e->buffer->kind != BufferKind::Input) return false;
  for (const auto& a : e->args)
    if (!invariant(a)) return false;
  return true;
}

EntryCheck FuncLowerer::lower_check(const Fact& fact) {
  SourceRange at = cf_.decl->name.range;
  EntryCheck c;
  std::vector<Stmt> pre;
  check_pre_ = &pre;
  struct Reset {
    std::vector<Stmt>*& p;
    ~Reset() { p = nullptr; }
  } reset{check_pre_};
  for (const auto& [v, range] : fact.vars) {
    Var var = var_for(v);
    c.vars.push_back({var, sym_expr(range, at)});
  }
  c.cond = sym_bool(fact.body, at);
  c.text = sym::str(fact.body);
  if (!pre.empty()) c.pre = build::seq(std::move(pre));
  return c;
}

Expr FuncLowerer::sym_bool(const SymPtr& s, SourceRange at) {
  auto two = [&](BinOp op) { return build::binary(op, sym_expr(s->args[0], at), sym_expr(s->args[1], at)); };
  switch (s->kind) {
    case SymKind::Eq: return two(BinOp::EQ);
    case SymKind::Ne: return two(BinOp::NE);
    case SymKind::Lt: return two(BinOp::LT);
    case SymKind::Le: return two(BinOp::LE);
    case SymKind::And: return build::binary(BinOp::And, sym_bool(s->args[0], at), sym_bool(s->args[1], at));
    case SymKind::Or: return build::binary(BinOp::Or, sym_bool(s->args[0], at), sym_bool(s->args[1], at));
    case SymKind::Not: return build::unary(UnOp::Not, sym_bool(s->args[0], at));
    case SymKind::True: return build::bool_imm(true);
    default: unsupported(at, "the `where` constraint `" + sym::str(s) + "`");
  }
}

// ------------------------------------------------------------ symbolic extents
Expr FuncLowerer::sym_expr(const SymPtr& s, SourceRange at) {
  switch (s->kind) {
    case SymKind::Const: return build::int_imm(s->value);
    case SymKind::Size: {
      if (auto c = cp_.int_consts.find(s->name); c != cp_.int_consts.end()) return build::int_imm(c->second);
      if (auto a = size_alias_.find(s->name); a != size_alias_.end()) return a->second;
      if (auto a = size_subst_.find(s->name); a != size_subst_.end()) return a->second;
      if (auto l = list_sizes_.find(s->name); l != list_sizes_.end()) return build::size(l->second);
      if (auto v = size_values_.find(s->name); v != size_values_.end()) return v->second;
      if (auto b = scalars_.find(s->name); b != scalars_.end()) return build::cast(Scalar::I64, build::load(b->second, {}));
      if (parent_ || std::find(cf_.size_params.begin(), cf_.size_params.end(), s->name) == cf_.size_params.end())
        unsupported(at, "size `" + s->name + "`");
      return build::size(s->name);
    }
    case SymKind::Var: {
      auto it = vars_.find(s->var.get());
      if (it == vars_.end()) return build::var(var_for(s->var));
      return build::var(it->second);
    }
    case SymKind::Read: {
      const std::string suffix = ".sum";
      if (s->args.empty() && check_pre_ && s->name.size() > suffix.size() &&
          s->name.compare(s->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        // sum(a) in a `where`: an i64 accumulator filled before the check.
        Buffer a = array(s->name.substr(0, s->name.size() - suffix.size()), at);
        if (a->dims.size() != 1) unsupported(at, "`sum` of a multi-dimensional array");
        auto acc = std::make_shared<BufferNode>();
        acc->name = prefix_ + "sum_" + a->name;
        acc->type = Scalar::I64;
        acc->kind = BufferKind::Scalar;
        f_->buffers.push_back(acc);
        Var k = make_var("k");
        check_pre_->push_back(build::store(acc, {}, build::int_imm(0)));
        check_pre_->push_back(build::for_loop(
            k, a->dims[0].extent,
            build::store(acc, {}, build::binary(BinOp::Add, build::load(acc, {}),
                                                build::cast(Scalar::I64, build::load(a, {build::var(k)}))))));
        return build::load(acc, {});
      }
      std::vector<Expr> args;
      for (const auto& a : s->args) args.push_back(sym_expr(a, at));
      Buffer arr = array(s->name, at);
      // An int array defined element-wise from inputs (`seqlen[b] =
      // len(xs[b])`): extents read the definition, so the offsets that
      // depend on them are computed from inputs, before the body runs.
      if (auto d = defs_.find(arr.get()); d != defs_.end() && d->second.first.size() == args.size()) {
        std::map<const VarNode*, Expr> m;
        for (size_t k = 0; k < args.size(); ++k) m[d->second.first[k].get()] = args[k];
        return build::cast(Scalar::I64, substitute(d->second.second, m));
      }
      return build::cast(Scalar::I64, build::load(arr, std::move(args)));
    }
    case SymKind::Add: return build::binary(BinOp::Add, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Sub: return build::binary(BinOp::Sub, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Mul: return build::binary(BinOp::Mul, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Div: return build::binary(BinOp::Div, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Mod: return build::binary(BinOp::Mod, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Min: return build::binary(BinOp::Min, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    case SymKind::Max: return build::binary(BinOp::Max, sym_expr(s->args[0], at), sym_expr(s->args[1], at));
    default: unsupported(at, "the extent `" + sym::str(s) + "`");
  }
}

}  // namespace dccc::ir::lowering

namespace dccc::ir {

using lowering::Abandon;
using lowering::FuncLowerer;

std::optional<Module> lower(const CheckedProgram& program, DiagnosticEngine& diags) {
  Module m;
  bool ok = true;
  std::set<std::pair<int, int>> reported;
  for (const auto& cf : program.functions) {
    // An instance of a generic function of an imported file exists only
    // inlined into its callers: a library exports the compiled file's own
    // functions, and lowering each of the (many) instances on its own
    // would only cost time.
    if (cf.decl->instance_of && cf.decl->name.name.find('.') != std::string::npos) continue;
    try {
      m.funcs.push_back(FuncLowerer(program, cf, diags, reported).run());
    } catch (const Abandon&) {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return m;
}

}  // namespace dccc::ir
