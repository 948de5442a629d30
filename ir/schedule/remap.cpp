#include "ir/schedule/remap.h"

#include <fmt/format.h>

#include "ir/remap_loop.h"

namespace dccc::ir {

void apply_remap(ScheduleState& st, const Directive& d) {
  const LoopRef& r = d.loops[0];
  auto res = st.resolve(r);
  if (!res) return;
  size_t n = res->nest;
  const StmtNode* loop = find_for(st.f.body, res->var.get());
  if (st.remapped.count(res->var.get())) {
    st.error(r.at, fmt::format("loop `{}` of `{}` is remapped already by an earlier `remap`", r.index, r.tensor));
    return;
  }
  if (loop->loop != LoopKind::Parallel) {
    st.error(r.at, fmt::format("loop `{}` of `{}` is not a `parallel` loop; remapping orders the iterations the "
                               "thread pool hands out, so only a parallel loop can be remapped",
                               r.index, r.tensor));
    return;
  }
  std::string why;
  if (!st.independent(loop->body[0], res->var, why)) {
    st.error(d.at, fmt::format("cannot remap loop `{}`: its iterations are not independent ({}), so their order "
                               "would show",
                               r.index, why));
    return;
  }
  auto has_loop = [](const Stmt& body) {
    bool found = false;
    each_stmt(body, [&](const StmtNode& x) { found |= x.kind == StmtKind::For; });
    return found;
  };
  bool inner_loops = has_loop(loop->body[0]);  // `loop` does not outlive remap_loop
  RemapResult out = remap_loop(st.f, res->var, r.index, d.key.empty() ? nullptr : &d.key[0], st.remaps++);
  if (!out.error.empty()) {
    st.error(out.at.file ? out.at : d.at, out.error);
    return;
  }
  st.names[n][r.index] = out.loop;
  st.remapped.insert(out.loop.get());
  if (st.gpu && st.f.name != "main" && out.perm->kind != BufferKind::Aux) {  // `main` is not a CUDA kernel
    // The CUDA host code sizes each launch from the inner extents, which
    // now read the permutation: it must be the prelude's.
    bool read_by_extents = false;
    each_stmt(st.f.body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::For && x.var != out.loop) read_by_extents |= loads_from(x.extent, out.perm.get());
    });
    if (read_by_extents) {
      st.diags.report(DiagKind::Unsupported, d.at,
                      fmt::format("on the CUDA target, a `remap` whose permutation `{}` is computed in the body (its "
                                  "key or extent reads what the function computes, not only argument lengths) while "
                                  "inner loop extents read it (the host sizes the launch from them)",
                                  out.perm->name));
      st.ok = false;
      return;
    }
  }
  st.notes[n].push_back(fmt::format(
      "{}: iteration `{}` of the parallel loop runs `{}` = {}[{}], the order of descending {}, ties by index, "
      "ranked {}; {}{} (directive)",
      st.where(d), out.loop->name, r.index, out.perm->name, out.loop->name, out.key,
      out.perm->kind == BufferKind::Aux ? "in the prelude (once per length pattern)" : "before the statement",
      st.gpu ? "on the GPU, blocks (or threads) take iterations in this order, the grid's blocks being started in "
               "index order"
             : "the thread pool hands out iterations in this order",
      st.gpu        ? ""
      : inner_loops ? ", one at a time (the body holds loops)"
                    : ", in chunks (the body holds no loop)"));
}

}  // namespace dccc::ir
