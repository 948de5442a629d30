#include "ir/split_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

namespace dccc::ir {
namespace {



/// True when some expression of `s` (extents and conditions included) loads from `b`.
bool reads(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) {
    own_exprs(x, [&](const ExprNode& e) { found |= e.kind == ExprKind::Load && e.buffer.get() == b; });
  });
  return found;
}

/// Rebuilds `s` with a fresh variable for every loop and a fresh buffer for
/// every scalar in `scalars`; `m` maps old variables to their replacement.
class Cloner {
 public:
  Cloner(const VarNode* split, int64_t k, const std::function<std::string(const VarNode*)>& name,
         std::map<const BufferNode*, Buffer>& scalars, SplitOpResult& out)
      : split_(split), k_(k), name_(name), scalars_(scalars), out_(out) {}

  Stmt clone(const Stmt& s) {
    if (!s) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    if (s->kind == StmtKind::For) {
      Var v = make_var(name_(s->var.get()));
      out_.rest_loops[s->var.get()] = v;
      copy->var = v;
      copy->extent = expr(s->extent);
      if (s->var.get() == split_) {
        out_.bulk_extent = round_down(copy->extent);
        out_.rest_extent = remainder(copy->extent);
        copy->extent = out_.rest_extent;
        m_[s->var.get()] = build::binary(BinOp::Add, build::var(v), out_.bulk_extent);
      } else {
        m_[s->var.get()] = build::var(v);
      }
    } else {
      if (s->value) copy->value = expr(s->value);
      for (auto& a : copy->args) a = expr(a);
      if (s->kind == StmtKind::Store && scalars_.count(s->buffer.get())) copy->buffer = scalars_.at(s->buffer.get());
    }
    for (auto& c : copy->body) c = clone(c);
    return copy;
  }

  Expr round_down(const Expr& e) const {
    if (e->kind == ExprKind::IntImm) return build::int_imm(e->int_value / k_ * k_);
    return build::binary(BinOp::Mul, build::binary(BinOp::Div, e, build::int_imm(k_)), build::int_imm(k_));
  }
  Expr remainder(const Expr& e) const {
    if (e->kind == ExprKind::IntImm) return build::int_imm(e->int_value % k_);
    return build::binary(BinOp::Mod, e, build::int_imm(k_));
  }

 private:
  Expr expr(const Expr& e) {
    Expr out = substitute(e, m_);
    if (scalars_.empty()) return out;
    // Scalars read in the nest are its own accumulators: read the twins.
    return rewrite_loads(out);
  }
  Expr rewrite_loads(const Expr& e) {
    if (!e) return e;
    bool changed = false;
    std::vector<Expr> args;
    for (const auto& a : e->args) {
      args.push_back(rewrite_loads(a));
      changed |= args.back() != a;
    }
    bool swap = e->kind == ExprKind::Load && scalars_.count(e->buffer.get());
    if (!changed && !swap) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    copy->args = std::move(args);
    if (swap) copy->buffer = scalars_.at(e->buffer.get());
    return copy;
  }

  const VarNode* split_;
  int64_t k_;
  const std::function<std::string(const VarNode*)>& name_;
  std::map<const BufferNode*, Buffer>& scalars_;
  SplitOpResult& out_;
  std::map<const VarNode*, Expr> m_;
};

}  // namespace

void plain_index_vars(const Stmt& nest, const Expr& e, std::set<const VarNode*>& out) {
  if (e->kind == ExprKind::VarRef) {
    out.insert(e->var.get());
    return;
  }
  if (e->kind != ExprKind::Binary || e->binop != BinOp::Add || e->args[1]->kind != ExprKind::VarRef) return;
  const Expr& mul = e->args[0];
  if (mul->kind != ExprKind::Binary || mul->binop != BinOp::Mul || mul->args[1]->kind != ExprKind::IntImm) return;
  const StmtNode* inner = find_for(nest, e->args[1]->var.get());
  if (!inner || inner->extent->kind != ExprKind::IntImm || inner->extent->int_value != mul->args[1]->int_value) return;
  std::set<const VarNode*> outer;
  plain_index_vars(nest, mul->args[0], outer);
  if (outer.empty()) return;
  out.insert(outer.begin(), outer.end());
  out.insert(e->args[1]->var.get());
}

bool is_multiple_of(const Expr& e, int64_t k) {
  if (k == 1) return true;
  if (e->kind == ExprKind::IntImm) return e->int_value % k == 0;
  return e->kind == ExprKind::Binary && e->binop == BinOp::Mul && e->args[1]->kind == ExprKind::IntImm &&
         e->args[1]->int_value % k == 0 && e->args[0]->kind == ExprKind::Binary && e->args[0]->binop == BinOp::Div &&
         e->args[0]->args[1]->kind == ExprKind::IntImm &&
         e->args[0]->args[1]->int_value == e->args[1]->int_value;
}

