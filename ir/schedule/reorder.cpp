#include "ir/schedule/reorder.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace dccc::ir {

bool apply_reorder(ScheduleState& st, const Directive& d, const std::vector<LoopRef>& refs) {
  std::vector<ResolvedLoop> loops;
  std::map<const VarNode*, const LoopRef*> ref_of;
  for (const auto& r : refs) {
    auto res = st.resolve(r);
    if (!res) return false;
    if (!loops.empty() && res->nest != loops[0].nest) {
      st.error(r.at,
               fmt::format("`reorder` names loops of different assignments (`{}` and `{}`)", refs[0].tensor, r.tensor));
      return false;
    }
    if (ref_of.count(res->var.get())) {
      st.error(r.at, fmt::format("loop `{}` is named twice", r.index));
      return false;
    }
    ref_of[res->var.get()] = &r;
    loops.push_back(*res);
  }
  size_t n = loops[0].nest;
  // The outermost named loop, then down the chain of single nested loops
  // (through the bound checks of split loops) until every named loop is in it.
  const StmtNode* top = nullptr;
  each_stmt(st.f.body, [&](const StmtNode& x) {
    if (!top && x.kind == StmtKind::For && ref_of.count(x.var.get())) top = &x;
  });
  std::vector<const StmtNode*> chain{top};
  std::vector<Expr> guards;
  std::set<const VarNode*> remaining;
  for (const auto& l : loops) remaining.insert(l.var.get());
  remaining.erase(top->var.get());
  Stmt inner = top->body[0];
  while (true) {
    while (inner && ((inner->kind == StmtKind::Seq && inner->body.size() == 1) ||
                     (inner->kind == StmtKind::IfThenElse && (inner->body.size() == 1 || !inner->body[1])))) {
      if (inner->kind == StmtKind::IfThenElse) guards.push_back(inner->value);
      inner = inner->body[0];
    }
    if (remaining.empty()) break;
    if (!inner || inner->kind != StmtKind::For) {
      const LoopRef* missing = nullptr;
      for (const auto& r : refs)
        if (!missing && remaining.count(st.names[n].at(r.index).get())) missing = &r;
      st.error(missing->at, fmt::format("loop `{}` is not perfectly nested inside `{}`: other statements lie between "
                                        "them (a `reduce` initialises its accumulator there), so they cannot be "
                                        "reordered",
                                        missing->index, st.name_of(n, chain.back()->var.get())));
      return false;
    }
    chain.push_back(inner.get());
    remaining.erase(inner->var.get());
    inner = inner->body[0];
  }
  // New order: the named loops' positions in the chain, filled in the given order.
  std::vector<const StmtNode*> order = chain;
  {
    size_t j = 0;
    for (auto& slot : order)
      if (ref_of.count(slot->var.get())) slot = find_for(st.f.body, loops[j++].var.get());
  }
  // A loop's extent may use only the loops outside it (a vloop stays
  // inside the loop its bound depends on).
  for (size_t q = 0; q < order.size(); ++q)
    for (size_t q2 = q + 1; q2 < order.size(); ++q2)
      if (mentions(order[q]->extent, order[q2]->var)) {
        const LoopRef* r = ref_of.count(order[q]->var.get()) ? ref_of[order[q]->var.get()] : &refs[0];
        st.error(r->at,
                 fmt::format("`{}` cannot be placed outside `{}`: its extent depends on `{}` (a vloop stays inside "
                             "the loop its bound depends on)",
                             st.name_of(n, order[q]->var.get()), st.name_of(n, order[q2]->var.get()),
                             st.name_of(n, order[q2]->var.get())));
        return false;
      }
  // Bound checks sink below the loops, which must not need them.
  for (const auto& g : guards)
    for (const StmtNode* l : chain)
      for (const StmtNode* l2 : chain)
        if (mentions(g, l2->var) && mentions(l->extent, l2->var)) {
          st.error(d.at, fmt::format("the bound check of a split loop guards the extent of `{}`; these loops cannot be "
                                     "reordered",
                                     st.name_of(n, l->var.get())));
          return false;
        }
  // Independent iterations: the order must not show.
  std::string bad;
  each_stmt(inner, [&](const StmtNode& x) {
    if (!bad.empty()) return;
    if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) bad = "the loop body prints or checks a condition";
    if (x.kind != StmtKind::Store) return;
    if (x.buffer->dims.empty()) {
      if (x.buffer->kind != BufferKind::Scalar || !written_before_read(inner, x.buffer.get()))
        bad = fmt::format("the loops carry the `reduce` accumulation into `{}`, whose order would change", x.buffer->name);
      return;
    }
    std::set<const VarNode*> named;
    for (const auto& a : x.args) st.plain_vars(a, named);
    for (const auto& l : loops) {
      if (!named.count(l.var.get())) bad = fmt::format("`{}` is not stored at an element of its own in each iteration", x.buffer->name);
    }
    bool read = false;
    each_stmt(inner, [&](const StmtNode& y) {
      own_exprs(y, [&](const ExprNode& e) { read |= e.kind == ExprKind::Load && e.buffer == x.buffer; });
    });
    if (read) bad = fmt::format("`{}` is read in the loops that write it", x.buffer->name);
  });
  if (!bad.empty()) {
    st.error(d.at, fmt::format("cannot reorder these loops: {}", bad));
    return false;
  }
  Stmt body = inner;
  if (!guards.empty()) {
    Expr cond = guards[0];
    for (size_t i = 1; i < guards.size(); ++i) cond = build::binary(BinOp::And, cond, guards[i]);
    body = build::if_then_else(cond, body);
  }
  // Each position keeps its `parallel` mark: the loop moved there has
  // independent iterations (checked above).
  for (size_t q = order.size(); q-- > 0;) body = make_for(order[q]->var, order[q]->extent, body, chain[q]->loop);
  st.f.body = replace_for(st.f.body, top->var.get(), [&](const Stmt&) { return body; });
  std::string names;
  for (const auto& r : refs) names += (names.empty() ? "" : ", ") + r.index;
  if (d.kind == DirectiveKind::Reorder)
    st.notes[n].push_back(
        fmt::format("{}: loops {} run in this order, outermost first (directive)", st.where(d), names));
  return true;
}

}  // namespace dccc::ir
