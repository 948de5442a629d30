// The contraction planner (backend/gpu/plan_contraction.h): recognition by
// properties, then the tile, warp and staging choices of the MMA kernel.
#include "backend/gpu/plan_contraction.h"

#include <fmt/format.h>

#include "ir/affine.h"

#include <algorithm>
#include <map>

namespace dccc::gpu {
namespace {

using ir::BinOp;
using ir::ExprKind;
using ir::StmtKind;

/// A factor of the product: a load of `buffer` at flat `offset`, widened to
/// f32 when its type is 16-bit; or (`value` set) an f32 expression of one
/// such f32 load -- the only part of it that mentions the reduced index --
/// and of values that do not depend on the reduced index (the weights of
/// attention's PV, exp(scores - row_max)).
struct Factor {
  const ir::ExprNode* load = nullptr;
  ir::Expr offset;
  Elem elem = Elem::F32;
  ir::Expr value;
};

/// Whether `e` mentions one of `vars` outside the load `skip`.
bool mentions_outside(const ir::Expr& e, const ir::ExprNode* skip, const std::vector<ir::Var>& vars) {
  if (e.get() == skip) return false;
  if (e->kind == ExprKind::VarRef)
    for (const auto& v : vars)
      if (e->var == v) return true;
  for (const auto& a : e->args)
    if (mentions_outside(a, skip, vars)) return true;
  return false;
}

std::optional<Factor> factor(const ir::Expr& e);

/// A computed factor: `e` (f32) holds exactly one load that mentions `r`, a
/// flat f32 one, and mentions `r` nowhere else.
std::optional<Factor> computed_factor(const ir::Expr& e, const ir::Var& r) {
  if (e->type != Scalar::F32 || e->kind == ExprKind::Load) return std::nullopt;
  std::vector<const ir::ExprNode*> loads;
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load)
      for (const auto& a : x.args)
        if (ir::mentions(a, r)) {
          loads.push_back(&x);
          break;
        }
  });
  if (loads.size() != 1) return std::nullopt;
  const ir::ExprNode* l = loads[0];
  if (!l->flat || l->args.size() != 1 || l->buffer->dims.empty() || l->type != Scalar::F32) return std::nullopt;
  if (mentions_outside(e, l, {r})) return std::nullopt;
  Factor f;
  f.load = l;
  f.offset = l->args[0];
  f.elem = Elem::F32;
  f.value = e;
  return f;
}

std::optional<Factor> factor(const ir::Expr& e) {
  Factor f;
  ir::Expr x = e;
  if (x->kind == ExprKind::Cast && x->type == Scalar::F32) x = x->args[0];
  if (x->kind != ExprKind::Load || !x->flat || x->args.size() != 1 || x->buffer->dims.empty()) return std::nullopt;
  switch (x->type) {
    case Scalar::F32: f.elem = Elem::F32; break;
    case Scalar::BF16: f.elem = Elem::BF16; break;
    case Scalar::F16: f.elem = Elem::F16; break;
    default: return std::nullopt;
  }
  if (f.elem == Elem::F32 && e != x) return std::nullopt;  // an f32 -> f32 cast: not expected
  f.load = x.get();
  f.offset = x->args[0];
  return f;
}


using namespace ir::affine;  // is_int, add, sub, mul, coefficient, fold, mentions_any

/// The copies of K-steps 0 .. `steps` - 1 of A and B, a commit group each:
/// the pipeline's prologue.
std::vector<Op> copies_ahead(int steps) {
  std::vector<Op> ops;
  for (int st = 0; st < steps; ++st) {
    ops.push_back({OpKind::CopyNext, "A", st});
    ops.push_back({OpKind::CopyNext, "B", st});
    ops.push_back({OpKind::Commit, "", 0});
  }
  return ops;
}

/// The most dynamic shared memory a block of an sm_90 device may ask for (227 KB).
constexpr int kMaxDynamicSmem = 232448;

