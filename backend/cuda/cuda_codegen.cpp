#include "backend/cuda/cuda_codegen.h"

#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace dccc::backend {
namespace {

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

/// `what` on the CUDA target, at `at` (the statement or declaration).
[[noreturn]] void unsupported(SourceRange at, const std::string& what) {
  throw CudaUnsupported(at, what + " on the CUDA target");
}

/// Type of a value in registers: 16-bit floats compute in f32 and are
/// rounded to their type after every operation, as on the CPU target.
const char* value_type(Scalar t) {
  switch (t) {
    case Scalar::F16:
    case Scalar::BF16:
    case Scalar::F32: return "float";
    case Scalar::F64: return "double";
    case Scalar::I32: return "int32_t";
    case Scalar::I64: return "int64_t";
    case Scalar::Bool: return "bool";
  }
  return "void";
}

const char* unsigned_type(Scalar t) { return t == Scalar::I32 ? "uint32_t" : "uint64_t"; }

std::string round_to(Scalar t, const std::string& v) {
  if (t == Scalar::BF16) return "dcc_rbf16(" + v + ")";
  if (t == Scalar::F16) return "dcc_rf16(" + v + ")";
  return v;
}

double round_bf16_host(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string float_literal(double v, Scalar t) {
  if (t == Scalar::F64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return fmt::format("__longlong_as_double(0x{:016x}LL)", bits);
  }
  if (t == Scalar::BF16) v = round_bf16_host(v);
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  std::string lit = fmt::format("__int_as_float(0x{:08x})", bits);
  return t == Scalar::F16 ? "dcc_rf16(" + lit + ")" : lit;
}

}  // namespace

/// `T@(o) = max(T@(o), e)` on a float tensor, e not reading T
/// (ir/fuse_row_max.h). Where T's memory holds no NaN with the sign bit
/// clear (FuncEmitter::nan_free_max_), dcc_red_fmax folds it in, so any
/// number of threads may run it on one element.
bool is_max_update(const ir::StmtNode& s) {
  if (s.kind != StmtKind::Store || s.buffer->dims.empty() || !s.flat || s.args.size() != 1) return false;
  if (s.buffer->type != Scalar::F32 && s.buffer->type != Scalar::F64) return false;
  const ir::Expr& v = s.value;
  if (v->kind != ExprKind::Binary || v->binop != BinOp::Max || v->type != s.buffer->type) return false;
  const ir::Expr& a = v->args[0];
  return a->kind == ExprKind::Load && a->buffer == s.buffer && a->flat && ir::same_expr(a->args[0], s.args[0]) &&
         !ir::loads_from(v->args[1], s.buffer.get());
}

bool is_parallel_loop(const ir::Stmt& loop, const std::set<const BufferNode*>& foldable) {
  if (!loop || loop->kind != StmtKind::For) return false;
  bool ok = true;
  std::set<const BufferNode*> scalars, max_updated, other_use;
  ir::each_stmt(loop->body[0], [&](const ir::StmtNode& s) {
    if (s.kind == StmtKind::Print) ok = false;
    // A tensor folded by max updates is touched by nothing else in the loop.
    bool update = is_max_update(s) && foldable.count(s.buffer.get());
    ir::own_exprs(s, [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::Load && !(update && &e == s.value->args[0].get())) other_use.insert(e.buffer.get());
    });
    if (update) {
      max_updated.insert(s.buffer.get());
      return;
    }
    if (s.kind != StmtKind::Store) return;
    const BufferNode* b = s.buffer.get();
    other_use.insert(b);
    if (b->dims.empty()) {
      if (b->kind != BufferKind::Scalar) ok = false;  // a scalar result or input
      scalars.insert(b);
    } else {
      // Lowering binds each left-side index to its own dimension, so a store
      // whose offset mentions the loop variable writes a different element in
      // every iteration; one that does not would race.
      bool mentioned = false;
      for (const auto& a : s.args) mentioned = mentioned || ir::mentions(a, loop->var);
      if (!mentioned) ok = false;
    }
  });
  // Every scalar it writes must be private to an iteration.
  for (const BufferNode* b : scalars) ok = ok && ir::written_before_read(loop->body[0], b);
  for (const BufferNode* b : max_updated) ok = ok && !other_use.count(b);
  return ok;
}

namespace {

/// The shape of the shared-memory contraction kernels: outputs per thread
/// along X and along Y (4 or 8; a block of 16 x 16 threads then covers 64
/// or 128 of each), reduction values staged per step, and the minimum
/// resident blocks asked of ptxas. DCCC_CUDA_GEMM="TX,TY,STEP,MIN" overrides
/// it (for measuring alternatives; bench/README.md). Measured on an H100,
/// mha f32 at B = 128, race / squad / mnli ms (bench/RESULTS.md): 8,4,16,2
/// 2.66 / 1.13 / 0.26; 8,4,8,2 2.71 / 1.03 / 0.24; 4,4,16,3 2.82 / 1.14 /
/// 0.23; 8,8,8,1 3.69 / 1.55 / 0.34. 8,4,8,2: 128-row tiles for long
/// sequences (race), about even with 64-row ones on short ones (mnli).
struct GemmShape {
  int tile_x = 8, tile_y = 4, step = 8, min_blocks = 2;
};
const GemmShape& gemm_shape() {
  static const GemmShape shape = [] {
    GemmShape g;
    if (const char* v = std::getenv("DCCC_CUDA_GEMM")) {
      GemmShape o;
      if (std::sscanf(v, "%d,%d,%d,%d", &o.tile_x, &o.tile_y, &o.step, &o.min_blocks) == 4 &&
          (o.tile_x == 4 || o.tile_x == 8) && (o.tile_y == 4 || o.tile_y == 8) &&
          (o.step == 4 || o.step == 8 || o.step == 16 || o.step == 32) && o.min_blocks >= 1 && o.min_blocks <= 16)
        g = o;
    }
    return g;
  }();
  return shape;
}

/// Emits one function: its kernels and host code.
class FuncEmitter {
 public:
  FuncEmitter(const ir::Func& f, std::string& out) : f_(f), out_(out), names_(f) {
    host_.names = &names_;
    host_.at = f.at;
  }

  void run() {
    for (size_t k = 0; k < f_.buffers.size(); ++k) slot_[f_.buffers[k].get()] = static_cast<int>(k);
    for (size_t k = 0; k < f_.sizes.size(); ++k) size_index_[f_.sizes[k].name] = static_cast<int>(k);
    // Host code reads the length arrays and offset arrays through `hp`.
    for (size_t k = 0; k < f_.buffers.size(); ++k) {
      const BufferNode* b = f_.buffers[k].get();
      if (b->kind == BufferKind::Input && !b->dims.empty()) host_.buffers[b] = fmt::format("((const {}*)hp[{}])", c_type(b->type), k);
      if (b->kind == BufferKind::Aux) host_.buffers[b] = fmt::format("((int64_t*)hp[{}])", k);
    }
    check_host_computable();
    find_nan_free_maxima();
    out_ += fmt::format("// ---- {} ----\nstruct {}__args {{\n  int64_t s[{}];\n  void* p[{}];\n  int* err;\n}};\n\n",
                        f_.name, f_.name, std::max<size_t>(1, f_.sizes.size()), std::max<size_t>(1, f_.buffers.size()));
    std::vector<ir::Stmt> items = f_.body->kind == StmtKind::Seq ? f_.body->body : std::vector<ir::Stmt>{f_.body};
    std::vector<Launch> launches;
    for (size_t k = 0; k < items.size(); ++k) launches.push_back(emit_kernel(items[k], static_cast<int>(k)));
    for (const auto& m : f_.gpu_mappings) {
      bool used = false;
      for (const auto& l : launches) used |= l.mapping == &m;
      if (!used)
        throw CudaUnsupported(m.at, fmt::format("a GPU mapping of loop `{}`, whose statement the CUDA target no longer "
                                                "runs as its own kernel (kernel fusion computes it elsewhere: an element-wise "
                                                "local in its readers, a row sum or maximum in a neighbouring statement)",
                                                m.blocks.empty() ? "?" : m.blocks[0]->name));
    }
    emit_launcher(launches);
    emit_host_entry();
  }

 private:
  struct Launch {
    std::string kernel;
    bool parallel = false;
    ir::Stmt outer;                  // the loop on blockIdx.y (or on x when `inner` is empty)
    std::vector<ir::Stmt> inner;     // loops flattened over threads
    int tile_x = -1, tile_y = -1;    // indices into `inner` of the register-tiled loops
    bool block_tiles = false;        // a block per kBlockX x kBlockY tile (emit_gemm_kernel)
    bool warp_rows = false;          // a warp per iteration (emit_warp_rows_kernel)
    /// gpu_blocks / gpu_threads (emit_mapped_kernel): the grid's loops, the
    /// conditions (host-computable) right inside the first, threads per block.
    const ir::GpuMapping* mapping = nullptr;
    std::vector<ir::Stmt> blocks;
    std::vector<ir::Expr> grid_guards;
    int block_dim = 0;
    /// An `hfuse`d loop (emit_ranges_kernel): per range of its iterations,
    /// the condition (none for the last) and the loops flattened over threads.
    std::vector<std::pair<ir::Expr, std::vector<ir::Stmt>>> ranges;
  };

