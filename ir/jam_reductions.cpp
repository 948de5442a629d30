#include "ir/jam_reductions.h"

#include <map>
#include <string>
#include <vector>

#include "ir/flat_reduction.h"

namespace dccc::ir {
namespace {

constexpr int64_t kJam = 4;

Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }

/// `s` with the variables of `vars` replaced and the accumulator `acc`
/// stored to and loaded from `acc_new` instead.
Stmt renamed(const Stmt& s, const std::map<const VarNode*, Expr>& vars, const BufferNode* acc, const Buffer& acc_new) {
  std::function<Expr(const Expr&)> ex = [&](const Expr& e) -> Expr {
    if (!e) return e;
    if (e->kind == ExprKind::VarRef) {
      auto it = vars.find(e->var.get());
      return it == vars.end() ? e : it->second;
    }
    bool swap = e->kind == ExprKind::Load && e->buffer.get() == acc;
    if (e->args.empty() && !swap) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    if (swap) copy->buffer = acc_new;
    for (auto& a : copy->args) a = ex(a);
    return copy;
  };
  auto copy = std::make_shared<StmtNode>(*s);
  if (copy->buffer.get() == acc) copy->buffer = acc_new;
  copy->value = ex(copy->value);
  for (auto& a : copy->args) a = ex(a);
  return copy;
}

/// `s` with variable `v` replaced by `e` everywhere.
Stmt substituted(const Stmt& s, const Var& v, const Expr& e) {
  if (!s) return s;
  std::map<const VarNode*, Expr> m{{v.get(), e}};
  auto copy = std::make_shared<StmtNode>(*s);
  copy->extent = substitute(copy->extent, m);
  copy->value = substitute(copy->value, m);
  for (auto& a : copy->args) a = substitute(a, m);
  for (auto& c : copy->body) c = substituted(c, v, e);
  return copy;
}

class Jammer {
 public:
  explicit Jammer(Func& f) : f_(f) {}
  int jammed = 0;

  /// `s` with its nests jammed; `in_parallel`: inside a `parallel` loop.
  Stmt walk(const Stmt& s, bool in_parallel) {
    if (!s) return s;
    if (s->kind == StmtKind::For) {
      if (s->loop == LoopKind::Parallel && !in_parallel) return walk_children(s, true);
      if (auto n = match_flat_reduction(*s)) {
        if (n->inits.size() == 1 && !interchange_pays(*s, *n) && jam_pays(*s, *n)) {
          ++jammed;
          return jam(*s, *n);
        }
      }
    }
    return walk_children(s, in_parallel);
  }

 private:
  Stmt walk_children(const Stmt& s, bool in_parallel) {
    if (s->body.empty()) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    bool changed = false;
    for (auto& c : copy->body) {
      Stmt w = walk(c, in_parallel);
      changed |= w != c;
      c = w;
    }
    return changed ? copy : s;
  }

  Stmt jam(const StmtNode& s, const FlatReduction& n) {
    const Expr& extent = s.extent;
    const Buffer& acc = n.inits[0]->buffer;
    Var jo = make_var(s.var->name + ".o");
    Var d = make_var(n.red->var->name);
    std::vector<Stmt> inits, steps, fins;
    for (int64_t u = 0; u < kJam; ++u) {
      auto acc_u = std::make_shared<BufferNode>(*acc);
      acc_u->name = acc->name + ".j" + std::to_string(u);
      f_.buffers.push_back(acc_u);
      std::map<const VarNode*, Expr> vars{{s.var.get(), add(mul(build::var(jo), build::int_imm(kJam)), build::int_imm(u))},
                                          {n.red->var.get(), build::var(d)}};
      inits.push_back(renamed(n.inits[0], vars, acc.get(), acc_u));
      steps.push_back(renamed(n.steps[0], vars, acc.get(), acc_u));
      fins.push_back(renamed(n.fins[0], vars, acc.get(), acc_u));
    }
    auto red = std::make_shared<StmtNode>(*n.red);
    red->var = d;
    red->body = {build::seq(steps)};
    std::vector<Stmt> items = inits;
    items.push_back(red);
    items.insert(items.end(), fins.begin(), fins.end());
    auto blocks = std::make_shared<StmtNode>(s);
    blocks->var = jo;
    blocks->extent = build::binary(BinOp::Div, extent, build::int_imm(kJam));
    blocks->body = {build::seq(items)};
    // The last n % kJam values of j, one at a time.
    Var jr = make_var(s.var->name + ".r");
    Expr j = add(mul(build::binary(BinOp::Div, extent, build::int_imm(kJam)), build::int_imm(kJam)), build::var(jr));
    auto rest = std::make_shared<StmtNode>(s);
    rest->var = jr;
    rest->extent = build::binary(BinOp::Mod, extent, build::int_imm(kJam));
    rest->body = {substituted(s.body[0], s.var, j)};
    return build::seq({blocks, rest});
  }

  Func& f_;
};

}  // namespace

int jam_reductions(Func& f) {
  if (!f.storage_lowered) return 0;
  Jammer j(f);
  Stmt body = j.walk(f.body, false);
  if (j.jammed) f.body = body;
  return j.jammed;
}

}  // namespace dccc::ir
