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

/// A loop extent below kJam by its form: a constant, or `e % c` with c at
/// most kJam (the remainder loop jam() writes). Nothing to jam there, and
/// leaving it alone makes the pass leave its own output as it is.
bool few_iterations(const Expr& extent) {
  if (extent->kind == ExprKind::IntImm) return extent->int_value < kJam;
  return extent->kind == ExprKind::Binary && extent->binop == BinOp::Mod && extent->args[1]->kind == ExprKind::IntImm &&
         extent->args[1]->int_value > 0 && extent->args[1]->int_value <= kJam;
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
      if (auto n = few_iterations(s->extent) ? std::nullopt : match_flat_reduction(*s)) {
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
      inits.push_back(rename_store(n.inits[0], vars, acc.get(), acc_u));
      steps.push_back(rename_store(n.steps[0], vars, acc.get(), acc_u));
      fins.push_back(rename_store(n.fins[0], vars, acc.get(), acc_u));
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
    rest->body = {substitute(s.body[0], {{s.var.get(), j}})};
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
