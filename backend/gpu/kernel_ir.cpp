// The kernel IR's names and its text forms, the contraction kernel's and the
// fused attention kernel's (backend/gpu/kernel_ir.h: --emit=kernel).
#include "backend/gpu/kernel_ir.h"

#include <fmt/format.h>

#include "ir/affine.h"

#include <algorithm>

namespace dccc::gpu {

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::F32: return "f32";
    case Elem::BF16: return "bf16";
    case Elem::F16: return "f16";
  }
  return "?";
}

int elem_bytes(Elem e) { return e == Elem::F32 ? 4 : 2; }

const char* attn_grid_name(AttnGrid g) {
  switch (g) {
    case AttnGrid::Tiles: return "one block per tile-list entry";
    case AttnGrid::Static: return "a persistent grid (SMs x resident blocks), block b taking entries b, b + grid, ...";
    case AttnGrid::Atomic: return "a persistent grid (SMs x resident blocks), each block taking the next entry from an atomic counter";
  }
  return "?";
}

const char* attn_order_name(AttnOrder o) {
  switch (o) {
    case AttnOrder::Auto: return "the planner's order";
    case AttnOrder::Keys: return "longest key sequence first";
    case AttnOrder::Sequences: return "longest key sequence first, its query tiles together, most key tiles first";
    case AttnOrder::Tiles: return "most key tiles run first, then longest key sequence";
  }
  return "?";
}

const char* fp32_math_name(Fp32Math m) {
  switch (m) {
    case Fp32Math::Split3xTf32: return "3xtf32";
    case Fp32Math::Tf32: return "tf32";
    case Fp32Math::Ieee: return "ieee";
  }
  return "?";
}

const ir::ExprNode* rounded16_division(const ir::ExprNode& e) {
  auto div = [](const ir::ExprNode& x) { return x.kind == ir::ExprKind::Binary && x.binop == ir::BinOp::Div; };
  auto b16 = [](Scalar t) { return t == Scalar::BF16 || t == Scalar::F16; };
  if (div(e) && b16(e.type)) return &e;
  if (e.kind == ir::ExprKind::Cast && b16(e.type) && div(*e.args[0]) && e.args[0]->type == Scalar::F32)
    return e.args[0].get();
  return nullptr;
}

std::optional<StorePair> store_pair(const ir::Stmt& s, const ir::Var& col) {
  using namespace ir::affine;
  if (s->kind != ir::StmtKind::Store || !s->flat || s->args.size() != 1 || s->buffer->dims.empty()) return std::nullopt;
  const Scalar t = s->buffer->type;
  const ir::Expr& idx = s->args[0];
  if ((t != Scalar::BF16 && t != Scalar::F16 && t != Scalar::F32) || s->value->type != t || !ir::affine_in(idx, col) ||
      !is_int(fold(coefficient(idx, col)), 1))
    return std::nullopt;
  return StorePair{fold(ir::substitute(idx, {{col.get(), ir::build::int_imm(0)}})), t == Scalar::F32 ? 64 : 32};
}

const char* mma_name(MmaShape s) {
  switch (s) {
    case MmaShape::M16N8K16_BF16: return "m16n8k16.row.col.f32.bf16.bf16.f32";
    case MmaShape::M16N8K16_F16: return "m16n8k16.row.col.f32.f16.f16.f32";
    case MmaShape::M16N8K8_TF32: return "m16n8k8.row.col.f32.tf32.tf32.f32";
    case MmaShape::WGMMA_BF16: return "wgmma m64nNk16.f32.bf16.bf16, A and B by shared-memory descriptor";
    case MmaShape::WGMMA_F16: return "wgmma m64nNk16.f32.f16.f16, A and B by shared-memory descriptor";
    case MmaShape::WGMMA_TF32: return "wgmma m64nNk8.f32.tf32.tf32, A and B by shared-memory descriptor (K-major)";
  }
  return "?";
}

int mma_k(MmaShape s) { return s == MmaShape::M16N8K8_TF32 || s == MmaShape::WGMMA_TF32 ? 8 : 16; }

bool is_wgmma(MmaShape s) {
  return s == MmaShape::WGMMA_BF16 || s == MmaShape::WGMMA_F16 || s == MmaShape::WGMMA_TF32;
}

