#include "ir/flat_reduction.h"

#include <algorithm>

namespace dccc::ir {

Stride stride(const Expr& e, const Var& v) {
  if (!mentions(e, v)) return Stride::Zero;
  switch (e->kind) {
    case ExprKind::VarRef: return Stride::One;
    case ExprKind::Cast: return is_int(e->type) && is_int(e->args[0]->type) ? stride(e->args[0], v) : Stride::Other;
    case ExprKind::Binary: {
      Stride a = stride(e->args[0], v), c = stride(e->args[1], v);
      if (e->binop == BinOp::Add) return a == Stride::Zero ? c : c == Stride::Zero ? a : Stride::Other;
      if (e->binop == BinOp::Sub) return c == Stride::Zero ? a : Stride::Other;
      if (e->binop == BinOp::Mul) {
        auto one = [](const Expr& x) { return x->kind == ExprKind::IntImm && x->int_value == 1; };
        if (a == Stride::Zero) return one(e->args[0]) ? c : Stride::Other;
        if (c == Stride::Zero) return one(e->args[1]) ? a : Stride::Other;
      }
      return Stride::Other;
    }
    default: return Stride::Other;
  }
}

namespace {

/// A scalar the function keeps for itself (the backends give it a register
/// or a stack slot): not a scalar argument or result.
bool is_accumulator(const BufferNode* b) {
  return b->dims.empty() && b->kind != BufferKind::Input && b->kind != BufferKind::Output;
}

/// Whether `fin` reads `t` only at the element it stores (or not at all).
/// Since the fins of a nest store distinct elements (each (o, u) its own,
/// which every reordering of the nest already relies on), such a read sees
/// the element's value before the nest, in any order of the fins.
bool reads_own(const Stmt& fin, const BufferNode* t) {
  bool ok = true;
  each_expr(fin->value, [&](const ExprNode& x) {
    if (x.kind != ExprKind::Load || x.buffer.get() != t) return;
    ok &= fin->buffer.get() == t && x.flat == fin->flat && x.args.size() == fin->args.size();
    for (size_t a = 0; ok && a < x.args.size(); ++a) ok &= same_expr(x.args[a], fin->args[a]);
  });
  return ok;
}

}  // namespace

std::optional<FlatReduction> match_flat_reduction(const StmtNode& s) {
  const Stmt& body = s.body[0];
  if (!body || body->kind != StmtKind::Seq || body->body.size() < 3 || body->body.size() % 2 == 0)
    return std::nullopt;
  size_t k = (body->body.size() - 1) / 2;
  FlatReduction plan;
  plan.inits.assign(body->body.begin(), body->body.begin() + static_cast<long>(k));
  plan.red = body->body[k];
  plan.fins.assign(body->body.begin() + static_cast<long>(k) + 1, body->body.end());
  if (plan.red->kind != StmtKind::For || plan.red->loop != LoopKind::Serial || mentions(plan.red->extent, s.var))
    return std::nullopt;
  Stmt steps = plan.red->body[0];
  if (!steps) return std::nullopt;
  if (steps->kind == StmtKind::Seq) plan.steps = steps->body;
  else plan.steps = {steps};
  if (plan.steps.size() != k) return std::nullopt;
  std::vector<const BufferNode*> accs;
  for (size_t u = 0; u < k; ++u) {
    const Stmt& init = plan.inits[u];
    if (init->kind != StmtKind::Store || !is_accumulator(init->buffer.get())) return std::nullopt;
    if (std::find(accs.begin(), accs.end(), init->buffer.get()) != accs.end()) return std::nullopt;
    accs.push_back(init->buffer.get());
  }
  auto loads_acc = [&](const Expr& e) {
    for (const BufferNode* a : accs)
      if (loads_from(e, a)) return true;
    return false;
  };
  if (loads_acc(plan.red->extent)) return std::nullopt;
  for (size_t u = 0; u < k; ++u) {
    const BufferNode* acc = accs[u];
    const Stmt& init = plan.inits[u];
    const Stmt& step = plan.steps[u];
    const Stmt& fin = plan.fins[u];
    if (loads_acc(init->value)) return std::nullopt;
    if (!step || step->kind != StmtKind::Store || step->buffer.get() != acc) return std::nullopt;
    const Expr& v = step->value;
    if (v->kind != ExprKind::Binary || v->args[0]->kind != ExprKind::Load || v->args[0]->buffer.get() != acc ||
        loads_acc(v->args[1]))
      return std::nullopt;
    if (fin->kind != StmtKind::Store) return std::nullopt;
    const BufferNode* t = fin->buffer.get();
    if (t->dims.empty() || !loads_from(fin->value, acc)) return std::nullopt;
    for (const BufferNode* a : accs)
      if (a != acc && loads_from(fin->value, a)) return std::nullopt;
    for (const auto& a : fin->args)
      if (loads_acc(a)) return std::nullopt;
    // No output of the nest is read inside it, but by a fin at the element
    // it stores (`t[off] = t[off] * r + acc`: a running sum kept in t).
    for (size_t w = 0; w < k; ++w) {
      if (!reads_own(plan.fins[w], t) || loads_from(plan.steps[w]->value->args[1], t) ||
          loads_from(plan.inits[w]->value, t))
        return std::nullopt;
      for (const auto& a : plan.fins[w]->args)
        if (loads_from(a, t)) return std::nullopt;
    }
  }
  return plan;
}

void each_load_stride(const StmtNode& s, const FlatReduction& n, const std::function<void(Stride, Stride)>& fn) {
  std::function<void(const Expr&)> look = [&](const Expr& e) {
    if (e->kind == ExprKind::Load && !e->args.empty()) fn(stride(e->args[0], s.var), stride(e->args[0], n.red->var));
    for (const auto& a : e->args) look(a);
  };
  for (const auto& step : n.steps) look(step->value->args[1]);
}

bool interchange_pays(const StmtNode& s, const FlatReduction& n) {
  bool gain = false, loss = false;
  each_load_stride(s, n, [&](Stride in_outer, Stride in_red) {
    gain |= in_outer == Stride::One && in_red == Stride::Other;
    loss |= in_red == Stride::One && in_outer == Stride::Other;
  });
  return gain && !loss;
}

bool jam_pays(const StmtNode& s, const FlatReduction& n) {
  bool shared = false;
  each_load_stride(s, n, [&](Stride in_outer, Stride in_red) {
    shared |= in_outer == Stride::Zero && in_red != Stride::Zero;
  });
  return shared;
}

}  // namespace dccc::ir
