// Deferred rescaling (backend/gpu/plan_lazy_rescale.h): which running
// maximum's copy may lag, by the degree of every value it reaches.
#include "backend/gpu/plan_lazy_rescale.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace dccc::gpu {
namespace {

using ir::BinOp;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

const ir::BufferNode* scalar_of(const ir::Expr& e) {
  return e->kind == ExprKind::Load && e->args.empty() && e->buffer->dims.empty() ? e->buffer.get() : nullptr;
}

bool is_zero(const ir::Expr& e) {
  if (e->kind == ExprKind::Cast) return is_zero(e->args[0]);
  return (e->kind == ExprKind::FloatImm && e->float_value == 0) || (e->kind == ExprKind::IntImm && e->int_value == 0);
}

/// Whether values of type `t` are rounded to 16 bits (bf16, f16).
bool narrow16(Scalar t) { return t == Scalar::BF16 || t == Scalar::F16; }

/// The degree of a value in w = exp(-R): 0 (no value built from R), 1 (w
/// times a value free of R), -1 (anything else: R read outside exp(x - R),
/// a sum of degrees 0 and 1, a product of two degree-1 values, a
/// non-float cast, a function of a degree-1 value).
struct Degree {
  const ir::BufferNode* R;
  const ir::BufferNode* A;  // the running maximum itself: no element value may read it
  std::map<const ir::BufferNode*, int> elem;  // element scalars written so far

  int args_free(const ir::ExprNode& e) {
    for (const auto& a : e.args)
      if (of(a) != 0) return -1;
    return 0;
  }
  int of(const ir::Expr& e) {
    switch (e->kind) {
      case ExprKind::Load: {
        if (e->buffer.get() == R || e->buffer.get() == A) return -1;
        if (args_free(*e) != 0) return -1;
        auto it = elem.find(e->buffer.get());
        return it == elem.end() ? 0 : it->second;
      }
      case ExprKind::Unary: {
        const ir::Expr& x = e->args[0];
        if (e->unop == UnOp::Exp && e->type == Scalar::F32 && x->kind == ExprKind::Binary && x->binop == BinOp::Sub &&
            x->type == Scalar::F32 && scalar_of(x->args[1]) == R)
          return of(x->args[0]) == 0 ? 1 : -1;
        return args_free(*e);
      }
      case ExprKind::Binary: {
        const int a = of(e->args[0]), b = of(e->args[1]);
        if (a < 0 || b < 0) return -1;
        switch (e->binop) {
          case BinOp::Mul: return a + b <= 1 ? a + b : -1;
          case BinOp::Div: return b == 0 ? a : -1;
          case BinOp::Add:
          case BinOp::Sub: return a == b ? a : -1;
          default: return a == 0 && b == 0 ? 0 : -1;
        }
      }
      case ExprKind::Cast: {
        const int a = of(e->args[0]);
        // A degree-1 value rounded to 16 bits declines (narrow16): rounding
        // is not homogeneous, and with R behind the maximum the row's
        // largest element value is e^(A - R), not an exact 1.
        if (is_float(e->type) && is_float(e->args[0]->type)) return a == 1 && narrow16(e->type) ? -1 : a;
        return a == 0 ? 0 : -1;
      }
      case ExprKind::Select: {
        const int c = of(e->args[0]), a = of(e->args[1]), b = of(e->args[2]);
        if (c != 0 || a < 0 || b < 0) return -1;
        if (a == b) return a;
        if (a == 0 && is_zero(e->args[1])) return b;
        if (b == 0 && is_zero(e->args[2])) return a;
        return -1;
      }
      default: return args_free(*e);
    }
  }
};

/// Whether X(R) is K - R or -R, with K free of R and P.
bool minus_ref(const ir::Expr& x, const ir::BufferNode* R, const ir::BufferNode* P) {
  if (x->kind == ExprKind::Unary && x->unop == UnOp::Neg) return scalar_of(x->args[0]) == R;
  if (x->kind == ExprKind::Binary && x->binop == BinOp::Sub && scalar_of(x->args[1]) == R)
    return !ir::loads_from(x->args[0], R) && !ir::loads_from(x->args[0], P);
  return false;
}

/// Why copy step `at` (`R = A`, A a max fold's accumulator) may not lag, or "".
std::string check(const AttentionKernel& k, size_t at) {
  const ir::StmtNode& cp = *k.steps[at].stmt;
  const ir::BufferNode* R = cp.buffer.get();
  const ir::BufferNode* A = scalar_of(cp.value);
  if (R->type != Scalar::F32) return "not f32";
  // R's copy from before the fold (P = R), the rescale factors' old value.
  const ir::BufferNode* P = nullptr;
  for (size_t x = 0; x < at; ++x) {
    const ir::StmtNode& s = *k.steps[x].stmt;
    if (k.steps[x].kind == AttnStepKind::Row && s.kind == StmtKind::Store && scalar_of(s.value) == R) P = s.buffer.get();
  }
  if (!P) return "no copy from before the fold";
  // R is written by this step alone.
  int writes = 0;
  for (const auto& s : k.steps)
    ir::each_stmt(s.stmt, [&](const ir::StmtNode& x) { writes += x.kind == StmtKind::Store && x.buffer.get() == R; });
  if (writes != 1) return "written twice";
  // The rescale factors computed from R: each store that reads R in a row
  // statement (other than the copies) is c = .. exp(X(R) - X(P)) .. with X(R) = K - R.
  std::set<const ir::BufferNode*> factors;
  bool bad = false;
  for (size_t x = 0; x < k.steps.size(); ++x) {
    if (k.steps[x].kind != AttnStepKind::Row || x == at) continue;
    ir::each_stmt(k.steps[x].stmt, [&](const ir::StmtNode& st) {
      if (st.kind != StmtKind::Store || !ir::loads_from(st.value, R)) return;
      if (scalar_of(st.value) == R) return;  // P = R
      bool exp_form = false, other = false;
      ir::each_expr(st.value, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Unary && e.unop == UnOp::Exp) {
          const ir::Expr& d = e.args[0];
          if (d->kind == ExprKind::Binary && d->binop == BinOp::Sub && minus_ref(d->args[0], R, P)) exp_form = true;
          else if (ir::loads_from(d, R)) other = true;
        }
      });
      if (!exp_form || other) bad = true;
      factors.insert(st.buffer.get());
    });
  }
  if (bad) return "a row statement reads it outside exp(X(R) - X(P)) with X(R) = K - R";
  // Degrees of the element values, the folds' terms and P.
  Degree dg{R, A, {}};
  for (const auto& s : k.steps) {
    switch (s.kind) {
      case AttnStepKind::Element: {
        const int d = dg.of(s.stmt->value);
        if (d < 0) return fmt::format("`{}` is not homogeneous in exp(-R)", s.stmt->buffer->name);
        if (d == 1 && narrow16(s.stmt->buffer->type)) return fmt::format("`{}` is rounded to 16 bits", s.stmt->buffer->name);
        dg.elem[s.stmt->buffer.get()] = d;
        break;
      }
      case AttnStepKind::Fold: {
        const int d = dg.of(s.term);
        if (d < 0 || (d > 0 && s.op != BinOp::Add)) return fmt::format("the fold of `{}`", s.stmt->buffer->name);
        const ir::BufferNode* c = s.scale ? scalar_of(s.scale) : nullptr;
        if (d == 1 ? !c || !factors.count(c) : c && factors.count(c))
          return fmt::format("the fold of `{}` is not rescaled as its term", s.stmt->buffer->name);
        break;
      }
      case AttnStepKind::Pv: {
        const int d = dg.of(k.pv_p);
        const ir::BufferNode* c = k.pv_scale ? scalar_of(k.pv_scale) : nullptr;
        if (d < 0 || (d == 1 ? !c || !factors.count(c) : c && factors.count(c))) return "P V is not rescaled as P";
        // 16-bit operands: P is rounded to 16 bits for the tensor cores (narrow16).
        if (d == 1 && k.elem != Elem::F32) return "P is rounded to 16 bits for P V";
        break;
      }
      case AttnStepKind::Row: break;
    }
  }
  return "";
}

}  // namespace