namespace {

const char* layout_name(SmemLayout l) { return l == SmemLayout::RowK ? "[row][k]" : "[k][row]"; }
const char* copy_name(CopyMode m) {
  switch (m) {
    case CopyMode::CpAsync4: return "cp.async 4B, zero-fill";
    case CopyMode::Registers: return "registers, zero-fill";
    case CopyMode::SplitTf32: return "registers, zero-fill, rounded to tf32 on the way";
  }
  return "?";
}

std::string op_text(const Op& op) {
  switch (op.kind) {
    case OpKind::CopyNext: return op.count ? fmt::format("copy {} (step +{})", op.operand, op.count) : "copy " + op.operand;
    case OpKind::Commit: return "commit";
    case OpKind::WaitPrior: return fmt::format("wait {}", op.count);
    case OpKind::Barrier: return "barrier";
    case OpKind::MmaStep: return "mma";
  }
  return "?";
}

/// The staging of a Kernel's operands: shared buffers, operands, copies,
/// MMA and K-loop, each line indented by `pad`.
std::string staging(const Kernel& k, VloopText& text, const std::string& pad) {
  std::string o;
  for (const auto& s : k.shared) {
    o += pad + fmt::format("shared {}: {} [{} stages]{} {} x {}, ", s.name, elem_name(s.elem), s.stages, layout_name(s.layout),
                     s.rows, s.k);
    if (s.parts > 1) o += fmt::format("{} parts a stage (big = tf32(x), then small = tf32(x - big)), ", s.parts);
    if (s.atom)
      o += fmt::format("lines cut in 128-byte atoms of {} elements (atom-major), 16B chunk c of line l at c ^ (l & 7)\n", s.atom);
    else
      o += s.swizzle_mask ? fmt::format("16B chunk c of line l at c ^ ((l >> {}) & {})\n", s.swizzle_shift, s.swizzle_mask)
                          : fmt::format("pad {}\n", s.pad);
  }
  for (const Operand* op : {&k.a, &k.b}) {
    o += pad + fmt::format("operand {}: {} {}[{} + row * {} + k * {}], rows {} -> shared {}", op->name, elem_name(op->elem),
                     text.buffer(op->buffer), op->base, op->row_stride, op->k_stride, op->rows, op->shared);
    if (op->ldmatrix) o += op->ldmatrix_trans ? ", fragments by ldmatrix.x4.trans" : ", fragments by ldmatrix.x4";
    o += "\n";
    if (op->value)
      o += pad + fmt::format("  element = {} (row {}, k {})\n", text.expr(op->value), text.var(op->row_var), text.var(op->k_var));
  }
  for (const auto& c : k.copies) {
    o += pad + fmt::format("copy {}: ", c.operand);
    if (c.mode == CopyMode::SplitTf32)
      o += fmt::format("16-byte loads ({} elements) into registers when aligned, else element by element; {}", c.vector,
                       c.transpose ? "4 k x 4 rows a thread, transposed in registers; " : "");
    else if (c.vector > 1)
      o += fmt::format("cp.async 16B ({} elements) when aligned, else ", c.vector);
    o += copy_name(c.mode);
    if (c.element_unroll) o += fmt::format(", element loop unrolled {}x", c.element_unroll);
    if (c.linear_addresses) o += ", 16-byte copies' addresses: a pointer a thread, moved on by whole lines a copy";
    o += "\n";
  }
  o += pad + fmt::format("mma: {}", mma_name(k.mma.shape));
  if (k.mma.shape == MmaShape::M16N8K8_TF32 || k.mma.shape == MmaShape::WGMMA_TF32)
    o += fmt::format(", fp32 {}", fp32_math_name(k.mma.fp32));
  if (k.mma.step_partials) o += ", per-step partial sums added to acc in f32";
  o += "\n";
  o += pad + fmt::format("k-loop: {} in steps of {}\n", k.k_extent, k.block_k);
  auto ops = [&](const char* what, const std::vector<Op>& list) {
    o += pad + fmt::format("  {}:", what);
    for (size_t i = 0; i < list.size(); ++i) o += (i ? "; " : " ") + op_text(list[i]);
    o += "\n";
  };
  if (const auto& sp = k.specialized) {
    const int stages = k.shared.empty() ? 0 : k.shared[0].stages;
    std::string copies;
    for (const auto& c : k.copies) copies += "copy " + c.operand + "; ";
    const bool split = !k.copies.empty() && k.copies[0].mode == CopyMode::SplitTf32;
    if (split)
      o += pad + fmt::format("  producer (threads {}-{}): per step: load the step into registers; wait for stage s empty "
                             "(after the first {}); round and store; fence.proxy.async; arrive on full[s]\n",
                             sp->consumers, sp->consumers + sp->producers - 1, stages);
    else
      o += pad + fmt::format("  producer (threads {}-{}): per step: wait for stage s empty (after the first {}); {}arrive on "
                             "full[s] as the copies land\n",
                             sp->consumers, sp->consumers + sp->producers - 1, stages, copies);
    o += pad + fmt::format("  consumers (threads 0-{}): per step: wait for full[s]; fence.proxy.async; mma; wgmma wait 0; "
                           "arrive on empty[s] (a warp){}\n",
                           sp->consumers - 1, k.mma.step_partials ? "; acc += the step's partial sums" : "");
    if (sp->producer_regs || sp->consumer_regs)
      o += pad + fmt::format("  setmaxnreg: producers {} registers a thread, consumers {}\n", sp->producer_regs, sp->consumer_regs);
    o += pad + fmt::format("  grid: {}\n", sp->persistent ? "persistent, min(entries, SMs x blocks an SM) blocks, block b takes "
                                                             "entries b, b + G, b + 2G, ..."
                                                           : "one block an entry");
  } else {
    ops("prologue", k.prologue);
    ops("step", k.body);
  }
  if (k.dynamic_smem) o += pad + fmt::format("shared memory: {} bytes, dynamic\n", k.dynamic_smem);
  if (k.min_blocks) o += pad + fmt::format("registers capped for {} block(s) an SM\n", k.min_blocks);
  return o;
}

}  // namespace

