// Separation of a reduction body in the results of earlier reductions, the
// algebra of the online-reductions pass (ir/online_reductions.h): a body X
// of `reduce(+, X)` is written as G(j) * exp(E(r)) * P(r) (mul_form), one of
// `reduce(max/min, X)` as G(j) + H(r) (add_form), by rewriting products,
// quotients, exp of sums and differences, scaling by values that depend on
// neither j nor r, negation, float casts and `select`s whose condition does
// not read r. What depends on j and what on r is the caller's to say (two
// predicates); `why` names the first sub-expression that does not separate.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace dccc::ir {

/// Short source-like text of an expression, for --explain.
std::string expr_text(const Expr& e);

/// `e` converted to `t` (itself when it has that type).
Expr as_type(const Expr& e, Scalar t);

/// A sum of signed terms.
struct Terms {
  std::vector<std::pair<Expr, bool>> items;  // (term, negated)
  Expr sum(Scalar t) const {
    Expr s;
    for (const auto& [e, neg] : items) {
      if (!s) s = neg ? build::unary(UnOp::Neg, e) : e;
      else s = build::binary(neg ? BinOp::Sub : BinOp::Add, s, as_type(e, s->type));
    }
    return s ? s : build::float_imm(0, t);
  }
};

/// X = (terms independent of the results) + (terms of the results alone).
struct AddForm {
  Terms j, r;
};

/// X = G * exp(j part + E) * P: `exponent` holds E's terms; P's factors are
/// sub-expressions of X (numerators and divisors) that read only results.
struct MulForm {
  Terms exponent;
  std::vector<std::pair<const ExprNode*, bool>> p;  // (factor in X, divides)
  std::vector<Expr> p_exprs;
  std::vector<const ExprNode*> also_one;  // the same factors in a `select`'s other branch
};

class Separator {
 public:
  Separator(std::function<bool(const Expr&)> dep_j, std::function<bool(const Expr&)> dep_r)
      : dep_j_(std::move(dep_j)), dep_r_(std::move(dep_r)) {}

  std::string why;  // the first sub-expression that does not separate, and why

  /// Appends `e`'s terms (negated when `neg`) to `f`: j.items depend on j or
  /// on neither, r.items only on the results; false (and `why`) when a term
  /// depends on both.
  bool add_form(const Expr& e, AddForm& f, bool neg);
  /// Appends `e`'s factors (inverted when `inverse`) to `f`: the r part of
  /// its exponentials to `exponent`, factors that read only results to `p`;
  /// factors in j stay in the term; false (and `why`) when a factor
  /// depends on both.
  bool mul_form(const Expr& e, MulForm& f, bool inverse);

 private:
  bool neutral(const Expr& e) const { return !dep_j_(e) && !dep_r_(e); }
  static bool same_terms(const Terms& a, const Terms& b);
  bool fail(const Expr& e, const std::string& what);

  std::function<bool(const Expr&)> dep_j_, dep_r_;
};

}  // namespace dccc::ir
