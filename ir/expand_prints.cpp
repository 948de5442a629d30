#include "ir/expand_prints.h"

namespace dccc::ir {
namespace {

Stmt text(const std::string& t, bool newline = false) {
  Stmt s = build::print(t, {});
  std::const_pointer_cast<StmtNode>(s)->newline = newline;
  return s;
}

Stmt value(Expr v) {
  Stmt s = build::print("", {std::move(v)});
  std::const_pointer_cast<StmtNode>(s)->newline = false;
  return s;
}

/// `[e0, e1, ...]` over dimensions d.. of b, with loop variables `vars`.
Stmt nest(const Buffer& b, size_t d, std::vector<Expr>& idx) {
  if (d == b->dims.size()) return value(build::load(b, idx));
  Var k = make_var(b->dims[d].var->name);
  std::map<const VarNode*, Expr> env;
  for (size_t o = 0; o < d; ++o) env[b->dims[o].var.get()] = idx[o];
  Expr extent = substitute(b->dims[d].extent, env);
  idx.push_back(build::var(k));
  Stmt inner = nest(b, d + 1, idx);
  idx.pop_back();
  Stmt sep = build::if_then_else(build::binary(BinOp::LT, build::int_imm(0), build::var(k)), text(", "));
  return build::seq({text("["), build::for_loop(k, extent, build::seq({sep, inner})), text("]")});
}

Stmt expand(const Buffer& b) {
  if (b->dims.empty()) return build::seq({value(build::load(b, {})), text("", true)});
  bool ragged = false;
  for (size_t d = 1; d < b->dims.size(); ++d)
    for (size_t o = 0; o < d; ++o) ragged |= mentions(b->dims[d].extent, b->dims[o].var);
  std::vector<Expr> idx;
  if (!ragged) return build::seq({nest(b, 0, idx), text("", true)});
  // One sequence per line.
  Var k = make_var(b->dims[0].var->name);
  idx.push_back(build::var(k));
  Stmt row = nest(b, 1, idx);
  Expr extent = b->dims[0].extent;
  Stmt comma = build::if_then_else(
      build::binary(BinOp::LT, build::binary(BinOp::Add, build::var(k), build::int_imm(1)), extent), text(",", true),
      text("", true));
  return build::seq({text("[", true), build::for_loop(k, extent, build::seq({text("  "), row, comma})), text("]", true)});
}

Stmt walk(const Stmt& s) {
  if (!s) return s;
  if (s->kind == StmtKind::Print && s->buffer) return build::located(expand(s->buffer), s->at);
  if (s->body.empty()) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  for (auto& c : copy->body) c = walk(c);
  return copy;
}

}  // namespace

void expand_prints(Func& f) { f.body = walk(f.body); }

}  // namespace dccc::ir