std::string print_kernel(const Kernel& k, VloopText& text) {
  std::string o = fmt::format("kernel {} {{\n", k.name);
  o += "  grid: one block per tile-list entry (";
  for (const auto& b : k.tiles.batch) o += text.var(b.var) + ", ";
  o += "m-tile, n-tile), built by the host from the lengths\n";
  for (const auto& b : k.tiles.batch) o += fmt::format("    batch {} in 0 .. {}\n", text.var(b.var), text.expr(b.extent));
  o += fmt::format("    rows {} (tile {}), cols {} (tile {})\n", text.expr(k.tiles.rows), k.tiles.tile_m,
                   text.expr(k.tiles.cols), k.tiles.tile_n);
  o += fmt::format("  block: {} threads = {} x {} warps, warp tile {} x {} ({} x {} mma tiles of 16 x 8)\n", k.threads,
                   k.warps.warps_m, k.warps.warps_n, k.warps.warp_m, k.warps.warp_n, k.warps.frags_m(), k.warps.frags_n());
  for (const auto& s : k.scalars) o += fmt::format("  let {} = {}\n", s.name, text.expr(s.value));
  o += staging(k, text, "  ");
  if (k.sm90a) {
    const Kernel& w = *k.sm90a;
    o += fmt::format("  sm_90a form (the same kernel compiled for sm_90a): {} threads, {} warps ({} warpgroups) of MMAs, "
                     "warp tile {} x {}, tiles {} x {}\n",
                     w.threads, w.warps.warps_m * w.warps.warps_n, w.warps.warps_m * w.warps.warps_n / 4, w.warps.warp_m,
                     w.warps.warp_n, w.tiles.tile_m, w.tiles.tile_n);
    o += staging(w, text, "    ");
    for (const auto& n : w.notes) o += "    note: " + n + "\n";
  }
  o += fmt::format("  epilogue: per element (row {}, col {}) in range: {} = acc, then\n", text.var(k.epilogue.row_var),
                   text.var(k.epilogue.col_var), text.buffer(k.epilogue.acc));
  for (const auto* b : k.epilogue.locals) o += fmt::format("    (register per element: {})\n", text.buffer(b));
  for (const auto& s : k.epilogue.stmts) o += text.stmt(s, 2);
  if (k.epilogue.pair)
    o += fmt::format("    paired: a thread's two adjacent columns in one {}-bit store where the row's index at column 0, "
                     "{}, is even\n",
                     k.epilogue.pair->bits, text.expr(k.epilogue.pair->row_index));
  for (const auto& n : k.notes) o += "  note: " + n + "\n";
  o += "}\n";
  return o;
}

