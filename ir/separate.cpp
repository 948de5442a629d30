#include "ir/separate.h"

#include <fmt/format.h>

#include <cmath>

namespace dccc::ir {
namespace {

bool is_zero(const Expr& e) {
  if (e->kind == ExprKind::Cast) return is_zero(e->args[0]);
  return (e->kind == ExprKind::FloatImm && e->float_value == 0) || (e->kind == ExprKind::IntImm && e->int_value == 0);
}

}  // namespace

Expr as_type(const Expr& e, Scalar t) { return e->type == t ? e : build::cast(t, e); }

std::string expr_text(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return std::to_string(e->int_value);
    case ExprKind::FloatImm:
      if (std::isinf(e->float_value)) return e->float_value < 0 ? "-inf" : "inf";
      return fmt::format("{}", e->float_value);
    case ExprKind::VarRef: return e->var->name;
    case ExprKind::SizeRef: return e->name;
    case ExprKind::Binary: {
      const char* op = op_text(e->binop);
      if (e->binop == BinOp::Min || e->binop == BinOp::Max || e->binop == BinOp::Pow)
        return fmt::format("{}({}, {})", op, expr_text(e->args[0]), expr_text(e->args[1]));
      return fmt::format("({} {} {})", expr_text(e->args[0]), op, expr_text(e->args[1]));
    }
    case ExprKind::Unary:
      if (e->unop == UnOp::Neg || e->unop == UnOp::Not) return std::string(op_text(e->unop)) + expr_text(e->args[0]);
      return fmt::format("{}({})", op_text(e->unop), expr_text(e->args[0]));
    case ExprKind::Select:
      return fmt::format("select({}, {}, {})", expr_text(e->args[0]), expr_text(e->args[1]), expr_text(e->args[2]));
    case ExprKind::Cast: return fmt::format("{}({})", scalar_name(e->type), expr_text(e->args[0]));
    case ExprKind::Load: {
      std::string s = e->buffer->name + "[";
      for (size_t k = 0; k < e->args.size(); ++k) s += (k ? ", " : "") + expr_text(e->args[k]);
      return s + "]";
    }
  }
  return "?";
}

bool Separator::add_form(const Expr& e, AddForm& f, bool neg) {
  bool j = dep_j_(e), r = dep_r_(e);
  if (!r) {
    f.j.items.push_back({e, neg});
    return true;
  }
  if (!j) {
    f.r.items.push_back({e, neg});
    return true;
  }
  switch (e->kind) {
    case ExprKind::Binary:
      if (e->binop == BinOp::Add) return add_form(e->args[0], f, neg) && add_form(e->args[1], f, neg);
      if (e->binop == BinOp::Sub) return add_form(e->args[0], f, neg) && add_form(e->args[1], f, !neg);
      if (e->binop == BinOp::Mul || e->binop == BinOp::Div) {
        // Scaling by a value that depends on neither j nor the results.
        int fixed = e->binop == BinOp::Mul && neutral(e->args[0]) ? 0 : neutral(e->args[1]) ? 1 : -1;
        if (fixed < 0) return fail(e, "is a product of a value that depends on j and one that depends on the results");
        AddForm sub;
        if (!add_form(e->args[1 - fixed], sub, neg)) return false;
        const Expr& c = e->args[fixed];
        auto scale = [&](const Expr& t) {
          return fixed == 0 ? build::binary(BinOp::Mul, c, t) : build::binary(e->binop, t, c);
        };
        for (auto& [t, n] : sub.j.items) f.j.items.push_back({scale(t), n});
        for (auto& [t, n] : sub.r.items) f.r.items.push_back({scale(t), n});
        return true;
      }
      break;
    case ExprKind::Unary:
      if (e->unop == UnOp::Neg) return add_form(e->args[0], f, !neg);
      break;
    case ExprKind::Cast:
      if (is_float(e->type) && is_float(e->args[0]->type)) {
        AddForm sub;
        if (!add_form(e->args[0], sub, neg)) return false;
        for (auto& [t, n] : sub.j.items) f.j.items.push_back({as_type(t, e->type), n});
        for (auto& [t, n] : sub.r.items) f.r.items.push_back({as_type(t, e->type), n});
        return true;
      }
      break;
    case ExprKind::Select: {
      if (dep_r_(e->args[0])) return fail(e, "is a `select` whose condition depends on the results");
      AddForm a, b;
      if (!add_form(e->args[1], a, neg) || !add_form(e->args[2], b, neg)) return false;
      if (!same_terms(a.r, b.r)) return fail(e, "is a `select` whose branches depend on the results differently");
      Scalar t = e->type;
      f.j.items.push_back({build::select(e->args[0], a.j.sum(t), b.j.sum(t)), false});
      for (auto& it : a.r.items) f.r.items.push_back(it);
      return true;
    }
    default: break;
  }
  return fail(e, "depends on both j and the results and is not a sum of terms that depend on one of them");
}

