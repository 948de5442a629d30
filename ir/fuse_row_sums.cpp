#include "ir/fuse_row_sums.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/reduction_nest.h"

namespace dccc::ir {
namespace {

/// `e` with every load of `from` (a scalar) reading `to` instead.
Expr reload(const Expr& e, const Buffer& from, const Buffer& to) {
  return replace_exprs(e, [&](const Expr& x) { return x->kind == ExprKind::Load && x->buffer == from ? build::load(to, {}) : nullptr; });
}

/// `e` with the load of `r` (there is one) replaced by `value`.
Expr replace_load(const Expr& e, const Buffer& r, const Expr& value) {
  return replace_exprs(e, [&](const Expr& x) { return x->kind == ExprKind::Load && x->buffer == r ? value : nullptr; });
}

/// Fuses the row sum of top-level statement `k` into its reader, if it
/// qualifies; returns the tensor's name or "".
std::string fuse_one(Func& f, std::vector<Stmt>& items, size_t k) {
  auto sr = parse_reduction_nest(items[k], BinOp::Add);
  if (!sr) return "";
  const Buffer& R = sr->post->buffer;
  if (R->kind != BufferKind::Local || R->dims.size() != sr->loops.size() || sr->post->args.size() != R->dims.size())
    return "";
  // S_R stores every element of R: its loops index R's dimensions in order
  // over their extents.
  std::map<const VarNode*, Expr> dim_to_loop;
  for (size_t d = 0; d < R->dims.size(); ++d) {
    const Expr& a = sr->post->args[d];
    if (a->kind != ExprKind::VarRef || a->var != sr->loops[d]->var) return "";
    dim_to_loop[R->dims[d].var.get()] = build::var(sr->loops[d]->var);
  }
  for (size_t d = 0; d < R->dims.size(); ++d)
    if (!same_expr(sr->loops[d]->extent, substitute(R->dims[d].extent, dim_to_loop))) return "";
  const Expr& term = sr->update->value->args[1];
  if (loads_from(term, R.get()) || loads_from(sr->post->value, R.get())) return "";
  // The one reader: exactly one load of R in all other statements, none before.
  int reader = -1, loads = 0;
  for (size_t c = 0; c < items.size(); ++c) {
    if (c == k) continue;
    bool printed = false;
    each_stmt(items[c], [&](const StmtNode& x) {
      printed |= x.kind == StmtKind::Print && x.buffer == R;
      if (x.kind == StmtKind::Store && x.buffer == R) printed = true;  // another writer
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load && e.buffer == R) {
          ++loads;
          reader = static_cast<int>(c);
        }
      });
    });
    if (printed) return "";
  }
  if (loads != 1 || reader <= static_cast<int>(k)) return "";
  auto sc = parse_reduction_nest(items[reader], BinOp::Add);
  if (!sc || sc->acc == sr->acc) return "";
  // R is read in S_C's post, at indices e1..en.
  const ExprNode* load = nullptr;
  each_expr(sc->post->value, [&](const ExprNode& e) {
    if (e.kind == ExprKind::Load && e.buffer == R) load = &e;
  });
  if (!load || load->flat || load->args.size() != R->dims.size()) return "";
  std::map<const VarNode*, Expr> bind;
  for (size_t d = 0; d < R->dims.size(); ++d) bind[sr->loops[d]->var.get()] = load->args[d];
  // The same range of j, and T is a factor of S_C's product.
  if (!same_expr(sc->loop->extent, substitute(sr->loop->extent, bind))) return "";
  bind[sr->loop->var.get()] = build::var(sc->loop->var);
  Expr t2 = substitute(term, bind);
  Expr prod = sc->update->value->args[1];
  if (prod->kind == ExprKind::Cast) prod = prod->args[0];
  if (prod->kind != ExprKind::Binary || prod->binop != BinOp::Mul) return "";
  if (!same_expr(prod->args[0], t2) && !same_expr(prod->args[1], t2)) return "";
  // T reads the same values at S_C: nothing from S_R on writes what it reads.
  std::set<const BufferNode*> read;
  each_expr(term, [&](const ExprNode& e) {
    if (e.kind == ExprKind::Load) read.insert(e.buffer.get());
  });
  for (int c = static_cast<int>(k) + 1; c <= reader; ++c) {
    bool writes = false;
    each_stmt(items[c], [&](const StmtNode& x) { writes |= x.kind == StmtKind::Store && read.count(x.buffer.get()); });
    if (writes) return "";
  }
  // S_C gets a second accumulator, updated as S_R's was.
  auto rsum = std::make_shared<BufferNode>();
  rsum->name = R->name;
  rsum->type = sr->acc->type;
  rsum->kind = sr->acc->kind;
  Stmt init = build::store(rsum, {}, sr->init->value);
  Stmt update = build::store(rsum, {}, substitute(reload(sr->update->value, sr->acc, rsum), bind));
  Expr value = substitute(reload(sr->post->value, sr->acc, rsum), bind);
  if (value->type != R->type) value = build::cast(R->type, value);
  auto loop = std::make_shared<StmtNode>(*sc->loop);
  loop->body = {build::seq({loop->body[0], update})};
  auto post = std::make_shared<StmtNode>(*sc->post);
  post->value = replace_load(sc->post->value, R, value);
  // The innermost Seq of S_C, rebuilt.
  items[reader] = replace_stmt(items[reader], sc->inner, build::seq({sc->init, init, loop, post}));
  items.erase(items.begin() + static_cast<long>(k));
  auto at = std::find(f.buffers.begin(), f.buffers.end(), R);
  *at = rsum;
  return R->name;
}

}  // namespace

std::vector<std::string> fuse_row_sums(Func& f) {
  std::vector<std::string> fused;
  if (f.storage_lowered) return fused;
  std::vector<Stmt> items = items_of(f.body);
  for (size_t k = 0; k < items.size();) {
    std::string name = fuse_one(f, items, k);
    if (name.empty()) {
      ++k;
      continue;
    }
    fused.push_back(name);
    f.body = items.size() == 1 ? items[0] : build::seq(items);
  }
  return fused;
}

}  // namespace dccc::ir
