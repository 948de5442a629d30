// Lowering of statements (ir/lower_function.h): `let` and construction,
// literals, assignments as loop nests, `return` and `print`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/lower_function.h"

namespace dccc::ir::lowering {

// ------------------------------------------------------------ statements
Stmt FuncLowerer::lower_stmt(const ast::Stmt& s) {
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

Stmt FuncLowerer::lower_let(const ast::Stmt& s, const StmtInfo& info) {
  const std::string& name = s.name.name;
  const TypePtr& t = info.value_type;
  const ast::Expr* v = s.value.get();
  if (v && v->kind == ExprKind::Call && by_name_.count(cp_.callee_name(*v))) {
    std::vector<Stmt> out;
    Value r = call_value(*v, *by_name_.at(cp_.callee_name(*v)), info, out);
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

std::map<std::string, Buffer> FuncLowerer::construct(const TypePtr& t, const std::string& name, const std::string& base,
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

Stmt FuncLowerer::lower_literal(const Buffer& b, const ast::Expr& lit) {
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

Stmt FuncLowerer::lower_assign(const ast::Stmt& s, const StmtInfo& info) {
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

std::string FuncLowerer::dotted(const ast::Expr& e) {
  if (e.kind == ExprKind::Field && !e.operands.empty()) return dotted(*e.operands[0]) + "." + e.name;
  return e.name;
}

bool FuncLowerer::plain_indices(const ast::Stmt& s) {
  auto [base, groups] = ast::index_chain(*s.target);
  std::set<std::string> seen;
  for (const auto& g : groups)
    for (const ast::Expr* ix : g)
      if (ix->kind != ExprKind::Name || !cp_.index_refs.count(ix) || !seen.insert(ix->name).second) return false;
  return true;
}

Stmt FuncLowerer::lower_return(const ast::Stmt& s, const StmtInfo& info) {
  const ast::Expr* v = s.value.get();
  if (!v) return nullptr;
  const TypePtr& t = info.value_type;
  std::vector<Stmt> out;
  Value r;
  if (v->kind == ExprKind::Call && by_name_.count(cp_.callee_name(*v)) && t->kind != TypeKind::Scalar && t->kind != TypeKind::IntValue) {
    r = call_value(*v, *by_name_.at(cp_.callee_name(*v)), info, out);
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

Stmt FuncLowerer::lower_print(const ast::Stmt& s, const StmtInfo& info) {
  const ast::Expr& call = *s.value;
  if (call.name != "print") {
    auto callee = by_name_.find(cp_.callee_name(call));
    if (callee == by_name_.end()) unsupported(call.range, "calling `" + call.name + "` here");
    std::vector<Stmt> out;
    call_value(call, *callee->second, info, out);  // the value, if any, is unused
    return build::seq(std::move(out));
  }
  std::vector<Stmt> out;
  for (const auto& a : call.operands) {
    if (a->kind == ExprKind::Call && by_name_.count(cp_.callee_name(*a))) {
      std::vector<Stmt> pre;
      Value r = call_value(*a, *by_name_.at(cp_.callee_name(*a)), info, pre);
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

}  // namespace dccc::ir::lowering
