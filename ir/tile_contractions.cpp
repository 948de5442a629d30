#include "ir/tile_contractions.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dccc::ir {
namespace {

constexpr int64_t kTileI = 4;
constexpr int64_t kTileJ = 4;

const Stmt& unwrap_once(const Stmt& s) { return s && s->kind == StmtKind::Seq && s->body.size() == 1 ? s->body[0] : s; }

bool is_var(const Expr& e, const Var& v) { return e->kind == ExprKind::VarRef && e->var == v; }

bool names(const std::vector<Expr>& args, const Var& v) {
  for (const auto& a : args)
    if (is_var(a, v)) return true;
  return false;
}

/// The parts of `for i { for j { acc = init; for r { acc = acc op x }; t[..] = f(acc) } }`.
struct Nest {
  Stmt outer, inner, init, red, step, fin;
  Buffer acc;
};

class Tiler {
 public:
  explicit Tiler(Func& f) : f_(f) {}
  int tiled = 0;

  Stmt walk(const Stmt& s) {
    if (!s) return s;
    if (s->kind == StmtKind::For) {
      if (auto n = match(s)) {
        ++tiled;
        return tile(*n);
      }
    }
    if (s->body.empty()) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    for (auto& c : copy->body) c = walk(c);
    return copy;
  }

 private:
  std::optional<Nest> match(const Stmt& outer) const {
    if (outer->loop != LoopKind::Serial) return std::nullopt;
    const Stmt& inner = unwrap_once(outer->body[0]);
    if (!inner || inner->kind != StmtKind::For || inner->loop != LoopKind::Serial) return std::nullopt;
    const Var& i = outer->var;
    const Var& j = inner->var;
    if (mentions(inner->extent, i)) return std::nullopt;
    const Stmt& body = inner->body[0];
    if (!body || body->kind != StmtKind::Seq || body->body.size() != 3) return std::nullopt;
    Nest n{outer, inner, body->body[0], body->body[1], nullptr, body->body[2], nullptr};
    if (n.init->kind != StmtKind::Store || n.red->kind != StmtKind::For || n.fin->kind != StmtKind::Store)
      return std::nullopt;
    n.acc = n.init->buffer;
    const BufferNode* acc = n.acc.get();
    if (acc->kind != BufferKind::Scalar || !acc->dims.empty() || n.init->flat || loads_from(n.init->value, acc))
      return std::nullopt;
    if (n.red->loop != LoopKind::Serial || mentions(n.red->extent, i) || mentions(n.red->extent, j) ||
        loads_from(n.red->extent, acc))
      return std::nullopt;
    n.step = unwrap_once(n.red->body[0]);
    if (!n.step || n.step->kind != StmtKind::Store || n.step->buffer != n.acc) return std::nullopt;
    const Expr& v = n.step->value;
    if (v->kind != ExprKind::Binary || v->args[0]->kind != ExprKind::Load || v->args[0]->buffer != n.acc ||
        loads_from(v->args[1], acc))
      return std::nullopt;
    // The output: a tensor element per (i, j), read nowhere in the nest.
    const Buffer& t = n.fin->buffer;
    if (n.fin->flat || t->dims.empty() || t.get() == acc || !names(n.fin->args, i) || !names(n.fin->args, j))
      return std::nullopt;
    for (const auto& a : n.fin->args)
      if (loads_from(a, acc)) return std::nullopt;
    bool loads_t = false, prints = false, flat = false;
    each_stmt(outer, [&](const StmtNode& x) {
      prints |= x.kind == StmtKind::Print;
      flat |= x.flat;
      own_exprs(x, [&](const ExprNode& e) {
        loads_t |= e.kind == ExprKind::Load && e.buffer == t;
        flat |= e.flat;
      });
    });
    if (loads_t || prints || flat || loads_from(outer->extent, acc)) return std::nullopt;
    // The accumulator is private to the nest.
    if (touches_outside(f_.body, inner->body[0].get(), acc)) return std::nullopt;
    if (f_.prelude && touches(f_.prelude, acc)) return std::nullopt;
    // Profitable: an operand along r that all TI rows share.
    if (!shared_operand(v->args[1], i, n.red->var)) return std::nullopt;
    return n;
  }

  /// Some load in `x` depends on `r` but not on `v`.
  static bool shared_operand(const Expr& x, const Var& v, const Var& r) {
    bool found = false;
    each_expr(x, [&](const ExprNode& e) {
      if (e.kind != ExprKind::Load || e.args.empty()) return;
      bool has_v = false, has_r = false;
      for (const auto& a : e.args) {
        has_v |= mentions(a, v);
        has_r |= mentions(a, r);
      }
      found |= has_r && !has_v;
    });
    return found;
  }

