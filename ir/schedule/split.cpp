#include "ir/schedule/split.h"

#include <fmt/format.h>

#include <map>

#include "ir/split_op.h"

namespace dccc::ir {

bool apply_split(ScheduleState& st, const Directive& d, const LoopRef& r, int64_t k) {
  auto res = st.resolve(r);
  if (!res) return false;
  size_t n = res->nest;
  std::string outer = r.index + "_o", inner = r.index + "_i";
  for (const auto& name : {outer, inner})
    if (st.names[n].count(name)) {
      st.error(r.at, fmt::format("splitting `{}` would name a loop `{}`, which the assignment to `{}` already has",
                                 r.index, name, r.tensor));
      return false;
    }
  Var vo = make_var(outer), vi = make_var(inner);
  st.f.body = replace_for(st.f.body, res->var.get(), [&](const Stmt& loop) {
    const Expr& e = loop->extent;
    Expr kk = build::int_imm(k);
    Expr idx = build::binary(BinOp::Add, build::binary(BinOp::Mul, build::var(vo), kk), build::var(vi));
    std::map<const VarNode*, Expr> m{{loop->var.get(), idx}};
    Stmt body = rewrite(loop->body[0], [&](const Expr& x) { return x ? substitute(x, m) : x; });
    // A multiple of k (a constant, the bulk of split_op): no bound check.
    bool exact = is_multiple_of(e, k);
    if (!exact) body = build::if_then_else(build::binary(BinOp::LT, idx, e), body);
    Expr outer_extent = exact                         ? exact_quotient(e, k)
                        : e->kind == ExprKind::IntImm ? build::int_imm((e->int_value + k - 1) / k)
                            : build::binary(BinOp::Div, build::binary(BinOp::Add, e, build::int_imm(k - 1)), kk);
    return make_for(vo, outer_extent, make_for(vi, kk, body, LoopKind::Serial), loop->loop);
  });
  st.names[n].erase(r.index);
  st.names[n][outer] = vo;
  st.names[n][inner] = vi;
  st.split_away[n].insert(r.index);
  st.inherit_part(res->var, {vo, vi});
  st.notes[n].push_back(fmt::format("{}: `{}` becomes `{}` (outer) and `{}` ({} iterations){} (directive)", st.where(d),
                                    r.index, outer, inner, k, d.kind == DirectiveKind::Tile ? ", for the tile" : ""));
  return true;
}

}  // namespace dccc::ir
