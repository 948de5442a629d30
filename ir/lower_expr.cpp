// Lowering of expressions (ir/lower_function.h): their scalar types,
// operators, calls (built-in and inlined) and `reduce`.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/lower_function.h"

namespace dccc::ir::lowering {

// ------------------------------------------------------------ expressions
Scalar FuncLowerer::type_in(const ast::Expr& e, Scalar want) {
  auto it = cp_.expr_types.find(&e);
  if (it == cp_.expr_types.end()) return want;
  const TypePtr& t = it->second;
  if (t->kind == TypeKind::Scalar) return t->scalar;
  if (t->kind == TypeKind::IntValue) return (is_float(want) || want == Scalar::I32 || want == Scalar::I64) ? want : Scalar::I64;
  if (t->kind == TypeKind::FloatValue) return is_float(want) ? want : Scalar::F32;
  return want;
}

Scalar FuncLowerer::operand_type(const ast::Expr& a, const ast::Expr& b, Scalar want) {
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

Expr FuncLowerer::lower_expr(const ast::Expr& e, Scalar want, const StmtInfo& info, std::vector<Stmt>& pre) {
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

Expr FuncLowerer::lower_as(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
  Expr x = lower_expr(e, t, info, pre);
  return x->type == t ? x : build::cast(t, x);
}

Expr FuncLowerer::lower_call(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
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
  auto callee = by_name_.find(cp_.callee_name(e));
  if (callee == by_name_.end()) unsupported(e.range, "calling `" + n + "` here");
  Value r = call_value(e, *callee->second, info, pre);
  if (r.kind != Value::Scalar) unsupported(e.range, "using the value of `" + n + "` here");
  return build::cast(t, build::load(r.buffer, {}));
}

Expr FuncLowerer::lower_reduce(const ast::Expr& e, Scalar t, const StmtInfo& info, std::vector<Stmt>& pre) {
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
  const BinOp op = e.op == "+" ? BinOp::Add : e.op == "*" ? BinOp::Mul : e.op == "max" ? BinOp::Max : BinOp::Min;
  Expr init = build::identity(op, acc_t);
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

}  // namespace dccc::ir::lowering