bool Separator::mul_form(const Expr& e, MulForm& f, bool inverse) {
  bool j = dep_j_(e), r = dep_r_(e);
  if (!r) return true;  // a factor of G
  if (e->kind == ExprKind::Unary && e->unop == UnOp::Exp) {
    AddForm a;
    if (!add_form(e->args[0], a, inverse)) return false;
    for (auto& it : a.r.items) f.exponent.items.push_back(it);
    return true;
  }
  if (!j) {
    f.p.push_back({e.get(), inverse});
    f.p_exprs.push_back(e);
    return true;
  }
  switch (e->kind) {
    case ExprKind::Binary:
      if (e->binop == BinOp::Mul) return mul_form(e->args[0], f, inverse) && mul_form(e->args[1], f, inverse);
      if (e->binop == BinOp::Div) return mul_form(e->args[0], f, inverse) && mul_form(e->args[1], f, !inverse);
      if (e->binop == BinOp::Add || e->binop == BinOp::Sub)
        return fail(e, "is a sum of terms that depend on j and on the results (a sum of products is not separated)");
      break;
    case ExprKind::Unary:
      if (e->unop == UnOp::Neg) return mul_form(e->args[0], f, inverse);
      break;
    case ExprKind::Cast:
      if (is_float(e->type) && is_float(e->args[0]->type)) return mul_form(e->args[0], f, inverse);
      break;
    case ExprKind::Select: {
      if (dep_r_(e->args[0])) return fail(e, "is a `select` whose condition depends on the results");
      if (is_zero(e->args[2])) return mul_form(e->args[1], f, inverse);
      if (is_zero(e->args[1])) return mul_form(e->args[2], f, inverse);
      MulForm a, b;
      if (!mul_form(e->args[1], a, inverse) || !mul_form(e->args[2], b, inverse)) return false;
      bool same = same_terms(a.exponent, b.exponent) && a.p_exprs.size() == b.p_exprs.size();
      for (size_t k = 0; same && k < a.p_exprs.size(); ++k)
        same = same_expr(a.p_exprs[k], b.p_exprs[k]) && a.p[k].second == b.p[k].second;
      if (!same) return fail(e, "is a `select` whose branches depend on the results differently");
      for (auto& it : a.exponent.items) f.exponent.items.push_back(it);
      // Both branches' factors are replaced by 1 in the term.
      for (size_t k = 0; k < a.p.size(); ++k) {
        f.p.push_back(a.p[k]);
        f.p_exprs.push_back(a.p_exprs[k]);
        f.also_one.push_back(b.p[k].first);
      }
      return true;
    }
    default: break;
  }
  return fail(e, "depends on both j and the results and is not a product of factors that depend on one of them");
}

bool Separator::same_terms(const Terms& a, const Terms& b) {
  if (a.items.size() != b.items.size()) return false;
  for (size_t k = 0; k < a.items.size(); ++k)
    if (a.items[k].second != b.items[k].second || !same_expr(a.items[k].first, b.items[k].first)) return false;
  return true;
}

bool Separator::fail(const Expr& e, const std::string& what) {
  if (why.empty()) why = fmt::format("`{}` {}", expr_text(e), what);
  return false;
}

}  // namespace dccc::ir
