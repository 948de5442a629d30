#include "ir/fuse_dims.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "ir/fuse_elementwise.h"

namespace dccc::ir {
namespace {

Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }

/// `x` when `e` is `buf[x]` (multi-index), else null.
Expr index_of(const Expr& e, const Buffer& buf) {
  if (e->kind == ExprKind::Load && !e->flat && e->buffer == buf && e->args.size() == 1) return e->args[0];
  return nullptr;
}

/// The fused iteration `e` when indices (args[0], args[1]) are (F_fo[e], F_fi[e]).
Expr fused_row(const std::vector<Expr>& args, const FusedLoops& fl) {
  if (args.size() < 2) return nullptr;
  Expr a = index_of(args[0], fl.fo), b = index_of(args[1], fl.fi);
  if (!a || !b || !same_expr(a, b)) return nullptr;
  return a;
}

/// Why `b`'s dimensions 0 and 1 are not packed rows of the fused loop ("" if they are).
std::string layout_problem(const BufferNode& b, const FusedLoops& fl) {
  if (b.dims.size() < 2) return fmt::format("`{}` has fewer than two dimensions", b.name);
  for (size_t k = 0; k < 2; ++k)
    if (k < b.pad.size() && b.pad[k] > 1)
      return fmt::format("the storage of `{}` is padded along its {} dimension (pad {}), so its rows are not packed "
                         "in fused-iteration order",
                         b.name, k == 0 ? "first" : "second", b.pad[k]);
  Expr l = substitute(b.dims[1].extent, {{b.dims[0].var.get(), build::var(fl.outer)}});
  if (!same_expr(l, fl.inner_extent))
    return fmt::format("the second dimension of `{}` does not have the fused inner loop's extent, so its packed "
                       "rows are not numbered like the fused iterations",
                       b.name);
  for (size_t k = 2; k < b.dims.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (mentions(b.dims[k].extent, b.dims[j].var))
        return fmt::format("the rows of `{}` (its dimensions below the second) differ in size", b.name);
  return "";
}

/// e * R + rest: the packed offset of row `e` and the remaining indices.
Expr flat_offset(const BufferNode& b, const Expr& row, const std::vector<Expr>& args) {
  std::vector<Expr> below(b.dims.size() + 1, build::int_imm(1));  // below[k]: elements of dims k..
  for (size_t k = b.dims.size(); k-- > 2;) {
    Expr ext = b.dims[k].extent;
    if (k < b.pad.size() && b.pad[k] > 1) ext = build::round_up(ext, b.pad[k]);
    below[k] = mul(ext, below[k + 1]);
  }
  Expr off = mul(row, below[2]);
  for (size_t k = 2; k < b.dims.size(); ++k) off = add(off, mul(args[k], below[k + 1]));
  return off;
}

}  // namespace

namespace {

/// The tensors `fl` indexes by (F_fo[e], F_fi[e]) in `body`, in order, with
/// "" (rows qualify) or why not.
std::vector<std::pair<const BufferNode*, std::string>> candidates(const Stmt& body, const FusedLoops& fl) {
  std::vector<std::pair<const BufferNode*, std::string>> out;
  std::set<const BufferNode*> seen;
  auto consider = [&](const Buffer& b, const std::vector<Expr>& args, bool flat) {
    if (flat || !fused_row(args, fl) || !seen.insert(b.get()).second) return;
    out.emplace_back(b.get(), layout_problem(*b, fl));
  };
  each_stmt(body, [&](const StmtNode& s) {
    own_exprs(s, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) consider(e.buffer, e.args, e.flat);
    });
    if (s.kind == StmtKind::Store) consider(s.buffer, s.args, s.flat);
  });
  return out;
}

void rewrite_rows(Func& f, const FusedLoops& fl) {
  std::set<const BufferNode*> ok;
  for (const auto& [b, why] : candidates(f.body, fl))
    if (why.empty()) ok.insert(b);
  std::function<Expr(const Expr&)> fe = [&](const Expr& e) -> Expr {
    if (!e) return e;
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : e->args) {
      args.push_back(fe(a));
      changed |= args.back() != a;
    }
    if (e->kind == ExprKind::Load && !e->flat && ok.count(e->buffer.get()))
      if (Expr row = fused_row(args, fl)) return build::flat_load(e->buffer, flat_offset(*e->buffer, row, args));
    if (!changed) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    copy->args = std::move(args);
    return copy;
  };
  std::function<Stmt(const Stmt&)> fs = [&](const Stmt& s) -> Stmt {
    if (!s) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    if (copy->extent) copy->extent = fe(copy->extent);
    if (copy->value) copy->value = fe(copy->value);
    for (auto& a : copy->args) a = fe(a);
    for (auto& c : copy->body) c = fs(c);
    if (s->kind == StmtKind::Store && !s->flat && ok.count(s->buffer.get()))
      if (Expr row = fused_row(copy->args, fl)) {
        copy->args = {flat_offset(*s->buffer, row, copy->args)};
        copy->flat = true;
      }
    return copy;
  };
  f.body = fs(f.body);
}

}  // namespace

std::string fuse_dims(Func& f, const FusedLoops& fl, const Buffer& target, std::vector<std::string>& rewritten,
                      std::vector<std::string>& skipped) {
  if (std::string why = layout_problem(*target, fl); !why.empty()) return why;
  auto found = candidates(f.body, fl);
  bool indexed = false;
  for (const auto& [b, why] : found) indexed |= b == target.get();
  if (!indexed)
    return fmt::format("the fused loop does not index `{}` by (`{}`, `{}`) in its first two dimensions", target->name,
                       fl.outer->name, fl.inner->name);
  for (const auto& [b, why] : found) {
    if (why.empty()) rewritten.push_back(b->name);
    else skipped.push_back(why);
  }
  f.dim_fusions.push_back(fl);
  return "";
}

namespace {

/// `s` without its stores to `dead`, and without loops and sequences left empty.
Stmt drop_stores(const Stmt& s, const BufferNode* dead) {
  if (!s) return s;
  if (s->kind == StmtKind::Store && s->buffer.get() == dead) return nullptr;
  if (s->kind != StmtKind::Seq && s->kind != StmtKind::For) return s;
  std::vector<Stmt> body;
  for (const auto& c : s->body)
    if (Stmt k = drop_stores(c, dead)) body.push_back(k);
  if (body.empty()) return nullptr;
  if (s->kind == StmtKind::Seq && body.size() == 1 && s->body.size() != 1) return body[0];
  auto copy = std::make_shared<StmtNode>(*s);
  copy->body = std::move(body);
  return copy;
}

}  // namespace

void apply_dim_fusions(Func& f) {
  for (const auto& fl : f.dim_fusions) rewrite_rows(f, fl);
  // A map no access reads any more is not filled (the fill loop goes when
  // both F_fo and F_fi are unread).
  for (const auto& fl : f.dim_fusions)
    for (const Buffer& m : {fl.fo, fl.fi}) {
      bool read = false;
      each_stmt(f.body, [&](const StmtNode& x) {
        own_exprs(x, [&](const ExprNode& e) { read |= e.kind == ExprKind::Load && e.buffer == m; });
      });
      if (read || std::find(f.buffers.begin(), f.buffers.end(), m) == f.buffers.end()) continue;
      Stmt body = drop_stores(f.body, m.get());
      f.body = body ? body : build::seq({});
      f.buffers.erase(std::find(f.buffers.begin(), f.buffers.end(), m));
    }
  f.dim_fusions.clear();
}

}  // namespace dccc::ir
