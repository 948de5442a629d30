#include "ir/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <set>

namespace dccc::ir {
namespace {

using ast::ExprKind;

/// Thrown to abandon one function after an [Unsupported] diagnostic.
struct Abandon {};

/// A whole value: what an inlined call gives its caller, or an argument.
struct Value {
  enum Kind { None, Coupling, Tensor, Scalar } kind = None;
  std::map<std::string, Buffer> fields;  // Coupling: field name -> buffer
  Buffer buffer;                          // Tensor, Scalar
};

/// Lowers one function. A call to another `.toy` function is inlined by a
/// child lowerer of the callee that writes into the caller's Func: the
/// arguments' buffers stand for the callee's parameters (scalars are copied
/// into fresh scalars), the callee's size parameters are the caller's
/// expressions the checker unified them with, its `where` constraints become
/// run-time assertions, its locals fresh buffers, and its `return` the value
/// of the call.
class FuncLowerer {
 public:
  FuncLowerer(const CheckedProgram& cp, const CheckedFunction& cf, DiagnosticEngine& diags,
              std::set<std::pair<int, int>>& reported)
      : cp_(cp), cf_(cf), diags_(diags), f_(&own_), reported_(&reported) {
    for (const auto& s : cf.stmts) infos_[s.stmt] = &s;
    for (size_t i = 0; i < cp.functions.size(); ++i) by_name_[cp.functions[i].decl->name.name] = &cp.functions[i];
  }