/// What both sm_90a forms of `k` share: its scalars and epilogue, no
/// notes, warp specialization `sp` (consumer warpgroups of 16-row warps
/// over all `tile_n` columns, one block an SM), K-steps of `block_k`, the
/// K-loop the printer's (no ops), shared buffers of `stages` stages in
/// wgmma's 128-byte swizzle (each buffer's layout and `parts` as the
/// caller leaves them before stage_buffers).
Kernel specialized_skeleton(const Kernel& k, const Specialized& sp, int tile_n, int block_k, int stages) {
  Kernel w = k;
  w.notes.clear();
  w.sm90a = nullptr;
  w.tiles.tile_n = tile_n;
  w.threads = sp.consumers + sp.producers;
  w.specialized = sp;
  w.warps = WarpTiling{sp.consumers / 32, 1, 16, tile_n};
  w.block_k = block_k;
  w.min_blocks = 1;
  for (Operand* o : {&w.a, &w.b}) o->ldmatrix = o->ldmatrix_trans = false;
  for (auto& s : w.shared) {
    s.stages = stages;
    s.k = block_k;
    s.rows = s.name == w.b.shared ? tile_n : w.tiles.tile_m;
    s.pad = 0;
    s.swizzle_mask = s.swizzle_shift = 0;
    s.atom = 128 / elem_bytes(s.elem);
  }
  w.prologue.clear();
  w.body.clear();
  return w;
}

/// The dynamic shared memory of `w`'s buffers: from a 1024-byte boundary
/// of the allocation, one after another, then a full and an empty
/// mbarrier a stage.
int stage_buffers_bytes(const Kernel& w) {
  int bytes = 1024, stages = 0;
  for (const auto& s : w.shared) {
    bytes += s.stages * s.stage_elems() * elem_bytes(s.elem);
    stages = s.stages;
  }
  return bytes + 2 * 8 * stages;
}

/// The sm_90a form of the 16-bit contraction `k` (same scalars and
/// epilogue), warp-specialized (Specialized, docs/cuda.md "wgmma GEMM"):
/// 128 x 256 block tiles, two consumer warpgroups of m64n256k16 wgmmas
/// (64 rows each) reading A and B from 128-byte swizzled shared memory by
/// descriptor, a producer warpgroup copying K-steps of 64 into `stages`
/// stages (48 KB each), handed over by mbarriers, on a persistent grid of
/// one block an SM. Measured on an H200 against the form before (two
/// warpgroups copying and computing a 128 x 128 tile, __syncthreads each
/// step, two blocks an SM): 1.11-1.14x; in hand-written variants, 128 x 128
/// tiles with a producer warpgroup (6 stages) gave only 1.01-1.08x, 128 x
/// 256 ones with a producer of two warps 1.03-1.07x, and the persistent
/// grid 1.00-1.04x (bench/RESULTS.md, session 24).
Kernel wgmma_form(const Kernel& k, int stages) {
  const Specialized sp;
  Kernel w = specialized_skeleton(k, sp, 256, 64, stages);
  w.mma.shape = k.mma.shape == MmaShape::M16N8K16_F16 ? MmaShape::WGMMA_F16 : MmaShape::WGMMA_BF16;
  w.mma.step_partials = false;
  w.dynamic_smem = stage_buffers_bytes(w);
  // A 16-bit paired output through shared memory where it fits beside the
  // stages (3 of them: 1.05-1.14x over stores from registers on an H200,
  // bench/RESULTS.md session 24): two warpgroups' 64 rows of tile_n values.
  const int row_bytes = w.tiles.tile_n * 2 + 16;
  const int staged_at = (w.dynamic_smem - 1024 + 127) / 128 * 128;
  const int staged_end = 1024 + staged_at + (sp.consumers / 128) * 64 * row_bytes;
  if (w.epilogue.pair && w.epilogue.pair->bits == 32 && staged_end <= kMaxDynamicSmem) {
    w.epilogue.staged_row_bytes = row_bytes;
    w.epilogue.staged_at = staged_at;
    w.dynamic_smem = staged_end;
  }
  // One block an SM: 384 threads, registers capped at 168 (the consumers'
  // 128 accumulators each).
  for (Copy& c : w.copies) {
    c.element_unroll = 4;
    const SharedBuffer* sb = nullptr;
    for (const auto& s : w.shared)
      if (s.name == (c.operand == w.a.name ? w.a.shared : w.b.shared)) sb = &s;
    const int chunks = sb ? (sb->layout == SmemLayout::RowK ? sb->k : sb->rows) / std::max(c.vector, 1) : 0;
    c.linear_addresses = c.vector > 1 && chunks > 0 && sp.producers % chunks == 0;
  }
  w.notes.push_back(fmt::format(
      "sm_90a: warp-specialized, {} consumer warpgroups of m64n{}k16 wgmma, A {} and B {} by shared-memory descriptor "
      "(128-byte swizzle), a producer warpgroup copying K-steps of {} into {} stages ({} bytes of dynamic shared memory), "
      "mbarriers between them, a persistent grid of one block an SM{}",
      sp.consumers / 128, w.warps.warp_n, k.shared[0].layout == SmemLayout::RowK ? "K-major" : "MN-major",
      k.shared[1].layout == SmemLayout::RowK ? "K-major" : "MN-major", w.block_k, stages, w.dynamic_smem,
      w.epilogue.staged_row_bytes ? ", the output staged in shared memory and stored 16 bytes at a time" : ""));
  return w;
}