namespace {
/// The entry of a per-instantiation vector (parallel to k.head_dims) for head dim `dp`.
template <class T>
T per_instance(const AttentionKernel& k, const std::vector<T>& v, int dp, T fallback) {
  for (size_t x = 0; x < k.head_dims.size() && x < v.size(); ++x)
    if (k.head_dims[x] == dp) return v[x];
  return fallback;
}
}  // namespace

int attention_tile_n(const AttentionKernel& k, int dp) { return per_instance(k, k.key_tiles, dp, k.tile_n); }
int attention_wg_tile_n(const AttentionKernel& k, int dp) {
  const int t = per_instance(k, k.wg_key_tiles, dp, 0);
  return t ? t : attention_tile_n(k, dp);
}
int attention_m_tiles(const AttentionKernel& k, int dp) { return per_instance(k, k.m_tiles, dp, 1); }
int attention_warps(const AttentionKernel& k, int dp) { return per_instance(k, k.warps, dp, 4); }
int attention_min_blocks(const AttentionKernel& k, int dp) { return per_instance(k, k.min_blocks, dp, 1); }
int attention_tile_m(const AttentionKernel& k, int dp) { return 16 * attention_m_tiles(k, dp) * attention_warps(k, dp); }
int attention_long_tile_n(const AttentionKernel& k, int dp) { return per_instance(k, k.long_key_tiles, dp, 0); }
int64_t attention_long_keys(const AttentionKernel& k, int dp) { return per_instance(k, k.long_keys, dp, kAttentionLongKeys); }
int attention_entry_width(const AttentionKernel& k) {
  return k.entry_width ? k.entry_width : static_cast<int>(k.batch.size()) + 1;
}
int attention_stages(const AttentionKernel& k, int dp, bool long_keys) {
  const int s = long_keys ? per_instance(k, k.long_key_stages, dp, 0) : 0;
  return s ? s : per_instance(k, k.key_stages, dp, k.stages);
}
int attention_wg_stages(const AttentionKernel& k, int dp, bool long_keys) {
  const int s = per_instance(k, long_keys ? k.long_wg_key_stages : k.wg_key_stages, dp, 0);
  return s ? s : attention_stages(k, dp, long_keys);
}
std::string attention_instances(const AttentionKernel& k) {
  std::string o;
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    const int dp = k.head_dims[x];
    // f32's wgmma stages where they differ from the instantiation's.
    auto wg_stages = [&](bool long_keys) {
      const int s = attention_wg_stages(k, dp, long_keys);
      return s != attention_stages(k, dp) ? fmt::format("{} K/V stage(s), ", s) : std::string();
    };
    o += fmt::format("{}head dim {}: {} query rows x {} keys a tile, {} warps of {} rows, {} block(s) an SM, {} K/V stages",
                     x ? "; " : "", dp, attention_tile_m(k, dp), attention_tile_n(k, dp), attention_warps(k, dp),
                     16 * attention_m_tiles(k, dp), attention_min_blocks(k, dp), attention_stages(k, dp));
    if (attention_q_smem(k, dp))
      o += fmt::format(", Q in shared memory and {} blocks an SM with wgmma", attention_wgmma_min_blocks(k, dp));
    if (attention_f32_wgmma(k, dp))
      o += fmt::format(" ({} keys a tile, {}{} block(s) an SM and {} KB of shared memory with wgmma)", attention_wg_tile_n(k, dp),
                       wg_stages(false), attention_wgmma_min_blocks(k, dp), (attention_smem_bytes(k, dp) + 1023) / 1024);
    if (attention_f32_wgmma(k, dp, true))
      o += fmt::format(" (f32 on wgmma where a launch's entries average {} keys or more on compute capability 9: {} keys a tile, "
                       "{}{} block(s) an SM, {} KB of shared memory)",
                       attention_long_keys(k, dp), attention_long_tile_n(k, dp),
                       wg_stages(true), attention_wgmma_min_blocks(k, dp, true), (attention_smem_bytes(k, dp, true) + 1023) / 1024);
    else if (attention_long_tile_n(k, dp))
      o += fmt::format(" ({} keys a tile and {} stages with wgmma where a launch's entries average {} keys or more on "
                       "compute capability 9{})",
                       attention_long_tile_n(k, dp), attention_stages(k, dp, true), attention_long_keys(k, dp),
                       attention_q_smem(k, dp, true)
                           ? fmt::format(", Q in shared memory, {} blocks an SM", attention_wgmma_min_blocks(k, dp, true))
                           : "");
  }
  if (k.split)
    o += fmt::format("; head dims {} .. {}: 16 query rows x {} keys a tile, {} warps sharing the rows ({} columns of the "
                     "score and the output each, partial scores added through shared memory), 1 block an SM",
                     k.head_dims.back() + 1, k.split * k.split_warps, k.split_key_tile, k.split_warps, k.split);
  if (k.wide)
    o += fmt::format("; larger: streamed, head dim {}'s tiles, the score in chunks of {} columns, the output's {} a block "
                     "(blockIdx.y), each block recomputing the scores",
                     k.wide, k.wide, k.wide);
  return o;
}
int attention_split_smem_bytes(const AttentionKernel& k) {
  // K and V at split x split_warps (+ pad) a line, and the warps' partial scores.
  return k.stages * 2 * k.split_key_tile * (k.split * k.split_warps + k.pad) * elem_bytes(k.elem) +
         k.split_warps * 16 * k.split_key_tile * 4;
}
int attention_staged_store_bytes(const AttentionKernel& k, int dp) {
  return attention_warps(k, dp) * (16 * (dp + 8) * 2 + 16 * 8);  // 16-bit lines of dp + 8, 16 int64 indices
}
namespace {
/// K's and V's padded stages (the mma.sync form's, and the streaming body's).
int padded_stage_bytes(const AttentionKernel& k, int dp, bool long_keys) {
  return attention_stages(k, dp, long_keys) * 2 * attention_tile_n(k, dp) * (dp + k.pad) * elem_bytes(k.elem);  // K and V
}
}  // namespace
int attention_wide_smem_bytes(const AttentionKernel& k) { return padded_stage_bytes(k, k.wide, false); }
bool attention_wgmma(const AttentionKernel& k, int dp) {
  return std::find(k.wgmma_dims.begin(), k.wgmma_dims.end(), dp) != k.wgmma_dims.end();
}
int attention_sync_smem_bytes(const AttentionKernel& k, int dp, bool long_keys) {
  const bool staged = std::any_of(k.pair_stores.begin(), k.pair_stores.end(), [](const auto& p) { return p.staged; });
  const int b = padded_stage_bytes(k, dp, long_keys);
  return staged ? std::max(b, attention_staged_store_bytes(k, dp)) : b;
}
bool attention_f32_wgmma(const AttentionKernel& k, int dp, bool long_keys) {
  return k.elem == Elem::F32 && (long_keys ? attention_long_tile_n(k, dp) > 0 : attention_wgmma(k, dp));
}
int attention_smem_bytes(const AttentionKernel& k, int dp, bool long_keys) {
  const int ns = attention_stages(k, dp, long_keys);
  const int padded = attention_sync_smem_bytes(k, dp, long_keys);
  if (k.elem == Elem::F32) {
    if (!attention_f32_wgmma(k, dp, long_keys)) return padded;
    const int wns = attention_wg_stages(k, dp, long_keys);
    // f32 on tf32 wgmma: Q's tf32 parts (TM x DP each: big, and small for
    // 3xTF32), K's and V's raw stages, one tile's K small part and V's
    // transposed parts (big, small); from a 1024-byte boundary.
    const int parts = k.fp32 == Fp32Math::Split3xTf32 ? 2 : 1;
    const int bn = long_keys ? attention_long_tile_n(k, dp) : attention_wg_tile_n(k, dp);
    return std::max(padded, (parts * attention_tile_m(k, dp) * dp + wns * 2 * bn * dp + (2 * parts - 1) * bn * dp) * 4 + 1024);
  }
  if (!attention_wgmma(k, dp)) return padded;
  // wgmma's tiles: unpadded 128-byte swizzled lines, from a 1024-byte
  // boundary (the swizzle's period); the launch sizes for either build.
  const int bn = long_keys ? attention_long_tile_n(k, dp) : attention_tile_n(k, dp);
  const int q = attention_q_smem(k, dp, long_keys) ? attention_tile_m(k, dp) * dp * elem_bytes(k.elem) : 0;  // Q's tile (AttentionKernel::q_smem)
  return std::max(padded, q + ns * 2 * bn * dp * elem_bytes(k.elem) + 1024);
}