  Func run() {
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

 private:
  /// A child that inlines `callee` into `parent`'s function.
  FuncLowerer(FuncLowerer& parent, const CheckedFunction& callee)
      : cp_(parent.cp_), cf_(callee), diags_(parent.diags_), f_(parent.f_), reported_(parent.reported_), parent_(&parent),
        by_name_(parent.by_name_) {
    for (const auto& s : callee.stmts) infos_[s.stmt] = &s;
    for (FuncLowerer* p = &parent; p; p = p->parent_) ++depth_;
    prefix_ = fmt::format("{}{}.", parent.prefix_, callee.decl->name.name);
  }

  /// Inlines the call `e` (whose arguments the caller has turned into
  /// `args`); the statements go to `out`, the result is returned.
  Value inline_call(const ast::Expr& e, const CheckedFunction& callee, const std::vector<Value>& args,
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
    for (const auto& s : callee.decl->body) {
      out.push_back(child.lower_stmt(*s));
      if (s->kind == ast::StmtKind::Return) break;
    }
    for (const auto& [n, fresh] : defined_by_callee) size_alias_[fresh] = child.sym_expr(sym::size(n), e.range);
    return child.result_;
  }

  /// A `where` constraint of an inlined callee as statements.
  Stmt assertion(const EntryCheck& c) {
    Stmt s = build::assert_that(c.cond, c.text);
    for (auto it = c.vars.rbegin(); it != c.vars.rend(); ++it) s = build::for_loop(it->first, it->second, s);
    return build::seq({c.pre, s});
  }

  /// The whole value an argument expression denotes (a name, a field, or a
  /// call, inlined here); scalars are evaluated into a fresh scalar.
  Value value_of(const ast::Expr& a, const TypePtr& formal, const std::string& name, const StmtInfo& info,
                 std::vector<Stmt>& out) {
    if (formal->kind == TypeKind::Scalar) {
      Value v;
      v.kind = Value::Scalar;
      v.buffer = scalar_buffer(name, formal->scalar);
      out.push_back(build::store(v.buffer, {}, lower_expr(a, formal->scalar, info, out)));
      return v;
    }
    if (a.kind == ExprKind::Call) {
      auto it = by_name_.find(a.name);
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

  /// Inlines a call to a `.toy` function.
  Value call_value(const ast::Expr& e, const CheckedFunction& callee, const StmtInfo& info, std::vector<Stmt>& out) {
    if (e.operands.size() != callee.params.size()) unsupported(e.range, "this call");
    std::vector<Value> args;
    for (size_t i = 0; i < e.operands.size(); ++i)
      args.push_back(value_of(*e.operands[i], callee.params[i].second, e.name + "." + callee.params[i].first, info, out));
    return inline_call(e, callee, args, out);
  }

  Buffer scalar_buffer(const std::string& name, Scalar t) {
    auto b = std::make_shared<BufferNode>();
    b->name = prefix_ + name;
    b->type = t;
    b->kind = BufferKind::Scalar;
    f_->buffers.push_back(b);
    return b;
  }

  /// The fields of a coupling value named `base` of type `t`.
  std::map<std::string, Buffer> coupling_fields(const TypePtr& t, const std::string& base, SourceRange at) {
    std::map<std::string, Buffer> out;
    for (const auto& f : t->coupling->fields) out[f.name] = array(identity_of(t, f.name, base), at);
    return out;
  }

  [[noreturn]] void unsupported(SourceRange at, const std::string& what) {
    // A callee inlined into several functions is reported once.
    if (reported_->insert({at.line, at.col}).second) diags_.report(DiagKind::Unsupported, at, what);
    throw Abandon{};
  }

  // ------------------------------------------------------------ buffers
  Buffer new_buffer(const std::string& name, const std::string& identity, const TypePtr& t, BufferKind kind,
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

  Var var_for(const IndexVarPtr& iv) {
    auto it = vars_.find(iv.get());
    if (it != vars_.end()) return it->second;
    return vars_[iv.get()] = make_var(iv->name);
  }

  Buffer array(const std::string& identity, SourceRange at) {
    auto it = arrays_.find(identity);
    if (it == arrays_.end()) unsupported(at, "reading `" + identity + "` here");
    return it->second;
  }

  /// The type of coupling field `f` of a value whose arrays are `inst`.
  static TypePtr field_type(const TypePtr& ct, const CouplingField& f, const std::string& base) {
    sym::Subst s;
    s.sizes = ct->instance.sizes;
    for (const auto& other : ct->coupling->fields) s.arrays[other.name] = identity_of(ct, other.name, base);
    return types::substitute(f.type, s);
  }
  static std::string identity_of(const TypePtr& ct, const std::string& field, const std::string& base) {
    auto it = ct->instance.arrays.find(field);
    return it != ct->instance.arrays.end() ? it->second : base + "." + field;
  }

  /// Size fields a tensor argument carries: the size parameters its extents name.
  void tensor_sizes(const TypePtr& t, Param& p, SourceRange at) {
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

  void coupling_sizes(const TypePtr& t, Param& p, SourceRange at) {
    for (const auto& sp : t->coupling->size_params) {
      auto it = t->instance.sizes.find(sp);
      p.sizes.push_back({sp, it != t->instance.sizes.end() ? sym_expr(it->second, at) : build::size(sp)});
    }
  }

  void lower_param(const std::string& name, const TypePtr& t) {
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

  /// `xs: list[[?, H, D]f32]`: size `xs.count` (`len(xs)`), an input length
  /// array `xs.len` [xs.count]i32 (the `?` extents, `len(xs[b])`) and the
  /// elements as one ragged input [b: xs.count][xs.len[b], H, D]f32.
  void lower_list_param(const std::string& name, const TypePtr& elem, Param& p, SourceRange at) {
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

  static bool mentions_var(const Expr& e) {
    if (!e) return false;
    if (e->kind == ir::ExprKind::VarRef) return true;
    for (const auto& a : e->args)
      if (mentions_var(a)) return true;
    return false;
  }

  /// An expression whose value cannot change while the function runs: sizes,
  /// constants, loop variables and reads of the function's own inputs.
  static bool invariant(const Expr& e) {
    if (!e) return true;
    if (e->kind == ir::ExprKind::Load && e->buffer->kind != BufferKind::Input) return false;
    for (const auto& a : e->args)
      if (!invariant(a)) return false;
    return true;
  }

  EntryCheck lower_check(const Fact& fact) {
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

  Expr sym_bool(const SymPtr& s, SourceRange at) {
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
  Expr sym_expr(const SymPtr& s, SourceRange at) {
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

  // ------------------------------------------------------------ statements
  Stmt lower_stmt(const ast::Stmt& s) {
    auto info_it = infos_.find(&s);
    if (info_it == infos_.end()) unsupported(s.range, "this statement");
    const StmtInfo& info = *info_it->second;
    switch (s.kind) {
      case ast::StmtKind::Let: return lower_let(s, info);
      case ast::StmtKind::Assign: return lower_assign(s, info);
      case ast::StmtKind::Return: return lower_return(s, info);
      case ast::StmtKind::Expr: return lower_print(s, info);
    }
    return nullptr;
  }

  Stmt lower_let(const ast::Stmt& s, const StmtInfo& info) {
    const std::string& name = s.name.name;
    const TypePtr& t = info.value_type;
    const ast::Expr* v = s.value.get();
    if (v && v->kind == ExprKind::Call && by_name_.count(v->name)) {
      std::vector<Stmt> out;
      Value r = call_value(*v, *by_name_.at(v->name), info, out);
      if (t->kind == TypeKind::Coupling && r.kind == Value::Coupling) {
        for (const auto& f : t->coupling->fields) arrays_[identity_of(t, f.name, name)] = r.fields.at(f.name);
        couplings_[name] = coupling_fields(t, name, v->range);
        return build::seq(std::move(out));
      }
      if (t->kind == TypeKind::Tensor && r.kind == Value::Tensor) {
        arrays_[name] = r.buffer;
        return build::seq(std::move(out));
      }
      if (r.kind != Value::Scalar) unsupported(v->range, "binding this call");
      Buffer b = new_buffer(name, "", t, BufferKind::Local, s.range);
      scalars_[name] = b;
      out.push_back(build::store(b, {}, build::cast(b->type, build::load(r.buffer, {}))));
      return build::seq(std::move(out));
    }
    if (t->kind == TypeKind::Coupling) {
      if (!v || v->kind != ExprKind::Construct) {
        if (v && (v->kind == ExprKind::Name || v->kind == ExprKind::Field)) {  // shares arrays
          couplings_[name] = coupling_fields(t, name, v->range);
          return nullptr;
        }
        unsupported(s.range, "a coupling value that is not constructed here");
      }
      std::vector<Stmt> stores;
      construct(t, name, name, *v, stores);
      return build::seq(std::move(stores));
    }
    if (t->kind == TypeKind::Tensor) {
      if (v && (v->kind == ExprKind::Name || v->kind == ExprKind::Field)) {
        arrays_[name] = array(cp_.paths.at(v), v->range);
        return nullptr;
      }
      Buffer b = new_buffer(name, name, t, BufferKind::Local, s.range);
      if (!v) return nullptr;
      if (v->kind != ExprKind::TensorLit) unsupported(v->range, "this tensor value");
      return lower_literal(b, *v);
    }
    if (t->kind == TypeKind::Scalar || t->kind == TypeKind::IntValue) {
      Buffer b = new_buffer(name, "", t, BufferKind::Local, s.range);
      scalars_[name] = b;
      if (!v) return nullptr;
      std::vector<Stmt> pre;
      Expr value = lower_expr(*v, b->type, info, pre);
      // An integer `let` used as a size (`let B = len(xs)`): extents use its
      // definition when that reads only sizes and inputs.
      if (t->kind == TypeKind::IntValue && pre.empty() && invariant(value) && !mentions_var(value))
        size_values_[name] = build::cast(Scalar::I64, value);
      pre.push_back(build::store(b, {}, value));
      return build::seq(std::move(pre));
    }
    unsupported(s.range, "a `let` of type `" + types::str(t) + "`");
  }

  /// Allocates the fresh fields of construction `v` of type `t` whose
  /// arrays are named `base.FIELD` unless bound, and records the value as
  /// `name`. Fields given as literals (`seqlen: [3, 1]`, `data: [[1.0, 2.0,
  /// 3.0], [4.0]]`) are stored (to `stores`) in dependency order, lengths
  /// before what they shape.
  std::map<std::string, Buffer> construct(const TypePtr& t, const std::string& name, const std::string& base,
                                          const ast::Expr& v, std::vector<Stmt>& stores) {
    for (size_t idx : t->coupling->order) {
      const CouplingField& f = t->coupling->fields[idx];
      std::string id = identity_of(t, f.name, base);
      if (!arrays_.count(id)) new_buffer(name + "." + f.name, id, field_type(t, f, base), BufferKind::Local, v.range);
      for (const auto& fi : v.fields)
        if (fi.name.name == f.name && fi.value && fi.value->kind == ExprKind::TensorLit)
          stores.push_back(lower_literal(arrays_.at(id), *fi.value));
    }
    return couplings_[name] = coupling_fields(t, base, v.range);
  }

  Stmt lower_literal(const Buffer& b, const ast::Expr& lit) {
    std::vector<Stmt> stores;
    std::vector<Expr> idx;
    std::function<void(const ast::Expr&)> walk = [&](const ast::Expr& e) {
      if (e.kind == ExprKind::TensorLit) {
        for (size_t i = 0; i < e.operands.size(); ++i) {
          idx.push_back(build::int_imm(static_cast<int64_t>(i)));
          walk(*e.operands[i]);
          idx.pop_back();
        }
        return;
      }
      std::vector<Stmt> pre;
      StmtInfo none;
      Expr v = lower_expr(e, b->type, none, pre);
      if (!pre.empty()) unsupported(e.range, "a `reduce` inside a tensor literal");
      stores.push_back(build::store(b, idx, v));
    };
    walk(lit);
    return build::seq(std::move(stores));
  }

  Stmt lower_assign(const ast::Stmt& s, const StmtInfo& info) {
    const ast::Expr* base = s.target.get();
    while (base->kind == ExprKind::Index) base = base->operands[0].get();
    Buffer target;
    if (base->kind == ExprKind::Name && scalars_.count(base->name)) target = scalars_[base->name];
    else target = array(cp_.paths.at(base), base->range);
    std::vector<const IndexInfo*> lhs;
    for (const auto& ii : info.indices)
      if (!ii.reduced) lhs.push_back(&ii);
    std::vector<Expr> idx;
    for (const IndexInfo* ii : lhs) idx.push_back(build::var(var_for(ii->var)));
    std::vector<Stmt> pre;
    Expr value = lower_expr(*s.value, target->type, info, pre);
    defs_.erase(target.get());
    if (target->kind == BufferKind::Local && is_int(target->type) && !target->dims.empty() &&
        lhs.size() == target->dims.size() && pre.empty() && invariant(value) && plain_indices(s)) {
      std::vector<Var> vs;
      for (const IndexInfo* ii : lhs) vs.push_back(var_for(ii->var));
      defs_[target.get()] = {vs, value};
    }
    // The statement's range on its store: line tables (`dccc -g`) and the
    // back ends' diagnostics point at it.
    pre.push_back(build::located(build::store(target, idx, value), s.range));
    Stmt body = build::seq(std::move(pre));
    for (auto it = lhs.rbegin(); it != lhs.rend(); ++it)
      body = build::for_loop(var_for((*it)->var), sym_expr((*it)->extent, s.range), body);
    // The function's own assignments (not an inlined callee's) are what a
    // `schedule` block names: `TENSOR.INDEX`.
    if (!parent_) {
      NamedNest n{dotted(*base), s.range, target, {}, {}};
      for (const IndexInfo* ii : lhs) n.lhs.push_back(var_for(ii->var));
      for (const auto& ii : info.indices) n.loops.push_back({ii.var->name, var_for(ii.var)});
      f_->nests.push_back(std::move(n));
    }
    return body;
  }

  /// `x.data` for the left side's base (a name or a field chain).
  static std::string dotted(const ast::Expr& e) {
    if (e.kind == ExprKind::Field && !e.operands.empty()) return dotted(*e.operands[0]) + "." + e.name;
    return e.name;
  }

  /// The left side indexes with distinct plain variables (`a[b, i]`, not
  /// `a[0]` or `a[i + 1]`), so the statement defines every element.
  bool plain_indices(const ast::Stmt& s) {
    auto [base, groups] = ast::index_chain(*s.target);
    std::set<std::string> seen;
    for (const auto& g : groups)
      for (const ast::Expr* ix : g)
        if (ix->kind != ExprKind::Name || !cp_.index_refs.count(ix) || !seen.insert(ix->name).second) return false;
    return true;
  }

  Stmt lower_return(const ast::Stmt& s, const StmtInfo& info) {
    const ast::Expr* v = s.value.get();
    if (!v) return nullptr;
    const TypePtr& t = info.value_type;
    std::vector<Stmt> out;
    Value r;
    if (v->kind == ExprKind::Call && by_name_.count(v->name) && t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue) {
      r = call_value(*v, *by_name_.at(v->name), info, out);
    } else if (t->kind == TypeKind::Coupling && v->kind == ExprKind::Construct) {
      r.kind = Value::Coupling;
      r.fields = construct(t, "result", cp_.paths.count(v) ? cp_.paths.at(v) : "result", *v, out);
    } else if (t->kind == TypeKind::Coupling && (v->kind == ExprKind::Name || v->kind == ExprKind::Field)) {
      r.kind = Value::Coupling;
      std::string base = cp_.paths.at(v);
      r.fields = couplings_.count(base) ? couplings_.at(base) : coupling_fields(t, base, v->range);
    } else if (t->kind == TypeKind::Tensor && (v->kind == ExprKind::Name || v->kind == ExprKind::Field)) {
      r.kind = Value::Tensor;
      r.buffer = array(cp_.paths.at(v), v->range);
    } else if (t->kind == TypeKind::Scalar || t->kind == TypeKind::IntValue) {
      r.kind = Value::Scalar;
      r.buffer = scalar_buffer(parent_ ? "result" : "value", t->kind == TypeKind::Scalar ? t->scalar : Scalar::I64);
      out.push_back(build::store(r.buffer, {}, lower_expr(*v, r.buffer->type, info, out)));
    } else {
      unsupported(v->range, "returning this value");
    }
    if (parent_) {
      result_ = r;
      return build::seq(std::move(out));
    }
    // The function's result: locals become outputs; an input returned
    // unchanged stays an input, and the result's field points to it.
    const TypePtr& ret = cf_.ret;
    Param p;
    p.name = "result";
    p.at = s.range;
    auto output = [&](Buffer b) {
      if (b->kind == BufferKind::Local) b->kind = BufferKind::Output;
      if (b->kind == BufferKind::Scalar) b->kind = BufferKind::Output;
      return b;
    };
    if (r.kind == Value::Coupling) {
      p.kind = Param::Coupling;
      p.type_name = (ret->kind == TypeKind::Coupling ? ret : t)->coupling->name;
      for (const auto& f : t->coupling->fields) p.fields.push_back({f.name, output(r.fields.at(f.name))});
      coupling_sizes(ret->kind == TypeKind::Coupling ? ret : t, p, v->range);
    } else if (r.kind == Value::Tensor) {
      p.fields.push_back({"data", output(r.buffer)});
      tensor_sizes(ret->kind == TypeKind::Tensor ? ret : t, p, v->range);
    } else {
      // A scalar result gets its own buffer, so that a scalar local returned
      // keeps its kind.
      // Its type is the declared result's: `return t;` of an integer `let`
      // (a size, lowered in i64) from a function returning i32 is an i32.
      Scalar rt = ret->kind == TypeKind::Scalar ? ret->scalar : r.buffer->type;
      Buffer b = scalar_buffer("result", rt);
      b->kind = BufferKind::Output;
      out.push_back(build::store(b, {}, build::cast(rt, build::load(r.buffer, {}))));
      p.kind = Param::Scalar;
      p.fields.push_back({"value", b});
    }
    f_->results.push_back(std::move(p));
    return build::seq(std::move(out));
  }

  Stmt lower_print(const ast::Stmt& s, const StmtInfo& info) {
    const ast::Expr& call = *s.value;
    if (call.name != "print") {
      auto callee = by_name_.find(call.name);
      if (callee == by_name_.end()) unsupported(call.range, "calling `" + call.name + "` here");
      std::vector<Stmt> out;
      call_value(call, *callee->second, info, out);  // the value, if any, is unused
      return build::seq(std::move(out));
    }
    std::vector<Stmt> out;
    for (const auto& a : call.operands) {
      if (a->kind == ExprKind::Call && by_name_.count(a->name)) {
        std::vector<Stmt> pre;
        Value r = call_value(*a, *by_name_.at(a->name), info, pre);
        if (r.kind == Value::Tensor) {
          auto st = std::make_shared<StmtNode>();
          st->kind = StmtKind::Print;
          st->buffer = r.buffer;
          st->text = a->name;
          st->at = a->range;
          pre.push_back(st);
        } else if (r.kind == Value::Scalar) {
          pre.push_back(build::located(build::print("", {build::load(r.buffer, {})}), a->range));
        } else {
          unsupported(a->range, "printing a whole coupling; print its fields");
        }
        out.push_back(build::seq(std::move(pre)));
        continue;
      }
      auto p = cp_.paths.find(a.get());
      if (p != cp_.paths.end() && arrays_.count(p->second) && !scalars_.count(a->name)) {
        auto st = std::make_shared<StmtNode>();
        st->kind = StmtKind::Print;
        st->buffer = arrays_[p->second];
        st->text = p->second;
        st->at = a->range;
        out.push_back(st);
        continue;
      }
      auto et = cp_.expr_types.find(a.get());
      Scalar want = Scalar::F32;
      if (et != cp_.expr_types.end()) {
        if (et->second->kind == TypeKind::Scalar) want = et->second->scalar;
        if (et->second->kind == TypeKind::IntValue) want = Scalar::I64;
      }
      std::vector<Stmt> pre;
      Expr v = lower_expr(*a, want, info, pre);
      pre.push_back(build::located(build::print("", {v}), a->range));
      out.push_back(build::seq(std::move(pre)));
    }
    return build::seq(std::move(out));
  }

  // ------------------------------------------------------------ expressions
  /// The concrete scalar type an expression computes in, given the type
  /// its context wants for untyped literals and sizes.
  Scalar type_in(const ast::Expr& e, Scalar want) {
    auto it = cp_.expr_types.find(&e);
    if (it == cp_.expr_types.end()) return want;
    const TypePtr& t = it->second;
    if (t->kind == TypeKind::Scalar) return t->scalar;
    if (t->kind == TypeKind::IntValue) return (is_float(want) || want == Scalar::I32 || want == Scalar::I64) ? want : Scalar::I64;
    if (t->kind == TypeKind::FloatValue) return is_float(want) ? want : Scalar::F32;
    return want;
  }

  /// The type two operands share.
  Scalar operand_type(const ast::Expr& a, const ast::Expr& b, Scalar want) {
    auto concrete = [&](const ast::Expr& x) -> std::optional<Scalar> {
      auto it = cp_.expr_types.find(&x);
      if (it != cp_.expr_types.end() && it->second->kind == TypeKind::Scalar) return it->second->scalar;
      return std::nullopt;
    };
    auto untyped = [&](const ast::Expr& x, TypeKind k) {
      auto it = cp_.expr_types.find(&x);
      return it != cp_.expr_types.end() && it->second->kind == k;
    };
    if (auto t = concrete(a)) return *t;
    if (auto t = concrete(b)) return *t;
    if (untyped(a, TypeKind::FloatValue) || untyped(b, TypeKind::FloatValue)) return is_float(want) ? want : Scalar::F32;
    return is_float(want) ? want : Scalar::I64;
  }

  Expr lower_expr(const ast::Expr& e, Scalar want, const StmtInfo& info, std::vector<Stmt>& pre) {
    Scalar t = type_in(e, want);
    switch (e.kind) {
      case ExprKind::Int: {
        int64_t v = std::strtoll(e.text.c_str(), nullptr, 10);
        return is_float(t) ? build::float_imm(static_cast<double>(v), t) : build::int_imm(v, t);
      }
      case ExprKind::Float: return build::float_imm(e.float_value, is_float(t) ? t : Scalar::F32);
      case ExprKind::Bool: return build::bool_imm(e.bool_value);
      case ExprKind::Name: {
        if (auto r = cp_.index_refs.find(&e); r != cp_.index_refs.end())
          return build::cast(t, build::var(var_for(r->second)));
        if (auto c = cp_.int_consts.find(e.name); c != cp_.int_consts.end())
          return is_float(t) ? build::float_imm(static_cast<double>(c->second), t) : build::int_imm(c->second, t);
        if (auto c = cp_.float_consts.find(e.name); c != cp_.float_consts.end()) return build::float_imm(c->second, t);
        if (auto b = scalars_.find(e.name); b != scalars_.end()) return build::cast(t, build::load(b->second, {}));
        if (std::find(cf_.size_params.begin(), cf_.size_params.end(), e.name) != cf_.size_params.end())
          return build::cast(t, sym_expr(sym::size(e.name), e.range));
        unsupported(e.range, "the value `" + e.name + "` here");
      }
      case ExprKind::Index: {
        auto [base, groups] = ast::index_chain(e);
        Buffer b = array(cp_.paths.at(base), base->range);
        std::vector<Expr> args;
        for (const auto& g : groups)
          for (const ast::Expr* ix : g) args.push_back(lower_expr(*ix, Scalar::I64, info, pre));
        return build::cast(t, build::load(b, std::move(args)));
      }
      case ExprKind::Unary: {
        Expr a = lower_expr(*e.operands[0], t, info, pre);
        if (e.op == "+") return a;
        return build::unary(e.op == "!" ? UnOp::Not : UnOp::Neg, a);
      }
      case ExprKind::Binary: {
        static const std::map<std::string, BinOp> ops = {
            {"+", BinOp::Add}, {"-", BinOp::Sub}, {"*", BinOp::Mul}, {"/", BinOp::Div}, {"%", BinOp::Mod},
            {"==", BinOp::EQ}, {"!=", BinOp::NE}, {"<", BinOp::LT}, {"<=", BinOp::LE}, {"&&", BinOp::And},
            {"||", BinOp::Or}, {">", BinOp::LT}, {">=", BinOp::LE}};
        bool swap = e.op == ">" || e.op == ">=";
        bool logical = e.op == "&&" || e.op == "||";
        Scalar ot = logical ? Scalar::Bool : operand_type(*e.operands[0], *e.operands[1], t);
        Expr a = lower_expr(*e.operands[0], ot, info, pre);
        Expr b = lower_expr(*e.operands[1], ot, info, pre);
        // An index expression (i64) next to an i32 element, or a size next
        // to a float: both operands in the shared type.
        if (a->type != ot) a = build::cast(ot, a);
        if (b->type != ot) b = build::cast(ot, b);
        if (swap) std::swap(a, b);
        return build::binary(ops.at(e.op), a, b);
      }
      case ExprKind::Reduce: return lower_reduce(e, t, info, pre);
      case ExprKind::Call: return lower_call(e, t, info, pre);
      default: unsupported(e.range, "this expression");
    }
  }

  /// lower_expr with the result in type `t`: an untyped integer expression
  /// (`1 + 0`) lowers in i64 whatever the context, and the two sides of a
  /// `select`, `max`, `min` or `pow` must have one type.
  Expr lower_as(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
    Expr x = lower_expr(e, t, info, pre);
    return x->type == t ? x : build::cast(t, x);
  }

  Expr lower_call(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
    const std::string& n = e.name;
    static const std::map<std::string, UnOp> math = {{"exp", UnOp::Exp},   {"log", UnOp::Log},   {"sqrt", UnOp::Sqrt},
                                                     {"rsqrt", UnOp::Rsqrt}, {"tanh", UnOp::Tanh}, {"erf", UnOp::Erf},
                                                     {"abs", UnOp::Abs}};
    if (auto m = math.find(n); m != math.end()) {
      Scalar at = is_float(t) ? t : Scalar::F32;
      if (n == "abs") at = t;
      return build::unary(m->second, lower_expr(*e.operands[0], at, info, pre));
    }
    if (n == "pow" || n == "max" || n == "min") {
      Scalar ot = operand_type(*e.operands[0], *e.operands[1], t);
      BinOp op = n == "pow" ? BinOp::Pow : n == "max" ? BinOp::Max : BinOp::Min;
      return build::binary(op, lower_as(*e.operands[0], ot, info, pre), lower_as(*e.operands[1], ot, info, pre));
    }
    if (n == "select") {
      Expr c = lower_expr(*e.operands[0], Scalar::Bool, info, pre);
      Scalar ot = operand_type(*e.operands[1], *e.operands[2], t);
      return build::select(c, lower_as(*e.operands[1], ot, info, pre), lower_as(*e.operands[2], ot, info, pre));
    }
    if (auto s = scalar_from_name(n)) {
      const ast::Expr& a = *e.operands[0];
      Scalar from = type_in(a, is_float(*s) ? *s : Scalar::I64);
      return build::cast(*s, lower_expr(a, from, info, pre));
    }
    if (n == "len" && e.operands.size() == 1) {
      const ast::Expr& a = *e.operands[0];
      if (auto p = cp_.paths.find(&a); p != cp_.paths.end() && list_sizes_.count("len(" + p->second + ")"))
        return build::cast(t, build::size(list_sizes_.at("len(" + p->second + ")")));
      if (a.kind == ExprKind::Index && a.operands.size() == 2) {
        auto p = cp_.paths.find(a.operands[0].get());
        if (p != cp_.paths.end() && arrays_.count(p->second + ".len"))
          return build::cast(t, build::load(arrays_.at(p->second + ".len"), {lower_expr(*a.operands[1], Scalar::I64, info, pre)}));
      }
      unsupported(e.range, "this `len`");
    }
    auto callee = by_name_.find(n);
    if (callee == by_name_.end()) unsupported(e.range, "calling `" + n + "` here");
    Value r = call_value(e, *callee->second, info, pre);
    if (r.kind != Value::Scalar) unsupported(e.range, "using the value of `" + n + "` here");
    return build::cast(t, build::load(r.buffer, {}));
  }

  Expr lower_reduce(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
    // 16-bit floats accumulate in f32.
    Scalar acc_t = (t == Scalar::F16 || t == Scalar::BF16) ? Scalar::F32 : t;
    auto acc = std::make_shared<BufferNode>();
    acc->at = e.range;
    acc->name = fmt::format("{}acc{}", prefix_, acc_counter_++);
    acc->type = acc_t;
    acc->kind = BufferKind::Scalar;
    f_->buffers.push_back(acc);
    std::vector<const IndexInfo*> vars;
    for (const auto& ii : info.indices)
      if (ii.reduced && ii.reduce_expr == &e) vars.push_back(&ii);
    // A variable's extent may read another reduction variable: put that one outside.
    std::stable_sort(vars.begin(), vars.end(), [](const IndexInfo* a, const IndexInfo* b) {
      std::vector<IndexVarPtr> in_b;
      sym::vars(b->extent, in_b);
      return std::find(in_b.begin(), in_b.end(), a->var) != in_b.end();
    });
    Expr init;
    BinOp op = BinOp::Add;
    double inf = std::numeric_limits<double>::infinity();
    auto imm = [&](double v) {
      return is_float(acc_t) ? build::float_imm(v, acc_t)
                             : build::int_imm(std::isinf(v) ? (v > 0 ? INT64_MAX : INT64_MIN) : static_cast<int64_t>(v), acc_t);
    };
    if (e.op == "+") init = imm(0);
    else if (e.op == "*") init = imm(1), op = BinOp::Mul;
    else if (e.op == "max") init = imm(-inf), op = BinOp::Max;
    else init = imm(inf), op = BinOp::Min;
    if (!is_float(acc_t) && acc_t == Scalar::I32) {
      if (e.op == "max") init = build::int_imm(INT32_MIN, acc_t);
      if (e.op == "min") init = build::int_imm(INT32_MAX, acc_t);
    }
    pre.push_back(build::store(acc, {}, init));
    std::vector<Stmt> inner;
    Expr body = lower_expr(*e.operands[0], acc_t, info, inner);
    inner.push_back(build::store(acc, {}, build::binary(op, build::load(acc, {}), build::cast(acc_t, body))));
    Stmt loop = build::seq(std::move(inner));
    for (auto it = vars.rbegin(); it != vars.rend(); ++it)
      loop = build::for_loop(var_for((*it)->var), sym_expr((*it)->extent, e.range), loop);
    pre.push_back(loop);
    return build::cast(t, build::load(acc, {}));
  }

  const CheckedProgram& cp_;
  const CheckedFunction& cf_;
  DiagnosticEngine& diags_;
  std::map<const ast::Stmt*, const StmtInfo*> infos_;
  std::map<std::string, Buffer> arrays_;
  std::map<std::string, Buffer> scalars_;
  std::map<const IndexVar*, Var> vars_;
  int acc_counter_ = 0;
  std::vector<Stmt>* check_pre_ = nullptr;  // while lowering a `where` check
  Func own_;
  Func* f_;                                // own_, or the function a call is inlined into
  std::set<std::pair<int, int>>* reported_;  // where [Unsupported] was reported
  FuncLowerer* parent_ = nullptr;          // the caller, while inlining
  int depth_ = 0;                          // calls being inlined around this one
  std::string prefix_;                     // buffer names of an inlined callee: `f.`
  std::map<std::string, const CheckedFunction*> by_name_;
  std::map<std::string, Expr> size_subst_;  // a callee's size parameters, in the caller's terms
  std::map<std::string, Expr> size_alias_;  // `f#N.S`: sizes defined by an inlined callee's body
  std::map<std::string, std::map<std::string, Buffer>> couplings_;  // coupling values by name: field -> buffer
  Value result_;                           // what the inlined callee returned
  std::map<std::string, std::string> list_sizes_;  // `len(xs)` of a list parameter -> size `xs.count`
  std::map<std::string, Expr> size_values_;  // integer lets whose value reads only sizes and inputs
  /// Int arrays defined element-wise from inputs: the left side's variables and the value.
  std::map<const BufferNode*, std::pair<std::vector<Var>, Expr>> defs_;
};

}  // namespace

std::optional<Module> lower(const CheckedProgram& program, DiagnosticEngine& diags) {
  Module m;
  bool ok = true;
  std::set<std::pair<int, int>> reported;
  for (const auto& cf : program.functions) {
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
