// FuncEmitter: the kernels of the default mapping, of a schedule's
// gpu_blocks / gpu_threads, of an hfused loop's ranges and of a warp per
// row, with the outer loop's loads made once (backend/cuda/cuda_emitter.h).
#include "backend/cuda/cuda_emitter.h"

#include <fmt/format.h>

namespace dccc::backend::cudagen {

/// Loads of read-only integer arrays (length arrays, offset arrays the
/// prelude fills) whose index depends only on the outer loop variable are
/// made once per outer iteration, into registers: otherwise the compiler
/// must reload them after every store, which may alias them.
void FuncEmitter::hoist_outer_loads(const ir::Stmt& item) {
  hoisted_.clear();
  outer_prefix_.clear();
  std::set<const BufferNode*> stored;
  ir::each_stmt(f_.body, [&](const ir::StmtNode& s) {
    if (s.kind == StmtKind::Store) stored.insert(s.buffer.get());
  });
  auto read_only = [&](const BufferNode* b) {
    return (b->kind == BufferKind::Input || b->kind == BufferKind::Aux) && !b->dims.empty() && is_int(b->type) &&
           !stored.count(b);
  };
  std::vector<ir::Expr> found;
  std::function<void(const ir::Expr&)> visit = [&](const ir::Expr& e) {
    if (!e) return;
    for (const auto& a : e->args) visit(a);  // inner loads first: they are declared first
    if (e->kind != ExprKind::Load || !e->flat || !read_only(e->buffer.get())) return;
    bool ok = true;
    ir::each_expr(e->args[0], [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::VarRef && x.var != item->var) ok = false;
      if (x.kind == ExprKind::Load && !read_only(x.buffer.get())) ok = false;
    });
    // A load that reads no loop variable may also be in the loop's own
    // extent (a fused loop's F_oif[B] in its `pad_loop` guard), which is
    // computed before the hoisted names exist: it stays where it is.
    if (ok && ir::mentions(e->args[0], item->var)) found.push_back(e);
  };
  // Not below a condition: a guard (of `pad_loop`, a split, an `hfuse`
  // range) may be what keeps the index in bounds.
  std::function<void(const ir::Stmt&)> walk = [&](const ir::Stmt& s) {
    if (!s) return;
    visit(s->extent);
    visit(s->value);
    for (const auto& a : s->args) visit(a);
    if (s->kind != StmtKind::IfThenElse)
      for (const auto& c : s->body) walk(c);
  };
  walk(item->body[0]);
  std::set<std::string> names;
  for (const auto& e : found) {
    std::string v = expr(e);  // the same load seen again reads as its name
    if (hoisted_.count(v) || names.count(v)) continue;
    std::string name = fmt::format("h{}", hoisted_.size());
    outer_prefix_ += fmt::format("    const {} {} = {};\n", value_type(e->type), name, v);
    hoisted_[v] = name;
    names.insert(name);
  }
}

