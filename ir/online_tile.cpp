#include "ir/online_tile.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace dccc::ir {
namespace {

/// One copy of a row's body: variables substituted, loop variables and
/// scalars renamed.
struct Copier {
  std::map<const VarNode*, Expr> vars;        // v and loop variables
  std::map<const VarNode*, Var> loops;        // loop variable -> its copy
  std::map<const BufferNode*, Buffer> scalars;
  std::map<const BufferNode*, std::pair<Buffer, size_t>> scratch;  // -> copy, dimension dropped

  std::vector<Expr> indices(const BufferNode* b, const std::vector<Expr>& args) const {
    std::vector<Expr> out;
    auto it = scratch.find(b);
    for (size_t k = 0; k < args.size(); ++k)
      if (it == scratch.end() || k != it->second.second) out.push_back(expr(args[k]));
    return out;
  }

  Expr expr(const Expr& e) const {
    return replace_exprs(e, [&](const Expr& x) -> Expr {
      if (x->kind == ExprKind::VarRef) {
        auto it = vars.find(x->var.get());
        return it == vars.end() ? nullptr : it->second;
      }
      if (x->kind != ExprKind::Load) return nullptr;
      if (auto it = scalars.find(x->buffer.get()); it != scalars.end()) return build::load(it->second, indices(x->buffer.get(), x->args));
      if (auto it = scratch.find(x->buffer.get()); it != scratch.end())
        return build::load(it->second.first, indices(x->buffer.get(), x->args));
      return nullptr;
    });
  }

  Stmt stmt(const Stmt& s) const {
    if (!s) return s;
    auto c = std::make_shared<StmtNode>(*s);
    if (c->var) {
      auto it = loops.find(c->var.get());
      if (it != loops.end()) c->var = it->second;
    }
    if (c->extent) c->extent = expr(c->extent);
    if (c->value) c->value = expr(c->value);
    if (c->buffer && scratch.count(c->buffer.get())) {
      c->args = indices(c->buffer.get(), c->args);
      c->buffer = scratch.at(c->buffer.get()).first;
    } else {
      for (auto& a : c->args) a = expr(a);
    }
    if (c->buffer) {
      auto it = scalars.find(c->buffer.get());
      if (it != scalars.end()) c->buffer = it->second;
    }
    for (auto& b : c->body) b = stmt(b);
    return c;
  }
};

/// The loads of tensors (not scalars) in the values `s` stores (not in loop
/// extents, which read the lengths).
std::vector<const ExprNode*> tensor_loads(const Stmt& s) {
  std::vector<const ExprNode*> out;
  each_stmt(s, [&](const StmtNode& x) {
    if (x.kind != StmtKind::Store) return;
    each_expr(x.value, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load && e.buffer->kind != BufferKind::Scalar) out.push_back(&e);
    });
  });
  return out;
}

/// Whether two copies of a loop read some element in common (the keys or
/// values of the tile's rows): only then does running them as one loop save
/// loads. A loop over each row's own block row (the maximum, the
/// exponentials, the sum) stays one loop per row, the shape the backend
/// vectorizes best (a max/min loop of one accumulator runs in vector lanes).
bool share_loads(const Stmt& a, const Stmt& b) {
  std::vector<const ExprNode*> la = tensor_loads(a), lb = tensor_loads(b);
  for (const ExprNode* x : la)
    for (const ExprNode* y : lb)
      if (x->buffer == y->buffer && x->args.size() == y->args.size()) {
        bool same = true;
        for (size_t k = 0; k < x->args.size() && same; ++k) same = same_expr(x->args[k], y->args[k]);
        if (same) return true;
      }
  return false;
}

Stmt jam(const std::vector<Stmt>& copies) {
  const Stmt& first = copies[0];
  if (first->kind == StmtKind::Seq) {
    std::vector<Stmt> items;
    for (size_t k = 0; k < first->body.size(); ++k) {
      std::vector<Stmt> at;
      for (const auto& c : copies) at.push_back(c->body[k]);
      items.push_back(jam(at));
    }
    return build::seq(items);
  }
  if (first->kind == StmtKind::For && (copies.size() < 2 || share_loads(copies[0], copies[1]))) {
    std::vector<Stmt> bodies;
    for (const auto& c : copies) bodies.push_back(c->body[0]);
    return build::for_loop(first->var, first->extent, jam(bodies), first->loop);
  }
  if (first->kind == StmtKind::IfThenElse) {
    // A condition the copies share (one that does not read the row): one
    // branch for the tile, its sides jammed.
    bool same = true;
    for (const auto& c : copies) same &= same_expr(c->value, first->value) && c->body.size() == first->body.size();
    if (same) {
      std::vector<Stmt> thens, elses;
      for (const auto& c : copies) {
        thens.push_back(c->body[0]);
        if (c->body.size() > 1) elses.push_back(c->body[1]);
      }
      return build::if_then_else(first->value, jam(thens), elses.empty() ? nullptr : jam(elses));
    }
  }
  if (first->kind == StmtKind::For) {
    std::vector<Stmt> own = {copies[0]};
    for (size_t k = 1; k < copies.size(); ++k) own.push_back(fresh_loops(copies[k]));
    return build::seq(own);
  }
  return build::seq(copies);
}

}  // namespace

