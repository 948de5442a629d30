#include "ir/fuse_elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace dccc::ir {
namespace {

constexpr int kMaxLoads = 3;
constexpr int kMaxNodes = 24;


bool stores_to(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Store && x.buffer.get() == b; });
  return found;
}

/// The producer of `p` in `item`: the loops of a perfect nest around its
/// only statement, a store of every element of `p`; null otherwise.
const StmtNode* producer_store(const Stmt& item, const Buffer& p, std::vector<const StmtNode*>& loops) {
  Stmt s = item;
  loops.clear();
  while (true) {
    s = unwrap(s);
    if (!s || s->kind != StmtKind::For) break;
    loops.push_back(s.get());
    s = s->body[0];
  }
  if (!s || s->kind != StmtKind::Store || s->buffer != p || s->flat) return nullptr;
  if (loops.size() != p->dims.size() || s->args.size() != loops.size()) return nullptr;
  std::map<const VarNode*, Expr> dim_to_loop;
  for (size_t k = 0; k < loops.size(); ++k) {
    const Expr& a = s->args[k];
    if (a->kind != ExprKind::VarRef || a->var != loops[k]->var) return nullptr;
    dim_to_loop[p->dims[k].var.get()] = build::var(loops[k]->var);
  }
  for (size_t k = 0; k < loops.size(); ++k)
    if (!same_expr(loops[k]->extent, substitute(p->dims[k].extent, dim_to_loop))) return nullptr;
  return s.get();
}

/// Loads, stores or prints (as a whole) `b`.
bool uses(const Stmt& s, const BufferNode* b) {
  bool found = touches(s, b);
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Print && x.buffer.get() == b; });
  return found;
}

bool cheap(const Expr& value) {
  int nodes = 0, loads = 0;
  each_expr(value, [&](const ExprNode& x) {
    ++nodes;
    if (x.kind == ExprKind::Load) ++loads;
  });
  return nodes <= kMaxNodes && loads <= kMaxLoads;
}

/// Replaces every load of `p` in `e` by `value` with the loop variables
/// bound to the load's indices.
Expr inline_loads(const Expr& e, const Buffer& p, const std::vector<const StmtNode*>& loops, const Expr& value) {
  if (!e) return e;
  std::vector<Expr> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(inline_loads(a, p, loops, value));
    changed |= args.back() != a;
  }
  if (e->kind == ExprKind::Load && e->buffer == p) {
    std::map<const VarNode*, Expr> bind;
    for (size_t k = 0; k < loops.size(); ++k) bind[loops[k]->var.get()] = args[k];
    return substitute(value, bind);
  }
  if (!changed) return e;
  auto copy = std::make_shared<ExprNode>(*e);
  copy->args = std::move(args);
  return copy;
}

}  // namespace

std::string fuse_tensor(Func& f, const Buffer& p) {
  if (f.storage_lowered) return "the function's storage is lowered already";
  if (p->kind != BufferKind::Local || p->dims.empty())
    return fmt::format("`{}` is {}; only a local tensor (`let`) can be computed in its readers", p->name,
                       p->dims.empty()                    ? "a scalar"
                       : p->kind == BufferKind::Input ? "a parameter of the function"
                       : p->kind == BufferKind::Output ? "the function's result"
                                                        : "not a local tensor");
  // A length array shapes other tensors: their extents (and, after storage
  // lowering, their offsets) read its elements, so it must stay in memory.
  for (const auto& b : f.buffers)
    for (const auto& d : b->dims)
      if (loads_from(d.extent, p.get()))
        return fmt::format("`{}` gives the extents of `{}`; a length array stays in memory", p->name, b->name);
  std::vector<Stmt> items = items_of(f.body);
  int producer = -1;
  for (size_t k = 0; k < items.size(); ++k) {
    if (!uses(items[k], p.get())) continue;
    if (producer < 0) {
      producer = static_cast<int>(k);
      if (!stores_to(items[k], p.get())) return fmt::format("`{}` is read before it is written", p->name);
      continue;
    }
    if (stores_to(items[k], p.get()))
      return fmt::format("`{}` is written by more than one statement", p->name);
  }
  if (producer < 0) return fmt::format("`{}` is never written", p->name);
  std::vector<const StmtNode*> loops;
  const StmtNode* st = producer_store(items[producer], p, loops);
  if (!st)
    return fmt::format("the statement that writes `{}` is not a loop nest storing each element once by a plain "
                       "assignment (`{}[v1, ..] = value` over its extents: no `reduce`, padded loop, split or "
                       "other statement in the nest)",
                       p->name, p->name);
  if (!cheap(st->value))
    return fmt::format("an element of `{}` costs more than {} loads or {} operations, and would be recomputed at "
                       "every read",
                       p->name, kMaxLoads, kMaxNodes);
  std::string why;
  each_expr(st->value, [&](const ExprNode& x) {
    if (x.kind != ExprKind::Load || !why.empty()) return;
    if (x.buffer == p || x.buffer->dims.empty())
      why = fmt::format("the value of `{}` reads `{}` itself or a scalar", p->name, p->name);
    for (size_t k = producer + 1; k < items.size() && why.empty(); ++k)
      if (stores_to(items[k], x.buffer.get()))
        why = fmt::format("the value of `{}` reads `{}`, which a later statement writes", p->name, x.buffer->name);
  });
  if (!why.empty()) return why;
  // Every read names one element (a whole-tensor print before expand_prints does not).
  bool ok = true;
  for (size_t k = producer + 1; k < items.size(); ++k)
    each_stmt(items[k], [&](const StmtNode& x) {
      if (x.kind == StmtKind::Print && x.buffer == p) ok = false;
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load && e.buffer == p && (e.flat || e.args.size() != loops.size())) ok = false;
      });
    });
  if (!ok) return fmt::format("`{}` is read other than element by element (printed whole, or a flat access)", p->name);
  // A store converts its value to the buffer's type; so does a read of it.
  Expr value = st->value->type == p->type ? st->value : build::cast(p->type, st->value);
  std::vector<Stmt> out;
  for (size_t k = 0; k < items.size(); ++k) {
    if (static_cast<int>(k) == producer) continue;
    if (static_cast<int>(k) < producer) {
      out.push_back(items[k]);
      continue;
    }
    out.push_back(rewrite(items[k], [&](const Expr& e) { return inline_loads(e, p, loops, value); }));
  }
  f.body = out.size() == 1 ? out[0] : build::seq(std::move(out));
  f.buffers.erase(std::remove(f.buffers.begin(), f.buffers.end(), p), f.buffers.end());
  return "";
}

std::vector<std::string> fuse_elementwise(Func& f) {
  std::vector<std::string> fused;
  if (f.storage_lowered) return fused;
  std::vector<Buffer> candidates;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Local && !b->dims.empty()) candidates.push_back(b);
  for (const auto& b : candidates)
    if (fuse_tensor(f, b).empty()) fused.push_back(b->name);
  return fused;
}

}  // namespace dccc::ir
