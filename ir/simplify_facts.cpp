// The recognition of the arrays whose fill loops give the simplifier its
// axioms (ir/index_simplifier.h): prefix sums, fusion maps, proportional
// prefix sums, lengths; and the checks settled without Z3.
#include <map>
#include <set>

#include "ir/index_simplifier.h"

namespace dccc::ir::simplify {

namespace {

/// Splits a product into its integer-constant factor and the other factors.
void factors(const Expr& e, int64_t& c, std::vector<Expr>& rest) {
  if (e->kind == ExprKind::Binary && e->binop == BinOp::Mul && is_int(e->type)) {
    factors(e->args[0], c, rest);
    factors(e->args[1], c, rest);
  } else if (e->kind == ExprKind::IntImm) {
    c *= e->int_value;
  } else {
    rest.push_back(e);
  }
}

}  // namespace

// ---------------------------------------------------------- recognition
void Simplifier::recognise() {
  std::vector<Stmt> pre, body;
  flatten_items(f_.prelude, pre);
  flatten_items(f_.body, body);
  std::map<const BufferNode*, int> stores;
  std::map<const BufferNode*, size_t> last_body_store;  // last top-level body item storing it, +1
  for (const auto* list : {&pre, &body})
    for (size_t k = 0; k < list->size(); ++k)
      each_stmt((*list)[k], [&](const StmtNode& x) {
        if (x.kind != StmtKind::Store) return;
        ++stores[x.buffer.get()];
        if (list == &body) last_body_store[x.buffer.get()] = k + 1;
      });
  auto first_body_load = [&](const BufferNode* b) {
    for (size_t k = 0; k < body.size(); ++k) {
      bool uses = false;
      each_stmt(body[k], [&](const StmtNode& x) {
        own_exprs(x, [&](const ExprNode& e) { uses |= e.kind == ExprKind::Load && e.buffer.get() == b; });
      });
      if (uses) return k;
    }
    return body.size();
  };
  // Inputs of a fill must be final: never written in the body, or only
  // by items before the fill (`at`; SIZE_MAX for the prelude).
  auto final_before = [&](const std::set<const BufferNode*>& bufs, const BufferNode* self, size_t at) {
    for (const auto* b : bufs) {
      if (b == self) continue;
      auto it = last_body_store.find(b);
      if (it == last_body_store.end()) continue;
      if (at == SIZE_MAX || it->second > at) return false;
    }
    return true;
  };

  for (const auto* list : {&pre, &body}) {
    bool in_prelude = list == &pre;
    for (size_t k = 0; k + 1 < list->size(); ++k) {
      const Stmt& init = (*list)[k];
      const Stmt loop = (*list)[k + 1];
      if (init->kind != StmtKind::Store || init->args.size() != 1 || !is_imm(init->args[0], 0) ||
          !is_imm(init->value, 0) || !is_int(init->buffer->type))
        continue;
      const Buffer& p = init->buffer;
      if (!init->flat && p->dims.size() != 1) continue;
      if (loop->kind != StmtKind::For) continue;
      Stmt st = single(loop->body[0]);
      if (!st || st->kind != StmtKind::Store || st->buffer != p || st->args.size() != 1) continue;
      const Expr& at = st->args[0];
      if (!(at->kind == ExprKind::Binary && at->binop == BinOp::Add && at->args[0]->kind == ExprKind::VarRef &&
            at->args[0]->var == loop->var && is_imm(at->args[1], 1)))
        continue;
      const Expr& v = st->value;
      if (!(v->kind == ExprKind::Binary && v->binop == BinOp::Add)) continue;
      const Expr* prev = single_index(v->args[0]);
      if (!prev || v->args[0]->buffer != p || (*prev)->kind != ExprKind::VarRef || (*prev)->var != loop->var)
        continue;
      const Expr& slice = v->args[1];
      if (stores[p.get()] != 2 || loads_from(slice, p.get()) || loads_from(loop->extent, p.get())) continue;
      bool has_var = false;
      each_expr(loop->extent, [&](const ExprNode& x) { has_var |= x.kind == ExprKind::VarRef; });
      if (has_var) continue;
      auto inputs = loaded_buffers(slice);
      for (const auto* b : loaded_buffers(loop->extent)) inputs.insert(b);
      size_t ready = in_prelude ? 0 : k + 2;
      if (!final_before(inputs, p.get(), in_prelude ? SIZE_MAX : k)) continue;
      if (!in_prelude && first_body_load(p.get()) < k) continue;
      prefixes_.push_back(std::make_unique<Prefix>(Prefix{p, loop->extent, loop->var, slice, ready, false}));
    }
  }
  // Lengths: integer arrays that size a tensor dimension (the runtime and
  // the allocation checks reject negative ones).
  for (const auto& b : f_.buffers)
    for (const auto& d : b->dims)
      for (const auto* l : loaded_buffers(d.extent))
        if (is_int(l->type) && l->kind != BufferKind::Aux) lengths_.insert(l);
  // Fusion maps: for y in 0..E { for z in 0..s(y) { fo[oif[y] + z] = y; fi[oif[y] + z] = z } }.
  // In the prelude (`fuse` over input lengths) they are ready before the body.
  for (const auto* list : {&pre, &body})
  for (size_t k = 0; k < list->size(); ++k) {
    const bool in_prelude = list == &pre;
    const Stmt& outer = (*list)[k];
    if (outer->kind != StmtKind::For) continue;
    Stmt inner = single(outer->body[0]);
    if (!inner || inner->kind != StmtKind::For) continue;
    Stmt pair = inner->body[0];
    if (!pair || pair->kind != StmtKind::Seq || pair->body.size() != 2) continue;
    const Stmt &sfo = pair->body[0], &sfi = pair->body[1];
    if (sfo->kind != StmtKind::Store || sfi->kind != StmtKind::Store || sfo->args.size() != 1 ||
        sfi->args.size() != 1 || !same_expr(sfo->args[0], sfi->args[0]))
      continue;
    if (!(sfo->value->kind == ExprKind::VarRef && sfo->value->var == outer->var &&
          sfi->value->kind == ExprKind::VarRef && sfi->value->var == inner->var))
      continue;
    const Expr& slot = sfo->args[0];
    if (!(slot->kind == ExprKind::Binary && slot->binop == BinOp::Add && slot->args[1]->kind == ExprKind::VarRef &&
          slot->args[1]->var == inner->var))
      continue;
    const Expr* oy = single_index(slot->args[0]);
    if (!oy || (*oy)->kind != ExprKind::VarRef || (*oy)->var != outer->var) continue;
    const Prefix* oif = prefix_of(slot->args[0]->buffer.get());
    if (!oif || (in_prelude ? oif->ready != 0 : oif->ready > k) || !same_expr(oif->extent, outer->extent)) continue;
    if (!same_expr(substitute(oif->slice, {{oif->y.get(), build::var(outer->var)}}), inner->extent)) continue;
    const Buffer &fo = sfo->buffer, &fi = sfi->buffer;
    if (fo == fi || stores[fo.get()] != 1 || stores[fi.get()] != 1) continue;
    if (!in_prelude && (first_body_load(fo.get()) < k || first_body_load(fi.get()) < k)) continue;
    fusions_.push_back(std::make_unique<Fusion>(Fusion{oif, fo, fi, in_prelude ? 0 : k + 1}));
  }
  // Proportional prefix sums over the same extent.
  for (const auto& p : prefixes_)
    for (const auto& q : prefixes_) {
      if (p == q || !same_expr(p->extent, q->extent)) continue;
      int64_t cp = 1, cq = 1;
      std::vector<Expr> rp, rq;
      factors(substitute(p->slice, {{p->y.get(), build::var(q->y)}}), cp, rp);
      factors(q->slice, cq, rq);
      if (cq == 0 || cp % cq != 0) continue;
      bool ok = true;
      for (const auto& x : rq) {
        auto it = rp.begin();
        while (it != rp.end() && !same_expr(*it, x)) ++it;
        if (it == rp.end()) {
          ok = false;
          break;
        }
        rp.erase(it);
      }
      if (!ok) continue;
      Expr c = build::int_imm(cp / cq);
      for (const auto& x : rp) {
        bool invariant = true;
        each_expr(x, [&](const ExprNode& n) {
          invariant &= n.kind == ExprKind::IntImm || n.kind == ExprKind::SizeRef ||
                       (n.kind == ExprKind::Binary && n.binop == BinOp::Mul) ||
                       (n.kind == ExprKind::Cast && is_int(n.type));
        });
        if (!invariant || !is_int(x->type)) ok = false;
        c = mul(c, build::cast(Scalar::I64, x));
      }
      if (ok) ratios_.push_back(Ratio{p.get(), q.get(), c});
    }
  // Non-negative slices (monotone prefix sums, sound fusion maps).
  for (auto& p : prefixes_) {
    size_t saved = pos_;
    pos_ = p->ready;
    context_.push_back(range_fact(p->y, p->extent));
    p->nonneg = plainly_nonneg(p->slice) || prove(build::binary(BinOp::LE, build::int_imm(0), p->slice));
    context_.pop_back();
    pos_ = saved;
  }
}

bool Simplifier::plainly_nonneg(const Expr& e) const {
  switch (e->kind) {
    case ExprKind::IntImm: return e->int_value >= 0;
    case ExprKind::SizeRef: return true;
    case ExprKind::VarRef: return true;  // a loop variable: 0 <= v < extent
    case ExprKind::Cast: return is_int(e->type) && is_int(e->args[0]->type) && plainly_nonneg(e->args[0]);
    case ExprKind::Load: return is_int(e->type) && lengths_.count(e->buffer.get()) > 0;
    case ExprKind::Binary:
      if (e->binop == BinOp::Add || e->binop == BinOp::Mul)
        return plainly_nonneg(e->args[0]) && plainly_nonneg(e->args[1]);
      if (e->binop == BinOp::Div)
        return plainly_nonneg(e->args[0]) && e->args[1]->kind == ExprKind::IntImm && e->args[1]->int_value > 0;
      return false;
    default: return false;
  }
}

bool Simplifier::plainly_below(const Expr& v, const Expr& bound) const {
  if (v->kind != ExprKind::VarRef) return false;
  for (const auto& c : context_) {
    // range_fact: (0 <= v) && (v < E)
    if (c->kind != ExprKind::Binary || c->binop != BinOp::And) continue;
    const Expr& lt = c->args[1];
    if (lt->kind != ExprKind::Binary || lt->binop != BinOp::LT || !same_expr(lt->args[0], v)) continue;
    const Expr& e = lt->args[1];
    if (same_expr(e, bound)) return true;
    if (e->kind == ExprKind::IntImm && bound->kind == ExprKind::IntImm && e->int_value <= bound->int_value)
      return true;
    if (bound->kind == ExprKind::Binary && bound->binop == BinOp::Add && same_expr(bound->args[0], e) &&
        bound->args[1]->kind == ExprKind::IntImm && bound->args[1]->int_value >= 0)
      return true;
  }
  return false;
}

const Prefix* Simplifier::prefix_of(const BufferNode* b) const {
  for (const auto& p : prefixes_)
    if (p->buf.get() == b) return p.get();
  return nullptr;
}

const Fusion* Simplifier::fusion_of_fo(const BufferNode* b) const {
  for (const auto& u : fusions_)
    if (u->fo.get() == b && u->ready <= pos_) return u.get();
  return nullptr;
}

bool Simplifier::aux_like(const BufferNode* b) const {
  if (b->kind == BufferKind::Aux || lengths_.count(b) || prefix_of(b)) return true;
  for (const auto& u : fusions_)
    if (u->fo.get() == b || u->fi.get() == b) return true;
  return false;
}

}  // namespace dccc::ir::simplify