bool attention_smem_fits(const AttentionKernel& k, int dp, int blocks, bool long_keys) {
  // f32's wgmma build sizes its blocks an SM by its own shared memory (attention_wgmma_min_blocks).
  const int bytes =
      attention_f32_wgmma(k, dp, long_keys) ? attention_sync_smem_bytes(k, dp, long_keys) : attention_smem_bytes(k, dp, long_keys);
  return blocks * (bytes + 1024) <= 228 * 1024;
}

int attention_wgmma_min_blocks(const AttentionKernel& k, int dp, bool long_keys) {
  int b = attention_min_blocks(k, dp);
  if (attention_f32_wgmma(k, dp, long_keys)) {
    b = std::max(b, per_instance(k, k.wg_min_blocks, dp, 0));
    while (b > 1 && b * (attention_smem_bytes(k, dp, long_keys) + 1024) > 228 * 1024) --b;
    return b;
  }
  return attention_q_smem(k, dp, long_keys) && attention_block_fits(k, dp, b + 1, long_keys) ? b + 1 : b;
}

bool attention_block_fits(const AttentionKernel& k, int dp, int blocks, bool long_keys) {
  return blocks * attention_warps(k, dp) <= kAttentionMaxWarpsPerSm && attention_smem_fits(k, dp, blocks, long_keys);
}