void plan_lazy_rescale(AttentionKernel& k, const ir::Func& f) {
  auto buffer = [&](const ir::BufferNode* b) {
    for (const auto& x : f.buffers)
      if (x.get() == b) return x;
    return ir::Buffer();
  };
  std::set<const ir::BufferNode*> max_folds;
  for (size_t at = 0; at < k.steps.size(); ++at) {
    const AttnStep& s = k.steps[at];
    if (s.kind == AttnStepKind::Fold && s.op == BinOp::Max) max_folds.insert(s.stmt->buffer.get());
    if (s.kind != AttnStepKind::Row || s.stmt->kind != StmtKind::Store || !s.stmt->buffer->dims.empty()) continue;
    const ir::BufferNode* A = scalar_of(s.stmt->value);
    if (!A || !max_folds.count(A) || A->type != Scalar::F32) continue;
    const std::string why = check(k, at);
    ir::Buffer R = buffer(s.stmt->buffer.get()), Ab = buffer(A);
    if (!why.empty() || !R || !Ab) continue;
    namespace b = ir::build;
    AttentionKernel::LazyReference lz;
    lz.step = at;
    lz.ref = R.get();
    lz.acc = A;
    lz.eager = s.stmt;
    lz.slack = kLazySlack;
    ir::Expr lag = b::binary(BinOp::LT, b::load(R, {}),
                             b::binary(BinOp::Sub, b::load(Ab, {}), b::float_imm(kLazySlack, Scalar::F32)));
    k.steps[at].stmt = b::if_then_else(lag, b::store(R, {}, b::load(Ab, {})));
    k.lazy.push_back(lz);
    k.notes.push_back(fmt::format("deferred rescaling: `{}` follows the running maximum `{}` only when it grows by more "
                                  "than {:.3f} (8 ln 2), so the rescale factors stay 1 on most tiles; after the key "
                                  "loop, rows where they differ run the row statements once with `{} = {}`",
                                  R->name, A->name, kLazySlack, R->name, A->name));
  }
}

}  // namespace dccc::gpu