  /// Some load in `x` is contiguous along `j` (j is its last index).
  static bool contiguous_in(const Expr& x, const Var& j) {
    bool found = false;
    each_expr(x, [&](const ExprNode& e) {
      found |= e.kind == ExprKind::Load && !e.args.empty() && is_var(e.args.back(), j);
    });
    return found;
  }

  Buffer fresh_acc(const Nest& n, int64_t u, int64_t w) {
    auto b = std::make_shared<BufferNode>(*n.acc);
    b->name = n.acc->name + ".t" + std::to_string(u) + std::to_string(w);
    f_.buffers.push_back(b);
    return b;
  }

  /// One pass of r computing the outputs at (is[u], js[w]) for all u, w.
  Stmt tile_pass(const Nest& n, const std::vector<Expr>& is, const std::vector<Expr>& js,
                 std::vector<Buffer>& accs) {
    Var r = make_var(n.red->var->name);
    std::vector<Stmt> inits, steps, fins;
    size_t k = 0;
    for (const auto& ie : is)
      for (const auto& je : js) {
        if (accs.size() <= k) accs.push_back(fresh_acc(n, k / kTileJ, k % kTileJ));
        std::map<const VarNode*, Expr> vars{
            {n.outer->var.get(), ie}, {n.inner->var.get(), je}, {n.red->var.get(), build::var(r)}};
        inits.push_back(rename_store(n.init, vars, n.acc.get(), accs[k]));
        steps.push_back(rename_store(n.step, vars, n.acc.get(), accs[k]));
        fins.push_back(rename_store(n.fin, vars, n.acc.get(), accs[k]));
        ++k;
      }
    auto red = std::make_shared<StmtNode>(*n.red);
    red->var = r;
    red->body = {build::seq(steps)};
    std::vector<Stmt> items = inits;
    items.push_back(red);
    items.insert(items.end(), fins.begin(), fins.end());
    return build::seq(items);
  }

  static Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }
  static Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }
  static Expr imm(int64_t v) { return build::int_imm(v); }

  Stmt tile(const Nest& n) {
    const Expr& ni = n.outer->extent;
    const Expr& nj = n.inner->extent;
    int64_t tj = contiguous_in(n.step->value->args[1], n.inner->var) ? 1 : kTileJ;
    Var io = make_var(n.outer->var->name + ".o");
    std::vector<Expr> is;
    for (int64_t u = 0; u < kTileI; ++u) is.push_back(add(mul(build::var(io), imm(kTileI)), imm(u)));
    std::vector<Buffer> accs;  // shared by the passes (each writes before it reads)
    std::vector<Stmt> per_row_block;
    if (tj == 1) {
      Var j = make_var(n.inner->var->name);
      per_row_block.push_back(build::for_loop(j, nj, tile_pass(n, is, {build::var(j)}, accs)));
    } else {
      Var jo = make_var(n.inner->var->name + ".o");
      std::vector<Expr> js;
      for (int64_t w = 0; w < tj; ++w) js.push_back(add(mul(build::var(jo), imm(tj)), imm(w)));
      per_row_block.push_back(build::for_loop(jo, build::binary(BinOp::Div, nj, imm(tj)), tile_pass(n, is, js, accs)));
      // The last nj % TJ columns, TI rows at a time, with the tile's first
      // column of accumulators (tile_pass numbers them row-major over (u, w)).
      Var jr = make_var(n.inner->var->name + ".r");
      std::vector<Buffer> col;
      for (int64_t u = 0; u < kTileI; ++u) col.push_back(accs[u * tj]);
      Expr jcol = add(mul(build::binary(BinOp::Div, nj, imm(tj)), imm(tj)), build::var(jr));
      Stmt pass = tile_pass(n, is, {jcol}, col);
      per_row_block.push_back(build::for_loop(jr, build::binary(BinOp::Mod, nj, imm(tj)), pass));
    }
    Stmt blocks = build::for_loop(io, build::binary(BinOp::Div, ni, imm(kTileI)), build::seq(per_row_block));
    // The last ni % TI rows: the original inner loop, i substituted.
    Var ir = make_var(n.outer->var->name + ".r");
    Expr irow = add(mul(build::binary(BinOp::Div, ni, imm(kTileI)), imm(kTileI)), build::var(ir));
    Stmt rest =
        build::for_loop(ir, build::binary(BinOp::Mod, ni, imm(kTileI)), substitute(n.inner, {{n.outer->var.get(), irow}}));
    return build::seq({blocks, rest});
  }

  Func& f_;
};

}  // namespace

int tile_contractions(Func& f) {
  Tiler t(f);
  Stmt body = t.walk(f.body);
  if (t.tiled) f.body = body;
  return t.tiled;
}

}  // namespace dccc::ir
