// FuncEmitter: contraction kernels -- register tiles (kTile x kTile
// outputs a thread) and shared-memory block tiles (GemmPlan), with their
// offsets hoisted per tile (backend/cuda/cuda_emitter.h).
#include "backend/cuda/cuda_emitter.h"

#include <fmt/format.h>

namespace dccc::backend::cudagen {

void FuncEmitter::emit_tiled_kernel(const Launch& l, const TilePlan& plan) {
  const ir::Stmt& item = l.outer;
  std::string v0 = var(item->var);
  std::string vx = var(l.inner[plan.x]->var), vy = var(l.inner[plan.y]->var);
  std::string extents = outer_prefix_, total = "(int64_t)1";
  for (size_t k = 0; k < l.inner.size(); ++k) {
    std::string v = var(l.inner[k]->var);
    extents += fmt::format("    const int64_t {}_n = {};\n", v, expr(l.inner[k]->extent));
  }
  // Thread space: the other inner loops, then ceil(nX / T) x ceil(nY / T)
  // tiles; thread (tx, ty) takes x = tx + dx * SX, y = ty + dy * SY.
  extents += fmt::format("    const int64_t sx = ({}_n + {} - 1) / {};\n    const int64_t sy = ({}_n + {} - 1) / {};\n", vx,
                         kTile, kTile, vy, kTile, kTile);
  for (size_t k = 0; k < l.inner.size(); ++k)
    if (static_cast<int>(k) != plan.x && static_cast<int>(k) != plan.y) total += " * " + var(l.inner[k]->var) + "_n";
  total += " * sx * sy";
  std::string body = "    int64_t t_rest = t;\n";
  body += "    const int64_t ty = dcc_divmod(t_rest, sy);\n    const int64_t tx = dcc_divmod(t_rest, sx);\n";
  for (size_t k = l.inner.size(); k-- > 0;) {
    if (static_cast<int>(k) == plan.x || static_cast<int>(k) == plan.y) continue;
    std::string v = var(l.inner[k]->var);
    body += fmt::format("    const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
  }
  for (const BufferNode* b : private_in_order())
    body += fmt::format("    {} r_{}[{}][{}];\n", value_type(b->type), names_.buf(b), kTile, kTile);
  tiled_ = true;
  auto lanes = [&](int depth, bool guard, const std::function<void(std::string&, int)>& inner) {
    return tile_lanes(vx, "tx + dx * sx", vy, "ty + dy * sy", depth, guard, inner);
  };
  emit_pre(plan, lanes, body);
  // The reduction nest once, with the lanes inside its innermost body.
  std::vector<ir::Stmt> levels;
  ir::Stmt cur = plan.nest;
  while (cur && cur->kind == StmtKind::For) {
    levels.push_back(cur);
    ir::Stmt next = only_loop(cur->body[0]);
    if (!next) break;
    cur = next;
  }
  int depth = 2;
  for (const auto& lv : levels) {
    std::string v = var(lv->var);
    std::string pad(depth * 2, ' ');
    body += fmt::format("{}for (int64_t {} = 0, {}_n = {}; {} < {}_n; ++{}) {{\n", pad, v, v, expr(lv->extent), v, v, v);
    ++depth;
  }
  body += lanes(depth, false, [&](std::string& o, int d) { stmt(levels.back()->body[0], d, o); });
  for (size_t k = levels.size(); k-- > 0;) {
    --depth;
    body += std::string(depth * 2, ' ') + "}\n";
  }
  for (const auto& st : plan.post) body += lanes(2, true, [&](std::string& o, int d) { stmt(st, d, o); });
  tiled_ = false;
  out_ += fmt::format(
      "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
      "  const int64_t {}_n = {};\n"
      "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
      "    const int64_t t_n = {};\n"
      "    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < t_n;"
      " t += (int64_t)gridDim.x * blockDim.x) {{\n{}    }}\n  }}\n}}\n\n",
      l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, extents, total, indent(body, 2));
}

/// The lanes (dx, dy) of a kTile x kTile register tile: x and y from
/// the given formulas of dx and dy, clamped into range so that loads stay
/// in bounds; with `guard`, `inner` runs only where both are in range.
std::string FuncEmitter::tile_lanes(const std::string& vx, const std::string& xf, const std::string& vy, const std::string& yf,
                                    int depth, bool guard, const std::function<void(std::string&, int)>& inner,
                                    int lanes, int lanes_y) {
  std::string pad(depth * 2, ' ');
  std::string o;
  o += fmt::format("{}#pragma unroll\n{}for (int dx = 0; dx < {}; ++dx) {{\n", pad, pad, lanes);
  o += fmt::format("{}  const bool ok_x = {} < {}_n;\n", pad, xf, vx);
  o += fmt::format("{}  const int64_t {} = ok_x ? {} : {}_n - 1;\n", pad, vx, xf, vx);
  o += fmt::format("{}  #pragma unroll\n{}  for (int dy = 0; dy < {}; ++dy) {{\n", pad, pad, lanes_y ? lanes_y : lanes);
  o += fmt::format("{}    const bool ok_y = {} < {}_n;\n", pad, yf, vy);
  o += fmt::format("{}    const int64_t {} = ok_y ? {} : {}_n - 1;\n", pad, vy, yf, vy);
  o += fmt::format("{}    (void)ok_x;\n{}    (void)ok_y;\n", pad, pad);
  if (guard) {
    o += pad + "    if (ok_x && ok_y) {\n";
    inner(o, depth + 3);
    o += pad + "    }\n";
  } else {
    inner(o, depth + 2);
  }
  o += pad + "  }\n" + pad + "}\n";
  return o;
}

/// The statements before a tiled reduction nest: private initialisations
/// run in every lane (so no register is read uninitialised), anything else
/// only in range.
void FuncEmitter::emit_pre(const TilePlan& plan, const std::function<std::string(int, bool, const std::function<void(std::string&, int)>&)>& lanes,
                           std::string& body) {
  for (const auto& st : plan.pre) {
    bool private_only = true;
    ir::each_stmt(st, [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) private_only = false;
    });
    body += lanes(2, !private_only, [&](std::string& o, int d) { stmt(st, d, o); });
  }
}

/// Offsets affine in two loop variables are computed once per tile as
/// base + u * cu + w * cw (wrapping, as every offset). For each of the
/// `offsets` that mentions u or w and is affine in both,
/// declares NAMEk_b (the offset at u = U0, w = W0, C expressions), NAMEk_u
/// and NAMEk_w, and returns the offset nodes with their names.
std::vector<std::pair<const ir::ExprNode*, std::string>> FuncEmitter::hoist_affine(const std::vector<ir::Expr>& offsets, const ir::Var& u,
                                                                                   const std::string& u0, const ir::Var& w,
                                                                                   const std::string& w0, const std::string& name,
                                                                                   std::string& decl) {
  std::vector<std::pair<const ir::ExprNode*, std::string>> out;
  for (const auto& off : offsets) {
    if (!(ir::mentions(off, u) || ir::mentions(off, w)) || !ir::affine_in(off, u) || !ir::affine_in(off, w)) continue;
    bool seen = false;
    for (const auto& [node, _] : out) seen = seen || node == off.get();
    if (seen) continue;
    std::string n = fmt::format("{}{}", name, out.size());
    decl += fmt::format("    int64_t {0}_b;\n    {{\n      const int64_t {1} = {2}, {3} = {4};\n      (void){1};\n      (void){3};\n"
                        "      {0}_b = {5};\n    }}\n",
                        n, var(u), u0, var(w), w0, expr(off));
    decl += fmt::format("    const int64_t {0}_u = {1}, {0}_w = {2};\n", n, expr(coefficient(off, u)), expr(coefficient(off, w)));
    out.emplace_back(off.get(), n);
  }
  return out;
}

/// A contraction staged through shared memory (see GemmPlan). Blocks
/// stride over (other inner loops) x X tiles x Y tiles; thread (tx, ty)
/// of 8 x 8 owns x = x0 + 4 ty + L(dx), y = y0 + 4 tx + L(dy), where
/// L(d) = d % 4 + 32 (d / 4): two runs of 4 adjacent elements half a tile
/// apart, so that a quarter warp reads 8 adjacent float4s of a staged row
/// (no bank conflicts) and writes rows of 4 adjacent outputs. The next step's
/// operands are loaded into registers while the current step computes.
/// The offset of a staged load that is affine in r is computed once per
/// tile as base + r * stride.
void FuncEmitter::emit_gemm_kernel(const Launch& l, const TilePlan& plan, const GemmPlan& g) {
  const ir::Stmt& item = l.outer;
  std::string v0 = var(item->var);
  std::string vx = var(l.inner[plan.x]->var), vy = var(l.inner[plan.y]->var), vr = var(plan.nest->var);
  std::string tp = value_type(g.p->type), tq = value_type(g.q->type);
  std::string extents = outer_prefix_, total = "(int64_t)1";
  for (size_t k = 0; k < l.inner.size(); ++k)
    extents += fmt::format("    const int64_t {}_n = {};\n", var(l.inner[k]->var), expr(l.inner[k]->extent));
  extents += fmt::format("    const int64_t nbx = ({}_n + {} - 1) / {};\n    const int64_t nby = ({}_n + {} - 1) / {};\n", vx,
                         kBlockX, kBlockX, vy, kBlockY, kBlockY);
  for (size_t k = 0; k < l.inner.size(); ++k)
    if (static_cast<int>(k) != plan.x && static_cast<int>(k) != plan.y) total += " * " + var(l.inner[k]->var) + "_n";
  total += " * nbx * nby";
  std::string body = "    int64_t t_rest = t;\n";
  body += fmt::format("    const int64_t y0 = dcc_divmod(t_rest, nby) * {};\n", kBlockY);
  body += fmt::format("    const int64_t x0 = dcc_divmod(t_rest, nbx) * {};\n", kBlockX);
  for (size_t k = l.inner.size(); k-- > 0;) {
    if (static_cast<int>(k) == plan.x || static_cast<int>(k) == plan.y) continue;
    std::string v = var(l.inner[k]->var);
    body += fmt::format("    const int64_t {} = dcc_divmod(t_rest, {}_n);\n", v, v);
  }
  body += fmt::format("    const int tx = threadIdx.x % {0}, ty = threadIdx.x / {0};\n", kSide);
  for (const BufferNode* b : private_in_order())
    body += fmt::format("    {} r_{}[{}][{}];\n", value_type(b->type), names_.buf(b), kTileX, kTileY);
  tiled_ = true;
  // Lane d of a thread: runs of 4 adjacent elements, 4 * kSide apart.
  const std::string lane_x = fmt::format("((dx & 3) + {} * (dx >> 2))", 4 * kSide);
  const std::string lane_y = fmt::format("((dy & 3) + {} * (dy >> 2))", 4 * kSide);
  auto lanes = [&](int depth, bool guard, const std::function<void(std::string&, int)>& inner) {
    return tile_lanes(vx, "x0 + 4 * ty + " + lane_x, vy, "y0 + 4 * tx + " + lane_y, depth, guard, inner, kTileX, kTileY);
  };
  emit_pre(plan, lanes, body);
  body += fmt::format("    const int64_t {0}_n = {1};\n", vr, expr(plan.nest->extent));
  // Staging: element u of this thread is e = threadIdx.x + 256 u of the
  // kStep x kBlock slab; adjacent threads take adjacent addresses.
  // kPer(o): elements of operand o per thread and step.
  auto kPer = [&](const auto& o) { return kStep * o.blk / kGemmThreads; };
  struct Operand {
    const char* name;
    std::string type;
    ir::Expr e;
    const ir::Var* vo;
    std::string o0;
    bool r_fast;
    int blk;  // the block tile's extent along vo (kBlockX or kBlockY)
    std::vector<std::pair<const ir::ExprNode*, std::string>> affine;  // offset = b + lo * u + r * w
    std::vector<std::pair<const ir::ExprNode*, std::string>> loads;   // prefetched into registers, per step
    std::vector<std::pair<const ir::ExprNode*, std::string>> tile_loads;  // the same for every step: per tile
  };
  Operand ops[2] = {{"p", tp, g.p, &l.inner[plan.x]->var, "x0", g.p_r_fast, kBlockX, {}, {}, {}},
                    {"q", tq, g.q, &l.inner[plan.y]->var, "y0", g.q_r_fast, kBlockY, {}, {}, {}}};
  auto coords = [&](const Operand& o) {
    return o.r_fast ? fmt::format("const int e = threadIdx.x + {1} * u, lr = e % {0}, lo = e / {0};", kStep, kGemmThreads)
                    : fmt::format("const int e = threadIdx.x + {1} * u, lo = e % {0}, lr = e / {0};", o.blk, kGemmThreads);
  };
  // Loads `which` of operand o's elements at step R into registers: the
  // affine offsets run from N_t + R * N_w by N_c per element.
  auto elements = [&](Operand& o, const std::string& R, const std::vector<std::pair<const ir::ExprNode*, std::string>>& which,
                      int depth) {
    std::string pad(depth * 2, ' '), s;
    std::string vo = var(*o.vo);
    s += pad + "{\n";
    s += fmt::format("{}  const int rl = (int)dcc_imin<int64_t>({}_n - ({}), (int64_t){});\n", pad, vr, R, kStep);
    for (const auto& [node, n] : o.affine)
      s += fmt::format("{0}  int64_t {1}_cur = (int64_t)((uint64_t){1}_t + (uint64_t)({2}) * (uint64_t){1}_w);\n", pad, n, R);
    s += fmt::format("{}  #pragma unroll\n{}  for (int u = 0; u < {}; ++u) {{\n{}    {}\n", pad, pad, kPer(o), pad, coords(o));
    s += fmt::format("{}    const int64_t {} = ({}) + lr;\n", pad, vr, R);
    s += fmt::format("{0}    const bool ok = (({1}_okx >> u) & 1u) && lr < rl;\n", pad, o.name);
    s += fmt::format("{0}    const int64_t {1} = {2} + lo < {1}_n ? {2} + lo : {1}_n - 1;\n{0}    (void){1};\n{0}    (void){3};\n", pad,
                     vo, o.o0, vr);
    for (const auto& [node, n] : o.affine) override_[node] = n + "_cur";
    for (const auto& [ld, n] : which) {
      ir::Expr e;
      ir::each_expr(o.e, [&](const ir::ExprNode& x) {
        if (&x == ld) e = std::make_shared<ir::ExprNode>(x);
      });
      s += fmt::format("{}    {}[u] = ok ? ({}) : ({})0;\n", pad, n, expr(e), value_type(ld->type));
    }
    override_.clear();
    for (const auto& [node, n] : o.affine) s += fmt::format("{0}    {1}_cur = (int64_t)((uint64_t){1}_cur + (uint64_t){1}_c);\n", pad, n);
    s += pad + "  }\n" + pad + "}\n";
    return s;
  };
  for (auto& o : ops) {
    std::vector<ir::Expr> offsets;
    flat_offsets(o.e, offsets);
    o.affine = hoist_affine(offsets, *o.vo, o.o0, plan.nest->var, "0", fmt::format("{}_off", o.name), body);
    // The operand's loads are prefetched (their latency hidden behind a
    // step of compute); what it computes from them runs when it is staged.
    // Only the outermost loads that move with x or r: the others are the
    // same for the whole tile.
    std::vector<const ir::ExprNode*> seen;
    std::function<void(const ir::ExprNode&)> find = [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && !x.buffer->dims.empty() && x.flat) {
        if ((ir::mentions(x.args[0], *o.vo) || ir::mentions(x.args[0], plan.nest->var)) &&
            std::find(seen.begin(), seen.end(), &x) == seen.end())
          seen.push_back(&x);
        return;
      }
      for (const auto& a : x.args) find(*a);
    };
    find(*o.e);
    for (const ir::ExprNode* ld : seen) {
      bool per_step = ir::mentions(ld->args[0], plan.nest->var);
      auto& list = per_step ? o.loads : o.tile_loads;
      list.emplace_back(ld, fmt::format("{}_{}{}", o.name, per_step ? "l" : "t", list.size()));
      body += fmt::format("    {} {}[{}];\n", value_type(ld->type), list.back().second, kPer(o));
    }
    // Staging is most of a step's integer work, so what does not change
    // from step to step is computed once per tile: which of this thread's
    // elements lie inside the X (or Y) extent (bit u of OKX), and each
    // affine offset at r = 0 for element 0 (N_t) and from element u to
    // u + 1 (N_c: threads take the same lr, or the same lo, for every u).
    body += fmt::format("    uint32_t {}_okx = 0u;\n    #pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n      {}\n"
                        "      (void)lr;\n      {}_okx |= (uint32_t)({} + lo < {}_n) << u;\n    }}\n",
                        o.name, kPer(o), coords(o), o.name, o.o0, var(*o.vo));
    const int dlo = o.r_fast ? kGemmThreads / kStep : 0, dlr = o.r_fast ? 0 : kGemmThreads / o.blk;
    for (const auto& [node, n] : o.affine) {
      body += fmt::format("    int64_t {0}_t;\n    {{\n      const int u = 0;\n      {1}\n      (void)e;\n"
                          "      {0}_t = (int64_t)((uint64_t){0}_b + (uint64_t)lo * (uint64_t){0}_u + (uint64_t)lr * (uint64_t){0}_w);\n    }}\n",
                          n, coords(o));
      body += fmt::format("    const int64_t {0}_c = (int64_t)((uint64_t){1} * (uint64_t){0}_u + (uint64_t){2} * (uint64_t){0}_w);\n", n,
                          dlo, dlr);
    }
    // Loads that do not move with r: once per tile.
    if (!o.tile_loads.empty()) body += elements(o, "(int64_t)0", o.tile_loads, 2);
  }
  // Loads step r0 of both operands into registers.
  auto load_step = [&](const std::string& r0, int depth) {
    std::string s;
    for (auto& o : ops) s += elements(o, r0, o.loads, depth);
    return s;
  };
  body += load_step("(int64_t)0", 2);
  body += fmt::format("    for (int64_t r0 = 0; r0 < {}_n; r0 += {}) {{\n", vr, kStep);
  for (auto& o : ops) {
    std::string vo = var(*o.vo);
    body += fmt::format("      {{\n        const int rl = (int)dcc_imin<int64_t>({}_n - r0, (int64_t){});\n", vr, kStep);
    body += fmt::format("        #pragma unroll\n        for (int u = 0; u < {}; ++u) {{\n          {}\n", kPer(o), coords(o));
    body += fmt::format("          const int64_t {0} = r0 + lr;\n          const int64_t {1} = {2} + lo < {1}_n ? {2} + lo : {1}_n - 1;\n"
                        "          (void){0};\n          (void){1};\n", vr, vo, o.o0);
    body += fmt::format("          const bool ok = (({}_okx >> u) & 1u) && lr < rl;\n", o.name);
    for (const auto& [ld, n] : o.loads) override_[ld] = n + "[u]";
    for (const auto& [ld, n] : o.tile_loads) override_[ld] = n + "[u]";
    // Computed in every lane when nothing in it can fail (no integer
    // division), so that no branch surrounds it; out-of-range lanes
    // compute from zeros and store zero.
    if (ir::may_fail(o.e))  // integer division sets the error flag
      body += fmt::format("          s{0}[lr][lo] = ok ? ({1}) : ({2})0;\n", o.name, expr(o.e), o.type);
    else
      body += fmt::format("          const {2} v = {1};\n          s{0}[lr][lo] = ok ? v : ({2})0;\n", o.name, expr(o.e), o.type);
    body += "        }\n      }\n";
    override_.clear();
  }
  body += "      __syncthreads();\n";
  body += fmt::format("      if (r0 + {} < {}_n) {{\n", kStep, vr);
  body += load_step(fmt::format("r0 + {}", kStep), 4);
  body += "      }\n";
  // One step's products; `rows` of the thread's kTileX rows (the second
  // run of 4 is skipped in a block whose rows all end before it).
  auto compute = [&](int rows) {
    std::string c;
    c += fmt::format("      #pragma unroll\n      for (int k = 0; k < {}; ++k) {{\n", kStep);
    for (auto& o : ops) {
      const char* idx = o.name[0] == 'p' ? "ty" : "tx";
      std::string arr = o.name[0] == 'p' ? "pa" : "qb";
      const int tile = o.name[0] == 'p' ? rows : kTileY;
      c += fmt::format("        {} {}[{}];\n", o.type, arr, tile);
      if (o.type == "float")
        for (int half = 0; half < tile / 4; ++half)
          c += fmt::format("        {{\n          const float4 w = *reinterpret_cast<const float4*>(&s{0}[k][4 * {2} + {3}]);\n"
                           "          {1}[{4}] = w.x;\n          {1}[{5}] = w.y;\n          {1}[{6}] = w.z;\n          {1}[{7}] = w.w;\n        }}\n",
                           o.name, arr, idx, 4 * kSide * half, 4 * half, 4 * half + 1, 4 * half + 2, 4 * half + 3);
      else
        c += fmt::format("        #pragma unroll\n        for (int d = 0; d < {}; ++d) {}[d] = s{}[k][4 * {} + (d & 3) + {} * (d >> 2)];\n",
                         tile, arr, o.name, idx, 4 * kSide);
    }
    override_[g.p.get()] = "pa[dx]";
    override_[g.q.get()] = "qb[dy]";
    c += fmt::format("        #pragma unroll\n        for (int dx = 0; dx < {}; ++dx) {{\n", rows);
    c += fmt::format("          #pragma unroll\n          for (int dy = 0; dy < {}; ++dy) {{\n", kTileY);
    stmt(g.update, 6, c);
    c += "          }\n        }\n";
    override_.clear();
    c += "      }\n";
    return c;
  };
  if (kTileX == 8)
    body += fmt::format("      if (x0 + {} >= {}_n) {{\n{}      }} else {{\n{}      }}\n", 4 * kSide, vx, compute(4), compute(8));
  else
    body += compute(kTileX);
  body += "      __syncthreads();\n    }\n";
  // The epilogue: offsets affine in x and y from the thread's first lane.
  std::vector<ir::Expr> post_offsets;
  for (const auto& st : plan.post) flat_offsets(st, post_offsets);
  for (const auto& [node, n] : hoist_affine(post_offsets, l.inner[plan.x]->var, "x0 + 4 * ty", l.inner[plan.y]->var,
                                            "y0 + 4 * tx", "out_off", body))
    override_[node] = fmt::format(
        "((int64_t)((uint64_t){0}_b + (uint64_t){1} * (uint64_t){0}_u + (uint64_t){2} * (uint64_t){0}_w))", n, lane_x, lane_y);
  for (const auto& st : plan.post) body += lanes(2, true, [&](std::string& o, int d) { stmt(st, d, o); });
  override_.clear();
  tiled_ = false;
  out_ += fmt::format(
      "__global__ void __launch_bounds__({}, {}) {}({}__args a) {{\n"
      "  __shared__ __align__(16) {} sp[{}][{}];\n"
      "  __shared__ __align__(16) {} sq[{}][{}];\n"
      "  const int64_t {}_n = {};\n"
      "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
      "    const int64_t t_n = {};\n"
      "    for (int64_t t = blockIdx.x; t < t_n; t += gridDim.x) {{\n{}    }}\n  }}\n}}\n\n",
      kGemmThreads, kGemmMinBlocks, l.kernel, f_.name, tp, kStep, kBlockX + 4, tq, kStep, kBlockY + 4, v0, expr(item->extent), v0, v0, v0, v0, extents,
      total, indent(body, 2));
}

}  // namespace dccc::backend::cudagen
