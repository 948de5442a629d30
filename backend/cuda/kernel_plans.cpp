// FuncEmitter: the decisions of the CUDA backend -- which kernel shape a
// statement takes (register tiles, a shared-memory contraction, a warp
// per row, ranges of an hfused loop) and the facts they rest on
// (backend/cuda/cuda_emitter.h). The kernel printers follow them.
#include "backend/cuda/cuda_emitter.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dccc::backend::cudagen {

const GemmShape& gemm_shape() {
  static const GemmShape shape = [] {
    GemmShape g;
    if (const char* v = std::getenv("DCCC_CUDA_GEMM")) {
      GemmShape o;
      if (std::sscanf(v, "%d,%d,%d,%d", &o.tile_x, &o.tile_y, &o.step, &o.min_blocks) == 4 &&
          (o.tile_x == 4 || o.tile_x == 8) && (o.tile_y == 4 || o.tile_y == 8) &&
          (o.step == 4 || o.step == 8 || o.step == 16 || o.step == 32) && o.min_blocks >= 1 && o.min_blocks <= 16)
        g = o;
    }
    return g;
  }();
  return shape;
}

std::optional<FuncEmitter::LoopSplit> FuncEmitter::split_at_loop(const ir::Stmt& body) {
  std::vector<ir::Stmt> items = ir::items_of(body);
  LoopSplit split;
  for (const auto& it : items) {
    bool has_loop = false;
    ir::each_stmt(it, [&](const ir::StmtNode& x) { has_loop = has_loop || x.kind == StmtKind::For; });
    if (it->kind == StmtKind::For) {
      if (split.nest) return std::nullopt;
      split.nest = it;
    } else if (has_loop) {
      return std::nullopt;
    } else {
      (split.nest ? split.post : split.pre).push_back(it);
    }
  }
  if (!split.nest) return std::nullopt;
  return split;
}

std::optional<FuncEmitter::TilePlan> FuncEmitter::plan_tiling(const Launch& l, const ir::Stmt& body) {
  if (l.inner.size() < 2) return std::nullopt;
  auto split = split_at_loop(body);
  if (!split) return std::nullopt;
  TilePlan plan;
  static_cast<LoopSplit&>(plan) = *split;
  std::vector<ir::Stmt> levels;
  ir::Stmt cur = plan.nest;
  while (cur && cur->kind == StmtKind::For) {
    levels.push_back(cur);
    ir::Stmt next = only_loop(cur->body[0]);
    if (!next) break;
    cur = next;
  }
  ir::Stmt innermost = levels.back()->body[0];
  bool only_private = true;
  std::vector<const ir::ExprNode*> loads;
  ir::each_stmt(innermost, [&](const ir::StmtNode& x) {
    if (x.kind == StmtKind::For || x.kind == StmtKind::Print) only_private = false;
    if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) only_private = false;
    ir::own_exprs(x, [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::Load && !e.buffer->dims.empty()) loads.push_back(&e);
    });
  });
  auto load_mentions = [](const ir::ExprNode* ld, const ir::Var& v) {
    for (const auto& a : ld->args)
      if (ir::mentions(a, v)) return true;
    return false;
  };
  if (!only_private) return std::nullopt;
  // Prefer Y = the innermost parallel loop (adjacent threads, adjacent y).
  for (int y = static_cast<int>(l.inner.size()) - 1; y >= 0; --y)
    for (int x = 0; x < static_cast<int>(l.inner.size()); ++x) {
      if (x == y) continue;
      const ir::Var& vx = l.inner[x]->var;
      const ir::Var& vy = l.inner[y]->var;
      bool extents_ok = true;
      for (const auto& lv : levels)
        if (ir::mentions(lv->extent, vx) || ir::mentions(lv->extent, vy)) extents_ok = false;
      if (ir::mentions(l.inner[y]->extent, vx) || ir::mentions(l.inner[x]->extent, vy)) extents_ok = false;
      if (!extents_ok) continue;
      bool reuse_x = false, reuse_y = false;
      for (const auto& ld : loads) {
        bool mx = load_mentions(ld, vx), my = load_mentions(ld, vy);
        if (mx && !my) reuse_y = true;  // made once per x, used for every y
        if (my && !mx) reuse_x = true;
      }
      if (reuse_x && reuse_y) {
        plan.x = x;
        plan.y = y;
        return plan;
      }
    }
  return std::nullopt;
}