Stmt fresh_loops(const Stmt& s, std::map<const VarNode*, Expr> vars) {
  if (!s) return s;
  auto c = std::make_shared<StmtNode>(*s);
  if (c->extent) c->extent = substitute(c->extent, vars);
  if (c->value) c->value = substitute(c->value, vars);
  for (auto& a : c->args) a = substitute(a, vars);
  if (c->kind == StmtKind::For) {
    c->var = make_var(s->var->name);
    vars[s->var.get()] = build::var(c->var);
  }
  for (auto& b : c->body) b = fresh_loops(b, vars);
  return c;
}

std::vector<size_t> row_order(const std::vector<Stmt>& step, const std::vector<Var>& moving,
                              const std::vector<Var>& rows, const std::vector<Expr>& extents, bool& unread) {
  std::set<const VarNode*> read;
  for (const auto& st : step)
    each_stmt(st, [&](const StmtNode& x) {
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind != ExprKind::Load) return;
        bool moves = false;
        for (const auto& a : e.args)
          for (const auto& m : moving) moves |= mentions(a, m);
        if (!moves) return;
        for (const auto& a : e.args)
          each_expr(a, [&](const ExprNode& y) {
            if (y.kind == ExprKind::VarRef) read.insert(y.var.get());
          });
      });
    });
  const size_t n = rows.size();
  std::vector<size_t> order, inner;
  for (size_t k = 0; k < n; ++k) (read.count(rows[k].get()) ? order : inner).push_back(k);
  order.insert(order.end(), inner.begin(), inner.end());
  unread = !inner.empty();
  for (size_t p = 0; p < n; ++p)
    for (size_t q = p; q < n; ++q)
      if (mentions(extents[order[p]], rows[order[q]])) {
        order.clear();
        for (size_t k = 0; k < n; ++k) order.push_back(k);
        unread = n > 0 && !read.count(rows[n - 1].get());
        return order;
      }
  return order;
}

Stmt tile_rows(const Stmt& body, const Var& v, const Expr& extent, LoopKind kind, int64_t tile,
               const std::vector<RowScratch>& scratch,
               const std::function<Buffer(const std::string&, Scalar)>& fresh_scalar,
               const std::function<Buffer(const Buffer&, size_t, const std::string&)>& fresh_local) {
  bool ok = tile > 1;
  std::vector<const StmtNode*> loops;
  std::vector<Buffer> scalars;
  std::map<const BufferNode*, bool> seen;
  auto note = [&](const Buffer& b) {
    if (b && b->kind == BufferKind::Scalar && !seen[b.get()]) {
      seen[b.get()] = true;
      scalars.push_back(b);
    }
  };
  each_stmt(body, [&](const StmtNode& s) {
    ok &= s.kind == StmtKind::For || s.kind == StmtKind::Store || s.kind == StmtKind::Seq ||
          s.kind == StmtKind::IfThenElse;
    if (s.kind == StmtKind::For) {
      ok &= !mentions(s.extent, v) && s.loop == LoopKind::Serial;
      loops.push_back(&s);
    }
    // The copies' own scalars are those the body writes; a scalar it only
    // reads (the scale or window a caller passed, set before the loop) is
    // shared, as a fresh copy of it would never be set.
    if (s.kind == StmtKind::Store) note(s.buffer);
  });
  if (!ok) return nullptr;
  Expr t = build::int_imm(tile, extent->type);
  Var vo = make_var(v->name + ".o"), vr = make_var(v->name + ".r");
  // The tile's copies share one fresh variable per loop.
  Copier base;
  for (const auto* l : loops) base.loops[l->var.get()] = make_var(l->var->name);
  for (const auto& [from, to] : base.loops) base.vars[from] = build::var(to);
  std::vector<Stmt> copies;
  for (int64_t u = 0; u < tile; ++u) {
    Copier c = base;
    c.vars[v.get()] = build::binary(BinOp::Add, build::binary(BinOp::Mul, build::var(vo), t),
                                    build::int_imm(u, extent->type));
    for (const auto& s : scalars) c.scalars[s.get()] = fresh_scalar(fmt::format("{}.{}{}", s->name, v->name, u), s->type);
    for (const auto& r : scratch)
      c.scratch[r.buffer.get()] = {fresh_local(r.buffer, r.dim, fmt::format("{}{}", v->name, u)), r.dim};
    copies.push_back(c.stmt(body));
  }
  Stmt tiled = build::for_loop(vo, build::binary(BinOp::Div, extent, t), jam(copies), kind);
  // The remaining rows: the body itself, its own loops and scalars.
  Copier rest;
  for (const auto& r : scratch) rest.scratch[r.buffer.get()] = {fresh_local(r.buffer, r.dim, v->name + "r"), r.dim};
  rest.vars[v.get()] = build::binary(
      BinOp::Add, build::binary(BinOp::Mul, build::binary(BinOp::Div, extent, t), t), build::var(vr));
  Stmt tail = build::for_loop(vr, build::binary(BinOp::Mod, extent, t), rest.stmt(body), kind);
  return build::seq({tiled, tail});
}

