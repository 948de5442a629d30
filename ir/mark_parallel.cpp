#include "ir/mark_parallel.h"

#include <set>

namespace dccc::ir {
namespace {

void each_expr(const Expr& e, const std::function<void(const ExprNode&)>& fn) {
  if (!e) return;
  fn(*e);
  for (const auto& a : e->args) each_expr(a, fn);
}

void each_stmt(const Stmt& s, const std::function<void(const StmtNode&)>& fn) {
  if (!s) return;
  fn(*s);
  for (const auto& c : s->body) each_stmt(c, fn);
}

/// Every expression directly held by `s` (not by its children).
void own_exprs(const StmtNode& s, const std::function<void(const ExprNode&)>& fn) {
  each_expr(s.extent, fn);
  each_expr(s.value, fn);
  for (const auto& a : s.args) each_expr(a, fn);
}

bool loads(const Expr& e, const BufferNode* b) {
  bool found = false;
  each_expr(e, [&](const ExprNode& x) { found |= x.kind == ExprKind::Load && x.buffer.get() == b; });
  return found;
}

bool uses(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) {
    if (x.kind == StmtKind::Store && x.buffer.get() == b) found = true;
    own_exprs(x, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; });
  });
  return found;
}

/// True when every execution of `s` stores scalar `b` before reading it,
/// or never touches it (see the header).
bool private_in(const Stmt& s, const BufferNode* b) {
  if (!s || !uses(s, b)) return true;
  switch (s->kind) {
    case StmtKind::Store:
      return s->buffer.get() == b && !loads(s->value, b);
    case StmtKind::For:
      return !loads(s->extent, b) && private_in(s->body[0], b);
    case StmtKind::IfThenElse:
      if (loads(s->value, b)) return false;
      for (const auto& c : s->body)
        if (!private_in(c, b)) return false;
      return true;
    case StmtKind::Seq: {
      std::vector<const Stmt*> using_items;
      for (const auto& c : s->body)
        if (uses(c, b)) using_items.push_back(&c);
      if (using_items.size() == 1) return private_in(*using_items[0], b);
      const Stmt& first = *using_items[0];
      return first->kind == StmtKind::Store && first->buffer.get() == b && !loads(first->value, b);
    }
    case StmtKind::Print:
    case StmtKind::Assert:  // only reads: touching b means reading it first
      return false;
  }
  return false;
}

/// Whether scalar `b` is used in `s` outside the subtree `loop`.
bool used_outside(const Stmt& s, const StmtNode* loop, const BufferNode* b) {
  if (!s || s.get() == loop) return false;
  bool found = s->kind == StmtKind::Store && s->buffer.get() == b;
  own_exprs(*s, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; });
  for (const auto& c : s->body) found |= used_outside(c, loop, b);
  return found;
}

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
    if (!private_in(body, b)) return false;
    // Used nowhere else: not before the loop, not after it, not in the prelude.
    bool outside = f.prelude && uses(f.prelude, b);
    for (const auto& c : f.checks) outside |= c.pre && uses(c.pre, b);
    outside |= used_outside(f.body, loop.get(), b);
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