Expr exact_quotient(const Expr& e, int64_t k) {
  if (k == 1) return e;
  if (e->kind == ExprKind::IntImm) return build::int_imm(e->int_value / k);
  int64_t m = e->args[1]->int_value;
  if (m == k) return e->args[0];
  return build::binary(BinOp::Mul, e->args[0], build::int_imm(m / k));
}

std::optional<SplitOpResult> split_op(Func& f, const Var& loop, int64_t k,
                                      const std::function<std::string(const VarNode*)>& rest_name,
                                      std::string& why) {
  std::vector<Stmt> items = f.body && f.body->kind == StmtKind::Seq ? f.body->body : std::vector<Stmt>{f.body};
  size_t at = items.size();
  for (size_t q = 0; q < items.size() && at == items.size(); ++q)
    if (find_for(items[q], loop.get())) at = q;
  if (at == items.size()) {
    why = fmt::format("loop `{}` is not in the lowered code", loop->name);
    return std::nullopt;
  }
  const Stmt& top = items[at];
  // The chain of loops from the statement's outermost loop down to `loop`.
  std::vector<const StmtNode*> chain;
  Stmt cur = top;
  while (true) {
    while (cur && ((cur->kind == StmtKind::Seq && cur->body.size() == 1) ||
                   (cur->kind == StmtKind::IfThenElse && (cur->body.size() == 1 || !cur->body[1]))))
      cur = cur->body[0];
    if (!cur || cur->kind != StmtKind::For) {
      why = chain.empty()
                ? fmt::format("the statement holding `{}` is not a loop nest", loop->name)
                : fmt::format("other statements lie between `{}` and `{}` (a `reduce` initialises its accumulator "
                              "there); they would run in both parts",
                              chain.back()->var->name, loop->name);
      return std::nullopt;
    }
    chain.push_back(cur.get());
    if (cur->var == loop) break;
    cur = cur->body[0];
  }
  const StmtNode* lp = chain.back();
  if (lp->extent->kind == ExprKind::IntImm && lp->extent->int_value % k == 0) {
    why = fmt::format("`{}` runs a constant {} iterations, a multiple of {}: there is no remainder to split off",
                      loop->name, lp->extent->int_value, k);
    return std::nullopt;
  }
  if (is_multiple_of(lp->extent, k)) {
    why = fmt::format("`{}` already runs a multiple of {} iterations (padded, or the bulk of a split): there is no "
                      "remainder to split off",
                      loop->name, k);
    return std::nullopt;
  }
  // Independence of the iterations the split reorders.
  std::map<const BufferNode*, Buffer> scalars;
  each_stmt(top, [&](const StmtNode& x) {
    if (!why.empty()) return;
    if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) {
      why = "the statement prints or checks a condition, whose order would change";
      return;
    }
    if (x.kind != StmtKind::Store) return;
    const Buffer& b = x.buffer;
    if (b->dims.empty()) {
      if (b->kind != BufferKind::Scalar || !written_before_read(lp->body[0], b.get()) ||
          touches_outside(f.body, lp, b.get()))
        why = fmt::format("`{}` accumulates across iterations of `{}`", b->name, loop->name);
      else if (!scalars.count(b.get())) {
        auto twin = std::make_shared<BufferNode>(*b);
        std::set<std::string> taken;
        for (const auto& o : f.buffers) taken.insert(o->name);
        twin->name = b->name + "_rest";
        for (int n = 2; taken.count(twin->name); ++n) twin->name = fmt::format("{}_rest{}", b->name, n);
        scalars[b.get()] = twin;
        f.buffers.push_back(twin);
      }
      return;
    }
    if (reads(top, b.get())) {
      why = fmt::format("`{}` is read in the statement that writes it", b->name);
      return;
    }
    std::set<const VarNode*> named;
    for (const auto& a : x.args) plain_index_vars(top, a, named);
    for (const StmtNode* l : chain)
      if (!named.count(l->var.get())) {
        why = fmt::format("`{}` is not stored at an element of its own in each iteration of `{}`", b->name,
                          l->var->name);
        return;
      }
  });
  if (!why.empty()) {
    // Scalars twinned before the refusal are dropped again.
    for (const auto& [old, twin] : scalars)
      f.buffers.erase(std::find(f.buffers.begin(), f.buffers.end(), twin));
    return std::nullopt;
  }
  SplitOpResult out;
  Cloner cloner(loop.get(), k, rest_name, scalars, out);
  Stmt rest = cloner.clone(top);
  // The bulk: the original nest with `loop` running to (E / k) * k.
  Expr bulk = cloner.round_down(lp->extent);
  std::function<Stmt(const Stmt&)> shrink = [&](const Stmt& s) -> Stmt {
    if (!s || s->body.empty()) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    if (s.get() == lp) copy->extent = bulk;
    else
      for (auto& c : copy->body) c = shrink(c);
    return copy;
  };
  items[at] = shrink(top);
  items.insert(items.begin() + static_cast<long>(at) + 1, rest);
  f.body = build::seq(items);
  return out;
}

}  // namespace dccc::ir
