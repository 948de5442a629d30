// The fused attention kernel's per-block values (backend/gpu/plan_block_values.h).
#include "backend/gpu/plan_block_values.h"

#include <fmt/format.h>

#include "ir/affine.h"

#include <functional>
#include <set>
#include <utility>

namespace dccc::gpu {
namespace {

using ir::BinOp;
using ir::ExprKind;
using ir::StmtKind;
using namespace ir::affine;  // is_int, coefficient, fold (ir/affine.h)

/// Block invariants: the maximal subexpressions of `e` for which `leaf_ok`
/// holds of every node (leaves: constants, sizes, the batch variables
/// `bv`; other nodes as `leaf_ok` says), named `prefix` + index in `out`
/// and merged with an equal one already there when `worth` says they are
/// worth a name. `div16`: the divisor of a division rounded to 16 bits
/// (rounded16_division: a 16-bit one or an f32 one cast to 16 bits) is marked
/// (AttentionKernel::Invariant::divisor) and named even without an
/// operation, and so is the divisor of an f32 division whose quotient stays
/// f32 (Invariant::divisor32); `into_loads`: look for invariants inside
/// loads' indices too.
struct InvariantWalk {
  std::set<const ir::VarNode*> bv;
  std::function<bool(const ir::ExprNode&)> node_ok;     // an operation or load that may be part of one
  std::function<bool(const ir::Expr&, bool)> worth;     // (expression, divisor)
  bool div16 = false, into_loads = false;
  const char* prefix = "u";
  std::vector<AttentionKernel::Invariant>* out = nullptr;

  bool invariant(const ir::Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::SizeRef: return node_ok(*e);
      case ExprKind::VarRef: return bv.count(e->var.get()) > 0;
      default:
        if (!node_ok(*e)) return false;
        for (const auto& a : e->args)
          if (!invariant(a)) return false;
        return true;
    }
  }
  /// `divisor`: 16 (a division rounded to 16 bits divides by e), 32 (an
  /// f32 division kept at f32), 0.
  void visit(const ir::Expr& e, int divisor = 0) {
    if (!e) return;
    if (e->kind == ExprKind::Load && !into_loads) return;
    if (invariant(e)) {
      if (!worth(e, divisor != 0)) return;
      for (auto& inv : *out)
        if (ir::same_expr(inv.value, e)) {
          inv.uses.push_back(e.get());
          inv.divisor |= divisor == 16;
          inv.divisor32 |= divisor == 32;
          return;
        }
      AttentionKernel::Invariant inv{fmt::format("{}{}", prefix, out->size()), e, {e.get()}, divisor == 16};
      inv.divisor32 = divisor == 32;
      out->push_back(std::move(inv));
      return;
    }
    const ir::ExprNode* q = div16 ? rounded16_division(*e) : nullptr;
    if (q && q != e.get()) {  // a cast of an f32 division to 16 bits: the division's divisor marked
      for (size_t x = 0; x < q->args.size(); ++x) visit(q->args[x], x == 1 ? 16 : 0);
      return;
    }
    const bool f32_div = div16 && !q && e->kind == ExprKind::Binary && e->binop == BinOp::Div && e->type == Scalar::F32;
    for (size_t x = 0; x < e->args.size(); ++x) visit(e->args[x], x == 1 && q ? 16 : x == 1 && f32_div ? 32 : 0);
  }
};

}  // namespace

