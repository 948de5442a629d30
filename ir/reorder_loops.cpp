#include "ir/reorder_loops.h"

#include <set>

namespace dccc::ir {
namespace {

bool names(const std::vector<Expr>& args, const Var& v) {
  for (const auto& a : args)
    if (a->kind == ExprKind::VarRef && a->var == v) return true;
  return false;
}

/// Variables of the loops inside `s`.
void inner_vars(const Stmt& s, std::set<const VarNode*>& out) {
  each_stmt(s, [&](const StmtNode& x) {
    if (x.kind == StmtKind::For) out.insert(x.var.get());
  });
}

bool mentions_any(const Expr& e, const std::set<const VarNode*>& vars) {
  bool found = false;
  each_expr(e, [&](const ExprNode& x) { found |= x.kind == ExprKind::VarRef && vars.count(x.var.get()); });
  return found;
}

class Reorder {
 public:
  explicit Reorder(const Func& f) : f_(f) {}
  int swapped = 0;

  Stmt walk(const Stmt& s) {
    if (!s) return s;
    Stmt cur = s;
    if (cur->kind == StmtKind::For && cur->loop == LoopKind::Serial && should_swap(cur)) {
      const Stmt& inner = cur->body[0];
      auto new_inner = std::make_shared<StmtNode>(*cur);
      new_inner->body = {inner->body[0]};
      auto new_outer = std::make_shared<StmtNode>(*inner);
      new_outer->body = {new_inner};
      cur = new_outer;
      ++swapped;
    }
    if (cur->body.empty()) return cur;
    auto copy = std::make_shared<StmtNode>(*cur);
    for (auto& c : copy->body) c = walk(c);
    return copy;
  }

 private:
  bool should_swap(const Stmt& outer) {
    const Stmt& inner = outer->body[0];
    if (!inner || inner->kind != StmtKind::For || inner->loop != LoopKind::Serial) return false;
    const Var& a = outer->var;
    const Var& c = inner->var;
    if (mentions(inner->extent, a)) return false;
    const Stmt& body = inner->body[0];
    // The innermost left-side loop stays innermost: the backend vectorizes it
    // or interchanges it with its reduction.
    if (!body || body->kind != StmtKind::For) return false;
    std::set<const VarNode*> deeper;
    inner_vars(body, deeper);
    if (deeper.empty()) return false;
    // Profitable: a slice read again for every a.
    bool reused = false;
    each_stmt(body, [&](const StmtNode& x) {
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind != ExprKind::Load || e.flat || e.buffer->dims.empty()) return;
        bool has_a = false, has_c = false, has_deeper = false;
        for (const auto& arg : e.args) {
          has_a |= mentions(arg, a);
          has_c |= mentions(arg, c);
          has_deeper |= mentions_any(arg, deeper);
        }
        reused |= !has_a && has_c && has_deeper;
      });
    });
    if (!reused) return false;
    // Legal: independent iterations.
    bool ok = true;
    std::set<const BufferNode*> tensors, scalars;
    each_stmt(body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::Print) ok = false;
      if (x.kind != StmtKind::Store) return;
      if (x.flat) ok = false;
      else if (x.buffer->dims.empty()) scalars.insert(x.buffer.get());
      else if (!names(x.args, a) || !names(x.args, c)) ok = false;
      else tensors.insert(x.buffer.get());
    });
    if (!ok) return false;
    for (const BufferNode* t : tensors)
      if (touches(body, t) && loaded_in(body, t)) return false;
    for (const BufferNode* sc : scalars) {
      if (sc->kind != BufferKind::Scalar || !written_before_read(body, sc)) return false;
      if (touches_outside(f_.body, body.get(), sc)) return false;
      if (f_.prelude && touches(f_.prelude, sc)) return false;
    }
    return true;
  }

  static bool loaded_in(const Stmt& s, const BufferNode* b) {
    bool found = false;
    each_stmt(s, [&](const StmtNode& x) { own_exprs(x, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; }); });
    return found;
  }

  const Func& f_;
};

}  // namespace

int reorder_loops(Func& f) {
  Reorder r(f);
  Stmt body = r.walk(f.body);
  if (r.swapped) f.body = body;
  return r.swapped;
}

}  // namespace dccc::ir
