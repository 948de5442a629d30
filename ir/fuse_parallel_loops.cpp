#include "ir/fuse_parallel_loops.h"

#include <map>
#include <set>
#include <vector>

namespace dccc::ir {
namespace {

bool is_var(const Expr& e, const Var& v) { return e && e->kind == ExprKind::VarRef && e->var == v; }

/// The buffers `s` stores to and the buffers it touches (loads or stores).
struct Uses {
  std::set<const BufferNode*> stored, touched;
};

Uses uses_of(const Stmt& s) {
  Uses u;
  each_stmt(s, [&](const StmtNode& x) {
    if (x.buffer) {
      u.touched.insert(x.buffer.get());
      if (x.kind == StmtKind::Store) u.stored.insert(x.buffer.get());
    }
    own_exprs(x, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) u.touched.insert(e.buffer.get());
    });
  });
  return u;
}

/// Every access to `b` in `loop`'s body has the loop variable as first index.
bool own_slice_only(const Stmt& loop, const BufferNode* b) {
  const Var& v = loop->var;
  bool ok = true;
  each_stmt(loop->body[0], [&](const StmtNode& x) {
    if (x.buffer.get() == b) {
      if (x.kind != StmtKind::Store || x.flat || x.args.empty() || !is_var(x.args[0], v)) ok = false;
    }
    own_exprs(x, [&](const ExprNode& e) {
      if (e.kind != ExprKind::Load || e.buffer.get() != b) return;
      if (e.flat || e.args.empty() || !is_var(e.args[0], v)) ok = false;
    });
  });
  return ok;
}

bool fusable(const Stmt& a, const Stmt& s) {
  if (!same_expr(a->extent, s->extent)) return false;
  Uses ua = uses_of(a->body[0]), us = uses_of(s->body[0]);
  for (const BufferNode* b : ua.stored)
    if (loads_from(a->extent, b)) return false;
  for (const BufferNode* b : us.stored)
    if (loads_from(a->extent, b)) return false;
  // A length array one loop stores may not shape a tensor the other
  // touches: storage lowering computes that tensor's offsets from it before
  // the first statement that touches the tensor, which the fused loop would
  // be (nt[d][s] = ...; then u[d][s][t] over nt[d][s] in one loop).
  auto shapes_touched = [](const Uses& writer, const Uses& other) {
    for (const BufferNode* t : other.touched)
      for (const auto& d : t->dims)
        for (const BufferNode* b : writer.stored)
          if (loads_from(d.extent, b)) return true;
    return false;
  };
  if (shapes_touched(ua, us) || shapes_touched(us, ua)) return false;
  std::set<const BufferNode*> shared;
  for (const BufferNode* b : ua.touched)
    if (us.touched.count(b)) shared.insert(b);
  for (const BufferNode* b : shared) {
    if (b->dims.empty()) return false;  // a scalar both use
    if (!ua.stored.count(b) && !us.stored.count(b)) continue;  // read by both: unchanged
    if (!own_slice_only(a, b) || !own_slice_only(s, b)) return false;
  }
  return true;
}

}  // namespace

int fuse_parallel_loops(Func& f) {
  if (!f.body || f.storage_lowered) return 0;
  std::vector<Stmt> items = items_of(f.body), out;
  int fused = 0;
  for (const auto& item : items) {
    bool parallel = item->kind == StmtKind::For && item->loop == LoopKind::Parallel;
    if (parallel && !out.empty()) {
      const Stmt& last = out.back();
      if (last->kind == StmtKind::For && last->loop == LoopKind::Parallel && fusable(last, item)) {
        std::map<const VarNode*, Expr> m{{item->var.get(), build::var(last->var)}};
        Stmt body = rewrite(item->body[0], [&](const Expr& e) { return substitute(e, m); });
        std::vector<Stmt> parts = items_of(last->body[0]);
        for (const Stmt& part : items_of(body)) parts.push_back(part);
        auto loop = std::make_shared<StmtNode>(*last);
        loop->body = {build::seq(parts)};
        out.back() = loop;
        ++fused;
        continue;
      }
    }
    out.push_back(item);
  }
  if (fused) f.body = build::seq(out);
  return fused;
}

}  // namespace dccc::ir