Expr transpose_loads(const Expr& x, const Var& j, const Var& r, std::map<const BufferNode*, Buffer>& made,
                     std::vector<Stmt>& copies, std::vector<Buffer>& buffers,
                     const std::function<std::string(const std::string&)>& fresh_name) {
  return replace_exprs(x, [&](const Expr& e) -> Expr {
    if (e->kind != ExprKind::Load || e->flat || e->args.size() < 2) return nullptr;
    const Buffer& b = e->buffer;
    if (b->kind != BufferKind::Input && b->kind != BufferKind::Local) return nullptr;
    for (int64_t pd : b->pad)
      if (pd != 1) return nullptr;
    const size_t n = e->args.size();
    const Expr& last = e->args[n - 1];
    if (last->kind != ExprKind::VarRef || last->var != r) return nullptr;
    size_t jd = n;
    for (size_t k = 0; k + 1 < n; ++k) {
      const Expr& a = e->args[k];
      if (a->kind == ExprKind::VarRef && a->var == j && jd == n) {
        jd = k;
        continue;
      }
      if (mentions(a, j) || mentions(a, r)) return nullptr;
    }
    if (jd == n) return nullptr;
    for (size_t k = 0; k < n; ++k)
      if (k != jd && mentions(b->dims[k].extent, b->dims[jd].var)) return nullptr;
    std::vector<size_t> order;
    for (size_t k = 0; k < n; ++k)
      if (k != jd) order.push_back(k);
    order.push_back(jd);
    Buffer& t = made[b.get()];
    if (!t) {
      t = std::make_shared<BufferNode>();
      t->name = fresh_name(b->name + ".t");
      t->type = b->type;
      t->kind = BufferKind::Local;
      t->zero_fill = false;  // the copy stores every element
      t->at = b->at;
      // Rows along j padded to 16 in storage, and the copy in blocks of 16
      // positions of j with B's last dimension outside them (as
      // ir/transpose_operands.h copies): the innermost loop stores a run of
      // BT's row and reads 16 rows of B that stay in cache; the padding holds
      // copies of the row's last element (never read), so BT is stored whole.
      constexpr int64_t kPad = kTransposePad;
      t->pad.assign(n, 1);
      t->pad.back() = kPad;
      std::map<const VarNode*, Expr> dv, lv;
      std::vector<Var> loop_vars(n);
      for (size_t k : order) {
        Var v = make_var(b->dims[k].var->name);
        t->dims.push_back({v, substitute(b->dims[k].extent, dv)});
        dv[b->dims[k].var.get()] = build::var(v);
        loop_vars[k] = make_var(b->dims[k].var->name);
        lv[b->dims[k].var.get()] = build::var(loop_vars[k]);
      }
      Var jo = make_var(b->dims[jd].var->name + ".o"), jl = make_var(b->dims[jd].var->name + ".i");
      Expr jj = build::binary(BinOp::Add, build::binary(BinOp::Mul, build::var(jo), build::int_imm(kPad)),
                              build::var(jl));
      Expr len = substitute(b->dims[jd].extent, lv);
      std::vector<Expr> from, to;
      for (size_t k = 0; k < n; ++k)
        from.push_back(k == jd ? build::binary(BinOp::Min, jj, build::binary(BinOp::Sub, len, build::int_imm(1)))
                               : build::var(loop_vars[k]));
      for (size_t k : order) to.push_back(k == jd ? jj : build::var(loop_vars[k]));
      Stmt s = build::for_loop(jl, build::int_imm(kPad), build::store(t, to, build::load(b, from)));
      for (size_t q = n - 1; q-- > 0;) {
        s = build::for_loop(loop_vars[order[q]], substitute(b->dims[order[q]].extent, lv), s);
        if (q == n - 2)
          s = build::for_loop(jo, build::binary(BinOp::Div, build::round_up(len, kPad), build::int_imm(kPad)), s);
      }
      copies.push_back(s);
      buffers.push_back(t);
    }
    std::vector<Expr> idx;
    for (size_t k : order) idx.push_back(e->args[k]);
    return build::load(t, idx);
  });
}

}  // namespace dccc::ir
