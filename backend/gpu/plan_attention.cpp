// The fused attention planner (backend/gpu/plan_attention.h): recognition by
// properties, then the tile, warp and staging choices of the kernel.
#include "backend/gpu/plan_attention.h"
#include "backend/gpu/plan_block_values.h"
#include "backend/gpu/plan_lazy_rescale.h"

#include <fmt/format.h>

#include "ir/affine.h"
#include "ir/collapse_loops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace dccc::gpu {
namespace {

using ir::BinOp;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

using namespace ir::affine;  // is_int, add, sub, mul, coefficient, fold, mentions_any (ir/affine.h)


bool is_scalar(const ir::BufferNode* b) { return b->dims.empty() && b->kind == ir::BufferKind::Scalar; }
bool is_load_of(const ir::Expr& e, const ir::BufferNode* b) {
  return e->kind == ExprKind::Load && e->buffer.get() == b;
}

std::optional<Elem> elem_of(Scalar t) {
  if (t == Scalar::BF16) return Elem::BF16;
  if (t == Scalar::F16) return Elem::F16;
  if (t == Scalar::F32) return Elem::F32;
  return std::nullopt;
}

/// A tensor load (flat, one offset) under float widenings.
const ir::ExprNode* strip_to_load(const ir::Expr& e) {
  ir::Expr x = e;
  while (x->kind == ExprKind::Cast && is_float(x->type)) x = x->args[0];
  if (x->kind == ExprKind::Load && x->flat && x->args.size() == 1 && !x->buffer->dims.empty()) return x.get();
  return nullptr;
}

/// The two factors of a product, under an outer widening (`f32(a * b)`, a
/// product rounded to 16 bits first: exact on a tensor core, see the note).
bool product(const ir::Expr& e, ir::Expr& a, ir::Expr& b, bool& rounded) {
  ir::Expr x = e;
  rounded = false;
  while (x->kind == ExprKind::Cast && is_float(x->type)) x = x->args[0];
  if (x->kind != ExprKind::Binary || x->binop != BinOp::Mul || !is_float(x->type)) return false;
  rounded = x->type != Scalar::F32;
  a = x->args[0];
  b = x->args[1];
  return true;
}

/// Scalars an expression or statement reads / writes.
void reads(const ir::Expr& e, std::set<const ir::BufferNode*>& out) {
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load && x.buffer->dims.empty()) out.insert(x.buffer.get());
  });
}
void stmt_reads(const ir::Stmt& s, std::set<const ir::BufferNode*>& out) {
  ir::each_stmt(s, [&](const ir::StmtNode& x) { ir::own_exprs(x, [&](const ir::ExprNode& e) {
                  if (e.kind == ExprKind::Load && e.buffer->dims.empty()) out.insert(e.buffer.get());
                }); });
}
void stmt_writes(const ir::Stmt& s, std::set<const ir::BufferNode*>& out) {
  ir::each_stmt(s, [&](const ir::StmtNode& x) {
    if (x.kind == StmtKind::Store) out.insert(x.buffer.get());
  });
}

/// `e` with every load of scalar `from` replaced by a load of `to`.
ir::Expr replace_scalar(const ir::Expr& e, const ir::BufferNode* from, const ir::Buffer& to) {
  if (e->kind == ExprKind::Load && e->buffer.get() == from) return ir::build::load(to, {});
  if (e->args.empty()) return e;
  auto n = std::make_shared<ir::ExprNode>(*e);
  for (auto& a : n->args) a = replace_scalar(a, from, to);
  return n;
}

// ---- Masked tiles: an abstract value of an element expression when the mask is false ----
enum class Abs { NegInf, PosInf, Zero, Positive, Finite, Unknown };

struct MaskEval {
  ir::Expr cond;  // the mask condition, taken as false
  std::map<const ir::BufferNode*, Abs> scalars;
  Abs eval(const ir::Expr& e) {
    switch (e->kind) {
      case ExprKind::FloatImm:
        if (std::isinf(e->float_value)) return e->float_value > 0 ? Abs::PosInf : Abs::NegInf;
        if (e->float_value == 0) return Abs::Zero;
        return e->float_value > 0 ? Abs::Positive : Abs::Finite;
      case ExprKind::IntImm: return e->int_value > 0 ? Abs::Positive : e->int_value == 0 ? Abs::Zero : Abs::Finite;
      case ExprKind::SizeRef: return Abs::Positive;  // a size; 0 only for an empty loop
      case ExprKind::Load: {
        auto it = scalars.find(e->buffer.get());
        return it == scalars.end() ? Abs::Unknown : it->second;
      }
      case ExprKind::Cast: return is_float(e->type) ? eval(e->args[0]) : Abs::Unknown;
      case ExprKind::Select: {
        if (ir::same_expr(e->args[0], cond)) return eval(e->args[2]);
        Abs a = eval(e->args[1]), b = eval(e->args[2]);
        return a == b ? a : Abs::Unknown;
      }
      case ExprKind::Unary: {
        Abs a = eval(e->args[0]);
        if (e->unop == UnOp::Neg) return a == Abs::NegInf ? Abs::PosInf : a == Abs::PosInf ? Abs::NegInf
                                         : a == Abs::Zero ? Abs::Zero : Abs::Unknown;
        if (e->unop == UnOp::Exp) return a == Abs::NegInf ? Abs::Zero : Abs::Unknown;
        if ((e->unop == UnOp::Sqrt || e->unop == UnOp::Rsqrt) && a == Abs::Positive) return Abs::Positive;
        return Abs::Unknown;
      }
      case ExprKind::Binary: {
        Abs a = eval(e->args[0]), b = eval(e->args[1]);
        switch (e->binop) {
          case BinOp::Sub:  // -inf - x = -inf (masked-value rules)
            return a == Abs::NegInf ? Abs::NegInf : Abs::Unknown;
          case BinOp::Add:
            return a == Abs::NegInf && b != Abs::PosInf && b != Abs::Unknown ? Abs::NegInf : Abs::Unknown;
          case BinOp::Mul:
            if (a == Abs::Zero || b == Abs::Zero) return Abs::Zero;
            if ((a == Abs::NegInf && b == Abs::Positive) || (b == Abs::NegInf && a == Abs::Positive)) return Abs::NegInf;
            if (a == Abs::Positive && b == Abs::Positive) return Abs::Positive;
            return Abs::Unknown;
          case BinOp::Div:
            if (a == Abs::Zero) return Abs::Zero;  // 0 / 0 = 0 (masked-value rules)
            if (a == Abs::NegInf && b == Abs::Positive) return Abs::NegInf;
            if (a == Abs::Positive && b == Abs::Positive) return Abs::Positive;
            return Abs::Unknown;
          default: return Abs::Unknown;
        }
      }
      default: return Abs::Unknown;
    }
  }
};