bool attention_q_smem(const AttentionKernel& k, int dp, bool long_keys) {
  return attention_wgmma(k, dp) && per_instance(k, long_keys ? k.long_q_smem : k.q_smem, dp, false);
}

bool attention_any_q_smem(const AttentionKernel& k) {
  for (int dp : k.wgmma_dims)
    if (attention_q_smem(k, dp) || (attention_long_tile_n(k, dp) && attention_q_smem(k, dp, true))) return true;
  return false;
}

std::string print_attention_kernel(const AttentionKernel& k, VloopText& text) {
  std::string o = fmt::format("kernel {} (fused attention) {{\n", k.name);
  o += fmt::format("  grid: {} (", attn_grid_name(k.grid));
  for (const auto& b : k.batch) o += text.var(b.var) + ", ";
  o += fmt::format("query tile), built by the host from the lengths, {}\n", attn_order_name(k.order));
  for (const auto& b : k.batch) o += fmt::format("    batch {} in 0 .. {}\n", text.var(b.var), text.expr(b.extent));
  o += fmt::format("    rows {} in 0 .. {}, keys {} in 0 .. {} (tiles per head dim below)\n", text.var(k.row_var),
                   text.expr(k.rows), text.var(k.key_var), text.expr(k.keys));
  o += "  instances: " + attention_instances(k) + "\n";
  for (const auto& s : k.scalars)
    o += fmt::format("  let {} = {}{}\n", s.name, text.expr(s.value),
                     s.entry >= 0 ? fmt::format(" (host-computed: tile-list entry ints {}, {})", s.entry, s.entry + 1) : "");
  o += fmt::format("  operands: q {}, k {}, v {} ({}), head dims instantiated", text.buffer(k.q), text.buffer(k.k),
                   text.buffer(k.v), elem_name(k.elem));
  for (int dp : k.head_dims) o += fmt::format(" {}", dp);
  o += "\n";
  o += fmt::format("  shared: K and V [stages (per instance)][key][d], line head dim + {}, cp.async 16B when aligned, else by element; "
                   "the key loop copies tile kt + stages - 1 while it computes tile kt\n",
                   k.pad);
  if (k.elem == Elem::F32)
    o += fmt::format("  mma: {} ({}) for S = Q K^T and O += P V (a fresh fragment a key tile, added in f32); K and V "
                     "fragments by 32-bit shared loads, V's keys paired to P's accumulator layout\n",
                     mma_name(k.shape), fp32_math_name(k.fp32));
  else
    o += fmt::format("  mma: {} for S = Q K^T and O += P V; K fragments by ldmatrix.x4, V by ldmatrix.x4.trans\n", mma_name(k.shape));
  if (!k.wgmma_dims.empty()) {
    std::string dims;
    for (int dp : k.wgmma_dims) {
      const bool qs = attention_q_smem(k, dp), lqs = attention_long_tile_n(k, dp) && attention_q_smem(k, dp, true);
      dims += fmt::format("{}{} (S m64n{}k16, O m64n{}k16{})", dims.empty() ? "" : ", ", dp, attention_tile_n(k, dp), dp,
                          qs && (lqs || !attention_long_tile_n(k, dp)) ? "; Q in shared memory"
                          : qs                                         ? "; Q in shared memory but for the long-key tiles"
                          : lqs                                        ? "; Q in shared memory for the long-key tiles"
                                                                       : "");
    }
    o += "  wgmma on sm_90a, head dims " + dims +
         (attention_any_q_smem(k) ? ": A of S (Q) from registers or, where marked, from 128-byte swizzled shared memory by descriptor "
                  "(K-major, copied with the first K and V tile, a warpgroup's 64 lines each), A of O (P) from registers, "
                : ": A (Q, P) from registers, ") +
         "K (K-major) and V (MN-major) from 128-byte swizzled shared memory by descriptor, a warpgroup's 64 rows each\n";
  }
  if (k.index32) o += "  indices: row and key in 32 bits (i32 lengths)\n";
  o += k.guard_rows   ? "  checks: every element checks its row and key\n"
        : k.guard_keys ? "  checks: full key tiles none; the partial last key tile its keys\n"
                       : "  checks: none; the partial last key tile masks fold values and P by key\n";
  o += fmt::format("  score: {} per (row, key) from the contraction\n", text.buffer(k.score_acc));
  for (const auto& inv : k.invariants)
    o += fmt::format("  invariant {} = {} (once a block{})\n", inv.name, text.expr(inv.value),
                     inv.divisor ? "; 16-bit divisions by it multiply by its scaled reciprocal, in "
                                 "the key loop's copy for blocks where it is not 0 and needs no scaling by one multiply "
                                 "with no 0 / 0 check"
                     : inv.divisor32 ? "; f32 divisions by it corrected from its reciprocal, branch-free where it and the "
                                       "dividend are in range, else divided again"
                                     : "");
  for (const auto& s : k.pre) o += "  before keys (per row): " + text.stmt(s, 0);
  for (const auto& s : k.steps) {
    switch (s.kind) {
      case AttnStepKind::Element: o += "  per element: " + text.stmt(s.stmt, 0); break;
      case AttnStepKind::Row: o += "  per row: " + text.stmt(s.stmt, 0); break;
      case AttnStepKind::Fold:
        o += fmt::format("  fold ({}) over the tile of {}: ", ir::op_text(s.op), text.expr(s.term)) + text.stmt(s.stmt, 0);
        break;
      case AttnStepKind::Pv:
        o += fmt::format("  pv: {} = {} * {} + P V, P = {} per element{}\n", text.buffer(k.out_acc),
                         text.buffer(k.out_acc), k.pv_scale ? text.expr(k.pv_scale) : std::string("1"), text.expr(k.pv_p),
                         k.pv_rounded_by_pack ? fmt::format(", rounded to {} by the fragments' pack", elem_name(k.elem)) : "");
        break;
    }
  }
  for (const auto& inv : k.post_invariants)
    o += fmt::format("  after keys, once a block: {} = {}{}\n", inv.name, text.expr(inv.value),
                     inv.entry >= 0 ? fmt::format(" (host-computed: tile-list entry ints {}, {})", inv.entry, inv.entry + 1) : "");
  for (const auto& s : k.post) o += "  after keys: " + text.stmt(s, 0);
  for (const auto& p : k.pair_stores)
    o += fmt::format("  after keys, statement {}: a lane's two adjacent columns in one {}-bit store where the row's index "
                     "at column 0, {}, is even{}\n",
                     p.post + 1, p.bits, text.expr(p.row_index),
                     p.staged ? fmt::format("; staged: the pairs through shared memory, each warp's rows out as 16-byte "
                                            "stores where that index is a multiple of {}",
                                            256 / p.bits)
                              : "");
  if (!k.post_divisors.empty())
    o += "  after keys: the row's divisions one multiply by the scaled reciprocal where the divisor is not 0 and needs no "
         "scaling, with the columns unchecked where all of the lane's lie inside\n";
  if (!k.post_divisors32.empty())
    o += "  after keys: the row's f32 divisions corrected from the divisor's reciprocal (once a row), branch-free where "
         "it and the dividends are in range, else the row's columns again with the IEEE division\n";
  if (k.skip_conjuncts.empty()) o += "  skip: none\n";
  for (const auto& c : k.skip_conjuncts) o += fmt::format("  skip: key tiles where {} holds at no corner\n", text.expr(c));
  if (k.unmasked)
    o += fmt::format("  unmasked: full key tiles where {} holds at every corner run a copy of the body with it true\n",
                     text.expr(k.unmasked));
  for (const auto& n : k.notes) o += "  note: " + n + "\n";
  return o + "}\n";
}

}  // namespace dccc::gpu
