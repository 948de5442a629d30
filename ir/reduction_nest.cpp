#include "ir/reduction_nest.h"

namespace dccc::ir {

std::optional<ReductionNest> parse_reduction_nest(const Stmt& item, BinOp op) {
  ReductionNest r;
  Stmt s = unwrap(item);
  Stmt inner;
  while (s && s->kind == StmtKind::For) {
    r.loops.push_back(s.get());
    Stmt b = unwrap(s->body[0]);
    if (b && b->kind == StmtKind::Seq) {
      inner = b;
      break;
    }
    s = b;
  }
  if (!inner || inner->body.size() != 3 || r.loops.empty()) return std::nullopt;
  r.inner = inner.get();
  r.init = inner->body[0];
  r.loop = inner->body[1];
  r.post = inner->body[2];
  if (r.init->kind != StmtKind::Store || !r.init->buffer->dims.empty() || r.init->flat) return std::nullopt;
  r.acc = r.init->buffer;
  bool constant = true;
  each_expr(r.init->value, [&](const ExprNode& x) {
    constant &= x.kind != ExprKind::Load && x.kind != ExprKind::VarRef && x.kind != ExprKind::SizeRef;
  });
  if (!constant || r.loop->kind != StmtKind::For) return std::nullopt;
  r.update = unwrap(r.loop->body[0]);
  if (!r.update || r.update->kind != StmtKind::Store || r.update->buffer != r.acc) return std::nullopt;
  const Expr& v = r.update->value;
  if (v->kind != ExprKind::Binary || v->binop != op || v->args[0]->kind != ExprKind::Load ||
      v->args[0]->buffer != r.acc || loads_from(v->args[1], r.acc.get()))
    return std::nullopt;
  if (r.post->kind != StmtKind::Store || r.post->flat) return std::nullopt;
  return r;
}

}  // namespace dccc::ir