/// The sm_90a form of the f32 contraction `k` (3xTF32 or TF32): as
/// wgmma_form's, warp-specialized on a persistent grid, but 128 x 128 block
/// tiles of two consumer warpgroups of m64n128k8 tf32 wgmmas over K-steps
/// of 32 (one 128-byte line of f32). tf32 wgmmas read both operands K-major
/// only, and 3xTF32 needs each value's big and small tf32 parts, so the
/// producer warpgroup loads the operands into registers (16 bytes at a
/// time where aligned), rounds and splits each value once and stores both
/// parts K-major (an operand contiguous along its rows, B[k][n],
/// transposed 4 x 4 in registers) -- where the mma.sync form splits every
/// fragment in every warp that reads it. 3xTF32 runs a_small b_big +
/// a_big b_small + a_big b_big per k8 into partial sums that start at zero
/// each K-step and are added to the accumulators in f32 (Mma::step_partials;
/// the accumulators and the partials are 128 registers a thread, hence 128
/// columns). Stages of 64 KB (3xTF32) or 32 KB: at most 3 (4) fit.
Kernel wgmma_tf32_form(const Kernel& k, int stages) {
  // Two producer warpgroups: one (384 threads) ran 0.83x of this (H200,
  // bench/RESULTS.md session 25). 512 threads leave 128 registers a thread;
  // setmaxnreg moves them to the consumers, whose accumulators and partial
  // sums are 128 a thread. The counts are where ptxas (CUDA 13) spills
  // nothing: 3xTF32's producers fit 88, TF32's need 104 (at 88 they spill
  // 104 bytes; TF32's 2x slowdown against 3xTF32 is another matter, open:
  // docs/cuda.md "tf32 wgmma GEMM").
  const bool split = k.mma.fp32 == Fp32Math::Split3xTf32;
  Specialized sp;
  sp.producers = 256;
  sp.producer_regs = split ? 88 : 104;
  sp.consumer_regs = split ? 168 : 152;
  stages = std::min(stages, split ? 3 : 4);
  Kernel w = specialized_skeleton(k, sp, 128, 32, stages);
  w.mma.shape = MmaShape::WGMMA_TF32;
  w.mma.step_partials = split;
  std::vector<std::string> transposed;  // shared buffers of operands contiguous along their rows
  for (auto& s : w.shared) {
    if (s.layout == SmemLayout::KRow) transposed.push_back(s.name);
    s.layout = SmemLayout::RowK;  // K-major: the only tf32 wgmma layout
    s.parts = split ? 2 : 1;
  }
  w.dynamic_smem = stage_buffers_bytes(w);
  std::string trans;
  for (Copy& c : w.copies) {
    const std::string& sh = c.operand == w.a.name ? w.a.shared : w.b.shared;
    c = Copy{c.operand, CopyMode::SplitTf32, 4};
    c.transpose = std::find(transposed.begin(), transposed.end(), sh) != transposed.end();
    if (c.transpose) trans += fmt::format(" ({} transposed 4 x 4 in registers)", c.operand);
  }
  w.notes.push_back(fmt::format(
      "sm_90a: warp-specialized, {} consumer warpgroups of m64n{}k8 tf32 wgmma ({}), A and B K-major by shared-memory "
      "descriptor (128-byte swizzle), {} producer warpgroups loading K-steps of {} into registers, rounding {} them to "
      "tf32 once and storing them{} into {} stages ({} bytes of dynamic shared memory), mbarriers between them, "
      "setmaxnreg {} / {}, a persistent grid of one block an SM",
      sp.consumers / 128, w.warps.warp_n, split ? "3xTF32: three a step, into partial sums added to acc in f32" : "TF32",
      sp.producers / 128, w.block_k, split ? "and splitting" : "", trans, stages, w.dynamic_smem, sp.producer_regs,
      sp.consumer_regs));
  return w;
}

}  // namespace