/// Conjuncts of `c`.
void conjuncts(const ir::Expr& c, std::vector<ir::Expr>& out) {
  if (c->kind == ExprKind::Binary && c->binop == BinOp::And) {
    conjuncts(c->args[0], out);
    conjuncts(c->args[1], out);
  } else {
    out.push_back(c);
  }
}

constexpr const char* kNoKeyLoop =
    "no loop over keys starting with a score contraction `acc = 0; for r { acc = acc + q * k }`";

}  // namespace

bool attention_candidate(const std::string& why) {
  return !why.empty() && why != kNoKeyLoop && why != "not a loop nest" && why.find("is not parallel") == std::string::npos;
}

std::optional<AttentionKernel> plan_attention(const ir::Func& f, const ir::Stmt& item, const std::string& name,
                                              const AttentionOptions& options, std::string* why) {
  (void)f;
  auto no = [&](const std::string& reason) -> std::optional<AttentionKernel> {
    if (why) *why = reason;
    return std::nullopt;
  };
  std::vector<ir::Stmt> loops;
  for (ir::Stmt cur = item; cur && cur->kind == StmtKind::For; cur = ir::unwrap(cur->body[0])) loops.push_back(cur);
  if (loops.empty()) return no("not a loop nest");
  for (const auto& l : loops)
    if (!options.parallel || !options.parallel(l)) return no(fmt::format("loop `{}` is not parallel", l->var->name));
  // The row body with its contiguous nests collapsed (ir/collapse_loops.h):
  // a score summed over (h, d) and output columns (h, d) of a [.., H, D]
  // layout read as one contraction index and one column index.
  std::vector<ir::Stmt> items = ir::items_of(loops.back()->body[0]);
  for (auto& s : items) s = ir::collapse_loops(s);
  // The key loop: `acc = 0; for r { acc = acc + a * b }; ...` in its body.
  int kj = -1;
  for (int k = 0; k < static_cast<int>(items.size()); ++k) {
    const ir::Stmt& s = items[k];
    if (s->kind != StmtKind::For) continue;
    auto body = ir::items_of(s->body[0]);
    if (body.size() >= 2 && body[0]->kind == StmtKind::Store && is_scalar(body[0]->buffer.get()) &&
        body[0]->value->kind == ExprKind::FloatImm && body[0]->value->float_value == 0 && body[1]->kind == StmtKind::For) {
      if (kj >= 0) return no("two loops in the row body start with a contraction");
      kj = k;
    }
  }
  if (kj < 0) return no(kNoKeyLoop);
  const ir::Stmt& jl = items[kj];
  const ir::Var& j = jl->var;
  auto jbody = ir::items_of(jl->body[0]);
  const ir::BufferNode* sacc = jbody[0]->buffer.get();
  if (sacc->type != Scalar::F32) return no("the score accumulator is not f32");
  const ir::Stmt& red = jbody[1];
  const ir::Var& r = red->var;
  ir::Stmt upd = ir::unwrap(red->body[0]);
  if (!upd || upd->kind != StmtKind::Store || upd->buffer.get() != sacc || upd->value->kind != ExprKind::Binary ||
      upd->value->binop != BinOp::Add)
    return no("the score loop is not one sum into its accumulator");
  ir::Expr term = is_load_of(upd->value->args[0], sacc) ? upd->value->args[1]
                  : is_load_of(upd->value->args[1], sacc) ? upd->value->args[0] : nullptr;
  ir::Expr fa, fb;
  bool rounded_qk = false;
  if (!term || ir::loads_from(term, sacc) || !product(term, fa, fb, rounded_qk))
    return no("the score is not a sum of products");
  const ir::ExprNode* la = strip_to_load(fa);
  const ir::ExprNode* lb = strip_to_load(fb);
  if (!la || !lb) return no("a factor of the score is not a load");
  // Q: indexed by a loop of the nest (the rows) and not by j; K: by j.
  if (ir::mentions(la->args[0], j)) std::swap(la, lb);
  if (ir::mentions(la->args[0], j) || !ir::mentions(lb->args[0], j)) return no("the score's factors are not q (no j) and k (j)");
  auto et = elem_of(la->buffer->type);
  if (!et || la->buffer->type != lb->buffer->type) return no("q and k have different or non-float types");
  if (*et == Elem::F32 && options.fp32 == Fp32Math::Ieee)
    return no("f32 attention with --fp32-math=ieee: no tensor cores (backend/cuda's kernels)");
  int row = -1;
  for (int k = 0; k < static_cast<int>(loops.size()); ++k) {
    const ir::Var& lv = loops[k]->var;
    if (ir::mentions(la->args[0], lv) && !ir::mentions(lb->args[0], lv)) {
      if (row >= 0) return no("two loops index only q");
      row = k;
    }
  }
  if (row < 0) return no("no loop of the nest indexes only q (no query rows)");
  AttentionKernel k;
  k.name = name;
  k.elem = *et;
  k.shape = *et == Elem::BF16 ? MmaShape::M16N8K16_BF16 : *et == Elem::F16 ? MmaShape::M16N8K16_F16 : MmaShape::M16N8K8_TF32;
  if (*et == Elem::F32) {
    // f32: 4-byte lines padded by 4 elements (16 bytes: rows stay aligned
    // for cp.async, and a lane's fragment reads fall in 32 different banks);
    // twice the shared memory and Q's registers of 16 bits. Tiles measured
    // on an H200 (bench/RESULTS.md, session 14; B = 128, full): head dim 64
    // with 32 keys a tile at 3 blocks an SM (168 registers, a few spilled)
    // against 64 keys at 2 (255 registers): race 2.709 -> 1.820 ms, cola
    // 0.143 -> 0.103 ms (medians); head dim 128 with 16 keys at 2 blocks
    // against 32 at 2: race 4.454 -> 3.961 ms, cola 0.191 -> 0.149 ms (32
    // keys at 3 blocks spills 880 bytes: race 5.614 ms).
    k.fp32 = options.fp32;
    k.pad = 4;
    k.key_tiles = {64, 32, 16, 32};
    k.min_blocks = {3, 3, 2, 1};
    k.split_key_tile = 16;  // 140 KB of shared memory at 8 x 64 columns
  }
  // One m16 tile of query rows a warp: two (each K and V fragment feeding
  // two MMAs; --attention-tiles=2,..) measured slower on an H200 in every
  // configuration tried (bench/RESULTS.md, session 15): the kernel is bound
  // by the issue of its element-wise instructions, and 32 rows a warp need
  // about 240 registers (8 warps an SM instead of 12).
  const AttentionTuning& tune = options.tuning;
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    if (tune.m_tiles) k.m_tiles[x] = *et == Elem::F32 ? 1 : tune.m_tiles;
    if (tune.warps) k.warps[x] = tune.warps;
    if (tune.key_tile) k.key_tiles[x] = tune.key_tile;
    if (tune.min_blocks) k.min_blocks[x] = tune.min_blocks;
  }
  // wgmma on sm_90a (AttentionKernel::wgmma_dims): warpgroups of 16-row
  // warps (each its own 64 rows), 16-bit operands, head dims whose K and V lines are whole
  // 128-byte swizzle rows (64 columns a part). It removes the ldmatrix and
  // most MMA instructions from a kernel bound by issued instructions.
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    const int dp = k.head_dims[x];
    if (*et != Elem::F32 && (dp == 64 || dp == 128) && k.warps[x] % 4 == 0 && k.m_tiles[x] == 1 && k.key_tiles[x] % 16 == 0 &&
        k.key_tiles[x] <= 256)
      k.wgmma_dims.push_back(dp);
    // f32 (3xTF32 or TF32) on tf32 wgmma: one warpgroup (64 rows; two,
    // 128 rows sharing each key tile's parts, when --attention-tiles forces 8
    // warps: 0.58-0.94x of one on an H200, session 31); keys a tile a
    // multiple of 32 (V's transposed tile: 128-byte lines of 32 keys) or 16
    // (64-byte lines). Q's tf32 parts in shared memory, K's small part and
    // V's transposed parts made once a tile by the block (docs/cuda.md,
    // "f32 on tf32 wgmma"). Head dim 64 at 32 keys a tile, head dim 128 at
    // 16: with one K/V stage (below) 73 KB and 3 blocks an SM, 105 KB and 2.
    // Measured on an H200 (bench/RESULTS.md): head dim 64 1.19-1.46x the
    // mma.sync form on race, squad and wiki128, 1.00-1.07x on mnli and cola
    // (session 29, two stages); head dim 128 at 16 keys and 2 blocks 0.99-1.45x
    // its 32-key, one-block form on race, squad, wiki128 and mnli, 1.60-1.62x
    // the mma.sync form on cola (session 34). Until session 34 head dim 128's
    // form was 177 KB, one block an SM, and a long-key instantiation for
    // launches whose entries averaged 32 keys or more (0.85-0.90x the
    // mma.sync form on cola). A forced key tile (--attention-tiles) of 16,
    // 32, 64 or 128 keys whose block fits an SM's shared memory (head dim 64
    // at 128 keys: 257 KB does not) keeps the form; others keep mma.sync.
    // Head dim 64 without a forced tile: 16 keys a tile and 4 blocks an SM
    // (53 KB at one stage; 128 registers, a few bytes spilled) for launches
    // whose entries average fewer than 32 keys, its 32-key form (3 blocks)
    // the long-key instantiation for the rest. Measured on an H200 (session
    // 34, the 16-key form against the 32-key one): 1.29-1.50x on cola (13
    // keys on average), 1.00-1.04x on mnli (45), 0.82-0.95x on wiki128,
    // squad and race.
    const bool short_keys = dp == 64 && !tune.key_tile && !tune.min_blocks;
    const int wg_keys = tune.key_tile ? tune.key_tile : dp == 128 || short_keys ? 16 : 32;
    if (*et == Elem::F32 && tune.f32_wgmma && (dp == 64 || dp == 128) && (k.warps[x] == 4 || k.warps[x] == 8) && k.m_tiles[x] == 1 &&
        (wg_keys == 16 || wg_keys == 32 || wg_keys == 64 || wg_keys == 128)) {
      k.wgmma_dims.push_back(dp);
      if (wg_keys != k.key_tiles[x]) k.wg_key_tiles[x] = wg_keys;
      if (attention_smem_bytes(k, dp) + 1024 > 228 * 1024) {
        k.wgmma_dims.pop_back();
        k.wg_key_tiles[x] = 0;
      } else if (short_keys && k.warps[x] == 4) {
        k.wg_min_blocks[x] = 4;
        k.long_key_tiles[x] = 32;
        k.long_keys[x] = 32;
      }
    }
  }
  // Head dim 128 on wgmma: 64 keys a tile for launches of long key
  // sequences (AttentionKernel::long_key_tiles), 32 for the rest. Measured
  // on an H200 (bench/RESULTS.md, session 19): 64 keys 1.08-1.09x on race
  // (entries of 391 keys on average), 1.02x on squad (221), 0.90-0.98x on
  // the batches under 128 keys. Head dim 64 on wgmma: 128 keys a tile (3
  // blocks an SM, Q in registers) where entries average 768 keys or more,
  // 64 for the rest. Measured on an H200 (session 28): 1.09-1.21x on
  // documents up to 2,048 tokens and chat up to 4,096; 128 keys everywhere
  // was 0.95-0.99x on race and 0.88-0.92x on squad, hence the threshold.
  // Not when --attention-tiles forces the key tile.
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    const int dp = k.head_dims[x];
    if (tune.key_tile || *et == Elem::F32 || std::find(k.wgmma_dims.begin(), k.wgmma_dims.end(), dp) == k.wgmma_dims.end()) continue;
    k.long_key_tiles.resize(k.head_dims.size(), 0);
    k.long_keys.resize(k.head_dims.size(), kAttentionLongKeys);
    if (dp == 128 && k.key_tiles[x] == 32) k.long_key_tiles[x] = 64;
    if (dp == 64 && k.key_tiles[x] == 64) {
      k.long_key_tiles[x] = 128;
      k.long_keys[x] = 768;
    }
  }
  // K's and V's stages: 2 (the next tile copied while this one is computed)
  // unless forced (--attention-stages); never more than the blocks an SM
  // the instantiation is compiled for can hold in an H100's 228 KB of
  // shared memory (1 KB of it reserved a block).
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    const int dp = k.head_dims[x];
    if (tune.stages == 1) {
      // One stage: f32's wgmma form only (AttentionKernel::wg_key_stages).
      if (attention_f32_wgmma(k, dp)) k.wg_key_stages[x] = 1;
      if (attention_f32_wgmma(k, dp, true)) k.long_wg_key_stages[x] = 1;
    } else if (tune.stages) {
      k.key_stages[x] = tune.stages;
      if (x < k.long_key_stages.size()) k.long_key_stages[x] = tune.stages;
    } else {
      // f32's wgmma form, and its long-key instantiation's: one stage where
      // that buys a block an SM (head dim 64 at 32 keys: 73 instead of 89
      // KB, 3 blocks instead of 2; at 16 keys 53 KB, 4; head dim 128 at 16
      // keys: 105 instead of 120 KB, 2 blocks instead of 1). Measured on an
      // H200 (bench/RESULTS.md, session 34, B = 128): 1.07-1.17x on race,
      // squad, wiki128, mnli and cola at head dim 64, full and causal -- the
      // third block overlaps what one block's serialised iteration cannot.
      for (bool long_keys : {false, true}) {
        if (!attention_f32_wgmma(k, dp, long_keys)) continue;
        int& stages = (long_keys ? k.long_wg_key_stages : k.wg_key_stages)[x];
        const int two = attention_wgmma_min_blocks(k, dp, long_keys);
        stages = 1;
        if (attention_wgmma_min_blocks(k, dp, long_keys) <= two) stages = 0;
      }
    }
    auto fits = [&](bool long_keys) { return attention_smem_fits(k, dp, attention_min_blocks(k, dp), long_keys); };
    while (k.key_stages[x] > 2 && !fits(false)) --k.key_stages[x];
    // A forced tile (--attention-tiles) whose blocks' shared memory does not
    // fit even at 2 stages (keys 128 at head dim 256: 270 KB a block): fewer
    // keys a tile, then fewer blocks an SM, said in a note, instead of a
    // launch the GPU refuses.
    const int asked_keys = k.key_tiles[x], asked_blocks = k.min_blocks[x];
    while (!fits(false) && k.key_tiles[x] > 16) k.key_tiles[x] = std::max(16, k.key_tiles[x] / 2 / 16 * 16);
    while (!fits(false) && k.min_blocks[x] > 1) --k.min_blocks[x];
    if (k.key_tiles[x] != asked_keys || k.min_blocks[x] != asked_blocks)
      k.notes.push_back(fmt::format("head dim {}: {} keys a tile at {} block(s) an SM do not fit an SM's shared memory; "
                                    "{} keys at {}",
                                    dp, asked_keys, asked_blocks, k.key_tiles[x], k.min_blocks[x]));
    if (attention_long_tile_n(k, dp))
      while (attention_stages(k, dp, true) > 2 && !fits(true)) k.long_key_stages[x] = attention_stages(k, dp, true) - 1;
  }
  k.grid = tune.grid;
  // The tile list's order (AttnOrder). 16-bit inputs: by sequence, its
  // query tiles together (their K and V read while in the L2 cache; with
  // the tiles by key tiles run over all entries, H200, session 37:
  // 0.82-0.94x on race, squad and wiki128 causal, where a sequence's query
  // tiles then start apart). f32 (3xTF32, bound by the tensor cores rather
  // than memory) by key tiles run: 1.07x on wiki128 head dim 64 causal.
  k.order = tune.order != AttnOrder::Auto ? tune.order : k.elem == Elem::F32 ? AttnOrder::Tiles : AttnOrder::Sequences;
  // Q's tile in shared memory for the wgmma form (AttentionKernel::q_smem)
  // where it buys its build a block an SM (its shared memory fits, and at
  // most 16 warps an SM: 128 registers a thread): no Q fragments in registers,
  // Q's 8-16 KB beside K's and V's stages. Measured on an H200 (session
  // 27, the FA2-precision program, B = 128; bench/RESULTS.md): head dim 64
  // 1.07-1.28x on every batch, head dim 128's short-key tiles 1.05-1.33x on
  // wiki128, mnli and cola; where no block is gained (head dim 128's
  // 64-key tiles) it costs 0.85-0.93x (Q read from shared memory by every
  // key tile's S).
  k.q_smem.assign(k.head_dims.size(), false);
  k.long_q_smem.assign(k.head_dims.size(), false);
  for (size_t x = 0; x < k.head_dims.size(); ++x) {
    const int dp = k.head_dims[x];
    if (!attention_wgmma(k, dp) || k.elem == Elem::F32 || tune.q == AttnQ::Registers) continue;
    for (bool long_keys : {false, true}) {
      if (long_keys && !attention_long_tile_n(k, dp)) continue;
      auto flag = [&]() -> std::vector<bool>::reference { return (long_keys ? k.long_q_smem : k.q_smem)[x]; };
      flag() = true;  // (attention_smem_fits reads it: Q's tile counted)
      flag() = tune.q == AttnQ::Smem || attention_block_fits(k, dp, attention_min_blocks(k, dp) + 1, long_keys);
    }
  }
  if (tune.split_cols) {
    k.split = tune.split_cols;
    k.split_warps = tune.split_warps;
    k.split_key_tile = tune.split_keys;
  }
  k.row_var = loops[row]->var;
  k.key_var = j;
  k.rows = loops[row]->extent;
  k.keys = jl->extent;
  k.score_acc = sacc;
  const ir::Var& i = k.row_var;
  std::vector<ir::Var> batch_vars;
  for (int x = 0; x < static_cast<int>(loops.size()); ++x) {
    if (x == row) continue;
    if (ir::mentions(loops[x]->extent, i)) return no("a batch loop's extent depends on the query row");
    k.batch.push_back({loops[x]->var, loops[x]->extent});
    batch_vars.push_back(loops[x]->var);
  }
  // Per-block extents: rows, keys and the head dims depend on the batch only.
  std::vector<ir::Var> inner{i, j, r};
  for (const ir::Expr& e : {k.rows, k.keys, red->extent})
    if (mentions_any(e, inner)) return no("the extent of the rows, keys or score reduction is not fixed per batch entry");
  auto operand = [&](const ir::ExprNode* ld, const ir::Var& rv, const ir::Var& dv, const std::string& n,
                     std::vector<ir::Var> foreign) -> bool {
    const ir::Expr& off = ld->args[0];
    if (!ir::affine_in(off, rv) || !ir::affine_in(off, dv)) return false;
    ir::Expr rs = coefficient(off, rv), ds = coefficient(off, dv);
    ir::Expr base = fold(ir::substitute(off, {{rv.get(), ir::build::int_imm(0)}, {dv.get(), ir::build::int_imm(0)}}));
    foreign.push_back(rv);
    foreign.push_back(dv);
    for (const ir::Expr& e : {rs, ds, base})
      if (mentions_any(e, foreign)) return false;
    k.scalars.push_back({n + "_base", base});
    k.scalars.push_back({n + "_rs", rs});
    k.scalars.push_back({n + "_ds", ds});
    return true;
  };
  k.q = la->buffer.get();
  k.k = lb->buffer.get();
  if (!operand(la, i, r, "Q", {j}) || !operand(lb, j, r, "K", {i}))
    return no("q or k is not affine in its row and the head dim with strides fixed per batch entry");
  k.scalars.push_back({"M", k.rows});
  k.scalars.push_back({"N", k.keys});
  k.scalars.push_back({"QD", red->extent});
  // The body after the contraction.
  std::set<const ir::BufferNode*> elem{sacc}, row_s;
  std::vector<const ir::BufferNode*> elem_order, row_order;
  auto is_elem = [&](const ir::Expr& e) {
    bool yes = ir::mentions(e, j);
    ir::each_expr(e, [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && elem.count(x.buffer.get())) yes = true;
    });
    return yes;
  };
  std::set<const ir::BufferNode*> written_so_far, written_in_body;
  for (size_t s = 2; s < jbody.size(); ++s) stmt_writes(jbody[s], written_in_body);
  // A value read in the body must be a start value (not written in it) or
  // written before the reader (a row value read before its write in the
  // same step is the previous tile's, which only row statements may read).
  auto reads_ok = [&](const ir::Expr& e) {
    std::set<const ir::BufferNode*> rd;
    reads(e, rd);
    for (const auto* b : rd)
      if (written_in_body.count(b) && !written_so_far.count(b) && b != sacc) return false;
    return true;
  };
  ir::Var pv_var;
  for (size_t s = 2; s < jbody.size(); ++s) {
    const ir::Stmt& st = jbody[s];
    if (st->kind == StmtKind::For) {
      if (k.out_acc) return no("two loops over output columns in the key loop");
      ir::Stmt pv = ir::unwrap(st->body[0]);
      if (!pv || pv->kind != StmtKind::Store || pv->buffer->dims.empty() || !pv->flat)
        return no("a loop in the key loop is not one store per output column");
      const ir::BufferNode* T = pv->buffer.get();
      if (T->type != Scalar::F32) return no("the output accumulator is not f32");
      const ir::Expr& v = pv->value;
      if (v->kind != ExprKind::Binary || v->binop != BinOp::Add) return no("the output update is not `T = T [* c] + p * v`");
      auto self = [&](const ir::Expr& e, ir::Expr& scale) {
        if (is_load_of(e, T) && ir::same_expr(e->args[0], pv->args[0])) return true;
        if (e->kind == ExprKind::Binary && e->binop == BinOp::Mul) {
          for (int x = 0; x < 2; ++x)
            if (is_load_of(e->args[x], T) && ir::same_expr(e->args[x]->args[0], pv->args[0]) && !ir::loads_from(e->args[1 - x], T)) {
              scale = e->args[1 - x];
              return true;
            }
        }
        return false;
      };
      ir::Expr scale, pvt;
      if (self(v->args[0], scale)) pvt = v->args[1];
      else if (self(v->args[1], scale)) pvt = v->args[0];
      else return no("the output update is not `T = T [* c] + p * v`");
      if (scale && (is_elem(scale) || !reads_ok(scale))) return no("the output's rescale factor is not a row value");
      ir::Expr pa, pb;
      bool rounded = false;
      if (ir::loads_from(pvt, T) || !product(pvt, pa, pb, rounded)) return no("the output's term is not a product p * v");
      const ir::ExprNode* lv = strip_to_load(pb);
      if (!lv || !ir::mentions(lv->args[0], st->var)) std::swap(pa, pb), lv = strip_to_load(pb);
      if (!lv || !ir::mentions(lv->args[0], st->var) || !ir::mentions(lv->args[0], j) || ir::mentions(pa, st->var))
        return no("the output's term is not p (per key) times v[j, d]");
      if (lv->buffer->type != la->buffer->type) return no("v's type differs from q's and k's");
      if (!reads_ok(pa)) return no("p reads a value before the key loop's body writes it");
      if (!operand(lv, j, st->var, "V", {i})) return no("v is not affine in its key and column with strides fixed per batch entry");
      if (ir::mentions(st->extent, j) || ir::mentions(st->extent, i)) return no("the output columns' extent is not fixed per batch entry");
      k.v = lv->buffer.get();
      k.out_acc = T;
      k.pv_var = st->var;
      pv_var = st->var;
      k.pv_p = pa;
      k.pv_scale = scale;
      k.pv_offset = pv->args[0];
      k.scalars.push_back({"VD", st->extent});
      k.steps.push_back({AttnStepKind::Pv, st, nullptr, BinOp::Add, nullptr});
      if (rounded || rounded_qk)
        k.notes.push_back("the program rounds a product to 16 bits before summing it; the tensor core sums the exact "
                          "products (more accurate than written)");
      continue;
    }
    if (st->kind == StmtKind::IfThenElse) {
      bool elem_dep = is_elem(st->value);
      std::set<const ir::BufferNode*> w, rd;
      stmt_writes(st, w);
      stmt_reads(st, rd);
      ir::each_stmt(st, [&](const ir::StmtNode& x) {
        if (x.kind == StmtKind::Store && is_elem(x.value)) elem_dep = true;
        if (x.kind == StmtKind::For || x.kind == StmtKind::Print || x.kind == StmtKind::Assert) elem_dep = true;
      });
      for (const auto* b : w)
        if (!is_scalar(b) || elem.count(b)) elem_dep = true;
      if (elem_dep) return no("a condition in the key loop depends on the key (only row statements may be conditional)");
      for (const auto* b : w) {
        if (!row_s.count(b)) row_order.push_back(b);
        row_s.insert(b);
        written_so_far.insert(b);
      }
      k.steps.push_back({AttnStepKind::Row, st, nullptr, BinOp::Add, nullptr});
      continue;
    }
    if (st->kind != StmtKind::Store || !is_scalar(st->buffer.get()))
      return no("a statement of the key loop is not a scalar store, a row condition or the output's update");
    const ir::BufferNode* b = st->buffer.get();
    const ir::Expr& v = st->value;
    if (ir::loads_from(v, b)) {
      // A fold: max(a, x), min(a, x), a [* c] + x.
      AttnStep fs{AttnStepKind::Fold, st, nullptr, BinOp::Add, nullptr};
      if (v->kind == ExprKind::Binary && (v->binop == BinOp::Max || v->binop == BinOp::Min)) {
        for (int x = 0; x < 2; ++x)
          if (is_load_of(v->args[x], b) && !ir::loads_from(v->args[1 - x], b)) fs.term = v->args[1 - x];
        fs.op = v->binop;
      } else if (v->kind == ExprKind::Binary && v->binop == BinOp::Add) {
        for (int x = 0; x < 2; ++x) {
          const ir::Expr& a = v->args[x];
          const ir::Expr& t = v->args[1 - x];
          if (ir::loads_from(t, b)) continue;
          if (is_load_of(a, b)) fs.term = t;
          if (a->kind == ExprKind::Binary && a->binop == BinOp::Mul)
            for (int y = 0; y < 2; ++y)
              if (is_load_of(a->args[y], b) && !ir::loads_from(a->args[1 - y], b) && !is_elem(a->args[1 - y]) &&
                  reads_ok(a->args[1 - y])) {
                fs.term = t;
                fs.scale = a->args[1 - y];
              }
        }
      }
      if (!fs.term || !is_elem(fs.term))
        return no(fmt::format("`{}` reads itself but is not a fold `a = max(a, x)`, `min` or `a = a [* c] + x` of a "
                              "value per key (a row counter would run once a tile)", b->name));
      if (!reads_ok(fs.term)) return no(fmt::format("the fold of `{}` reads a value before the body writes it", b->name));
      if (elem.count(b)) return no(fmt::format("`{}` is both a value per key and a fold", b->name));
      if (!row_s.count(b)) row_order.push_back(b);
      row_s.insert(b);
      written_so_far.insert(b);
      k.steps.push_back(fs);
      continue;
    }
    if (is_elem(v)) {
      if (row_s.count(b)) return no(fmt::format("`{}` is both a row value and a value per key", b->name));
      if (!reads_ok(v)) return no(fmt::format("`{}` reads a value before the key loop's body writes it", b->name));
      if (!elem.count(b)) elem_order.push_back(b);
      elem.insert(b);
      written_so_far.insert(b);
      k.steps.push_back({AttnStepKind::Element, st, nullptr, BinOp::Add, nullptr});
    } else {
      if (elem.count(b)) return no(fmt::format("`{}` is both a row value and a value per key", b->name));
      if (!row_s.count(b)) row_order.push_back(b);
      row_s.insert(b);
      written_so_far.insert(b);
      k.steps.push_back({AttnStepKind::Row, st, nullptr, BinOp::Add, nullptr});
    }
  }
  if (!k.out_acc) return no("no loop over output columns `T[.., d] = T[.., d] [* c] + p * v[j, d]` in the key loop");
  // Every rescale factor telescopes (see the header): c = 1, then under a
  // condition exp(X - Y) with Y = X after some running result R is replaced
  // by P, where P = R (copied before R's update in this step).
  std::vector<ir::Expr> scales;
  if (k.pv_scale) scales.push_back(k.pv_scale);
  for (const auto& s : k.steps)
    if (s.kind == AttnStepKind::Fold && s.scale) scales.push_back(s.scale);
  std::map<const ir::BufferNode*, const ir::BufferNode*> copy_of;  // P -> R (P = R)
  for (const auto& s : k.steps)
    if (s.kind == AttnStepKind::Row && s.stmt->kind == StmtKind::Store && s.stmt->value->kind == ExprKind::Load &&
        s.stmt->value->buffer->dims.empty())
      copy_of[s.stmt->buffer.get()] = s.stmt->value->buffer.get();
  for (const ir::Expr& c : scales) {
    if (c->kind != ExprKind::Load || !row_s.count(c->buffer.get())) return no("a rescale factor is not a row scalar");
    const ir::BufferNode* cb = c->buffer.get();
    bool one = false, telescopes = true, seen = false;
    for (const auto& s : k.steps) {
      if (s.kind != AttnStepKind::Row) continue;
      ir::each_stmt(s.stmt, [&](const ir::StmtNode& x) {
        if (x.kind != StmtKind::Store || x.buffer.get() != cb) return;
        if (&x == s.stmt.get()) {  // unconditional
          if (x.value->kind == ExprKind::FloatImm && x.value->float_value == 1) one = true;
          else telescopes = false;
          return;
        }
        seen = true;
        // Under the condition: exp(X - Y) (inside a select whose other branch is 0).
        bool ok = false;
        ir::each_expr(x.value, [&](const ir::ExprNode& e) {
          if (e.kind != ExprKind::Unary || e.unop != UnOp::Exp) return;
          const ir::Expr& d = e.args[0];
          if (d->kind != ExprKind::Binary || d->binop != BinOp::Sub) return;
          for (const auto& [p, rr] : copy_of) {
            ir::Buffer pb;
            for (const auto& fbuf : f.buffers)
              if (fbuf.get() == p) pb = fbuf;
            if (pb && ir::loads_from(d->args[0], rr) && ir::same_expr(replace_scalar(d->args[0], rr, pb), d->args[1])) ok = true;
          }
        });
        if (!ok) telescopes = false;
      });
    }
    if (!one || !telescopes || !seen)
      return no(fmt::format("the rescale factor `{}` is not 1, or exp(F(new) - F(old)) of a running result and its copy "
                            "from before the update: a tile of keys could not be folded at once", cb->name));
  }
  plan_lazy_rescale(k, f);
  // Before the key loop: row statements and T's start at 0.
  bool t_init = false;
  std::set<const ir::BufferNode*> pre_w;
  for (int x = 0; x < kj; ++x) {
    const ir::Stmt& s = items[x];
    if (s->kind == StmtKind::For) {
      ir::Stmt z = ir::unwrap(s->body[0]);
      if (!z || z->kind != StmtKind::Store || z->buffer.get() != k.out_acc || z->value->kind != ExprKind::FloatImm ||
          z->value->float_value != 0 ||
          !ir::same_expr(z->args[0], ir::substitute(k.pv_offset, {{pv_var.get(), ir::build::var(s->var)}})))
        return no("a loop before the key loop is not the output accumulator's start at 0");
      t_init = true;
      continue;
    }
    if (s->kind != StmtKind::Store || !is_scalar(s->buffer.get()) || ir::mentions(s->value, j))
      return no("a statement before the key loop is not a scalar's start");
    if (elem.count(s->buffer.get())) return no("a value per key is set before the key loop");
    if (!row_s.count(s->buffer.get())) row_order.push_back(s->buffer.get());
    row_s.insert(s->buffer.get());
    k.pre.push_back(s);
  }
  if (!t_init) return no("the output accumulator is not set to 0 before the key loop");
  // After: loops over the columns reading T where the update wrote it, row statements.
  for (size_t x = kj + 1; x < items.size(); ++x) {
    const ir::Stmt& s = items[x];
    bool ok = true;
    ir::each_stmt(s, [&](const ir::StmtNode& y) {
      if (y.kind == StmtKind::Print || y.kind == StmtKind::Assert) ok = false;
      if (y.kind == StmtKind::For && &y != s.get()) ok = false;
      if (y.kind == StmtKind::Store && y.buffer->dims.empty() && elem.count(y.buffer.get())) ok = false;
    });
    if (!ok) return no("a statement after the key loop is not element-wise");
    if (s->kind == StmtKind::For) {
      if (!ir::same_expr(s->extent, k.scalars.back().value)) return no("a loop after the key loop does not run over the output columns");
      ir::Expr at = ir::substitute(k.pv_offset, {{pv_var.get(), ir::build::var(s->var)}});
      ir::each_stmt(s, [&](const ir::StmtNode& y) {
        ir::own_exprs(y, [&](const ir::ExprNode& e) {
          if (e.kind == ExprKind::Load && e.buffer.get() == k.out_acc && !ir::same_expr(e.args[0], at)) ok = false;
        });
      });
      if (!ok) return no("a statement after the key loop reads the output accumulator at another column");
    } else {
      if (ir::loads_from(s->value ? s->value : ir::build::int_imm(0), k.out_acc)) return no("a row statement after the key loop reads the output accumulator");
      std::set<const ir::BufferNode*> w;
      stmt_writes(s, w);
      for (const auto* b : w)
        if (!is_scalar(b)) ok = false;
      if (!ok) return no("a statement after the key loop writes a tensor outside a loop over the columns");
    }
    k.post.push_back(s);
  }
  k.element_scalars = elem_order;
  k.row_scalars = row_order;
  // Rows past the end may run the per-element work unchecked when it reads
  // no tensor at an index of the row (out of bounds there; one indexed by
  // the batch and the key reads what a row inside reads) and divides no
  // integers (the error flag).
  {
    bool by_row = false, by_key = false, idiv = false;
    auto scan = [&](const ir::Expr& e) {
      if (!e) return;
      ir::each_expr(e, [&](const ir::ExprNode& x) {
        if (x.kind == ExprKind::Load && !x.buffer->dims.empty())
          for (const auto& a : x.args) {
            by_row |= ir::mentions(a, i);
            by_key |= ir::mentions(a, j);
          }
        if (x.kind == ExprKind::Binary && (x.binop == BinOp::Div || x.binop == BinOp::Mod) && !is_float(x.type)) idiv = true;
      });
    };
    for (const auto& s : k.steps)
      if (s.kind == AttnStepKind::Element) scan(s.stmt->value);
      else if (s.kind == AttnStepKind::Fold) scan(s.term);
    scan(k.pv_p);
    k.guard_rows = by_row || idiv;
    k.guard_keys = by_key || idiv;
    auto i32 = [](const ir::Expr& e) {
      return e->kind == ExprKind::Cast && e->type == Scalar::I64 && e->args[0]->type == Scalar::I32;
    };
    k.index32 = i32(k.rows) && i32(k.keys);
  }
  // Row divisors of the statements after the key loop (`/ row_sum`).
  for (const auto& s : k.post) {
    if (s->kind != StmtKind::For) continue;
    ir::each_stmt(s, [&](const ir::StmtNode& y) {
      auto row_divisor = [&](const ir::Expr& dv) {
        return dv->kind == ExprKind::Load && dv->buffer->dims.empty() && row_s.count(dv->buffer.get());
      };
      // (own_exprs visits every sub-expression of the statement's own.)
      std::set<const ir::ExprNode*> r16;  // divisions whose quotients are rounded to 16 bits
      ir::own_exprs(y, [&](const ir::ExprNode& e) {
        const ir::ExprNode* q = rounded16_division(e);
        if (!q) return;
        r16.insert(q);
        if (row_divisor(q->args[1])) k.post_divisors.push_back({q->args[1].get(), q->args[1]->buffer.get()});
      });
      // f32 divisions whose quotients stay f32 (none rounded to 16 bits after).
      ir::own_exprs(y, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Binary && e.binop == BinOp::Div && e.type == Scalar::F32 && !r16.count(&e) &&
            row_divisor(e.args[1]))
          k.post_divisors32.push_back({e.args[1].get(), e.args[1]->buffer.get()});
      });
    });
  }
  plan_block_values(k, item);
  // Masked tiles: one index-only select condition; every fold's value and
  // p are the identity where it is false.
  std::vector<ir::Expr> conds;
  auto collect = [&](const ir::Expr& e) {
    ir::each_expr(e, [&](const ir::ExprNode& x) {
      if (x.kind != ExprKind::Select) return;
      bool index_only = true;
      ir::each_expr(x.args[0], [&](const ir::ExprNode& y) {
        if (y.kind == ExprKind::Load) index_only = false;
      });
      if (!index_only || !ir::mentions(x.args[0], j)) return;
      for (const auto& c : conds)
        if (ir::same_expr(c, x.args[0])) return;
      conds.push_back(x.args[0]);
    });
  };
  for (const auto& s : k.steps)
    if (s.kind == AttnStepKind::Element) collect(s.stmt->value);
    else if (s.kind == AttnStepKind::Fold) collect(s.term);
  collect(k.pv_p);
  std::string skip_note = "no key tile is skipped (no mask condition on the indices alone)";
  if (conds.size() == 1) {
    MaskEval me{conds[0], {}};
    bool identity = true;
    for (const auto& s : k.steps) {
      if (s.kind == AttnStepKind::Element) me.scalars[s.stmt->buffer.get()] = me.eval(s.stmt->value);
      if (s.kind == AttnStepKind::Fold) {
        Abs a = me.eval(s.term);
        if (!((s.op == BinOp::Max && a == Abs::NegInf) || (s.op == BinOp::Add && a == Abs::Zero))) identity = false;
      }
    }
    if (me.eval(k.pv_p) != Abs::Zero) identity = false;
    std::vector<ir::Expr> cs;
    conjuncts(conds[0], cs);
    for (const auto& c : cs) {
      if (c->kind != ExprKind::Binary || !ir::is_comparison(c->binop)) continue;
      if (!ir::affine_in(c->args[0], i) || !ir::affine_in(c->args[0], j) || !ir::affine_in(c->args[1], i) ||
          !ir::affine_in(c->args[1], j))
        continue;
      k.skip_conjuncts.push_back(c);
    }
    if (!identity) {
      k.skip_conjuncts.clear();
      skip_note = "no key tile is skipped: where the mask is false some fold or p is not its identity";
    } else if (k.skip_conjuncts.empty()) {
      skip_note = "no key tile is skipped: no conjunct of the mask is an affine comparison of i and j";
    } else {
      // Every conjunct affine: where all hold at every corner of the box the
      // mask holds throughout it (AttentionKernel::unmasked).
      if (k.skip_conjuncts.size() == cs.size() && options.tuning.unmasked) k.unmasked = conds[0];
      skip_note = fmt::format("a key tile is skipped when one of the mask's {} affine conjunct(s) holds at no corner of "
                              "the query tile x key tile box (where the mask is false every fold and p get their identity)",
                              k.skip_conjuncts.size());
    }
  } else if (conds.size() > 1) {
    skip_note = "no key tile is skipped: more than one mask condition";
  }
  // P rounded to the tensor core's 16-bit type by the program (`f32(bf16(p))`,
  // FlashAttention-2's precision): packing the fragments rounds the f32 value
  // to the same bits, so p is taken before the rounding (one cvt a pair of
  // elements instead of one an element and one a pair).
  if (k.elem != Elem::F32) {
    const Scalar t = k.elem == Elem::BF16 ? Scalar::BF16 : Scalar::F16;
    ir::Expr x = k.pv_p;
    if (x->kind == ExprKind::Cast && x->type == Scalar::F32 && x->args[0]->type == t) x = x->args[0];
    if (x->kind == ExprKind::Cast && x->type == t && x->args[0]->type == Scalar::F32) {
      k.pv_p = x->args[0];
      k.pv_rounded_by_pack = true;
    }
  }
  // 16-bit paired stores through shared memory (PairStore::staged): one
  // m16 tile a warp, where no instantiation of the one-tile-a-block body
  // then holds fewer blocks an SM (its shared memory grows to the staged
  // rows' where those need more). ncu, session 31: 17% of the stall samples
  // of head dim 128's kernel on wiki128 after the key loop, 4-byte stores
  // filling half of each 32-byte sector, and the drain at exit; staged,
  // 1.03-1.14x on race, squad and wiki128. Not f32's pairs: a lane's fill
  // whole sectors already, and staged they ran 0.95-0.99x on an H200.
  bool stage = options.tuning.staged_stores;
  for (const auto& p : k.pair_stores)
    if (p.bits != 32) stage = false;
  for (size_t x = 0; x < k.head_dims.size(); ++x)
    if (k.m_tiles[x] != 1) stage = false;
  auto blocks = [&] {  // what each instantiation holds an SM
    std::vector<int> b;
    for (int dp : k.head_dims)
      for (bool long_keys : {false, true}) {
        if (long_keys && attention_long_tile_n(k, dp) == 0) continue;
        for (int n = 1; n <= 8; ++n) b.push_back(attention_block_fits(k, dp, n, long_keys));
        b.push_back(attention_wgmma_min_blocks(k, dp, long_keys));
      }
    return b;
  };
  const std::vector<int> before = blocks();
  for (auto& p : k.pair_stores) p.staged = stage;
  if (stage && blocks() != before)
    for (auto& p : k.pair_stores) p.staged = false;
  k.notes.insert(k.notes.begin(),
                 {fmt::format("fused attention: rows {}, keys {}, {} batch loop(s); a block owns a tile of query rows "
                              "(per head dim below) of one batch entry and streams keys a tile at a time through {} shared-memory "
                              "stages (cp.async)",
                              i->name, j->name, k.batch.size(), k.stages),
                  k.elem == Elem::F32
                      ? fmt::format("S = Q K^T and O += P V on mma.sync {} with {} (f32 accumulators; each key tile's "
                                    "P V summed in a fresh fragment and added in f32); Q fragments loaded once into "
                                    "registers; P taken in registers from the S fragments, V's keys paired to match",
                                    mma_name(k.shape), k.fp32 == Fp32Math::Tf32 ? "one TF32 product (--fp32-math=tf32)"
                                                                                : "3xTF32 (big and small tf32 parts)")
                      : fmt::format("S = Q K^T and O += P V on mma.sync {} (f32 accumulators); Q fragments loaded once "
                                    "into registers; P converted in registers from the S fragments",
                                    mma_name(k.shape)),
                  "the key loop's body runs a tile at a time: element values on the S fragments, folds reduced over the "
                  "tile's keys with quad shuffles, row statements once a tile (valid: every rescale telescopes)",
                  "head dims instantiated: 32, 64, 128, 256 (a launch takes the smallest >= the head dim; larger: "
                  "the split and streaming instantiations); " + attention_instances(k),
                  skip_note,
                  k.guard_rows ? "every element checks its query row and key (the body reads memory at the row's "
                                 "index or divides integers)"
                  : k.guard_keys ? "full key tiles run the body unchecked; the last, partial key tile checks its keys "
                                   "(rows past the end compute values nobody stores)"
                                 : "the body runs unchecked (rows past the end compute values nobody stores); in the "
                                   "last, partial key tile keys past the end give the folds their identity and P 0",
                  "schedule: one block per (batch entry, query tile), longest key sequence first"});
  return k;
}

}  // namespace dccc::gpu