  /// Register tiling (unroll-and-jam) of a contraction: each thread computes
  /// kTile x kTile outputs over two parallel loops X and Y, so that a load
  /// that does not depend on Y is made once for all y, and vice versa. The
  /// innermost parallel body must be `pre; R; post` where R is a perfect
  /// nest of reduction loops whose extents do not mention X or Y, whose
  /// innermost statements only update private scalars, and in which some
  /// load ignores X and some other load ignores Y (otherwise nothing is
  /// reused and tiling only adds registers).
  static constexpr int kTile = 4;
  /// A parallel body `pre; nest; post`: one loop, the statements around it loop-free.
  struct LoopSplit {
    std::vector<ir::Stmt> pre, post;
    ir::Stmt nest;
  };
  static std::optional<LoopSplit> split_at_loop(const ir::Stmt& body) {
    std::vector<ir::Stmt> items = ir::items_of(body);
    LoopSplit split;
    for (const auto& it : items) {
      bool has_loop = false;
      ir::each_stmt(it, [&](const ir::StmtNode& x) { has_loop = has_loop || x.kind == StmtKind::For; });
      if (it->kind == StmtKind::For) {
        if (split.nest) return std::nullopt;
        split.nest = it;
      } else if (has_loop) {
        return std::nullopt;
      } else {
        (split.nest ? split.post : split.pre).push_back(it);
      }
    }
    if (!split.nest) return std::nullopt;
    return split;
  }

