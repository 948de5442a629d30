#include "ir/mark_parallel.h"

#include <set>

namespace dccc::ir {
namespace {

bool is_var(const Expr& e, const Var& v) { return e && e->kind == ExprKind::VarRef && e->var == v; }

bool can_parallelize(const Func& f, const Stmt& loop) {
  const Var& v = loop->var;
  const Stmt& body = loop->body[0];
  bool ok = true;
  std::set<const BufferNode*> tensors, scalars;
  each_stmt(body, [&](const StmtNode& s) {
    if (s.kind == StmtKind::Print) ok = false;
    if (s.kind != StmtKind::Store) return;
    const BufferNode* b = s.buffer.get();
    if (s.flat || b->kind == BufferKind::Input || b->kind == BufferKind::Aux) ok = false;
    else if (b->dims.empty()) {
      if (b->kind != BufferKind::Scalar) ok = false;  // a result, or a scalar shared by iterations
      scalars.insert(b);
    } else {
      if (s.args.empty() || !is_var(s.args[0], v)) ok = false;
      tensors.insert(b);
    }
  });
  if (!ok) return false;
  // A tensor the loop writes is read only at the iteration's own first index.
  each_stmt(body, [&](const StmtNode& s) {
    own_exprs(s, [&](const ExprNode& e) {
      if (e.kind != ExprKind::Load || !tensors.count(e.buffer.get())) return;
      if (e.flat || e.args.empty() || !is_var(e.args[0], v)) ok = false;
    });
  });
  if (!ok) return false;
  for (const BufferNode* b : scalars) {
    if (!written_before_read(body, b)) return false;
    // Used nowhere else: not before the loop, not after it, not in the prelude.
    bool outside = f.prelude && touches(f.prelude, b);
    for (const auto& c : f.checks) outside |= c.pre && touches(c.pre, b);
    outside |= touches_outside(f.body, loop.get(), b);
    if (outside) return false;
  }
  return true;
}

}  // namespace

int mark_parallel(Func& f) {
  if (!f.body) return 0;
  std::vector<Stmt> items = f.body->kind == StmtKind::Seq ? f.body->body : std::vector<Stmt>{f.body};
  int marked = 0;
  for (auto& item : items) {
    if (item->kind != StmtKind::For || item->loop != LoopKind::Serial) continue;
    if (!can_parallelize(f, item)) continue;
    auto copy = std::make_shared<StmtNode>(*item);
    copy->loop = LoopKind::Parallel;
    item = copy;
    ++marked;
  }
  if (marked == 0) return 0;
  if (f.body->kind == StmtKind::Seq) {
    auto body = std::make_shared<StmtNode>(*f.body);
    body->body = std::move(items);
    f.body = body;
  } else {
    f.body = items[0];
  }
  return marked;
}

}  // namespace dccc::ir