std::optional<Kernel> plan_contraction(const ir::Func& f, const ir::Stmt& item, const std::string& name,
                                       const PlanOptions& options, std::string* why) {
  auto no = [&](const std::string& reason) -> std::optional<Kernel> {
    if (why) *why = reason;
    return std::nullopt;
  };
  (void)f;
  // The perfect nest of parallel loops.
  std::vector<ir::Stmt> loops;
  for (ir::Stmt cur = item; cur && cur->kind == StmtKind::For; cur = ir::unwrap(cur->body[0])) loops.push_back(cur);
  if (loops.size() < 2) return no("not a nest of at least two loops");
  for (const auto& l : loops)
    if (!options.parallel || !options.parallel(l)) return no(fmt::format("loop `{}` is not parallel", l->var->name));
  std::vector<ir::Stmt> items = ir::items_of(loops.back()->body[0]);
  // acc = 0; for r { acc = acc + A * B }; post...
  if (items.size() < 3) return no("the innermost body is not `acc = 0; for r { acc = acc + a * b }; ...`");
  const ir::Stmt& init = items[0];
  if (init->kind != StmtKind::Store || !init->buffer->dims.empty() || init->buffer->kind != ir::BufferKind::Scalar ||
      init->buffer->type != Scalar::F32 || init->value->kind != ExprKind::FloatImm || init->value->float_value != 0)
    return no("the accumulator is not an f32 scalar starting at 0");
  const ir::BufferNode* acc = init->buffer.get();
  const size_t at = 1;
  if (items[at]->kind != StmtKind::For) return no("no reduction loop after the accumulator's start");
  const ir::Stmt& red = items[at];
  const ir::Var& r = red->var;
  ir::Stmt update = ir::unwrap(red->body[0]);
  if (!update || update->kind != StmtKind::Store || update->buffer.get() != acc)
    return no("the reduction's body is not one update of the accumulator");
  const ir::Expr& v = update->value;
  if (v->kind != ExprKind::Binary || v->binop != BinOp::Add) return no("the reduction is not a sum");
  auto is_acc = [&](const ir::Expr& e) { return e->kind == ExprKind::Load && e->buffer.get() == acc; };
  ir::Expr prod = is_acc(v->args[0]) ? v->args[1] : is_acc(v->args[1]) ? v->args[0] : nullptr;
  if (!prod || ir::loads_from(prod, acc)) return no("the reduction is not `acc = acc + term`");
  auto is_mul = [](const ir::Expr& e) { return e->kind == ExprKind::Binary && e->binop == BinOp::Mul; };
  if (!is_mul(prod) && !(prod->kind == ExprKind::Cast && is_mul(prod->args[0])))
    return no("the summed term is not a product");
  if (!is_mul(prod) || prod->type != Scalar::F32)
    return no("the summed term is not a product computed in f32 (16-bit factors must be widened first)");
  auto p = factor(prod->args[0]), q = factor(prod->args[1]);
  if (!p) p = computed_factor(prod->args[0], r);
  if (!q) q = computed_factor(prod->args[1], r);
  if (!p || !q)
    return no("a factor of the product is not a load (of f32, or of bf16 / f16 widened to f32) or an f32 function of "
              "one f32 load, the only part of it that depends on the reduced index");
  if (p->elem != q->elem) return no("the factors have different types");
  std::vector<ir::Stmt> post(items.begin() + static_cast<std::ptrdiff_t>(at) + 1, items.end());
  // Element-wise: no loops; scalars other than acc are written before they
  // are read (private to an element; the nest's parallel check guarantees
  // the tensor stores do not race).
  std::vector<const ir::BufferNode*> locals;
  ir::Stmt post_seq = ir::build::seq(post);
  for (const auto& s : post) {
    bool ok = true;
    ir::each_stmt(s, [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::For || x.kind == StmtKind::Print || x.kind == StmtKind::Assert) ok = false;
      if (x.kind == StmtKind::Store && x.buffer->dims.empty() && x.buffer.get() != acc) {
        if (x.buffer->kind != ir::BufferKind::Scalar || !ir::written_before_read(post_seq, x.buffer.get())) ok = false;
        if (std::find(locals.begin(), locals.end(), x.buffer.get()) == locals.end()) locals.push_back(x.buffer.get());
      }
    });
    if (!ok) return no("the statements after the reduction are not element-wise");
  }
  // Rows, columns and batch by which factor each loop indexes.
  if (!ir::mentions(p->offset, r) || !ir::mentions(q->offset, r)) return no("the reduced index does not index both factors");
  int x = -1, y = -1;
  std::vector<ir::Var> batch_vars, all_vars{r};
  std::vector<BatchLoop> batch;
  for (int k = 0; k < static_cast<int>(loops.size()); ++k) {
    const ir::Var& lv = loops[k]->var;
    all_vars.push_back(lv);
    bool in_p = ir::mentions(p->offset, lv), in_q = ir::mentions(q->offset, lv);
    if (in_p && !in_q) {
      if (x >= 0) return no("two loops index only the first factor");
      x = k;
    } else if (in_q && !in_p) {
      if (y >= 0) return no("two loops index only the second factor");
      y = k;
    }
  }
  if (x < 0 || y < 0) return no("no loop indexes only one factor (no rows or no columns)");
  const ir::Var& vx = loops[x]->var;
  const ir::Var& vy = loops[y]->var;
  // A computed factor reads, besides its element, only values of its own
  // row (and batch entry), nothing the statement writes.
  for (const auto& [fac, other] : {std::pair{&*p, vy}, std::pair{&*q, vx}}) {
    if (!fac->value) continue;
    if (mentions_outside(fac->value, fac->load, {r, other}))
      return no("a computed factor depends on the other factor's index");
    for (const auto& st : post) {
      bool writes = false;
      ir::each_stmt(st, [&](const ir::StmtNode& z) {
        if (z.kind == StmtKind::Store && ir::loads_from(fac->value, z.buffer.get())) writes = true;
      });
      if (writes) return no("a computed factor reads what the statement writes");
    }
  }
  for (int k = 0; k < static_cast<int>(loops.size()); ++k) {
    if (k == x || k == y) continue;
    if (mentions_any(loops[k]->extent, std::vector<ir::Var>{vx, vy}))
      return no("a batch loop's extent depends on the rows or columns");
    batch.push_back({loops[k]->var, loops[k]->extent});
    batch_vars.push_back(loops[k]->var);
  }
  std::vector<ir::Var> non_batch{vx, vy, r};
  for (const ir::Expr& e : {loops[x]->extent, loops[y]->extent, red->extent})
    if (mentions_any(e, non_batch)) return no("an extent of the rows, columns or reduction depends on another of them");
  // Operands: offset = base + row * rs + r * ks, all free of rows/cols/r.
  Kernel k;
  k.name = name;
  const int stages = p->elem != Elem::F32 ? 4 : 3;  // shared-memory stages (see the tiles below)
  auto operand = [&](const Factor& fa, const ir::Var& row, const char* nm, const char* rows) -> bool {
    if (!ir::affine_in(fa.offset, row) || !ir::affine_in(fa.offset, r)) return false;
    ir::Expr rs = coefficient(fa.offset, row), ks = coefficient(fa.offset, r);
    ir::Expr base = fold(ir::substitute(fa.offset, {{row.get(), ir::build::int_imm(0)}, {r.get(), ir::build::int_imm(0)}}));
    for (const ir::Expr& e : {rs, ks, base})
      if (mentions_any(e, non_batch)) return false;
    std::string n = fmt::format("{}", nm);
    Operand& o = nm[0] == 'A' ? k.a : k.b;
    o.name = n;
    o.buffer = fa.load->buffer.get();
    if (fa.value) {
      o.value = fa.value;
      o.row_var = row;
      o.k_var = r;
    }
    o.elem = fa.elem;
    o.base = n + "_base";
    o.row_stride = n + "_rs";
    o.k_stride = n + "_ks";
    o.rows = rows;
    o.shared = n + "_s";
    k.scalars.push_back({o.base, base});
    k.scalars.push_back({o.row_stride, rs});
    k.scalars.push_back({o.k_stride, ks});
    SharedBuffer s;
    s.name = o.shared;
    s.elem = fa.elem;
    s.stages = stages;
    s.rows = nm[0] == 'A' ? k.tiles.tile_m : k.tiles.tile_n;
    s.k = k.block_k;
    // Copies walk the unit-stride index, so a warp reads consecutive
    // addresses; the shared tile keeps that index contiguous.
    s.layout = !is_int(ks, 1) && is_int(rs, 1) ? SmemLayout::KRow : SmemLayout::RowK;
    if (fa.elem == Elem::F32) {
      s.pad = s.layout == SmemLayout::RowK ? 4 : 8;
    } else {
      // 16-bit: ldmatrix reads 16-byte chunks of eight consecutive lines;
      // an XOR swizzle of the chunks puts them in eight bank groups (lines
      // of 64 bytes: two per 128-byte row of banks, hence the shift).
      const int chunks = s.line() * elem_bytes(fa.elem) / 16;
      s.swizzle_mask = std::min(chunks, 8) - 1;
      s.swizzle_shift = chunks >= 8 ? 0 : chunks == 4 ? 1 : chunks == 2 ? 2 : 3;
      o.ldmatrix = true;
      o.ldmatrix_trans = s.layout == SmemLayout::KRow;
    }
    k.shared.push_back(s);
    if (fa.value)
      k.copies.push_back({n, CopyMode::Registers, 1});
    else
      k.copies.push_back({n, fa.elem == Elem::F32 ? CopyMode::CpAsync4 : CopyMode::Registers, 16 / elem_bytes(fa.elem)});
    if (fa.value)
      k.notes.push_back(fmt::format("operand {}: computed from {} element by element through registers, shared {}", n,
                                    fa.load->buffer->name, s.layout == SmemLayout::RowK ? "[row][k]" : "[k][row]"));
    else
    k.notes.push_back(fmt::format(
        "operand {}: {}, shared {} (the unit-stride index {}), copied 16 bytes at a time by cp.async where the "
        "block's rows are aligned, else {}{}",
        n, fa.load->buffer->name, s.layout == SmemLayout::RowK ? "[row][k]" : "[k][row]",
        s.layout == SmemLayout::RowK ? (is_int(ks, 1) ? "is k" : "is neither: k") : "is the row",
        fa.elem == Elem::F32 ? "by 4-byte cp.async (always aligned)"
                             : "through registers (a 16-bit row of odd length is not 4-byte aligned)",
        o.ldmatrix ? fmt::format("; swizzled 16-byte chunks, fragments by ldmatrix.x4{}", o.ldmatrix_trans ? ".trans" : "")
                   : ""));
    return true;
  };
  // Tiles: 16-bit operands take a 128 x 128 block tile of 8 warps (2 x 4,
  // 64 x 32 each: 16 MMAs per k16 slice for 4 + 2 ldmatrix.x4) in K-steps
  // of 16 in four stages (32 KB of shared memory); f32 ones 128 x 64 of 8
  // warps (4 x 2, 32 x 32 each: 3xTF32 holds each fragment twice, and three
  // stages of f32 tiles must fit the 48 KB of static shared memory). Warp
  // tiles of 64 x 64 and K-steps of 32 were tried: nvcc (12.x, sm_90a)
  // then spills 0.5-3.4 KB a thread (the accumulators and the unrolled
  // copies' addresses exceed 255 registers); 64 x 32 in K-steps of 16 uses
  // 241 without spilling.
  const bool wide = p->elem != Elem::F32;
  k.tiles.tile_m = 128;
  k.tiles.tile_n = wide ? 128 : 64;
  k.warps = wide ? WarpTiling{2, 4, 64, 32} : WarpTiling{4, 2, 32, 32};
  k.threads = 32 * k.warps.warps_m * k.warps.warps_n;
  k.block_k = 16;
  k.scalars.push_back({"M", loops[x]->extent});
  k.scalars.push_back({"N", loops[y]->extent});
  k.scalars.push_back({"K", red->extent});
  k.k_extent = "K";
  if (p->elem == Elem::F32 && options.fp32 == Fp32Math::Ieee)
    return no("--fp32-math=ieee: f32 contractions keep the FMA kernel");
  if (!operand(*p, vx, "A", "M") || !operand(*q, vy, "B", "N"))
    return no("a factor's offset is not affine in its row and the reduced index with batch-only strides");
  k.tiles.batch = batch;
  k.tiles.rows = loops[x]->extent;
  k.tiles.cols = loops[y]->extent;
  switch (p->elem) {
    case Elem::BF16: k.mma.shape = MmaShape::M16N8K16_BF16; break;
    case Elem::F16: k.mma.shape = MmaShape::M16N8K16_F16; break;
    case Elem::F32:
      k.mma.shape = MmaShape::M16N8K8_TF32;
      k.mma.fp32 = options.fp32;
      k.mma.step_partials = options.fp32 == Fp32Math::Split3xTf32;
      break;
  }
  // `stages` stages: steps kt + 1 .. kt + stages - 1 are in flight while
  // step kt is multiplied. One barrier a step: after it every warp is done
  // with step kt - 1, whose stage the copy of step kt + stages - 1 reuses.
  k.prologue = copies_ahead(stages - 1);
  k.body = {{OpKind::WaitPrior, "", stages - 2},
            {OpKind::Barrier, "", 0},
            {OpKind::CopyNext, "A", stages - 1},
            {OpKind::CopyNext, "B", stages - 1},
            {OpKind::Commit, "", 0},
            {OpKind::MmaStep, "", 0}};
  k.epilogue.acc = acc;
  k.epilogue.row_var = vx;
  k.epilogue.col_var = vy;
  k.epilogue.stmts = post;
  k.epilogue.locals = locals;
  // Paired stores (Epilogue::pair).
  if (post.size() == 1 && locals.empty()) k.epilogue.pair = store_pair(post[0], vy);
  if (p->value)
    k.notes.push_back("operand A is computed from its element (and values of its row) as it is copied to shared memory");
  k.notes.insert(k.notes.begin(),
                 fmt::format("contraction: {} rows x {} columns, reduced over {}, {} batch loop(s); a {}x{} block tile "
                             "of {} warps ({} x {}, {} x {} each), K-steps of {} in {} stages",
                             vx->name, vy->name, r->name, batch.size(), k.tiles.tile_m, k.tiles.tile_n,
                             k.warps.warps_m * k.warps.warps_n, k.warps.warps_m, k.warps.warps_n, k.warps.warp_m,
                             k.warps.warp_n, k.block_k, stages));
  if (p->elem == Elem::F32)
    k.notes.push_back(fmt::format("f32 operands on tf32 tensor cores, --fp32-math={}", fp32_math_name(options.fp32)));
  if (!p->value && !q->value && options.wgmma_stages >= 2 && options.wgmma_stages <= 4)
    k.sm90a = std::make_shared<const Kernel>(p->elem == Elem::F32 ? wgmma_tf32_form(k, options.wgmma_stages)
                                                                  : wgmma_form(k, options.wgmma_stages));
  return k;
}

}  // namespace dccc::gpu
