#include "ir/written_first.h"

#include <functional>
#include <map>
#include <set>

namespace dccc::ir {
namespace {

/// The top-level statements of a body, nested sequences flattened.
void flatten(const Stmt& s, std::vector<Stmt>& out) {
  if (!s) return;
  if (s->kind == StmtKind::Seq) {
    for (const auto& c : s->body) flatten(c, out);
    return;
  }
  out.push_back(s);
}

/// The extent of dimension k of `t` as seen by an access with indices
/// `args` (outer dimensions' variables replaced by those indices).
Expr extent_at(const BufferNode* t, size_t k, const std::vector<Expr>& args) {
  std::map<const VarNode*, Expr> at;
  for (size_t d = 0; d < t->dims.size() && d < args.size(); ++d) at[t->dims[d].var.get()] = args[d];
  return substitute(t->dims[k].extent, at);
}

/// Whether nothing observable depends on the storage padding of local
/// tensor `t` (padded_dead in written_first.h). `assumed`: tensors whose
/// padding is being shown dead further up (a cycle proves nothing new).
bool padding_dead(const Func& f, const BufferNode* t, std::set<const BufferNode*>& assumed) {
  if (t->kind != BufferKind::Local) return false;
  if (!assumed.insert(t).second) return true;
  bool ok = true;
  std::map<const VarNode*, const StmtNode*> loops;  // enclosing loops by variable
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s || !ok) return;
    if (s->kind == StmtKind::Print && s->buffer.get() == t) ok = false;
    own_exprs(*s, [&](const ExprNode& e) {
      if (!ok || e.kind != ExprKind::Load || e.buffer.get() != t) return;
      if (e.flat || e.args.size() != t->dims.size()) {
        ok = false;
        return;
      }
      for (size_t k = 0; k < t->dims.size() && ok; ++k) {
        if (k >= t->pad.size() || t->pad[k] <= 1) continue;
        const Expr& idx = e.args[k];
        auto it = idx->kind == ExprKind::VarRef ? loops.find(idx->var.get()) : loops.end();
        if (it == loops.end()) {
          ok = false;  // an index the analysis cannot bound
          return;
        }
        const StmtNode* loop = it->second;
        Expr logical = extent_at(t, k, e.args);
        if (same_expr(loop->extent, logical)) continue;  // reads the elements only
        // The loop may run into the padding: its body must be one store
        // U[.., var, ..] = value (this load inside), U another local tensor
        // padded along that index, with the same extent, whose padding is
        // dead too: then padding flows only into padding.
        Stmt body = unwrap(loop->body.empty() ? nullptr : loop->body[0]);
        if (!body || body->kind != StmtKind::Store || body->flat || body->buffer.get() == t) {
          ok = false;
          return;
        }
        for (const auto& a : body->args)
          if (loads_from(a, t)) ok = false;  // a padding value would pick the element
        const BufferNode* u = body->buffer.get();
        bool lands = false;
        for (size_t m = 0; m < body->args.size() && m < u->dims.size(); ++m)
          if (body->args[m]->kind == ExprKind::VarRef && body->args[m]->var == loop->var && m < u->pad.size() &&
              u->pad[m] > 1 && same_expr(extent_at(u, m, body->args), logical))
            lands = true;
        if (!lands || !padding_dead(f, u, assumed)) ok = false;
      }
    });
    if (s->kind == StmtKind::For) loops[s->var.get()] = s.get();
    for (const auto& c : s->body) walk(c);
    if (s->kind == StmtKind::For) loops.erase(s->var.get());
  };
  walk(f.body);
  return ok;
}

}  // namespace

bool padding_dead(const Func& f, const BufferNode* b) {
  std::set<const BufferNode*> assumed;
  return b && !f.storage_lowered && padding_dead(f, b, assumed);
}