/// True when the flat offset of some load in `e` is `... + v` (so adjacent
/// values of v are adjacent in memory).
bool FuncEmitter::unit_stride(const ir::Expr& e, const ir::Var& v) {
  bool found = false;
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind != ExprKind::Load || !x.flat || x.args.empty()) return;
    std::vector<const ir::ExprNode*> terms{x.args[0].get()};
    while (!terms.empty()) {
      const ir::ExprNode* t = terms.back();
      terms.pop_back();
      if (t->kind == ExprKind::Binary && t->binop == BinOp::Add) {
        terms.push_back(t->args[0].get());
        terms.push_back(t->args[1].get());
      } else if (t->kind == ExprKind::VarRef && t->var == v) {
        found = true;
      }
    }
  });
  return found;
}

std::optional<FuncEmitter::GemmPlan> FuncEmitter::plan_gemm(const Launch& l, const TilePlan& t) {
  if (t.nest->kind != StmtKind::For || only_loop(t.nest->body[0])) return std::nullopt;
  // The product's update alone.
  ir::Stmt st = ir::unwrap(t.nest->body[0]);
  if (!st || st->kind != StmtKind::Store || !private_.count(st->buffer.get()) || !is_float(st->buffer->type))
    return std::nullopt;
  const ir::Expr& v = st->value;
  if (v->kind != ExprKind::Binary || v->binop != BinOp::Add) return std::nullopt;
  auto is_acc = [&](const ir::Expr& e) { return e->kind == ExprKind::Load && e->buffer == st->buffer; };
  ir::Expr prod = is_acc(v->args[0]) ? v->args[1] : is_acc(v->args[1]) ? v->args[0] : nullptr;
  if (!prod) return std::nullopt;
  if (prod->kind == ExprKind::Cast && is_float(prod->type)) prod = prod->args[0];
  if (prod->kind != ExprKind::Binary || prod->binop != BinOp::Mul || !is_float(prod->type)) return std::nullopt;
  const ir::Var& vx = l.inner[t.x]->var;
  const ir::Var& vy = l.inner[t.y]->var;
  GemmPlan g;
  g.update = st;
  g.p = prod->args[0];
  g.q = prod->args[1];
  if (ir::mentions(g.p, vy) || ir::mentions(g.q, vx)) std::swap(g.p, g.q);
  if (ir::mentions(g.p, vy) || ir::mentions(g.q, vx)) return std::nullopt;
  for (const BufferNode* b : private_)
    if (ir::loads_from(g.p, b) || ir::loads_from(g.q, b)) return std::nullopt;
  const ir::Var& vr = t.nest->var;
  g.p_r_fast = unit_stride(g.p, vr) || !unit_stride(g.p, vx);
  g.q_r_fast = unit_stride(g.q, vr) || !unit_stride(g.q, vy);
  return g;
}

std::optional<FuncEmitter::WarpPlan> FuncEmitter::plan_warp_rows(const ir::Stmt& body) {
  auto split = split_at_loop(body);
  if (!split || only_loop(split->nest->body[0])) return std::nullopt;
  WarpPlan w;
  static_cast<LoopSplit&>(w) = *split;
  ir::Stmt st = ir::unwrap(w.nest->body[0]);
  if (!st || st->kind != StmtKind::Store || !st->buffer->dims.empty() || !private_.count(st->buffer.get()) ||
      !is_float(st->buffer->type))
    return std::nullopt;
  const BufferNode* acc = st->buffer.get();
  const ir::Expr& v = st->value;
  if (v->kind != ExprKind::Binary) return std::nullopt;
  double identity;
  switch (v->binop) {
    case BinOp::Add: identity = 0; break;
    case BinOp::Max: identity = -INFINITY; break;
    case BinOp::Min: identity = INFINITY; break;
    default: return std::nullopt;
  }
  auto is_acc = [&](const ir::Expr& e) { return e->kind == ExprKind::Load && e->buffer.get() == acc; };
  w.operand = is_acc(v->args[0]) ? v->args[1] : is_acc(v->args[1]) ? v->args[0] : nullptr;
  if (!w.operand || ir::loads_from(w.operand, acc)) return std::nullopt;
  w.update = st;
  // acc starts at the identity of OP (so every lane can start there), and
  // nothing else before the loop touches it.
  int inits = 0;
  for (const auto& p : w.pre) {
    if (p->kind == StmtKind::Store && p->buffer.get() == acc) {
      if (p->value->kind != ExprKind::FloatImm || p->value->float_value != identity) return std::nullopt;
      ++inits;
    } else {
      bool touches = false;
      ir::each_stmt(p, [&](const ir::StmtNode& x) {
        touches = touches || (x.kind == StmtKind::Store && x.buffer.get() == acc);
        ir::own_exprs(x, [&](const ir::ExprNode& e) { touches = touches || (e.kind == ExprKind::Load && e.buffer.get() == acc); });
      });
      if (touches) return std::nullopt;
    }
  }
  if (inits != 1) return std::nullopt;
  // Other private scalars would need a value in every lane: keep it simple.
  for (const BufferNode* b : private_)
    if (b != acc) return std::nullopt;
  return w;
}