FuncEmitter::Launch FuncEmitter::emit_kernel(const ir::Stmt& item, int index) {
  Launch l;
  l.kernel = fmt::format("{}__k{}", f_.name, index);
  private_.clear();
  for (const auto& m : f_.gpu_mappings)
    if (item->kind == StmtKind::For && !m.blocks.empty() && m.blocks[0] == item->var) l.mapping = &m;
  if (l.mapping) {
    emit_mapped_kernel(item, l);
  } else if (auto attn = plan_attention(item, l.kernel)) {
    emit_attention_kernel(l, *attn);
    // Its output accumulator lives in registers: no memory for it unless
    // another statement touches it.
    if (!ir::touches_outside(f_.body, item.get(), attn->out_acc)) in_registers_.insert(attn->out_acc);
  } else if (auto mma = plan_mma(item, l.kernel)) {
    emit_mma_kernel(l, *mma);
  } else if (plan_ranges(item, l)) {
    emit_ranges_kernel(item, l);
  } else if (item->kind == StmtKind::For && is_parallel_loop(item)) {
    l.parallel = true;
    l.outer = item;
    ir::Stmt cur = item;
    while (l.inner.size() < 3) {
      ir::Stmt next = only_loop(cur->body[0]);
      if (!next || !is_parallel_loop(next)) break;
      // Its extent may depend on the outer loop only, so the launch can size it.
      bool ok = true;
      for (const auto& in : l.inner)
        if (ir::mentions(next->extent, in->var)) ok = false;
      if (!ok) break;
      l.inner.push_back(next);
      cur = next;
    }
    if (!l.inner.empty()) hoist_outer_loads(item);
    // Scalars written inside the parallel body are private to a thread.
    ir::each_stmt(cur->body[0], [&](const ir::StmtNode& s) {
      if (s.kind == StmtKind::Store && s.buffer->dims.empty()) private_.insert(s.buffer.get());
    });
    if (l.inner.empty()) {
      // One parallel loop: threads over it.
      std::string v = var(item->var);
      std::string body;
      declare_private(body, 2);
      stmt(item->body[0], 2, body);
      out_ += fmt::format(
          "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
          "  const int64_t {}_n = {};\n"
          "  for (int64_t {} = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; {} < {}_n;"
          " {} += (int64_t)gridDim.x * blockDim.x) {{\n{}  }}\n}}\n\n",
          l.kernel, f_.name, v, expr(item->extent), v, v, v, v, body);
    } else if (auto plan = plan_tiling(l, cur->body[0])) {
      l.tile_x = plan->x;
      l.tile_y = plan->y;
      if (auto g = plan_gemm(l, *plan)) {
        l.block_tiles = true;
        emit_gemm_kernel(l, *plan, *g);
      } else {
        emit_tiled_kernel(l, *plan);
      }
    } else if (auto w = plan_warp_rows(cur->body[0])) {
      l.warp_rows = true;
      emit_warp_rows_kernel(l, *w);
    } else {
      std::string v0 = var(item->var);
      std::string body = "    int64_t t_rest = t;\n";
      for (size_t k = l.inner.size(); k-- > 0;) {
        std::string v = var(l.inner[k]->var);
        body += fmt::format("    const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
      }
      declare_private(body, 2);
      stmt(l.inner.back()->body[0], 2, body);
      std::string extents = outer_prefix_, total = "(int64_t)1";
      for (const auto& in : l.inner) {
        std::string v = var(in->var);
        extents += fmt::format("    const int64_t {}_n = {};\n", v, expr(in->extent));
        total = fmt::format("{} * {}_n", total, v);
      }
      out_ += fmt::format(
          "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
          "  const int64_t {}_n = {};\n"
          "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
          "    const int64_t t_n = {};\n"
          "    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < t_n;"
          " t += (int64_t)gridDim.x * blockDim.x) {{\n{}    }}\n  }}\n}}\n\n",
          l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, extents, total, indent(body, 2));
    }
  } else {
    std::string body;
    stmt(item, 1, body);
    out_ += fmt::format("__global__ void {}({}__args a) {{\n  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n{}}}\n\n",
                        l.kernel, f_.name, body);
  }
  private_.clear();
  hoisted_.clear();
  outer_prefix_.clear();
  return l;
}

/// A statement whose GPU mapping a schedule gives (ir::GpuMapping,
/// `gpu_blocks` / `gpu_threads`): the block loops stride over the grid
/// (one: blockIdx.x; two: blockIdx.y, then blockIdx.x), each skipping the
/// iterations its guards (`if`s without `else` between the loops) rule
/// out; the thread loops are flattened into one index striding over
/// threadIdx.x; their body runs serially in a thread. Without thread loops
/// the parallel loops directly inside the grid's are taken as the default
/// mapping takes them (up to three, extents independent of each other), or
/// thread 0 runs the body. Re-checked here, after the passes that follow
/// the schedule: what does not fit is an [Unsupported] error at the directive.
void FuncEmitter::emit_mapped_kernel(const ir::Stmt& item, Launch& l) {
  const ir::GpuMapping& m = *l.mapping;
  auto refuse = [&](const std::string& what) -> void { throw CudaUnsupported(m.at, what); };
  auto through_guards = [&](const ir::Stmt& body, std::vector<ir::Expr>& guards) {
    ir::Stmt x = ir::unwrap(body);
    while (x && x->kind == StmtKind::IfThenElse && (x->body.size() == 1 || !x->body[1])) {
      guards.push_back(x->value);
      x = ir::unwrap(x->body[0]);
    }
    return x;
  };
  l.parallel = true;
  // The grid's loops.
  std::vector<std::vector<ir::Expr>> guards(m.blocks.size());
  ir::Stmt cur = item, rest;
  for (size_t k = 0; k < m.blocks.size(); ++k) {
    if (!cur || cur->kind != StmtKind::For || cur->var != m.blocks[k])
      refuse(fmt::format("a GPU mapping of loop `{}`, which the passes after the schedule moved", m.blocks[k]->name));
    if (!is_parallel_loop(cur))
      refuse(fmt::format("`gpu_blocks` over loop `{}`, whose iterations may store the same element or share a "
                         "scalar",
                         cur->var->name));
    l.blocks.push_back(cur);
    rest = through_guards(cur->body[0], guards[k]);
    cur = rest;
  }
  // The threads' loops: the mapping's, or the default's choice. A guard
  // between two of them (a split's bound check) runs per thread.
  std::vector<ir::Expr> thread_guards;
  for (size_t k = 0; k < m.threads.size(); ++k) {
    if (!cur || cur->kind != StmtKind::For || cur->var != m.threads[k])
      refuse(fmt::format("a GPU mapping of loop `{}`, which the passes after the schedule moved", m.threads[k]->name));
    if (!is_parallel_loop(cur))
      refuse(fmt::format("`gpu_threads` over loop `{}`, whose iterations may store the same element or share a "
                         "scalar",
                         cur->var->name));
    for (const auto& in : l.inner)
      if (ir::mentions(cur->extent, in->var))
        refuse(fmt::format("thread loops whose extents depend on each other (`{}` on `{}`)", cur->var->name,
                           in->var->name));
    // Computed once per block, whether or not the conditions above hold:
    // it reads only the grid's variables (checked above), and must not fail.
    if (k > 0 && !thread_guards.empty() && ir::may_fail(cur->extent))
      refuse(fmt::format("a thread loop `{}` below a condition, with an extent that may fail", cur->var->name));
    l.inner.push_back(cur);
    cur = k + 1 < m.threads.size() ? through_guards(cur->body[0], thread_guards) : nullptr;
  }
  if (m.threads.empty()) {
    while (l.inner.size() < 3 && cur && cur->kind == StmtKind::For && is_parallel_loop(cur)) {
      bool ok = true;
      for (const auto& in : l.inner)
        if (ir::mentions(cur->extent, in->var)) ok = false;
      if (!ok) break;
      l.inner.push_back(cur);
      cur = only_loop(cur->body[0]);
    }
  }
  // The host sizes the grid: guards of the first loop and the second
  // loop's extent are evaluated there, for every iteration of the first.
  auto host_ok = [](const ir::Expr& e) {
    bool ok = true;
    ir::each_expr(e, [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && x.buffer->kind != BufferKind::Input && x.buffer->kind != BufferKind::Aux) ok = false;
    });
    return ok;
  };
  if (l.blocks.size() > 1) {
    for (const auto& g : guards[0])
      if (!host_ok(g)) refuse("a guard between the grid's loops that reads what the program computes");
    l.grid_guards = guards[0];
  }
  // Threads per block: the thread loops' iteration count when constant.
  l.block_dim = l.inner.empty() ? 32 : 256;
  int64_t count = 1;
  bool constant = !l.inner.empty();
  for (const auto& in : l.inner) {
    if (in->extent->kind != ExprKind::IntImm || in->extent->int_value <= 0 || in->extent->int_value > 1024) constant = false;
    else count *= in->extent->int_value;
  }
  if (constant && count <= 1024) l.block_dim = static_cast<int>(std::max<int64_t>(32, (count + 31) / 32 * 32));
  if (!l.blocks.empty()) hoist_outer_loads(item);
  const ir::Stmt& body = l.inner.empty() ? rest : l.inner.back()->body[0];
  ir::each_stmt(body, [&](const ir::StmtNode& x) {
    if (x.kind == StmtKind::Store && x.buffer->dims.empty()) private_.insert(x.buffer.get());
  });
  std::string inner;
  if (l.inner.empty()) {
    inner = "if (threadIdx.x == 0) {\n";
    declare_private(inner, 1);
    stmt(body, 1, inner);
    inner += "}\n";
  } else {
    std::string total = "(int64_t)1";
    for (const auto& in : l.inner) {
      std::string v = var(in->var);
      inner += fmt::format("const int64_t {}_n = {};\n", v, expr(in->extent));
      total += " * " + v + "_n";
    }
    inner += fmt::format("const int64_t t_n = {};\n", total);
    inner += "for (int64_t t = threadIdx.x; t < t_n; t += blockDim.x) {\n  int64_t t_rest = t;\n";
    for (size_t k = l.inner.size(); k-- > 0;) {
      std::string v = var(l.inner[k]->var);
      inner += fmt::format("  const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
    }
    std::string b;
    for (const auto& g : thread_guards) b += fmt::format("  if (!({})) continue;\n", expr(g));
    declare_private(b, 1);
    stmt(body, 1, b);
    inner += b + "}\n";
  }
  // The grid's loops around it, innermost first.
  for (size_t k = l.blocks.size(); k-- > 0;) {
    std::string v = var(l.blocks[k]->var);
    const char* dim = l.blocks.size() > 1 && k == 0 ? "y" : "x";
    // Hoisted loads first: they come from no further than the first
    // guard's condition (hoist_outer_loads stops at conditions).
    std::string head = k == 0 ? indent_text(outer_prefix_, -4) : "";
    for (const auto& g : guards[k]) head += fmt::format("if (!({})) continue;\n", expr(g));
    inner = fmt::format("const int64_t {0}_n = {1};\nfor (int64_t {0} = blockIdx.{2}; {0} < {0}_n; {0} += gridDim.{2}) {{\n{3}}}\n",
                        v, expr(l.blocks[k]->extent), dim, indent(head + inner, 1));
  }
  out_ += fmt::format("__global__ void __launch_bounds__({}) {}({}__args a) {{\n{}}}\n\n", l.block_dim, l.kernel,
                      f_.name, indent(inner, 1));
}

void FuncEmitter::emit_ranges_kernel(const ir::Stmt& item, Launch& l) {
  l.parallel = true;
  l.outer = item;
  std::string v0 = var(item->var);
  std::string body;
  for (size_t k = 0; k < l.ranges.size(); ++k) {
    const auto& [cond, inner] = l.ranges[k];
    if (cond) body += fmt::format("{}if ({}) {{\n", k ? "} else " : "", expr(cond));
    else body += "} else {\n";
    std::string total = "(int64_t)1", b;
    for (const auto& in : inner) {
      std::string v = var(in->var);
      b += fmt::format("const int64_t {}_n = {};\n", v, expr(in->extent));
      total += " * " + v + "_n";
    }
    b += fmt::format("const int64_t t_n = {};\n", total);
    b += "for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < t_n; t += (int64_t)gridDim.x * blockDim.x) {\n";
    b += "  int64_t t_rest = t;\n";
    for (size_t j = inner.size(); j-- > 0;) {
      std::string v = var(inner[j]->var);
      b += fmt::format("  const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
    }
    private_.clear();
    ir::each_stmt(inner.back()->body[0], [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::Store && x.buffer->dims.empty()) private_.insert(x.buffer.get());
    });
    declare_private(b, 1);
    stmt(inner.back()->body[0], 1, b);
    b += "}\n";
    body += indent(b, 1);
  }
  body += "}\n";
  out_ += fmt::format(
      "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
      "  const int64_t {}_n = {};\n"
      "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}  }}\n}}\n\n",
      l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, indent(body, 2));
}

/// See WarpPlan: warps stride over the flattened inner loops.
void FuncEmitter::emit_warp_rows_kernel(const Launch& l, const WarpPlan& w) {
  const ir::Stmt& item = l.outer;
  std::string v0 = var(item->var);
  std::string extents = outer_prefix_, total = "(int64_t)1";
  for (const auto& in : l.inner) {
    std::string v = var(in->var);
    extents += fmt::format("    const int64_t {}_n = {};\n", v, expr(in->extent));
    total = fmt::format("{} * {}_n", total, v);
  }
  std::string body = "    int64_t t_rest = t;\n";
  for (size_t k = l.inner.size(); k-- > 0;) {
    std::string v = var(l.inner[k]->var);
    body += fmt::format("    const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
  }
  declare_private(body, 2);
  for (const auto& p : w.pre) stmt(p, 2, body);
  std::string vr = var(w.nest->var);
  body += fmt::format("    for (int64_t {0} = lane, {0}_n = {1}; {0} < {0}_n; {0} += 32) {{\n", vr, expr(w.nest->extent));
  stmt(w.nest->body[0], 3, body);
  body += "    }\n";
  const BufferNode* acc = w.update->buffer.get();
  body += "    #pragma unroll\n    for (int off = 16; off > 0; off /= 2) {\n";
  body += fmt::format("      const {} other = __shfl_xor_sync(0xffffffffu, {}, off);\n", value_type(acc->type), scalar_ref(acc));
  override_[w.operand.get()] = "other";
  stmt(w.update, 3, body);
  override_.clear();
  body += "    }\n    if (lane == 0) {\n";
  for (const auto& p : w.post) stmt(p, 3, body);
  body += "    }\n";
  // t is the same in every lane of a warp, so all 32 take part in each shuffle.
  out_ += fmt::format(
      "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
      "  const int lane = threadIdx.x & 31;\n"
      "  const int64_t {}_n = {};\n"
      "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
      "    const int64_t t_n = {};\n"
      "    for (int64_t t = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; t < t_n;"
      " t += (int64_t)gridDim.x * blockDim.x / 32) {{\n{}    }}\n  }}\n}}\n\n",
      l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, extents, total, indent(body, 2));
}

}  // namespace dccc::backend::cudagen