bool written_first(const Func& f, const BufferNode* b) {
  if (!b || b->kind != BufferKind::Local || b->dims.empty() || f.storage_lowered) return false;
  std::vector<Stmt> top;
  flatten(f.body, top);
  const Stmt* first = nullptr;
  for (const auto& s : top)
    if (touches(s, b)) {
      first = &s;
      break;
    }
  if (!first) return false;
  // Down the nest: every level but the innermost is one loop; the innermost
  // body's items hold the store directly, and no other item touches `b`.
  std::vector<const StmtNode*> loops;
  // Items after a nested level that read `b` (at the depth of loops above them).
  std::vector<std::pair<size_t, Stmt>> trailing;
  Stmt s = *first;
  while (true) {
    s = unwrap(s);
    if (s && s->kind == StmtKind::Seq) {
      // A loop body with several items: the first that touches `b` may be
      // the next level of the nest; the items after it may then read the
      // slice of `b` the enclosing loops index, complete by then (checked
      // below): `for b { fill t[b, ...]; use t[b, ...] }`.
      size_t k = 0;
      while (k < s->body.size() && !touches(s->body[k], b)) ++k;
      if (k == s->body.size()) return false;
      Stmt next = unwrap(s->body[k]);
      if (!next || next->kind != StmtKind::For || loops.empty()) break;
      for (size_t t = k + 1; t < s->body.size(); ++t) trailing.emplace_back(loops.size(), s->body[t]);
      s = next;
    }
    if (!s || s->kind != StmtKind::For) break;
    if (loads_from(s->extent, b)) return false;
    loops.push_back(s.get());
    s = s->body.empty() ? nullptr : s->body[0];
  }
  if (!s) return false;
  std::vector<Stmt> items;
  flatten(s, items);
  const StmtNode* store = nullptr;
  for (const auto& it : items) {
    if (!touches(it, b)) continue;
    if (store || it->kind != StmtKind::Store || it->buffer.get() != b || it->flat || loads_from(it->value, b))
      return false;
    store = it.get();
  }
  if (!store || store->args.size() != b->dims.size()) return false;
  // Each index is a distinct loop of the nest, which runs to the extent of
  // the dimension it indexes (outer dimensions' variables read as the loops
  // that index them), or `o * K + i` over two distinct loops of the nest, i
  // running over [0, K) and o to the extent rounded up to K, divided by K
  // (the blocked copy of ir/transpose_operands.h), for a dimension padded
  // to K in storage.
  std::map<const VarNode*, const StmtNode*> loop_of;
  for (const StmtNode* l : loops) loop_of[l->var.get()] = l;
  std::map<const VarNode*, Expr> dim_to_loop;
  std::set<const StmtNode*> used;
  std::vector<const StmtNode*> by_dim;
  std::vector<int64_t> block(store->args.size(), 0);  // K of a blocked index, else 0
  auto take = [&](const Expr& v) -> const StmtNode* {
    if (v->kind != ExprKind::VarRef) return nullptr;
    auto it = loop_of.find(v->var.get());
    if (it == loop_of.end() || !used.insert(it->second).second) return nullptr;
    return it->second;
  };
  for (size_t k = 0; k < store->args.size(); ++k) {
    const Expr& a = store->args[k];
    const StmtNode* l = nullptr;
    if (a->kind == ExprKind::VarRef) {
      l = take(a);
    } else if (a->kind == ExprKind::Binary && a->binop == BinOp::Add && a->args[0]->kind == ExprKind::Binary &&
               a->args[0]->binop == BinOp::Mul && a->args[0]->args[1]->kind == ExprKind::IntImm) {
      int64_t kk = a->args[0]->args[1]->int_value;
      const StmtNode* inner = take(a->args[1]);
      l = take(a->args[0]->args[0]);
      if (!inner || inner->extent->kind != ExprKind::IntImm || inner->extent->int_value != kk) return false;
      if (k >= b->pad.size() || b->pad[k] != kk || kk < 2) return false;
      block[k] = kk;
    }
    if (!l) return false;
    by_dim.push_back(l);
    dim_to_loop[b->dims[k].var.get()] = block[k] ? a : build::var(l->var);
  }
  if (used.size() != loops.size()) return false;
  // A storage-padded dimension (`pad K`) holds its extent rounded up to a
  // multiple of K: the loop must run over the padding too.
  // Or runs to the unpadded extent when nothing depends on the padding
  // (padding_dead).
  bool short_of_padding = false;
  for (size_t k = 0; k < by_dim.size(); ++k) {
    Expr logical = substitute(b->dims[k].extent, dim_to_loop);
    Expr extent = logical;
    if (k < b->pad.size() && b->pad[k] > 1) extent = build::round_up(extent, b->pad[k]);
    if (block[k]) extent = build::binary(BinOp::Div, extent, build::int_imm(block[k]));
    if (same_expr(by_dim[k]->extent, extent)) continue;
    if (block[k] || !same_expr(by_dim[k]->extent, logical)) return false;
    short_of_padding = true;
  }
  if (short_of_padding && !padding_dead(f, b)) return false;
  // A trailing item at depth d: the d loops above it index the first d
  // dimensions in order, and it only loads `b` with those same first indices.
  for (const auto& [depth, item] : trailing) {
    for (size_t k = 0; k < depth; ++k)
      if (by_dim[k] != loops[k]) return false;
    bool ok = true;
    each_stmt(item, [&](const StmtNode& x) {
      if (x.kind == StmtKind::Store && x.buffer.get() == b) ok = false;
      if (x.kind == StmtKind::Print && x.buffer.get() == b) ok = false;
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind != ExprKind::Load || e.buffer.get() != b) return;
        if (e.flat || e.args.size() != b->dims.size()) {
          ok = false;
          return;
        }
        for (size_t k = 0; k < depth; ++k)
          if (e.args[k]->kind != ExprKind::VarRef || e.args[k]->var != loops[k]->var) ok = false;
      });
    });
    if (!ok) return false;
  }
  return true;
}

}  // namespace dccc::ir