  struct TilePlan : LoopSplit {      // nest: R
    int x = -1, y = -1;
  };
  std::optional<TilePlan> plan_tiling(const Launch& l, const ir::Stmt& body) {
    if (l.inner.size() < 2) return std::nullopt;
    auto split = split_at_loop(body);
    if (!split) return std::nullopt;
    TilePlan plan;
    static_cast<LoopSplit&>(plan) = *split;
    std::vector<ir::Stmt> levels;
    ir::Stmt cur = plan.nest;
    while (cur && cur->kind == StmtKind::For) {
      levels.push_back(cur);
      ir::Stmt next = only_loop(cur->body[0]);
      if (!next) break;
      cur = next;
    }
    ir::Stmt innermost = levels.back()->body[0];
    bool only_private = true;
    std::vector<const ir::ExprNode*> loads;
    ir::each_stmt(innermost, [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::For || x.kind == StmtKind::Print) only_private = false;
      if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) only_private = false;
      ir::own_exprs(x, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Load && !e.buffer->dims.empty()) loads.push_back(&e);
      });
    });
    auto load_mentions = [](const ir::ExprNode* ld, const ir::Var& v) {
      for (const auto& a : ld->args)
        if (ir::mentions(a, v)) return true;
      return false;
    };
    if (!only_private) return std::nullopt;
    // Prefer Y = the innermost parallel loop (adjacent threads, adjacent y).
    for (int y = static_cast<int>(l.inner.size()) - 1; y >= 0; --y)
      for (int x = 0; x < static_cast<int>(l.inner.size()); ++x) {
        if (x == y) continue;
        const ir::Var& vx = l.inner[x]->var;
        const ir::Var& vy = l.inner[y]->var;
        bool extents_ok = true;
        for (const auto& lv : levels)
          if (ir::mentions(lv->extent, vx) || ir::mentions(lv->extent, vy)) extents_ok = false;
        if (ir::mentions(l.inner[y]->extent, vx) || ir::mentions(l.inner[x]->extent, vy)) extents_ok = false;
        if (!extents_ok) continue;
        bool reuse_x = false, reuse_y = false;
        for (const auto& ld : loads) {
          bool mx = load_mentions(ld, vx), my = load_mentions(ld, vy);
          if (mx && !my) reuse_y = true;  // made once per x, used for every y
          if (my && !mx) reuse_x = true;
        }
        if (reuse_x && reuse_y) {
          plan.x = x;
          plan.y = y;
          return plan;
        }
      }
    return std::nullopt;
  }

  /// Shared-memory tiling of a contraction (a GEMM inside a loop nest): when
  /// the register-tiling plan's reduction nest is one loop r whose body is
  /// `acc = acc + [cast](P * Q)`, P ignoring Y and Q ignoring X, a block of
  /// kGemmThreads threads computes a kBlockX x kBlockY tile of (X, Y). Each
  /// step stages P over (x, r) and Q over (y, r) for kStep values of r in
  /// shared memory, threads taking adjacent elements along the operand's
  /// unit-stride index (coalesced), and every thread accumulates kTileX x
  /// kTileY outputs from there (8 x 8: 64 FMAs for four 16-byte
  /// shared-memory reads). Elements outside the iteration space are staged
  /// as zeros: 0 * 0 adds exactly +0 to a sum, so the results are those of
  /// the plain loop.
  // A block has 16 x 16 threads; each computes kTileX x kTileY outputs, so
  // a block tile is kBlockX x kBlockY (64 or 128 each).
  static constexpr int kSide = 16, kGemmThreads = kSide * kSide;
  const int kStep = gemm_shape().step, kTileX = gemm_shape().tile_x, kTileY = gemm_shape().tile_y;
  const int kBlockX = kSide * kTileX, kBlockY = kSide * kTileY, kGemmMinBlocks = gemm_shape().min_blocks;
  struct GemmPlan {
    ir::Expr p, q;                        // the factors: p ignores Y, q ignores X
    ir::Stmt update;                      // acc = acc + [cast](p * q)
    bool p_r_fast = true, q_r_fast = true;  // unit stride along r (else along x or y)
    /// Sums of a factor next to the product (ir/fuse_row_sums.h):
    /// `s = s + p` (on_p) or `s = s + q`, each a private scalar. They add
    /// the staged factor, once per x (or y), in r order like the loop.
    struct Side {
      ir::Stmt update;
      ir::Expr term;
      bool on_p;
    };
    std::vector<Side> sides;
  };
  /// True when the flat offset of some load in `e` is `... + v` (so adjacent
  /// values of v are adjacent in memory).
  static bool unit_stride(const ir::Expr& e, const ir::Var& v) {
    bool found = false;
    ir::each_expr(e, [&](const ir::ExprNode& x) {
      if (x.kind != ExprKind::Load || !x.flat || x.args.empty()) return;
      std::vector<const ir::ExprNode*> terms{x.args[0].get()};
      while (!terms.empty()) {
        const ir::ExprNode* t = terms.back();
        terms.pop_back();
        if (t->kind == ExprKind::Binary && t->binop == BinOp::Add) {
          terms.push_back(t->args[0].get());
          terms.push_back(t->args[1].get());
        } else if (t->kind == ExprKind::VarRef && t->var == v) {
          found = true;
        }
      }
    });
    return found;
  }
  std::optional<GemmPlan> plan_gemm(const Launch& l, const TilePlan& t) {
    if (t.nest->kind != StmtKind::For || only_loop(t.nest->body[0])) return std::nullopt;
    // The product's update first, then any sums of one factor.
    ir::Stmt body = ir::unwrap(t.nest->body[0]);
    if (!body) return std::nullopt;
    std::vector<ir::Stmt> items = ir::items_of(body);
    if (items.empty()) return std::nullopt;
    ir::Stmt st = items[0];
    if (!st || st->kind != StmtKind::Store || !private_.count(st->buffer.get()) || !is_float(st->buffer->type))
      return std::nullopt;
    const ir::Expr& v = st->value;
    if (v->kind != ExprKind::Binary || v->binop != BinOp::Add) return std::nullopt;
    auto is_acc = [&](const ir::Expr& e) { return e->kind == ExprKind::Load && e->buffer == st->buffer; };
    ir::Expr prod = is_acc(v->args[0]) ? v->args[1] : is_acc(v->args[1]) ? v->args[0] : nullptr;
    if (!prod) return std::nullopt;
    if (prod->kind == ExprKind::Cast && is_float(prod->type)) prod = prod->args[0];
    if (prod->kind != ExprKind::Binary || prod->binop != BinOp::Mul || !is_float(prod->type)) return std::nullopt;
    const ir::Var& vx = l.inner[t.x]->var;
    const ir::Var& vy = l.inner[t.y]->var;
    GemmPlan g;
    g.update = st;
    g.p = prod->args[0];
    g.q = prod->args[1];
    if (ir::mentions(g.p, vy) || ir::mentions(g.q, vx)) std::swap(g.p, g.q);
    if (ir::mentions(g.p, vy) || ir::mentions(g.q, vx)) return std::nullopt;
    for (const BufferNode* b : private_)
      if (ir::loads_from(g.p, b) || ir::loads_from(g.q, b)) return std::nullopt;
    const ir::Var& vr = t.nest->var;
    g.p_r_fast = unit_stride(g.p, vr) || !unit_stride(g.p, vx);
    g.q_r_fast = unit_stride(g.q, vr) || !unit_stride(g.q, vy);
    for (size_t k = 1; k < items.size(); ++k) {
      const ir::Stmt& side = items[k];
      if (side->kind != StmtKind::Store || !private_.count(side->buffer.get()) || side->buffer == st->buffer ||
          !is_float(side->buffer->type) || side->value->kind != ExprKind::Binary || side->value->binop != BinOp::Add)
        return std::nullopt;
      const ir::Expr& a = side->value->args[0];
      const ir::Expr& term = side->value->args[1];
      if (a->kind != ExprKind::Load || a->buffer != side->buffer) return std::nullopt;
      bool on_p = ir::same_expr(term, g.p);
      if (!on_p && !ir::same_expr(term, g.q)) return std::nullopt;
      for (const auto& other : items)
        if (other != side && (ir::loads_from(other->value, side->buffer.get()) || other->buffer == side->buffer))
          return std::nullopt;
      g.sides.push_back({side, term, on_p});
    }
    return g;
  }

  /// A row reduction with a warp per row: the innermost parallel body is
  /// `acc = identity; for r { acc = acc OP e }; post` with OP one of +, max,
  /// min on floats. Lane l folds r = l, l + 32, ...; the lanes' partial
  /// results are combined by shuffles and lane 0 runs `post`. Adjacent lanes
  /// read adjacent r (coalesced when r is the unit-stride index). Sums are
  /// reassociated (a different rounding from the serial loop, well within
  /// the tests' tolerance); max and min are exact.
  struct WarpPlan : LoopSplit {  // nest: the reduction loop
    ir::Stmt update;        // acc = OP(acc, e)
    ir::Expr operand;       // e
  };
  std::optional<WarpPlan> plan_warp_rows(const ir::Stmt& body) {
    auto split = split_at_loop(body);
    if (!split || only_loop(split->nest->body[0])) return std::nullopt;
    WarpPlan w;
    static_cast<LoopSplit&>(w) = *split;
    ir::Stmt st = ir::unwrap(w.nest->body[0]);
    if (!st || st->kind != StmtKind::Store || !st->buffer->dims.empty() || !private_.count(st->buffer.get()) ||
        !is_float(st->buffer->type))
      return std::nullopt;
    const BufferNode* acc = st->buffer.get();
    const ir::Expr& v = st->value;
    if (v->kind != ExprKind::Binary) return std::nullopt;
    double identity;
    switch (v->binop) {
      case BinOp::Add: identity = 0; break;
      case BinOp::Max: identity = -INFINITY; break;
      case BinOp::Min: identity = INFINITY; break;
      default: return std::nullopt;
    }
    auto is_acc = [&](const ir::Expr& e) { return e->kind == ExprKind::Load && e->buffer.get() == acc; };
    w.operand = is_acc(v->args[0]) ? v->args[1] : is_acc(v->args[1]) ? v->args[0] : nullptr;
    if (!w.operand || ir::loads_from(w.operand, acc)) return std::nullopt;
    w.update = st;
    // acc starts at the identity of OP (so every lane can start there), and
    // nothing else before the loop touches it.
    int inits = 0;
    for (const auto& p : w.pre) {
      if (p->kind == StmtKind::Store && p->buffer.get() == acc) {
        if (p->value->kind != ExprKind::FloatImm || p->value->float_value != identity) return std::nullopt;
        ++inits;
      } else {
        bool touches = false;
        ir::each_stmt(p, [&](const ir::StmtNode& x) {
          touches = touches || (x.kind == StmtKind::Store && x.buffer.get() == acc);
          ir::own_exprs(x, [&](const ir::ExprNode& e) { touches = touches || (e.kind == ExprKind::Load && e.buffer.get() == acc); });
        });
        if (touches) return std::nullopt;
      }
    }
    if (inits != 1) return std::nullopt;
    // Other private scalars would need a value in every lane: keep it simple.
    for (const BufferNode* b : private_)
      if (b != acc) return std::nullopt;
    return w;
  }

  /// Loads of read-only integer arrays (length arrays, offset arrays the
  /// prelude fills) whose index depends only on the outer loop variable are
  /// made once per outer iteration, into registers: otherwise the compiler
  /// must reload them after every store, which may alias them.
  void hoist_outer_loads(const ir::Stmt& item) {
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

  // ---- device code ----

  std::string var(const ir::Var& v) {
    auto it = vars_.find(v.get());
    if (it != vars_.end()) return it->second;
    return vars_[v.get()] = fmt::format("v{}_{}", vars_.size(), ident(v->name));
  }
  std::string buf_ptr(const BufferNode* b) {
    return fmt::format("(({}*)a.p[{}])", c_type(b->type), slot_.at(b));
  }
  std::string scalar_ref(const BufferNode* b) {
    if (private_.count(b)) return "r_" + names_.buf(b) + (tiled_ ? "[dx][dy]" : "");
    in_memory_.insert(b);
    return buf_ptr(b) + "[0]";
  }
  std::string load_value(const BufferNode* b, const std::string& lvalue) {
    if (b->type == Scalar::BF16) return "dcc_bf16_load(" + lvalue + ")";
    if (b->type == Scalar::F16) return "dcc_f16_load(" + lvalue + ")";
    if (b->type == Scalar::Bool) return "(" + lvalue + " != 0)";
    return lvalue;
  }
  std::string store_value(Scalar t, const std::string& v) {
    if (t == Scalar::BF16) return "dcc_bf16_bits(" + v + ")";
    if (t == Scalar::F16) return "dcc_f16_bits(" + v + ")";
    if (t == Scalar::Bool) return "(uint8_t)(" + v + ")";
    return v;
  }

  std::string cast(const std::string& v, Scalar from, Scalar to) {
    if (from == to) return v;
    if (to == Scalar::Bool) return fmt::format("({} != 0)", v);
    if (is_float(to)) {
      if (to == Scalar::F64) return fmt::format("((double)({}))", v);
      return round_to(to, fmt::format("((float)({}))", v));
    }
    if (is_float(from)) {
      // Saturating (cvt.rzi): NaN gives 0, out-of-range values clamp.
      bool dbl = from == Scalar::F64;
      if (to == Scalar::I32) return fmt::format("{}({})", dbl ? "__double2int_rz" : "__float2int_rz", v);
      return fmt::format("((int64_t){}({}))", dbl ? "__double2ll_rz" : "__float2ll_rz", v);
    }
    return fmt::format("(({})({}))", value_type(to), v);
  }

  std::string expr(const ir::Expr& e) {
    if (auto it = override_.find(e.get()); it != override_.end()) return it->second;
    switch (e->kind) {
      case ExprKind::IntImm:
        if (e->type == Scalar::Bool) return e->int_value ? "true" : "false";
        if (e->type == Scalar::I32) return fmt::format("((int32_t){})", e->int_value);
        if (e->int_value == INT64_MIN) return "INT64_MIN";
        return fmt::format("((int64_t){}LL)", e->int_value);
      case ExprKind::FloatImm: return float_literal(e->float_value, e->type);
      case ExprKind::VarRef: return var(e->var);
      case ExprKind::SizeRef: {
        auto it = size_index_.find(e->name);
        if (it == size_index_.end()) unsupported(f_.at, "the unknown size `" + e->name + "`");
        return fmt::format("a.s[{}]", it->second);
      }
      case ExprKind::Load: {
        const BufferNode* b = e->buffer.get();
        if (b->dims.empty()) return private_.count(b) ? scalar_ref(b) : load_value(b, scalar_ref(b));
        if (!e->flat) unsupported(f_.at, "an access that was not storage-lowered");
        std::string v = load_value(b, fmt::format("{}[{}]", buf_ptr(b), expr(e->args[0])));
        if (auto it = hoisted_.find(v); it != hoisted_.end()) return it->second;
        return v;
      }
      case ExprKind::Cast: return cast(expr(e->args[0]), e->args[0]->type, e->type);
      case ExprKind::Select:
        return fmt::format("(({}) ? ({}) : ({}))", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
      case ExprKind::Unary: return round_to(e->type, unary(e));
      case ExprKind::Binary: return round_to(e->type, binary(e));
    }
    unsupported(f_.at, "this expression");
  }

  std::string unary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    std::string x = expr(e->args[0]);
    bool dbl = t == Scalar::F64;
    auto fn = [&](const char* f32, const char* f64) { return fmt::format("{}({})", dbl ? f64 : f32, x); };
    switch (e->unop) {
      case UnOp::Neg:
        if (is_float(t)) return "(-(" + x + "))";
        return fmt::format("(({})(({})0 - ({})({})))", value_type(t), unsigned_type(t), unsigned_type(t), x);
      case UnOp::Not: return "(!(" + x + "))";
      case UnOp::Abs:
        if (is_float(t)) return fn("fabsf", "fabs");
        return fmt::format("dcc_iabs({})", x);
      case UnOp::Exp: return fn("expf", "exp");
      case UnOp::Log: return fn("logf", "log");
      case UnOp::Sqrt: return fn("sqrtf", "sqrt");
      case UnOp::Rsqrt:
        // In f64, then rounded once, like the CPU target.
        if (dbl) return "(1.0 / sqrt(" + x + "))";
        return "((float)(1.0 / sqrt((double)(" + x + "))))";
      case UnOp::Tanh: return fn("tanhf", "tanh");
      case UnOp::Erf: return fn("erff", "erf");
    }
    unsupported(f_.at, "this unary operator");
  }

  std::string binary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    std::string a = expr(e->args[0]), c = expr(e->args[1]);
    bool dbl = t == Scalar::F64;
    switch (e->binop) {
      case BinOp::And: return fmt::format("(({}) && ({}))", a, c);
      case BinOp::Or: return fmt::format("(({}) || ({}))", a, c);
      case BinOp::EQ: return fmt::format("(({}) == ({}))", a, c);
      case BinOp::NE: return fmt::format("(({}) != ({}))", a, c);
      case BinOp::LT: return fmt::format("(({}) < ({}))", a, c);
      case BinOp::LE: return fmt::format("(({}) <= ({}))", a, c);
      default: break;
    }
    if (is_float(t)) {
      switch (e->binop) {
        case BinOp::Add: return fmt::format("(({}) + ({}))", a, c);
        // The masked-value rules (ir/masked_arith.h).
        case BinOp::Sub: return fmt::format("dcc_fsub({}, {})", a, c);
        case BinOp::Mul: return fmt::format("(({}) * ({}))", a, c);
        case BinOp::Div: return fmt::format("dcc_fdiv({}, {})", a, c);
        case BinOp::Mod: return fmt::format("{}({}, {})", dbl ? "fmod" : "fmodf", a, c);
        case BinOp::Min: return fmt::format("{}({}, {})", dbl ? "fmin" : "fminf", a, c);
        case BinOp::Max: return fmt::format("{}({}, {})", dbl ? "fmax" : "fmaxf", a, c);
        case BinOp::Pow: return fmt::format("{}({}, {})", dbl ? "pow" : "powf", a, c);
        default: break;
      }
      unsupported(f_.at, "this float operator");
    }
    const char* vt = value_type(t);
    const char* ut = unsigned_type(t);
    switch (e->binop) {
      // Wrapping, like the CPU target: computed unsigned.
      case BinOp::Add: return fmt::format("(({})(({})({}) + ({})({})))", vt, ut, a, ut, c);
      case BinOp::Sub: return fmt::format("(({})(({})({}) - ({})({})))", vt, ut, a, ut, c);
      case BinOp::Mul: return fmt::format("(({})(({})({}) * ({})({})))", vt, ut, a, ut, c);
      case BinOp::Div: uses_err_ = true; return fmt::format("(({})dcc_idiv({}, {}, a.err))", vt, a, c);
      case BinOp::Mod: uses_err_ = true; return fmt::format("(({})dcc_imod({}, {}, a.err))", vt, a, c);
      case BinOp::Min: return fmt::format("dcc_imin(({}), ({}))", a, c);
      case BinOp::Max: return fmt::format("dcc_imax(({}), ({}))", a, c);
      case BinOp::Pow: return cast(fmt::format("pow((double)({}), (double)({}))", a, c), Scalar::F64, t);
      default: break;
    }
    unsupported(f_.at, "this integer operator");
  }

  void stmt(const ir::Stmt& s, int depth, std::string& out) {
    if (!s) return;
    std::string pad(depth * 2, ' ');
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& c : s->body) stmt(c, depth, out);
        return;
      case StmtKind::For: {
        std::string v = var(s->var);
        out += fmt::format("{}for (int64_t {} = 0, {}_n = {}; {} < {}_n; ++{}) {{\n", pad, v, v, expr(s->extent), v, v, v);
        stmt(s->body[0], depth + 1, out);
        out += pad + "}\n";
        return;
      }
      case StmtKind::Store: {
        const BufferNode* b = s->buffer.get();
        std::string v = expr(s->value);
        if (s->value->type != b->type) v = cast(v, s->value->type, b->type);
        if (b->dims.empty()) {
          if (private_.count(b)) out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), v);
          else out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), store_value(b->type, v));
        } else {
          if (!s->flat) unsupported(f_.at, "a store that was not storage-lowered");
          if (is_max_update(*s) && nan_free_max_.count(b))
            out += fmt::format("{}dcc_red_fmax(&{}[{}], {});\n", pad, buf_ptr(b), expr(s->args[0]), expr(s->value->args[1]));
          else
            out += fmt::format("{}{}[{}] = {};\n", pad, buf_ptr(b), expr(s->args[0]), store_value(b->type, v));
        }
        return;
      }
      case StmtKind::IfThenElse:
        out += fmt::format("{}if ({}) {{\n", pad, expr(s->value));
        stmt(s->body[0], depth + 1, out);
        if (s->body.size() > 1 && s->body[1]) {
          out += pad + "} else {\n";
          stmt(s->body[1], depth + 1, out);
        }
        out += pad + "}\n";
        return;
      case StmtKind::Print: unsupported(s->at.valid() ? s->at : f_.at, "`print` in a kernel");
      case StmtKind::Assert: unsupported(s->at.valid() ? s->at : f_.at, "the `where` of an inlined call checked in a kernel");
    }
  }

  static ir::Stmt only_loop(const ir::Stmt& body) {
    ir::Stmt s = ir::unwrap(body);
    return s && s->kind == StmtKind::For ? s : nullptr;
  }

  Launch emit_kernel(const ir::Stmt& item, int index) {
    Launch l;
    l.kernel = fmt::format("{}__k{}", f_.name, index);
    private_.clear();
    for (const auto& m : f_.gpu_mappings)
      if (item->kind == StmtKind::For && !m.blocks.empty() && m.blocks[0] == item->var) l.mapping = &m;
    if (l.mapping) {
      emit_mapped_kernel(item, l);
    } else if (plan_ranges(item, l)) {
      emit_ranges_kernel(item, l);
    } else if (item->kind == StmtKind::For && is_parallel_loop(item, nan_free_max_)) {
      l.parallel = true;
      l.outer = item;
      ir::Stmt cur = item;
      while (l.inner.size() < 3) {
        ir::Stmt next = only_loop(cur->body[0]);
        if (!next || !is_parallel_loop(next, nan_free_max_)) break;
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
  void emit_mapped_kernel(const ir::Stmt& item, Launch& l) {
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
      if (!is_parallel_loop(cur, nan_free_max_))
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
      if (!is_parallel_loop(cur, nan_free_max_))
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
      while (l.inner.size() < 3 && cur && cur->kind == StmtKind::For && is_parallel_loop(cur, nan_free_max_)) {
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
  /// A parallel loop whose body is an `if` / `else` chain by range (ir/hfuse:
  /// each range runs one statement's nest) where every range is a perfect
  /// nest of parallel loops: each range's loops (up to three, extents
  /// independent of each other and host-computable, as the default mapping
  /// takes them) are flattened over the threads, instead of one thread per
  /// iteration of the fused loop. The conditions must be host-computable
  /// (the launch is sized from the largest range).
  bool plan_ranges(const ir::Stmt& item, Launch& l) {
    if (item->kind != StmtKind::For || !is_parallel_loop(item, nan_free_max_)) return false;
    ir::Stmt cur = ir::unwrap(item->body[0]);
    if (!cur || cur->kind != StmtKind::IfThenElse || cur->body.size() < 2 || !cur->body[1]) return false;
    auto host_ok = [](const ir::Expr& e) {
      bool ok = true;
      ir::each_expr(e, [&](const ir::ExprNode& x) {
        if (x.kind == ExprKind::Load && x.buffer->kind != BufferKind::Input && x.buffer->kind != BufferKind::Aux) ok = false;
      });
      return ok;
    };
    std::vector<std::pair<ir::Expr, std::vector<ir::Stmt>>> ranges;
    auto nest = [&](const ir::Stmt& body) {
      std::vector<ir::Stmt> inner;
      ir::Stmt x = only_loop(body);
      while (inner.size() < 3 && x && is_parallel_loop(x, nan_free_max_)) {
        bool ok = true;
        for (const auto& in : inner)
          if (ir::mentions(x->extent, in->var)) ok = false;
        if (!ok) break;
        inner.push_back(x);
        x = only_loop(x->body[0]);
      }
      return inner;
    };
    while (cur && cur->kind == StmtKind::IfThenElse && cur->body.size() > 1 && cur->body[1]) {
      if (!host_ok(cur->value)) return false;
      ranges.emplace_back(cur->value, nest(cur->body[0]));
      cur = ir::unwrap(cur->body[1]);
    }
    ranges.emplace_back(nullptr, nest(cur));
    for (const auto& r : ranges)
      if (r.second.empty()) return false;
    l.ranges = std::move(ranges);
    return true;
  }

  void emit_ranges_kernel(const ir::Stmt& item, Launch& l) {
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

  /// `text` with `delta` (negative: removed) spaces of indentation per line.
  static std::string indent_text(const std::string& text, int delta) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      size_t lead = line.find_first_not_of(' ');
      if (lead == std::string::npos) lead = line.size();
      int keep = std::max(0, static_cast<int>(lead) + delta);
      out += std::string(keep, ' ') + line.substr(lead) + "\n";
      start = end + 1;
    }
    return out;
  }

  void emit_tiled_kernel(const Launch& l, const TilePlan& plan) {
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
  std::string tile_lanes(const std::string& vx, const std::string& xf, const std::string& vy, const std::string& yf,
                         int depth, bool guard, const std::function<void(std::string&, int)>& inner,
                         int lanes = kTile, int lanes_y = 0) {
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
  void emit_pre(const TilePlan& plan, const std::function<std::string(int, bool, const std::function<void(std::string&, int)>&)>& lanes,
                std::string& body) {
    for (const auto& st : plan.pre) {
      bool private_only = true;
      ir::each_stmt(st, [&](const ir::StmtNode& x) {
        if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) private_only = false;
      });
      body += lanes(2, !private_only, [&](std::string& o, int d) { stmt(st, d, o); });
    }
  }

  /// True when `e` is affine in `v` under wrapping 64-bit arithmetic: built
  /// from +, - and * (one side free of v) over v itself, with v in no load
  /// and no cast. Then e(v) = e(0) + v * (e(1) - e(0)) exactly.
  static bool affine_in(const ir::Expr& e, const ir::Var& v) {
    if (!ir::mentions(e, v)) return true;
    if (e->type != Scalar::I64) return false;
    switch (e->kind) {
      case ExprKind::VarRef: return true;
      case ExprKind::Binary:
        if (e->binop == BinOp::Add || e->binop == BinOp::Sub) return affine_in(e->args[0], v) && affine_in(e->args[1], v);
        if (e->binop == BinOp::Mul)
          return (!ir::mentions(e->args[0], v) && affine_in(e->args[1], v)) ||
                 (!ir::mentions(e->args[1], v) && affine_in(e->args[0], v));
        return false;
      default: return false;
    }
  }

  /// d e / d v for an expression affine in v (affine_in), built from e's
  /// own sub-expressions: it does not mention v.
  static ir::Expr coefficient(const ir::Expr& e, const ir::Var& v) {
    if (!ir::mentions(e, v)) return ir::build::int_imm(0);
    if (e->kind == ExprKind::VarRef) return ir::build::int_imm(1);
    const ir::Expr &a = e->args[0], &b = e->args[1];
    if (e->binop == BinOp::Add) return ir::build::binary(BinOp::Add, coefficient(a, v), coefficient(b, v));
    if (e->binop == BinOp::Sub) return ir::build::binary(BinOp::Sub, coefficient(a, v), coefficient(b, v));
    if (!ir::mentions(a, v)) return ir::build::binary(BinOp::Mul, a, coefficient(b, v));
    return ir::build::binary(BinOp::Mul, coefficient(a, v), b);
  }

  /// The offsets of the flat loads in `e` (inner ones first) and, for a
  /// statement, of its flat store.
  static void flat_offsets(const ir::Expr& e, std::vector<ir::Expr>& out) {
    if (!e) return;
    for (const auto& a : e->args) flat_offsets(a, out);
    if (e->kind == ExprKind::Load && e->flat) out.push_back(e->args[0]);
  }
  static void flat_offsets(const ir::Stmt& st, std::vector<ir::Expr>& out) {
    ir::each_stmt(st, [&](const ir::StmtNode& x) {
      flat_offsets(x.extent, out);
      flat_offsets(x.value, out);
      for (const auto& a : x.args) flat_offsets(a, out);
      if (x.kind == StmtKind::Store && x.flat) out.push_back(x.args[0]);
    });
  }

  /// Offsets affine in two loop variables are computed once per tile as
  /// base + u * cu + w * cw (wrapping, as every offset). For each of the
  /// `offsets` that mentions u or w and is affine in both,
  /// declares NAMEk_b (the offset at u = U0, w = W0, C expressions), NAMEk_u
  /// and NAMEk_w, and returns the offset nodes with their names.
  std::vector<std::pair<const ir::ExprNode*, std::string>> hoist_affine(const std::vector<ir::Expr>& offsets, const ir::Var& u,
                                                                      const std::string& u0, const ir::Var& w,
                                                                      const std::string& w0, const std::string& name,
                                                                      std::string& decl) {
    std::vector<std::pair<const ir::ExprNode*, std::string>> out;
    for (const auto& off : offsets) {
      if (!(ir::mentions(off, u) || ir::mentions(off, w)) || !affine_in(off, u) || !affine_in(off, w)) continue;
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
  void emit_gemm_kernel(const Launch& l, const TilePlan& plan, const GemmPlan& g) {
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
      // Sums of one factor: lane [dx][0] (or [0][dy]) adds each staged value.
      for (const auto& side : g.sides) {
        override_[side.term.get()] = side.on_p ? "pa[dx]" : "qb[dy]";
        c += fmt::format("        {{\n          const int {} = 0;\n          #pragma unroll\n          for (int {} = 0; {} < {}; ++{}) {{\n",
                         side.on_p ? "dy" : "dx", side.on_p ? "dx" : "dy", side.on_p ? "dx" : "dy", side.on_p ? rows : kTileY,
                         side.on_p ? "dx" : "dy");
        stmt(side.update, 6, c);
        c += "          }\n        }\n";
        override_.clear();
      }
      c += "      }\n";
      return c;
    };
    if (kTileX == 8)
      body += fmt::format("      if (x0 + {} >= {}_n) {{\n{}      }} else {{\n{}      }}\n", 4 * kSide, vx, compute(4), compute(8));
    else
      body += compute(kTileX);
    body += "      __syncthreads();\n    }\n";
    // ... and every lane of the row (column) takes that sum.
    for (const auto& side : g.sides) {
      std::string r = "r_" + names_.buf(side.update->buffer.get());
      body += fmt::format("    #pragma unroll\n    for (int dx = 0; dx < {}; ++dx) {{\n      #pragma unroll\n"
                          "      for (int dy = 0; dy < {}; ++dy) {}[dx][dy] = {}[{}][{}];\n    }}\n",
                          kTileX, kTileY, r, r, side.on_p ? "dx" : "0", side.on_p ? "0" : "dy");
    }
    // The epilogue: offsets affine in x and y from the thread's first lane.
    std::vector<ir::Expr> post_offsets;
    for (const auto& st : plan.post) flat_offsets(st, post_offsets);
    for (const auto& [node, n] : hoist_affine(post_offsets, l.inner[plan.x]->var, "x0 + 4 * ty", l.inner[plan.y]->var,
                                              "y0 + 4 * tx", "out_off", body))
      override_[node] = fmt::format(
          "((int64_t)((uint64_t){0}_b + (uint64_t){1} * (uint64_t){0}_u + (uint64_t){2} * (uint64_t){0}_w))", n, lane_x, lane_y);
    for (const auto& st : plan.post) {
      if (is_max_update(*st) && nan_free_max_.count(st->buffer.get()) && !ir::mentions(st->args[0], l.inner[plan.y]->var))
        body += row_max(*st, vx, "x0 + 4 * ty + " + lane_x, vy, "y0 + 4 * tx + " + lane_y);
      else
        body += lanes(2, true, [&](std::string& o, int d) { stmt(st, d, o); });
    }
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

  /// A max update of a row (`st`, whose offset ignores y) in the contraction
  /// kernel's epilogue: each thread folds its lanes of a row, the kSide
  /// threads of a row (half a warp, adjacent tx) fold theirs by shuffles, and
  /// the thread with tx = 0 folds the result into memory: one atomic per
  /// row and block instead of one per element. NaN is fmax's identity.
  std::string row_max(const ir::StmtNode& st, const std::string& vx, const std::string& xf, const std::string& vy,
                      const std::string& yf) {
    const bool dbl = st.buffer->type == Scalar::F64;
    const char* t = dbl ? "double" : "float";
    const char* fmax = dbl ? "fmax" : "fmaxf";
    const char* nan = dbl ? "__longlong_as_double(0x7fffffffffffffffLL)" : "__int_as_float(0x7fffffff)";
    std::string o = fmt::format("    {{\n      {} rm[{}];\n      #pragma unroll\n      for (int dx = 0; dx < {}; ++dx) rm[dx] = {};\n", t,
                                kTileX, kTileX, nan);
    o += tile_lanes(vx, xf, vy, yf, 3, true,
                    [&](std::string& s, int d) {
                      s += fmt::format("{}rm[dx] = {}(rm[dx], {});\n", std::string(d * 2, ' '), fmax, expr(st.value->args[1]));
                    },
                    kTileX, kTileY);
    o += fmt::format("      #pragma unroll\n      for (int dx = 0; dx < {}; ++dx) {{\n        #pragma unroll\n"
                     "        for (int m = {}; m > 0; m >>= 1) rm[dx] = {}(rm[dx], __shfl_xor_sync(0xffffffffu, rm[dx], m));\n      }}\n",
                     kTileX, kSide / 2, fmax);
    o += "      if (tx == 0) {\n";
    o += tile_lanes(vx, xf, vy, yf, 4, true,
                    [&](std::string& s, int d) {
                      s += fmt::format("{}dcc_red_fmax(&{}[{}], rm[dx]);\n", std::string(d * 2, ' '), buf_ptr(st.buffer.get()),
                                       expr(st.args[0]));
                    },
                    kTileX, 1);
    o += "      }\n    }\n";
    return o;
  }

  /// See WarpPlan: warps stride over the flattened inner loops.
  void emit_warp_rows_kernel(const Launch& l, const WarpPlan& w) {
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

  static std::string indent(const std::string& text, int extra) {
    std::string pad(extra * 2, ' '), out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out += pad + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return out;
  }

  void declare_private(std::string& body, int depth) {
    std::string pad(depth * 2, ' ');
    for (const BufferNode* b : private_in_order()) body += fmt::format("{}{} r_{} = 0;\n", pad, value_type(b->type), names_.buf(b));
  }

  // ---- host code ----

  /// Every extent and total must be computable on the host: from sizes,
  /// input length arrays and aux arrays (not from arrays the body computes).
  void check_host_computable() {
    auto host_ok = [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && x.buffer->kind != BufferKind::Input && x.buffer->kind != BufferKind::Aux)
        unsupported(x.buffer->at.valid() ? x.buffer->at : f_.at,
                    "extents computed by the program itself (`" + x.buffer->name + "`)");
    };
    for (const auto& b : f_.buffers) ir::each_expr(b->total, host_ok);
    ir::each_stmt(f_.prelude, [&](const ir::StmtNode& s) { ir::own_exprs(s, host_ok); });
    ir::each_stmt(f_.body, [&](const ir::StmtNode& s) {
      if (s.kind == StmtKind::For) ir::each_expr(s.extent, host_ok);
    });
    // The wrapper passes host copies of every integer input array.
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) host_len_.insert(b.get());
  }

  /// The sizes by name (`s_B`), as host code refers to them.
  std::string size_decls() const {
    std::string o;
    for (size_t k = 0; k < f_.sizes.size(); ++k)
      o += fmt::format("  const int64_t s_{0} = sizes[{1}];\n  (void)s_{0};\n", names_.size(f_.sizes[k].name), k);
    return o;
  }

  void emit_launcher(const std::vector<Launch>& launches) {
    const std::string& fn = f_.name;
    std::string o;
    // aux_dev/aux_host: the aux arrays (Func::buffers order) on the device
    // and on the host, from the prelude cache or a held prelude (C ABI); NULL:
    // computed here on the host and uploaded, per call.
    o += fmt::format("extern \"C\" int32_t {}__cuda(const int64_t* sizes, void* const* dev, void* const* host, "
                     "void* const* aux_dev, void* const* aux_host) {{\n", fn);
    o += fmt::format("  const int nb = {};\n", f_.buffers.size());
    o += "  std::vector<void*> hp(nb > 0 ? nb : 1, nullptr);   // host views: length arrays, aux arrays\n";
    o += "  std::vector<void*> owned;                           // device memory freed at the end\n";
    o += "  std::vector<void*> host_owned;\n";
    o += fmt::format("  {}__args a;\n  std::memset(&a, 0, sizeof a);\n", fn);
    o += fmt::format("  for (int k = 0; k < {}; ++k) a.s[k] = sizes[k];\n", f_.sizes.size());
    o += size_decls();
    o += "  int ovf = 0;\n  (void)ovf;\n  int32_t st = 0;\n  int err_host = 0;\n  (void)err_host;\n";
    // Stream-ordered allocations from the device's pool, which keeps freed
    // memory for the next call (dcc_cuda_init raises its release threshold).
    o += "  if (dcc_cuda_init() != 0) return DCC_ERR_CUDA;\n";
    // zero = false: a local whose first statement stores every element
    // (BufferNode::zero_fill); filled with 0xFF only under DCC_POISON_UNINIT.
    o += "  auto dalloc = [&](size_t bytes, void** p, bool zero = true) -> bool {\n"
         "    if (bytes == 0) bytes = 1;\n"
         "    cudaError_t e = cudaMallocAsync(p, bytes, 0);\n"
         "    if (e != cudaSuccess) { *p = nullptr; dcc_cuda_fail(e, \"allocating device memory\"); return false; }\n"
         "    owned.push_back(*p);\n"
         "    if ((zero || dcc_cuda_poison()) && (e = cudaMemsetAsync(*p, zero ? 0 : 0xFF, bytes, 0)) != cudaSuccess) {\n"
         "      dcc_cuda_fail(e, \"cudaMemsetAsync\");\n      return false;\n    }\n"
         "    return true;\n  };\n";
    o += "  DccProfile prof;\n";
    // The error flag, where a kernel divides integers (dcc_idiv, dcc_imod).
    if (uses_err_) o += "  if (!dalloc(sizeof(int), (void**)&a.err)) { st = DCC_ERR_CUDA; goto done; }\n";
    // Inputs and outputs: device pointers; scalars go through device slots.
    size_t dev_slot = 0;
    for (const auto& b : f_.buffers) {
      int k = slot_.at(b.get());
      if (b->kind == BufferKind::Input || b->kind == BufferKind::Output) {
        if (b->dims.empty()) {
          o += fmt::format("  if (!dalloc(8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", k);
          if (b->kind == BufferKind::Input)
            o += fmt::format("  if (cudaMemcpy(a.p[{}], dev[{}], sizeof({}), cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                             k, dev_slot, c_type(b->type));
        } else {
          o += fmt::format("  a.p[{}] = dev[{}];\n", k, dev_slot);
          if (host_len_.count(b.get())) o += fmt::format("  hp[{}] = host[{}];\n", k, dev_slot);
        }
        ++dev_slot;
      }
    }
    // The prelude on the host, then uploaded (unless given).
    o += "  if (aux_host) {\n";
    for (int i = 0; const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux) {
        o += fmt::format("    hp[{0}] = aux_host[{1}];\n    a.p[{0}] = aux_dev[{1}];\n", slot_.at(b.get()), i);
        ++i;
      }
    o += "  } else {\n";
    auto host_aux = [&](const ir::Buffer& b) {
      int k = slot_.at(b.get());
      o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", host_.expr(b->total));
      o += fmt::format("    if (ovf || n < 0) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: offset array size overflows\"); goto done; }}\n", fn);
      o += fmt::format("    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n", k, k);
      o += fmt::format("    if (!hp[{}]) {{ st = dcc_set_error(DCC_ERR_OUT_OF_MEMORY, \"{}: cannot allocate an offset array\"); goto done; }}\n  }}\n", k, fn);
    };
    std::vector<ir::Buffer> later = aux_sized_later();
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux && std::find(later.begin(), later.end(), b) == later.end()) host_aux(b);
    if (f_.prelude && !later.empty()) {
      // An aux array sized by another (`fuse`'s maps) is allocated after the
      // statements before the one that fills it.
      o += "  ovf = 0;\n";
      for (const auto& item : prelude_items()) {
        for (const auto& b : later)
          if (fills(item, b)) {
            o += fmt::format("  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
            host_aux(b);
          }
        o += "  {\n";
        host_.stmt(item, 2, o);
        o += "  }\n";
      }
      o += fmt::format("  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
    } else if (f_.prelude) {
      o += "  ovf = 0;\n  {\n";
      host_.stmt(f_.prelude, 2, o);
      o += fmt::format("  }}\n  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
    }
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux) {
        int k = slot_.at(b.get());
        o += fmt::format("  {{\n    const int64_t n = {};\n", host_.expr(b->total));
        o += fmt::format("    if (!dalloc((size_t)n * 8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", k);
        o += fmt::format("    if (n > 0 && cudaMemcpy(a.p[{}], hp[{}], (size_t)n * 8, cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n  }}\n",
                         k, k);
      }
    o += "  }\n";
    for (const auto& b : f_.buffers) {
      int k = slot_.at(b.get());
      // A scalar that every kernel keeps in registers needs no memory.
      if (b->kind == BufferKind::Scalar && b->dims.empty() && !in_memory_.count(b.get())) continue;
      if (b->kind == BufferKind::Local || b->kind == BufferKind::Scalar) {
        o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", b->dims.empty() ? "(int64_t)1" : host_.expr(b->total));
        o += fmt::format("    if (ovf || n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the size of `{}` overflows\"); goto done; }}\n",
                         fn, b->name);
        o += fmt::format("    if (!dalloc((size_t)n * sizeof({}), &a.p[{}]{})) {{ st = DCC_ERR_CUDA; goto done; }}\n  }}\n",
                         c_type(b->type), k, b->zero_fill ? "" : ", false");
      }
    }
    // The kernels, in statement order on the default stream.
    for (const auto& l : launches) {
      o += "  {\n    ovf = 0;\n    prof.start();\n";
      if (!l.parallel) {
        o += fmt::format("    {}<<<1, 1>>>(a);\n", l.kernel);
      } else if (!l.ranges.empty()) {
        // The fused loop on y; threads over the largest range's loops.
        std::string v0 = host_.var(l.outer->var);
        o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 0;\n", host_.expr(l.outer->extent));
        o += fmt::format("    for (int64_t {0} = 0; {0} < n0; ++{0}) {{\n      int64_t m = 1;\n", v0);
        for (size_t k = 0; k < l.ranges.size(); ++k) {
          const auto& [cond, inner] = l.ranges[k];
          o += cond ? fmt::format("      {}if ({}) {{\n", k ? "} else " : "", host_.expr(cond)) : "      } else {\n";
          for (const auto& in : inner) o += fmt::format("        m = dcc__mul(m, {}, &ovf);\n", host_.expr(in->extent));
        }
        o += "      }\n      most = std::max(most, m);\n    }\n";
        o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
        o += "    if (n0 > 0 && most > 0) {\n";
        o += "      dim3 grid((unsigned)std::min<int64_t>((most + 255) / 256, 4096), (unsigned)std::min<int64_t>(n0, 65535));\n";
        o += fmt::format("      {}<<<grid, 256>>>(a);\n    }}\n", l.kernel);
      } else if (l.mapping) {
        // A block per iteration of the grid's loops (gpu_blocks).
        o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 1;\n", host_.expr(l.blocks[0]->extent));
        if (l.blocks.size() > 1) {
          std::string v0 = host_.var(l.blocks[0]->var);
          o += fmt::format("    most = 0;\n    for (int64_t {0} = 0; {0} < n0; ++{0}) {{\n", v0);
          for (const auto& g : l.grid_guards) o += fmt::format("      if (!({})) continue;\n", host_.expr(g));
          o += fmt::format("      most = std::max<int64_t>(most, {});\n    }}\n", host_.expr(l.blocks[1]->extent));
        }
        o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
        o += "    if (n0 > 0 && most > 0) {\n";
        if (l.blocks.size() > 1)
          o += "      dim3 grid((unsigned)std::min<int64_t>(most, 1 << 20), (unsigned)std::min<int64_t>(n0, 65535));\n";
        else
          o += "      dim3 grid((unsigned)std::min<int64_t>(n0, 1 << 20));\n";
        o += fmt::format("      {}<<<grid, {}>>>(a);\n    }}\n", l.kernel, l.block_dim);
      } else if (l.inner.empty()) {
        o += fmt::format("    const int64_t n = {};\n", host_.expr(l.outer->extent));
        o += fmt::format("    if (n > 0) {}<<<(unsigned)std::min<int64_t>((n + 255) / 256, 65535), 256>>>(a);\n", l.kernel);
      } else {
        std::string v0 = host_.var(l.outer->var);
        o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 0;\n", host_.expr(l.outer->extent));
        o += fmt::format("    for (int64_t {} = 0; {} < n0; ++{}) {{\n      int64_t m = 1;\n", v0, v0, v0);
        for (size_t k = 0; k < l.inner.size(); ++k) {
          std::string n = host_.expr(l.inner[k]->extent);
          int tile = !l.block_tiles ? kTile : static_cast<int>(k) == l.tile_x ? kBlockX : kBlockY;
          if (static_cast<int>(k) == l.tile_x || static_cast<int>(k) == l.tile_y)
            n = fmt::format("(({} + {}) / {})", n, tile - 1, tile);
          o += fmt::format("      m = dcc__mul(m, {}, &ovf);\n", n);
        }
        o += "      most = std::max(most, m);\n    }\n";
        o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
        o += "    if (n0 > 0 && most > 0) {\n";
        // Threads over the flattened space, or (block_tiles) a block per tile.
        o += fmt::format("      dim3 grid((unsigned)std::min<int64_t>({}, {}), (unsigned)std::min<int64_t>(n0, 65535));\n",
                         l.block_tiles ? "most" : l.warp_rows ? "(most + 7) / 8" : "(most + 255) / 256",
                         l.block_tiles ? 65535 : 4096);
        o += fmt::format("      {}<<<grid, {}>>>(a);\n    }}\n", l.kernel, l.block_tiles ? kGemmThreads : 256);
      }
      o += fmt::format("    prof.stop(\"{}\");\n", l.kernel);
      o += "    cudaError_t e = cudaGetLastError();\n";
      o += fmt::format("    if (e != cudaSuccess) {{ st = dcc_cuda_fail(e, \"launching {}\"); goto done; }}\n  }}\n", l.kernel);
    }
    o += "  {\n    cudaError_t e = cudaDeviceSynchronize();\n";
    o += "    if (e != cudaSuccess) { st = dcc_cuda_fail(e, \"running the kernels\"); goto done; }\n";
    if (uses_err_) {
      o += "    if ((e = cudaMemcpy(&err_host, a.err, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) { st = dcc_cuda_fail(e, \"cudaMemcpy\"); goto done; }\n";
      o += "    if (err_host == 1) { st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"integer division by zero\"); goto done; }\n";
      o += "    if (err_host == 2) { st = dcc_set_error(DCC_ERR_OVERFLOW, \"integer division overflow\"); goto done; }\n";
    }
    o += "  }\n";
    // Scalar results come back to the host.
    dev_slot = 0;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->kind == BufferKind::Output && b->dims.empty())
        o += fmt::format("  if (cudaMemcpy(dev[{}], a.p[{}], sizeof({}), cudaMemcpyDeviceToHost) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                         dev_slot, slot_.at(b.get()), c_type(b->type));
      ++dev_slot;
    }
    o += "done:\n  for (void* p : owned) cudaFreeAsync(p, 0);\n  for (void* p : host_owned) std::free(p);\n  return st;\n}\n\n";
    out_ += o;
  }

  /// f__cuda_host: host buffers in, host buffers out (tests).
  void emit_host_entry() {
    const std::string& fn = f_.name;
    std::string o;
    o += fmt::format("extern \"C\" int32_t {}__cuda_host(const int64_t* sizes, void* const* hb) {{\n", fn);
    o += size_decls();
    o += fmt::format("  const int nb = {};\n", f_.buffers.size());
    o += "  std::vector<void*> hp(nb > 0 ? nb : 1, nullptr), host_owned, owned;\n";
    o += "  std::vector<void*> dev, host;\n  int ovf = 0;\n  (void)ovf;\n  int32_t st = 0;\n";
    // Host views of the length arrays for the totals.
    size_t slot = 0;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->kind == BufferKind::Input && !b->dims.empty()) o += fmt::format("  hp[{}] = hb[{}];\n", slot_.at(b.get()), slot);
      ++slot;
    }
    auto host_aux = [&](const ir::Buffer& b) {
      int k = slot_.at(b.get());
      o += fmt::format("  {{\n    const int64_t n = {};\n    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n  }}\n",
                       host_.expr(b->total), k, k);
    };
    std::vector<ir::Buffer> later = aux_sized_later();
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux && std::find(later.begin(), later.end(), b) == later.end()) host_aux(b);
    if (f_.prelude && !later.empty()) {
      for (const auto& item : prelude_items()) {
        for (const auto& b : later)
          if (fills(item, b)) host_aux(b);
        o += "  {\n";
        host_.stmt(item, 2, o);
        o += "  }\n";
      }
    } else if (f_.prelude) {
      o += "  {\n";
      host_.stmt(f_.prelude, 2, o);
      o += "  }\n";
    }
    slot = 0;
    std::string copy_back;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->dims.empty()) {
        o += fmt::format("  dev.push_back(hb[{}]);\n  host.push_back(nullptr);\n", slot);
      } else {
        o += fmt::format("  {{\n    const size_t bytes = (size_t){} * sizeof({});\n    void* p = nullptr;\n", host_.expr(b->total), c_type(b->type));
        o += "    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) { st = dcc_cuda_fail(cudaGetLastError(), \"cudaMalloc\"); goto done; }\n";
        o += "    owned.push_back(p);\n";
        if (b->kind == BufferKind::Input)
          o += fmt::format("    if (bytes) cudaMemcpy(p, hb[{}], bytes, cudaMemcpyHostToDevice);\n", slot);
        o += fmt::format("    dev.push_back(p);\n    host.push_back(hb[{}]);\n  }}\n", slot);
        if (b->kind == BufferKind::Output)
          copy_back += fmt::format("  {{\n    const size_t bytes = (size_t){} * sizeof({});\n    if (bytes) cudaMemcpy(hb[{}], dev[{}], bytes, cudaMemcpyDeviceToHost);\n  }}\n",
                                   host_.expr(b->total), c_type(b->type), slot, slot);
      }
      ++slot;
    }
    o += fmt::format("  st = {}__cuda(sizes, dev.data(), host.data(), nullptr, nullptr);\n  if (st) goto done;\n", fn);
    o += copy_back;
    o += "done:\n  for (void* p : owned) cudaFree(p);\n  for (void* p : host_owned) std::free(p);\n  return st;\n}\n\n";
    out_ += o;
  }

  /// Aux arrays whose size reads another aux array (`fuse`'s maps): they
  /// are allocated just before the prelude statement that fills them.
  std::vector<ir::Buffer> aux_sized_later() const {
    std::vector<ir::Buffer> out;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Aux) continue;
      bool reads = false;
      ir::each_expr(b->total, [&](const ir::ExprNode& e) {
        reads |= e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux;
      });
      if (reads) out.push_back(b);
    }
    return out;
  }
  std::vector<ir::Stmt> prelude_items() const {
    return f_.prelude->kind == StmtKind::Seq ? f_.prelude->body : std::vector<ir::Stmt>{f_.prelude};
  }
  /// Whether `item` is the first prelude statement storing `b`.
  bool fills(const ir::Stmt& item, const ir::Buffer& b) const {
    bool first = false;
    for (const auto& x : prelude_items()) {
      bool st = false;
      ir::each_stmt(x, [&](const ir::StmtNode& y) { st |= y.kind == StmtKind::Store && y.buffer == b; });
      if (st) return x == item;
    }
    return first;
  }

  const ir::Func& f_;
  std::string& out_;
  const CNames names_;  // C names of the buffers and sizes (c_emit.h)
  std::map<const BufferNode*, int> slot_;
  std::map<std::string, int> size_index_;
  CEmitter host_;  // host code: totals, the prelude, launch sizes
  std::map<const ir::VarNode*, std::string> vars_;
  std::set<const BufferNode*> private_;
  /// Scalars some kernel reads or writes in device memory (not private).
  std::set<const BufferNode*> in_memory_;
  /// True when some kernel divides integers and may set the error flag.
  bool uses_err_ = false;
  /// Local float tensors whose every store is a max update or a constant
  /// that is not NaN: their memory never holds a NaN with the sign bit clear
  /// (they start zero-filled, poisoned with 0xFF bytes, or at such a
  /// constant, and fmax skips NaN), so a max update can fold into them
  /// with an integer atomic that returns nothing (dcc_red_fmax).
  std::set<const BufferNode*> nan_free_max_;
  void find_nan_free_maxima() {
    std::set<const BufferNode*> updated, other;
    ir::each_stmt(f_.body, [&](const ir::StmtNode& s) {
      if (s.kind != StmtKind::Store) return;
      const BufferNode* b = s.buffer.get();
      if (is_max_update(s)) updated.insert(b);
      else if (s.value->kind != ExprKind::FloatImm || std::isnan(s.value->float_value) || s.value->type != b->type) other.insert(b);
    });
    for (const BufferNode* b : updated)
      if (b->kind == BufferKind::Local && !other.count(b)) nan_free_max_.insert(b);
  }

  /// private_ in the function's buffer order: declarations in a fixed order
  /// (a set of pointers iterates in allocation order, which varies).
  std::vector<const BufferNode*> private_in_order() const {
    std::vector<const BufferNode*> out;
    for (const auto& b : f_.buffers)
      if (private_.count(b.get())) out.push_back(b.get());
    return out;
  }
  bool tiled_ = false;  // private scalars are kTile x kTile register arrays
  std::map<const ir::ExprNode*, std::string> override_;  // expressions already in registers
  std::map<std::string, std::string> hoisted_;           // loads made once per outer iteration
  std::string outer_prefix_;                              // their declarations
  std::set<const BufferNode*> host_len_;
};

