#include "ir/online_nest.h"

#include <map>

namespace dccc::ir {
namespace {

bool constant(const Expr& e) {
  bool c = true;
  each_expr(e, [&](const ExprNode& x) {
    c &= x.kind != ExprKind::Load && x.kind != ExprKind::VarRef && x.kind != ExprKind::SizeRef;
  });
  return c;
}

/// The store's indices are the loops' variables, its extents the tensor's.
bool stores_whole(const StmtNode& st, const std::vector<const StmtNode*>& loops) {
  const Buffer& t = st.buffer;
  if (st.flat || t->dims.size() != loops.size() || st.args.size() != loops.size()) return false;
  std::map<const VarNode*, Expr> dim_to_loop;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (st.args[k]->kind != ExprKind::VarRef || st.args[k]->var != loops[k]->var) return false;
    dim_to_loop[t->dims[k].var.get()] = build::var(loops[k]->var);
  }
  for (size_t k = 0; k < loops.size(); ++k)
    if (!same_expr(loops[k]->extent, substitute(t->dims[k].extent, dim_to_loop))) return false;
  return true;
}

}  // namespace

std::optional<Nest> parse_nest(const Stmt& item, size_t index) {
  Nest n;
  n.item = index;
  Stmt s = unwrap(item);
  while (s && s->kind == StmtKind::For) {
    n.loops.push_back(s.get());
    s = unwrap(s->body[0]);
  }
  if (!s || n.loops.empty()) return std::nullopt;
  if (s->kind == StmtKind::Store) {
    if (!stores_whole(*s, n.loops)) return std::nullopt;
    n.target = s->buffer;
    n.value = s->value;
  } else if (s->kind == StmtKind::Seq && s->body.size() == 3) {
    const Stmt& init = s->body[0];
    const Stmt& post = s->body[2];
    if (init->kind != StmtKind::Store || !init->buffer->dims.empty() || init->flat || !constant(init->value))
      return std::nullopt;
    n.acc = init->buffer;
    Stmt r = unwrap(s->body[1]);
    while (r && r->kind == StmtKind::For) {
      n.rloops.push_back(r.get());
      r = unwrap(r->body[0]);
    }
    if (n.rloops.empty() || !r || r->kind != StmtKind::Store || r->buffer != n.acc) return std::nullopt;
    const Expr& v = r->value;
    if (v->kind != ExprKind::Binary || v->args[0]->kind != ExprKind::Load || v->args[0]->buffer != n.acc ||
        loads_from(v->args[1], n.acc.get()))
      return std::nullopt;
    if (v->binop != BinOp::Add && v->binop != BinOp::Mul && v->binop != BinOp::Max && v->binop != BinOp::Min)
      return std::nullopt;
    if (post->kind != StmtKind::Store || !stores_whole(*post, n.loops)) return std::nullopt;
    n.reduction = true;
    n.op = v->binop;
    n.x = v->args[1];
    n.init = init->value;
    n.post = post->value;
    n.target = post->buffer;
  } else {
    return std::nullopt;
  }
  for (const auto* l : n.loops) n.lhs.push_back(l->var);
  return n;
}

bool stores_to(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Store && x.buffer.get() == b; });
  return found;
}

bool uses(const Stmt& s, const BufferNode* b) {
  bool found = touches(s, b);
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Print && x.buffer.get() == b; });
  return found;
}

}  // namespace dccc::ir