ir::Stmt FuncEmitter::only_loop(const ir::Stmt& body) {
  ir::Stmt s = ir::unwrap(body);
  return s && s->kind == StmtKind::For ? s : nullptr;
}

/// A parallel loop whose body is an `if` / `else` chain by range (ir/hfuse:
/// each range runs one statement's nest) where every range is a perfect
/// nest of parallel loops: each range's loops (up to three, extents
/// independent of each other and host-computable, as the default mapping
/// takes them) are flattened over the threads, instead of one thread per
/// iteration of the fused loop. The conditions must be host-computable
/// (the launch is sized from the largest range).
bool FuncEmitter::plan_ranges(const ir::Stmt& item, Launch& l) {
  if (item->kind != StmtKind::For || !is_parallel_loop(item)) return false;
  ir::Stmt cur = ir::unwrap(item->body[0]);
  if (!cur || cur->kind != StmtKind::IfThenElse || cur->body.size() < 2 || !cur->body[1]) return false;
  auto host_ok = [](const ir::Expr& e) {
    bool ok = true;
    ir::each_expr(e, [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && x.buffer->kind != BufferKind::Input && x.buffer->kind != BufferKind::Aux) ok = false;
    });
    return ok;
  };
  std::vector<std::pair<ir::Expr, std::vector<ir::Stmt>>> ranges;
  auto nest = [&](const ir::Stmt& body) {
    std::vector<ir::Stmt> inner;
    ir::Stmt x = only_loop(body);
    while (inner.size() < 3 && x && is_parallel_loop(x)) {
      bool ok = true;
      for (const auto& in : inner)
        if (ir::mentions(x->extent, in->var)) ok = false;
      if (!ok) break;
      inner.push_back(x);
      x = only_loop(x->body[0]);
    }
    return inner;
  };
  while (cur && cur->kind == StmtKind::IfThenElse && cur->body.size() > 1 && cur->body[1]) {
    if (!host_ok(cur->value)) return false;
    ranges.emplace_back(cur->value, nest(cur->body[0]));
    cur = ir::unwrap(cur->body[1]);
  }
  ranges.emplace_back(nullptr, nest(cur));
  for (const auto& r : ranges)
    if (r.second.empty()) return false;
  l.ranges = std::move(ranges);
  return true;
}

/// d e / d v for an expression affine in v (ir::affine_in), built from e's
/// own sub-expressions: it does not mention v.
ir::Expr FuncEmitter::coefficient(const ir::Expr& e, const ir::Var& v) {
  if (!ir::mentions(e, v)) return ir::build::int_imm(0);
  if (e->kind == ExprKind::VarRef) return ir::build::int_imm(1);
  const ir::Expr &a = e->args[0], &b = e->args[1];
  if (e->binop == BinOp::Add) return ir::build::binary(BinOp::Add, coefficient(a, v), coefficient(b, v));
  if (e->binop == BinOp::Sub) return ir::build::binary(BinOp::Sub, coefficient(a, v), coefficient(b, v));
  if (!ir::mentions(a, v)) return ir::build::binary(BinOp::Mul, a, coefficient(b, v));
  return ir::build::binary(BinOp::Mul, coefficient(a, v), b);
}

/// The offsets of the flat loads in `e` (inner ones first) and, for a
/// statement, of its flat store.
void FuncEmitter::flat_offsets(const ir::Expr& e, std::vector<ir::Expr>& out) {
  if (!e) return;
  for (const auto& a : e->args) flat_offsets(a, out);
  if (e->kind == ExprKind::Load && e->flat) out.push_back(e->args[0]);
}

void FuncEmitter::flat_offsets(const ir::Stmt& st, std::vector<ir::Expr>& out) {
  ir::each_stmt(st, [&](const ir::StmtNode& x) {
    flat_offsets(x.extent, out);
    flat_offsets(x.value, out);
    for (const auto& a : x.args) flat_offsets(a, out);
    if (x.kind == StmtKind::Store && x.flat) out.push_back(x.args[0]);
  });
}

}  // namespace dccc::backend::cudagen
