#include "ir/fuse_row_max.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/reduction_nest.h"

namespace dccc::ir {
namespace {

/// The loops around the statement `target` in `s`, outermost first, when
/// nothing but loops and sequences lies on the path to it.
bool loops_to(const Stmt& s, const StmtNode* target, std::vector<const StmtNode*>& path) {
  if (!s) return false;
  if (s.get() == target) return true;
  if (s->kind == StmtKind::Seq) {
    for (const auto& c : s->body)
      if (loops_to(c, target, path)) return true;
    return false;
  }
  if (s->kind != StmtKind::For) return false;
  path.push_back(s.get());
  if (loops_to(s->body[0], target, path)) return true;
  path.pop_back();
  return false;
}

/// The store to `b` in `s` when there is exactly one.
const StmtNode* only_store(const Stmt& s, const BufferNode* b) {
  const StmtNode* found = nullptr;
  int n = 0;
  each_stmt(s, [&](const StmtNode& x) {
    if (x.kind == StmtKind::Store && x.buffer.get() == b) {
      found = &x;
      ++n;
    }
  });
  return n == 1 ? found : nullptr;
}

bool stores_to(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Store && x.buffer.get() == b; });
  return found;
}

/// Fuses the row maximum of top-level statement `k` into the statement that
/// writes its rows, if it qualifies; returns the tensor's name or "".
std::string fuse_one(Func& f, std::vector<Stmt>& items, size_t k) {
  auto sm = parse_reduction_nest(items[k], BinOp::Max);
  if (!sm) return "";
  const Buffer& R = sm->post->buffer;
  const Buffer& acc = sm->acc;
  if (R->kind != BufferKind::Local || (R->type != Scalar::F32 && R->type != Scalar::F64) || acc->type != R->type)
    return "";
  const size_t n = R->dims.size();
  if (n != sm->loops.size() || sm->post->args.size() != n) return "";
  // R[v1..vn] = acc, over R's extents: every element written once.
  const Expr& pv = sm->post->value;
  if (pv->kind != ExprKind::Load || pv->buffer != acc) return "";
  std::map<const VarNode*, Expr> r_dims;
  for (size_t d = 0; d < n; ++d) {
    const Expr& a = sm->post->args[d];
    if (a->kind != ExprKind::VarRef || a->var != sm->loops[d]->var) return "";
    r_dims[R->dims[d].var.get()] = build::var(sm->loops[d]->var);
  }
  for (size_t d = 0; d < n; ++d)
    if (!same_expr(sm->loops[d]->extent, substitute(R->dims[d].extent, r_dims))) return "";
  // A constant start that is not NaN (the atomic maximum orders bits).
  const Expr& c = sm->init->value;
  if (c->kind != ExprKind::FloatImm || std::isnan(c->float_value) || c->type != R->type) return "";
  // The operand: S[v1, .., vn, j], S with R's rows and j's extent.
  const Expr& t = sm->update->value->args[1];
  if (t->kind != ExprKind::Load || t->flat || t->args.size() != n + 1) return "";
  const Buffer& S = t->buffer;
  if (S->kind != BufferKind::Local || S->type != R->type || S->dims.size() != n + 1) return "";
  std::map<const VarNode*, Expr> s_dims;
  for (size_t d = 0; d <= n; ++d) {
    const Var& v = d < n ? sm->loops[d]->var : sm->loop->var;
    if (t->args[d]->kind != ExprKind::VarRef || t->args[d]->var != v) return "";
    s_dims[S->dims[d].var.get()] = build::var(v);
  }
  for (size_t d = 0; d <= n; ++d) {
    const Expr& extent = d < n ? sm->loops[d]->extent : sm->loop->extent;
    if (!same_expr(extent, substitute(S->dims[d].extent, s_dims))) return "";
  }
  // S_W: the one statement that stores S, before S_M; R untouched before S_M.
  int writer = -1;
  for (size_t m = 0; m < items.size(); ++m) {
    if (m == k) continue;
    if (stores_to(items[m], S.get())) {
      if (writer >= 0) return "";
      writer = static_cast<int>(m);
    }
    if (stores_to(items[m], R.get())) return "";
    if (m < k && touches(items[m], R.get())) return "";
  }
  if (writer < 0 || writer >= static_cast<int>(k)) return "";
  const StmtNode* store = only_store(items[writer], S.get());
  if (!store || store->flat || store->args.size() != n + 1 || store->value->type != S->type) return "";
  // Directly inside loops over S's dimensions, one per index: each element
  // stored once.
  std::vector<const StmtNode*> path;
  if (!loops_to(items[writer], store, path) || path.size() != n + 1) return "";
  std::map<const VarNode*, Expr> w_dims;
  for (size_t d = 0; d <= n; ++d) {
    const Expr& a = store->args[d];
    if (a->kind != ExprKind::VarRef) return "";
    auto at = std::find_if(path.begin(), path.end(), [&](const StmtNode* l) { return l->var == a->var; });
    if (at == path.end() || w_dims.count(S->dims[d].var.get())) return "";
    w_dims[S->dims[d].var.get()] = build::var(a->var);
  }
  for (const StmtNode* l : path) {
    // The loop's index stores S's dimension d: its extent is S's there.
    size_t d = 0;
    while (d <= n && store->args[d]->var != l->var) ++d;
    if (d > n || !same_expr(l->extent, substitute(S->dims[d].extent, w_dims))) return "";
  }
  // S_W: t = V; S[w] = t; R[w1..wn] = max(R[w1..wn], t).
  auto value = std::make_shared<BufferNode>();
  value->name = S->name + "_value";
  value->type = S->type;
  value->kind = BufferKind::Scalar;
  std::vector<Expr> row(store->args.begin(), store->args.begin() + static_cast<long>(n));
  std::vector<Stmt> fold = {build::store(value, {}, store->value), build::store(S, store->args, build::load(value, {})),
                            build::store(R, row, build::binary(BinOp::Max, build::load(R, row), build::load(value, {})))};
  // Spliced into the sequence around the store, if there is one (so that
  // the statements after a contraction's loop stay one flat list).
  const StmtNode* parent = nullptr;
  each_stmt(items[writer], [&](const StmtNode& x) {
    if (x.kind == StmtKind::Seq)
      for (const auto& item : x.body)
        if (item.get() == store) parent = &x;
  });
  if (parent) {
    std::vector<Stmt> spliced;
    for (const auto& item : parent->body) {
      if (item.get() == store) spliced.insert(spliced.end(), fold.begin(), fold.end());
      else spliced.push_back(item);
    }
    items[writer] = replace_stmt(items[writer], parent, build::seq(spliced));
  } else {
    items[writer] = replace_stmt(items[writer], store, build::seq(fold));
  }
  // S_M's nest now only starts R at C, before S_W.
  Stmt start = replace_stmt(items[k], sm->inner, build::store(R, sm->post->args, c));
  items.erase(items.begin() + static_cast<long>(k));
  items.insert(items.begin() + writer, start);
  // acc is S_M's alone (a reduce accumulator): t takes its place.
  bool acc_used = false;
  for (const auto& it : items) acc_used |= touches(it, acc.get());
  auto at = std::find(f.buffers.begin(), f.buffers.end(), acc);
  if (!acc_used && at != f.buffers.end()) *at = value;
  else f.buffers.push_back(value);
  return R->name;
}

}  // namespace

std::vector<std::string> fuse_row_max(Func& f) {
  std::vector<std::string> fused;
  if (f.storage_lowered) return fused;
  std::vector<Stmt> items = items_of(f.body);
  for (size_t k = 0; k < items.size(); ++k) {
    std::string name = fuse_one(f, items, k);
    if (name.empty()) continue;
    fused.push_back(name);
    f.body = items.size() == 1 ? items[0] : build::seq(items);
  }
  return fused;
}

}  // namespace dccc::ir