const char* kPrologue = R"CU(// Generated by dccc (CUDA target). Do not edit.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "dccrt.h"

static int32_t dcc_cuda_fail(cudaError_t e, const char* what) {
  char msg[256];
  std::snprintf(msg, sizeof msg, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  cudaGetLastError();  // clear a non-sticky error
  return dcc_set_error(DCC_ERR_CUDA, msg);
}

extern "C" int dcc_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Used by the C wrapper: a host copy of a device array (the lengths).
extern "C" __attribute__((visibility("hidden"))) void* dcc__cuda_stage(const void* device, size_t bytes) {
  void* h = dcc_alloc(bytes ? bytes : 1);
  if (!h) return nullptr;
  if (bytes) {
    cudaError_t e = cudaMemcpy(h, device, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      dcc_free(h);
      dcc_cuda_fail(e, "copying a length array to the host (is it a device pointer?)");
      return nullptr;
    }
  }
  return h;
}

// DCC_POISON_UNINIT (set, not "0"): locals that are not zero-filled are
// filled with 0xFF instead, so that tests see a read before a write.
static bool dcc_cuda_poison() {
  static const bool on = [] {
    const char* v = std::getenv("DCC_POISON_UNINIT");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Once per process: the default memory pool keeps what is freed (so a
// second call with the same lengths allocates nothing new).
static int dcc_cuda_init() {
  static int status = [] {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    cudaMemPool_t pool;
    if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, dev);
    uint64_t keep = UINT64_MAX;
    if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess) return (int)dcc_cuda_fail(e, "setting up the device memory pool");
    return 0;
  }();
  if (status != 0) dcc_set_error(DCC_ERR_CUDA, "the CUDA device could not be set up (see the first error)");
  return status;
}

// DCCC_CUDA_PROFILE=1 prints each kernel's time (CUDA events) to stderr.
struct DccProfile {
  bool on = [] { const char* e = std::getenv("DCCC_CUDA_PROFILE"); return e && *e && *e != '0'; }();
  cudaEvent_t a = nullptr, b = nullptr;
  void start() {
    if (!on) return;
    if (!a) { cudaEventCreate(&a); cudaEventCreate(&b); }
    cudaEventRecord(a, 0);
  }
  void stop(const char* name) {
    if (!on) return;
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    std::fprintf(stderr, "dccc-profile: %s %.3f ms\n", name, ms);
  }
  ~DccProfile() { if (a) { cudaEventDestroy(a); cudaEventDestroy(b); } }
};


// bf16 is rounded to nearest even exactly as on the CPU target; NaN stays NaN.
__device__ __forceinline__ float dcc_bf16_load(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }
__device__ __forceinline__ uint16_t dcc_bf16_bits(float f) {
  uint32_t bits = __float_as_uint(f);
  if (f != f) return (uint16_t)((bits | 0x00400000u) >> 16);
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float dcc_rbf16(float f) { return dcc_bf16_load(dcc_bf16_bits(f)); }
__device__ __forceinline__ float dcc_f16_load(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t dcc_f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float dcc_rf16(float f) { return __half2float(__float2half_rn(f)); }

// The masked-value rules (ir/masked_arith.h, docs/language.md): -inf - -inf
// is -inf and 0 / 0 is 0, where IEEE gives NaN.
__device__ __forceinline__ float dcc_fsub(float a, float b) { return (a == -INFINITY && b == -INFINITY) ? a : a - b; }
__device__ __forceinline__ double dcc_fsub(double a, double b) { return (a == -INFINITY && b == -INFINITY) ? a : a - b; }
__device__ __forceinline__ float dcc_fdiv(float a, float b) { return (a == 0.0f && b == 0.0f) ? 0.0f : a / b; }
__device__ __forceinline__ double dcc_fdiv(double a, double b) { return (a == 0.0 && b == 0.0) ? 0.0 : a / b; }

// Integer division by zero and INT_MIN / -1 set an error flag (1, 2) read
// by the launcher, never undefined behaviour.
template <typename T>
__device__ __forceinline__ T dcc_idiv(T a, T b, int* err) {
  if (b == 0) { atomicCAS(err, 0, 1); return 0; }
  if (b == (T)-1 && a == (T)((T)1 << (sizeof(T) * 8 - 1))) { atomicCAS(err, 0, 2); return 0; }
  return a / b;
}
template <typename T>
__device__ __forceinline__ T dcc_imod(T a, T b, int* err) {
  if (b == 0) { atomicCAS(err, 0, 1); return 0; }
  if (b == (T)-1 && a == (T)((T)1 << (sizeof(T) * 8 - 1))) { atomicCAS(err, 0, 2); return 0; }
  return a % b;
}
// Returns t % n and sets t to t / n, in 32 bits where both fit (64-bit
// division is many times slower); n > 0.
__device__ __forceinline__ int64_t dcc_divmod(int64_t& t, int64_t n) {
  if (((uint64_t)t | (uint64_t)n) <= 0xffffffffu) {
    const uint32_t q = (uint32_t)t / (uint32_t)n, r = (uint32_t)t - q * (uint32_t)n;
    t = q;
    return r;
  }
  const int64_t q = t / n, r = t - q * n;
  t = q;
  return r;
}
// `*p = fmax(*p, v)` made by any number of threads at once (a row maximum,
// ir/fuse_row_max.h), where memory holds no NaN with the sign bit clear
// (nan_free_max_ in the emitter): then the float order is the integer order
// of the bits for v >= +0 and the reverse unsigned order for v <= -0, a NaN
// with the sign bit set loses to every number either way, and +0 beats -0
// (fmax may keep either). A maximum does not depend on the order, and fmax
// skips NaN. An atomic whose result is unused waits for nothing.
__device__ __forceinline__ void dcc_red_fmax(float* p, float v) {
  if (v != v) return;
  if (__float_as_int(v) >= 0) atomicMax((int*)p, __float_as_int(v));
  else atomicMin((unsigned int*)p, __float_as_uint(v));
}
__device__ __forceinline__ void dcc_red_fmax(double* p, double v) {
  if (v != v) return;
  if (__double_as_longlong(v) >= 0) atomicMax((long long*)p, __double_as_longlong(v));
  else atomicMin((unsigned long long*)p, (unsigned long long)__double_as_longlong(v));
}
template <typename T> __device__ __forceinline__ T dcc_imin(T a, T b) { return a < b ? a : b; }
template <typename T> __device__ __forceinline__ T dcc_imax(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T dcc_iabs(T a) { return a < 0 ? (T)(0 - (typename std::make_unsigned<T>::type)a) : a; }

)CU";

}  // namespace

std::string emit_cuda(const ir::Module& m) {
  std::string out = kPrologue;
  out += kCheckedIntHelpers;
  out += "\n";
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (!f.storage_lowered) unsupported(f.at, "a function that is not storage-lowered (`" + f.name + "`)");
    FuncEmitter(f, out).run();
  }
  return out;
}

}  // namespace dccc::backend