void plan_block_values(AttentionKernel& k, const ir::Stmt& item) {
  // Block invariants of the per-element work: maximal subexpressions of
  // batch variables, sizes and constants with an operation in them (no load,
  // no integer division: computing them where the body would not run must be
  // harmless).
  {
    InvariantWalk w;
    for (const auto& b : k.batch) w.bv.insert(b.var.get());
    w.node_ok = [](const ir::ExprNode& e) {
      switch (e.kind) {
        case ExprKind::IntImm:
        case ExprKind::FloatImm:
        case ExprKind::SizeRef:
        case ExprKind::Cast:
        case ExprKind::Unary:
        case ExprKind::Select: return true;
        case ExprKind::Binary: return !((e.binop == BinOp::Div || e.binop == BinOp::Mod) && !is_float(e.type));
        default: return false;
      }
    };
    w.worth = [](const ir::Expr& e, bool divisor) {
      bool op = false;
      ir::each_expr(e, [&](const ir::ExprNode& x) {
        if (x.kind == ExprKind::Unary || x.kind == ExprKind::Binary || x.kind == ExprKind::Select ||
            (x.kind == ExprKind::Cast && (x.type == Scalar::BF16 || x.type == Scalar::F16)))
          op = true;
      });
      return op || divisor;
    };
    w.div16 = true;
    w.out = &k.invariants;
    for (const auto& s : k.steps)
      if (s.kind == AttnStepKind::Element) w.visit(s.stmt->value);
      else if (s.kind == AttnStepKind::Fold) w.visit(s.term);
      else if (s.kind == AttnStepKind::Row)  // the rescale's `F(r) = r / sqrt(D)` (mha_scale_after_max)
        ir::each_stmt(s.stmt, [&](const ir::StmtNode& x) {
          if (x.kind == StmtKind::Store || x.kind == StmtKind::IfThenElse) w.visit(x.value);
        });
    w.visit(k.pv_p);
  }
  // Block invariants of the stores after the key loop (kernel_ir.h,
  // post_invariants): maximal integer subexpressions of batch variables,
  // sizes and constants with a load in them, of tensors this statement does
  // not write; from column loops whose body is stores only.
  {
    std::set<const ir::BufferNode*> written;
    ir::each_stmt(item, [&](const ir::StmtNode& y) {
      if (y.kind == StmtKind::Store) written.insert(y.buffer.get());
    });
    InvariantWalk w;
    for (const auto& b : k.batch) w.bv.insert(b.var.get());
    w.node_ok = [&](const ir::ExprNode& e) {
      if (is_float(e.type) || e.type == Scalar::Bool) return false;
      switch (e.kind) {
        case ExprKind::IntImm:
        case ExprKind::SizeRef:
        case ExprKind::Cast: return true;
        case ExprKind::Load: return !e.buffer->dims.empty() && !written.count(e.buffer.get());
        case ExprKind::Binary: return e.binop == BinOp::Add || e.binop == BinOp::Sub || e.binop == BinOp::Mul;
        default: return false;
      }
    };
    w.worth = [](const ir::Expr& e, bool) {
      bool load = false;
      ir::each_expr(e, [&](const ir::ExprNode& x) { load |= x.kind == ExprKind::Load; });
      return load;
    };
    w.into_loads = true;
    w.prefix = "w";
    w.out = &k.post_invariants;
    for (const auto& s : k.post) {
      if (s->kind != StmtKind::For) continue;
      const auto stores = ir::items_of(s->body[0]);
      if (!std::all_of(stores.begin(), stores.end(), [](const ir::Stmt& y) { return y->kind == StmtKind::Store; }))
        continue;
      for (const auto& y : stores) {
        for (const auto& a : y->args) w.visit(a);
        w.visit(y->value);
      }
    }
  }
  // Paired output stores (AttentionKernel::pair_stores): a column loop of
  // one 16-bit or f32 store whose index is the column plus a part without it.
  for (size_t x = 0; x < k.post.size(); ++x) {
    const ir::Stmt& s = k.post[x];
    if (s->kind != StmtKind::For) continue;
    const auto body = ir::items_of(s->body[0]);
    if (body.size() != 1) continue;
    if (auto sp = store_pair(body[0], s->var)) k.pair_stores.push_back({x, sp->row_index, sp->bits});
  }
  // Per-block values in the tile-list entry (AttentionKernel::entry_width):
  // those with a load, every load of a length array the rows, keys or
  // batch extents read (the tile list's cache key) or of a prelude offset
  // array (Aux: computed on the host from those lengths and the sizes).
  {
    std::set<const ir::BufferNode*> keyed;
    auto collect_loads = [&](const ir::Expr& e) {
      ir::each_expr(e, [&](const ir::ExprNode& x) {
        if (x.kind == ExprKind::Load) keyed.insert(x.buffer.get());
      });
    };
    collect_loads(k.rows);
    collect_loads(k.keys);
    for (const auto& b : k.batch) collect_loads(b.extent);
    auto from_lengths = [&](const ir::Expr& e) {
      bool load = false, ok = true;
      ir::each_expr(e, [&](const ir::ExprNode& x) {
        if (x.kind != ExprKind::Load) return;
        load = true;
        ok = ok && !x.buffer->dims.empty() && dccc::is_int(x.buffer->type) &&
             (keyed.count(x.buffer.get()) || x.buffer->kind == ir::BufferKind::Aux);
      });
      return load && ok;
    };
    int off = static_cast<int>(k.batch.size()) + 1;
    std::vector<std::pair<ir::Expr, int>> stored;  // equal values share a slot (K's and V's base)
    auto slot = [&](const ir::Expr& v) {
      if (!from_lengths(v)) return -1;
      for (const auto& [e, at] : stored)
        if (ir::same_expr(e, v)) return at;
      stored.push_back({v, off});
      off += 2;
      return off - 2;
    };
    for (auto& s : k.scalars) s.entry = slot(s.value);
    for (auto& inv : k.post_invariants) inv.entry = slot(inv.value);
    k.entry_width = off;
  }
}

}  // namespace dccc::gpu
