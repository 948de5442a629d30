#include "ir/schedule/fuse.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace dccc::ir {

void apply_fuse(ScheduleState& st, const Directive& d) {
  const LoopRef &ro = d.loops[0], &ri = d.loops[1];
  auto o = st.resolve(ro);
  if (!o) return;
  auto in = st.resolve(ri);
  if (!in) return;
  if (o->nest != in->nest) {
    st.error(ri.at, fmt::format("`fuse` names loops of different assignments (`{}` and `{}`)", ro.tensor, ri.tensor));
    return;
  }
  size_t n = o->nest;
  if (o->var == in->var) {
    st.error(ri.at, fmt::format("`fuse` takes two different loops; `{}` is named twice", ri.index));
    return;
  }
  const StmtNode* lo = find_for(st.f.body, o->var.get());
  const StmtNode* li = find_for(st.f.body, in->var.get());
  if (find_for(li->body[0], o->var.get())) {
    st.error(d.at, fmt::format("`{}` is inside `{}`: `fuse` takes the outer loop first", ro.index, ri.index));
    return;
  }
  Stmt inner = lo->body[0];
  while (inner && inner->kind == StmtKind::Seq && inner->body.size() == 1) inner = inner->body[0];
  if (!inner || inner.get() != li) {
    st.error(ri.at, fmt::format("loop `{}` is not directly inside `{}` (other loops or statements lie between them); "
                                "only directly nested loops can be fused",
                                ri.index, ro.index));
    return;
  }
  // The maps are computed once, before the nest: the extents may use no
  // loop but o.
  for (const auto* l : {lo, li})
    for (const auto& [loop_name, v] : st.names[n])
      if (v != o->var && mentions(l->extent, v)) {
        st.error(l == lo ? ro.at : ri.at,
                 fmt::format("the extent of `{}` depends on loop `{}`, which encloses the loops to fuse; the fusion "
                             "maps are computed once, before the loop nest, so only the extent of `{}` may depend on "
                             "`{}`",
                             st.name_of(n, l->var.get()), loop_name, ri.index, ro.index));
        return;
      }
  std::string name = ro.index + "_" + ri.index;
  if (st.names[n].count(name)) {
    st.error(ri.at,
             fmt::format("fusing would name a loop `{}`, which the assignment to `{}` already has", name, ri.tensor));
    return;
  }
  // The top-level statement that holds the nest.
  std::vector<Stmt> items = st.f.body->kind == StmtKind::Seq ? st.f.body->body : std::vector<Stmt>{st.f.body};
  size_t at = items.size();
  for (size_t k = 0; k < items.size() && at == items.size(); ++k)
    if (find_for(items[k], o->var.get())) at = k;
  std::set<const BufferNode*> written;
  each_stmt(items[at], [&](const StmtNode& x) {
    if (x.kind == StmtKind::Store) written.insert(x.buffer.get());
  });
  bool reads_written = false;
  for (const auto* l : {lo, li})
    each_expr(l->extent, [&](const ExprNode& e) {
      reads_written |= e.kind == ExprKind::Load && written.count(e.buffer.get());
    });
  if (reads_written) {
    st.error(d.at,
             "the loop extents read a tensor that the same statement writes; the fusion maps need them final "
             "before the loop nest");
    return;
  }
  // Aux arrays: oif [E_o + 1], fo and fi [F]. When the extents read only
  // the arguments' sizes and length arrays, the maps are the
  // prelude's: aux arrays, which storage lowering moves into the prelude
  // (computed once per length pattern and cached by the C wrapper, like
  // the offset arrays). Otherwise (lengths the body computes) they stay
  // locals filled in the body.
  bool from_inputs = reads_only_lengths(st.f, {lo->extent, li->extent});
  int id = st.fusions++;
  auto aux = [&](const std::string& nm, Expr extent) {
    auto b = std::make_shared<BufferNode>();
    b->name = fmt::format("{}{}", nm, id);
    b->type = Scalar::I64;
    b->kind = from_inputs ? BufferKind::Aux : BufferKind::Local;
    b->dims = {{make_var("x"), std::move(extent)}};
    b->pad = {1};
    st.f.buffers.push_back(b);
    return Buffer(b);
  };
  Buffer oif = aux("F_oif", build::binary(BinOp::Add, lo->extent, build::int_imm(1)));
  Expr total = build::load(oif, {lo->extent});
  Buffer fo = aux("F_fo", total), fi = aux("F_fi", total);
  Var y = make_var("y"), z = make_var("z");
  Expr inner_extent_y = substitute(li->extent, {{o->var.get(), build::var(y)}});
  Stmt fill_oif = build::seq(
      {build::store(oif, {build::int_imm(0)}, build::int_imm(0)),
       build::for_loop(y, lo->extent,
                       build::store(oif, {build::binary(BinOp::Add, build::var(y), build::int_imm(1))},
                                    build::binary(BinOp::Add, build::load(oif, {build::var(y)}), inner_extent_y)),
                       LoopKind::Serial)});
  Expr slot = build::binary(BinOp::Add, build::load(oif, {build::var(y)}), build::var(z));
  Stmt fill_maps = build::for_loop(
      y, lo->extent,
      build::for_loop(z, inner_extent_y,
                      build::seq({build::store(fo, {slot}, build::var(y)), build::store(fi, {slot}, build::var(z))}),
                      LoopKind::Serial),
      LoopKind::Serial);
  // The fused loop.
  Var fv = make_var(name);
  std::map<const VarNode*, Expr> m{{o->var.get(), build::load(fo, {build::var(fv)})},
                                   {in->var.get(), build::load(fi, {build::var(fv)})}};
  Stmt body = rewrite(li->body[0], [&](const Expr& x) { return x ? substitute(x, m) : x; });
  std::string why;
  LoopKind kind = lo->loop == LoopKind::Parallel && st.independent(li->body[0], in->var, why) ? LoopKind::Parallel
                                                                                              : LoopKind::Serial;
  Stmt fused = make_for(fv, total, body, kind);
  // lo and li point into the statement replaced here; they are read below.
  Stmt keep_alive = items[at];
  items[at] = replace_for(items[at], o->var.get(), [&](const Stmt&) { return fused; });
  items.insert(items.begin() + static_cast<long>(at), {fill_oif, fill_maps});
  st.f.body = build::seq(items);
  st.names[n].erase(ro.index);
  st.names[n].erase(ri.index);
  st.names[n][name] = fv;
  st.inherit_part(o->var, {fv});
  st.fused_into[n][ro.index] = name;
  st.fused_into[n][ri.index] = name;
  st.fusion_maps.push_back({n, ro.index, ri.index, name, FusedLoops{o->var, in->var, li->extent, oif, fo, fi}});
  if (st.gpu && st.f.name != "main" && oif->kind != BufferKind::Aux) {  // `main` is not a CUDA kernel
    // The fused loop's extent is F_oif[E]: the CUDA host code sizes the
    // launch from it.
    st.diags.report(DiagKind::Unsupported, d.at,
                    fmt::format("on the CUDA target, a `fuse` whose maps (`{}`) are computed in the body (the inner "
                                "extent reads lengths the function computes, not only argument lengths)",
                                oif->name));
    st.ok = false;
  }
  st.notes[n].push_back(fmt::format(
      "{}: `{}` and `{}` run as one loop `{}` over every ({}, {}) in order; `{}`, `{}` and `{}`, computed {}, "
      "map its iterations back{} (directive)",
      st.where(d), ro.index, ri.index, name, ro.index, ri.index, oif->name, fo->name, fi->name,
      from_inputs ? "in the prelude (once per length pattern)" : "before the loop nest",
      kind == LoopKind::Parallel       ? "; it runs in parallel"
      : lo->loop == LoopKind::Parallel ? fmt::format("; it runs serially, since {}", why)
                                       : ""));
}

}  // namespace dccc::ir
