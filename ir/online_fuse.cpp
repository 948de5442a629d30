#include "ir/online_fuse.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>

#include "ir/online_reductions.h"
#include "ir/online_tile.h"
#include "ir/separate.h"

namespace dccc::ir {
namespace {

Expr fimm(double v, Scalar t) { return build::float_imm(v, t); }

}  // namespace

Stmt fuse_chain(Chain& c, int64_t block, std::string& note) {
  const Nest& root = *c.nests[c.root_item];
  const size_t n = root.lhs.size();
  const bool extras = n > c.rows;
  // Blocks of JB values of j: j = j0 + jj, jj in 0 .. min(JB, extent - j0).
  // A per-j scalar (scores.j, e.j) becomes a row of JB values in a local
  // tensor indexed by the rows (blk_of); `lift` moves an expression of j to jj.
  const bool blocked = block > 1;
  Var jo = make_var(c.j->name + ".o");
  Expr jb = build::int_imm(block), j0 = build::binary(BinOp::Mul, build::var(jo), jb);
  Expr jn = build::binary(BinOp::Min, jb, build::binary(BinOp::Sub, c.extent, j0));
  std::map<const BufferNode*, Buffer> blk_of;
  std::vector<Buffer> scratch;  // the local tensors of block rows
  std::vector<Expr> row_idx;
  for (size_t k = 0; k < c.rows; ++k) row_idx.push_back(build::var(root.lhs[k]));
  auto block_of = [&](const Buffer& sc) {
    auto b = std::make_shared<BufferNode>();
    b->name = c.scalar(sc->name + ".blk", sc->type)->name;
    c.new_buffers.pop_back();
    b->type = sc->type;
    b->kind = BufferKind::Local;
    b->zero_fill = false;  // each block writes its row before reading it
    std::map<const VarNode*, Expr> dv;
    for (size_t k = 0; k < c.rows; ++k) {
      Var v = make_var(root.target->dims[k].var->name);
      b->dims.push_back({v, substitute(root.target->dims[k].extent, dv)});
      dv[root.target->dims[k].var.get()] = build::var(v);
    }
    b->dims.push_back({make_var("jj"), jb});
    c.new_buffers.push_back(b);
    blk_of[sc.get()] = b;
    scratch.push_back(b);
    return b;
  };
  auto lift = [&](const Expr& e, const Var& jj) {
    std::map<const VarNode*, Expr> at;
    at[c.j.get()] = build::binary(BinOp::Add, j0, build::var(jj));
    return replace_exprs(substitute(e, at), [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Load || !x->args.empty()) return nullptr;
      auto it = blk_of.find(x->buffer.get());
      if (it == blk_of.end()) return nullptr;
      std::vector<Expr> idx = row_idx;
      idx.push_back(build::var(jj));
      return build::load(it->second, idx);
    });
  };
  // for jj in 0 .. jn { body(jj) }; padded: jj up to the block's end rounded
  // up to 16 (at most JB, the rows of the block tensors): for loops that
  // only fill block rows and read nothing indexed by j but those rows and
  // the transposed copies (rows padded to 16, ir/online_tile.h), so the
  // backend runs them in whole vectors, no masked or scalar remainder. The
  // lanes past the block's end hold values no later loop reads.
  Expr jp = build::binary(BinOp::Min, jb,
                          build::binary(BinOp::Sub, build::round_up(c.extent, kTransposePad), j0));
  auto over_block = [&](const std::function<Stmt(const Var&)>& body, bool padded = false) {
    Var jj = make_var(c.j->name + ".i");
    return build::for_loop(jj, padded ? jp : jn, body(jj));
  };
  // Whether `e`, computed for values of j past the extent, reads only `ok`
  // there (and no integer division that could trap).
  auto pad_safe = [&](const Expr& e, const std::map<const BufferNode*, Buffer>& ok) {
    bool safe = true;
    each_expr(e, [&](const ExprNode& x) {
      if (x.kind == ExprKind::Load) {
        bool moves = false;
        for (const auto& a : x.args) moves |= mentions(a, c.j);
        bool mine = false;
        for (const auto& [from, to] : ok) mine |= to == x.buffer;
        safe &= !moves || mine;
      }
      if (x.kind == ExprKind::Binary && (x.binop == BinOp::Div || x.binop == BinOp::Mod) && !is_float(x.type))
        for (const auto& a : x.args) safe &= !mentions(a, c.j);
    });
    return safe;
  };
  // A block accumulator starts at the operation's identity in its type
  // (an integer max at the type's least value, not at i32(-inf)).
  using build::identity;
  for (size_t m = 0; m + 1 < c.members.size(); ++m) {
    const Buffer& t = c.members[m].nest->target;
    c.members[m].cur = c.scalar(t->name + ".run", t->type);
  }
  // Loads of results read the running value (or the one before this step).
  auto code = [&](const Expr& e, bool old) {
    return replace_exprs(e, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Load) return nullptr;
      for (size_t m = 0; m + 1 < c.members.size(); ++m) {
        Member& mm = c.members[m];
        if (x->buffer != mm.nest->target) continue;
        if (!old) return build::load(mm.cur, {});
        if (!mm.old) mm.old = c.scalar(mm.nest->target->name + ".prev", mm.nest->target->type);
        return build::load(mm.old, {});
      }
      return nullptr;
    });
  };
  // The root's accumulator per extra index (d): the result itself when it
  // has the accumulator's type, else a tensor of its shape.
  // A local tensor of the root's shape (rows and extra indices).
  auto row_tensor = [&](const std::string& base, Scalar t) {
    Buffer b = std::make_shared<BufferNode>(*root.target);
    b->name = c.scalar(base, t)->name;
    c.new_buffers.pop_back();
    b->type = t;
    b->kind = BufferKind::Local;
    b->pad.clear();
    std::map<const VarNode*, Expr> dv;
    for (auto& d : b->dims) {
      Var v = make_var(d.var->name);
      d.extent = substitute(d.extent, dv);
      dv[d.var.get()] = build::var(v);
      d.var = v;
    }
    c.new_buffers.push_back(b);
    return b;
  };
  Buffer out_acc;
  if (extras) out_acc = root.target->type == root.acc->type ? root.target : row_tensor(root.target->name + ".acc", root.acc->type);
  // A nest over the extra indices (fresh variables, or the root's own).
  auto over_extras = [&](bool fresh, const std::function<Stmt(const std::map<const VarNode*, Expr>&,
                                                              const std::vector<Expr>&)>& body) {
    std::map<const VarNode*, Expr> sub;
    std::vector<Var> vars;
    std::vector<Expr> idx;
    for (size_t k = 0; k < n; ++k) {
      if (k < c.rows) {
        idx.push_back(build::var(root.lhs[k]));
        continue;
      }
      Var v = fresh ? make_var(root.lhs[k]->name) : root.lhs[k];
      vars.push_back(v);
      sub[root.lhs[k].get()] = build::var(v);
      idx.push_back(build::var(v));
    }
    Stmt s = body(sub, idx);
    for (size_t k = n; k-- > c.rows;)
      s = build::for_loop(vars[k - c.rows], substitute(root.loops[k]->extent, sub), s, root.loops[k]->loop);
    return s;
  };
  // A member's result from its accumulator: P(r) or H(r) applied, then the
  // assignment's own expression (`/ sqrt(D)`, a cast).
  auto value = [&](const Member& m, Expr a, bool with_h) {
    Scalar at = m.nest->acc->type;
    if (with_h && m.deps) {
      if (m.nest->op == BinOp::Add) {
        for (size_t k = 0; k < m.mul.p_exprs.size(); ++k)
          a = build::binary(m.mul.p[k].second ? BinOp::Div : BinOp::Mul, a, as_type(code(m.mul.p_exprs[k], false), at));
      } else {
        a = build::binary(BinOp::Add, a, as_type(code(m.add.r.sum(m.x->type), false), at));
      }
    }
    const Buffer& acc = m.nest->acc;
    return code(replace_exprs(m.post, [&](const Expr& x) -> Expr {
                  return x->kind == ExprKind::Load && x->buffer == acc ? a : nullptr;
                }),
                false);
  };
  std::vector<std::pair<Expr, Buffer>> ratios, shared;
  std::vector<Stmt> init, step, fin;
  // What the first block does differently (blocks only): no rescaling (the
  // sums so far are 0), and the root's block sums stored as they are (no
  // zero fill, no rescaling pass); `pv_either` (the root being its own
  // accumulator) is that store or, when the first block is the only one,
  // the root's final value, chosen by the number of blocks. One copy of the
  // first block either way: a root with an accumulator of its own (a bf16
  // output summed in f32) stores the sums there and takes its final value
  // after the blocks, as a longer row does (one pass over d more for a
  // short row, where a copy of the first block per case doubled the code
  // LLVM compiles).
  std::set<const StmtNode*> ratio_ifs;
  Stmt pv_part, pv_first, pv_either, root_init, root_fin;
  std::vector<std::string> how;
  // The per-j scalars (a reduction over other indices, such as q k^T).
  for (const auto& p : c.producers) {
    const Nest& pn = *p.nest;
    auto b = c.bind(pn, p.args);
    std::vector<Var> fresh;
    for (const auto* l : pn.rloops) {
      fresh.push_back(make_var(l->var->name));
      b[l->var.get()] = build::var(fresh.back());
    }
    Expr px = substitute(pn.x, b);
    // Blocks read the operands indexed by j and r transposed (along j).
    if (blocked && fresh.size() == 1)
      px = transpose_loads(px, c.j, fresh[0], c.transposed, c.pre, c.new_buffers, [&](const std::string& base) {
        std::string nm = c.scalar(base, Scalar::F32)->name;
        c.new_buffers.pop_back();
        return nm;
      });
    Stmt s = build::store(pn.acc, {}, build::binary(pn.op, build::load(pn.acc, {}), px));
    for (size_t k = pn.rloops.size(); k-- > 0;)
      s = build::for_loop(fresh[k], substitute(pn.rloops[k]->extent, b), s);
    std::vector<Stmt> one = {build::store(pn.acc, {}, pn.init), s,
                             build::store(p.scalar, {}, substitute(pn.post, b))};
    if (!blocked) {
      step.insert(step.end(), one.begin(), one.end());
      continue;
    }
    Buffer blk = block_of(p.scalar);
    const bool padded = fresh.size() == 1 && pad_safe(px, c.transposed) && pad_safe(substitute(pn.post, b), c.transposed);
    step.push_back(over_block(
        [&](const Var& jj) {
          std::map<const VarNode*, Expr> at;
          at[c.j.get()] = build::binary(BinOp::Add, j0, build::var(jj));
          std::vector<Stmt> body;
          for (const auto& st : one) body.push_back(substitute(st, at));
          std::vector<Expr> idx = row_idx;
          idx.push_back(build::var(jj));
          body.back() = build::store(blk, idx, substitute(substitute(pn.post, b), at));
          return build::seq(body);
        },
        padded));
    std::erase(c.new_buffers, p.scalar);
  }
  size_t olds_at = step.size();
  for (size_t m = 0; m < c.members.size(); ++m) {
    Member& mm = c.members[m];
    const Nest& mn = *mm.nest;
    const bool is_root = m + 1 == c.members.size();
    const Scalar at = mn.acc->type;
    const std::string name = mn.target->name;
    // The step's operand and, for a + body, the rescaling of the sum so far.
    Expr operand;
    Buffer ratio;
    if (!mm.deps) {
      operand = code(mm.x, false);
      how.push_back(fmt::format("`{}` ({})", name, op_text(mn.op)));
    } else if (mn.op == BinOp::Add) {
      std::set<const ExprNode*> ones;
      for (const auto& [node, div] : mm.mul.p) ones.insert(node);
      for (const auto* node : mm.mul.also_one) ones.insert(node);
      operand = code(replace_exprs(mm.x, [&](const Expr& x) -> Expr {
                       return ones.count(x.get()) ? fimm(1, x->type) : nullptr;
                     }),
                     false);
      std::string h;
      if (!mm.mul.exponent.items.empty()) {
        Expr e = mm.mul.exponent.sum(at);
        Expr en = as_type(code(e, false), at), eo = as_type(code(e, true), at);
        // 1 while E stays (most steps: the exponential is skipped), 0 from
        // E = -inf (the sum so far is 0; no inf * 0), else exp(E_new - E_old).
        Expr r = build::select(build::binary(BinOp::EQ, eo, fimm(-INFINITY, at)), fimm(0, at),
                               build::unary(UnOp::Exp, build::binary(BinOp::Sub, en, eo)));
        for (const auto& [re, rb] : ratios)
          if (same_expr(re, r)) ratio = rb;
        if (!ratio) {
          ratio = c.scalar("rescale", at);
          ratios.push_back({r, ratio});
          step.push_back(build::store(ratio, {}, fimm(1, at)));
          step.push_back(build::if_then_else(build::binary(BinOp::NE, eo, en), build::store(ratio, {}, r)));
          ratio_ifs.insert(step.back().get());
        }
        h = fmt::format("rescaled by exp(E(new) - E(old)), E = {}", expr_text(e));
      }
      for (size_t k = 0; k < mm.mul.p_exprs.size(); ++k)
        h += fmt::format("{}{} {} after the loop", h.empty() ? "" : "; ", mm.mul.p[k].second ? "divided by" : "times",
                         expr_text(mm.mul.p_exprs[k]));
      how.push_back(fmt::format("`{}` (+, {})", name, h));
    } else {
      operand = code(mm.add.j.sum(mm.x->type), false);
      how.push_back(fmt::format("`{}` ({}, plus {} after the loop)", name, op_text(mn.op),
                                expr_text(mm.add.r.sum(mm.x->type))));
    }
    // Each exponential of the step that reads no extra index (exp(s - m)) is
    // computed once per j into a scalar, shared by the later members while
    // the running results it reads stay put: the root's loop over d then
    // multiplies by it instead of computing it D times.
    operand = replace_exprs(operand, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Unary || x->unop != UnOp::Exp) return nullptr;
      for (size_t k = c.rows; k < n; ++k)
        if (mentions(x, root.lhs[k])) return nullptr;
      for (const auto& [e, b] : shared)
        if (same_expr(e, x)) return build::load(b, {});
      Buffer b = c.scalar("e.j", x->type);
      if (blocked) {
        Buffer blk = block_of(b);
        std::erase(c.new_buffers, b);
        step.push_back(over_block(
            [&](const Var& jj) {
              std::vector<Expr> idx = row_idx;
              idx.push_back(build::var(jj));
              return build::store(blk, idx, lift(x, jj));
            },
            pad_safe(x, {})));
      } else {
        step.push_back(build::store(b, {}, x));
      }
      shared.push_back({x, b});
      return build::load(b, {});
    });
    auto combine = [&](const Expr& a, const Expr& x) {
      if (ratio) return build::binary(BinOp::Add, build::binary(BinOp::Mul, a, build::load(ratio, {})), x);
      return build::binary(mn.op, a, x);
    };
    // One key: acc = acc * ratio + x(j). A block: bacc = the block's op-sum
    // of x(j0 + jj), then acc = acc * ratio + bacc (one rescaling a block).
    auto update = [&](const Buffer& acc, const std::vector<Expr>& idx, const std::map<const VarNode*, Expr>& sub) {
      Expr x = substitute(operand, sub);
      if (!blocked) return build::store(acc, idx, combine(build::load(acc, idx), x));
      Buffer bacc = c.scalar(name + ".blk_acc", at);
      Stmt sum = over_block([&](const Var& jj) {
        return build::store(bacc, {}, build::binary(mn.op, build::load(bacc, {}), lift(x, jj)));
      });
      return build::seq({build::store(bacc, {}, identity(mn.op, at)), sum,
                         build::store(acc, idx, combine(build::load(acc, idx), build::load(bacc, {})))});
    };
    if (is_root && extras) {
      init.push_back(over_extras(true, [&](const auto&, const std::vector<Expr>& idx) {
        return build::store(out_acc, idx, mn.init);
      }));
      root_init = init.back();
      if (blocked) {
        // A reduction nest over the extra indices, the block's sums in its
        // accumulators (the backend runs it with vector accumulators along
        // d), each stored as acc * ratio + sum at the element it reads
        // (ir/flat_reduction.h): one pass over the output a block.
        Buffer bacc = c.scalar(name + ".blk_acc", at);
        // The block's sums, stored by `to(sub, idx, sums)`.
        auto sums = [&](const std::function<Stmt(const std::map<const VarNode*, Expr>&, const std::vector<Expr>&,
                                                 Expr)>& to) {
          return over_extras(true, [&](const auto& sub, const std::vector<Expr>& idx) {
            Expr x = substitute(operand, sub);
            Stmt sum = over_block([&](const Var& jj) {
              return build::store(bacc, {}, build::binary(mn.op, build::load(bacc, {}), lift(x, jj)));
            });
            return build::seq({build::store(bacc, {}, identity(mn.op, at)), sum, to(sub, idx, build::load(bacc, {}))});
          });
        };
        pv_part = sums([&](const auto&, const std::vector<Expr>& idx, Expr v) {
          return build::store(out_acc, idx, combine(build::load(out_acc, idx), v));
        });
        pv_first = sums([&](const auto&, const std::vector<Expr>& idx, Expr v) { return build::store(out_acc, idx, v); });
        if (out_acc == root.target)
          pv_either = sums([&](const auto& sub, const std::vector<Expr>& idx, Expr v) {
            return build::store(root.target, idx,
                                build::select(build::binary(BinOp::LE, c.extent, jb), substitute(value(mm, v, true), sub), v));
          });
        step.push_back(pv_part);
      } else {
        step.push_back(over_extras(true, [&](const auto& sub, const std::vector<Expr>& idx) {
          return update(out_acc, idx, sub);
        }));
      }
      fin.push_back(over_extras(false, [&](const auto&, const std::vector<Expr>& idx) {
        return build::store(root.target, idx, value(mm, build::load(out_acc, idx), true));
      }));
      root_fin = fin.back();
      continue;
    }
    init.push_back(build::store(mn.acc, {}, mn.init));
    step.push_back(update(mn.acc, {}, {}));
    if (is_root) {
      std::vector<Expr> idx;
      for (const auto& v : root.lhs) idx.push_back(build::var(v));
      fin.push_back(build::store(root.target, idx, value(mm, build::load(mn.acc, {}), true)));
      continue;
    }
    init.push_back(build::store(mm.cur, {}, value(mm, mn.init, false)));
    step.push_back(build::store(mm.cur, {}, value(mm, build::load(mn.acc, {}), true)));
    std::erase_if(shared, [&](const auto& e) { return loads_from(e.first, mm.cur.get()); });
    if (mm.store) fin.push_back(build::store(mn.target, mm.args, build::load(mm.cur, {})));
  }
  // The results before this step, for the rescaling.
  std::vector<Stmt> olds;
  for (const auto& m : c.members)
    if (m.old) olds.push_back(build::store(m.old, {}, build::load(m.cur, {})));
  step.insert(step.begin() + static_cast<std::ptrdiff_t>(olds_at), olds.begin(), olds.end());
  std::vector<Stmt> row = init;
  if (blocked) {
    // The first block on its own (j.o = 0), then the others. With a root
    // indexed beyond the rows (d) that is its own accumulator, a row of at
    // most one block (short sequences) stores the root's final value from
    // the block's sums directly: the materialised form's own loop, no pass
    // over d after it.
    Expr blocks = build::binary(BinOp::Div, build::binary(BinOp::Add, c.extent, build::int_imm(block - 1)), jb);
    auto first = [&](const Stmt& pv) {
      std::vector<Stmt> out;
      for (const auto& st : step) {
        if (ratio_ifs.count(st.get())) continue;
        out.push_back(fresh_loops(substitute(st == pv_part ? pv : st, {{jo.get(), build::int_imm(0)}})));
      }
      return out;
    };
    Var jr = make_var(jo->name);
    std::vector<Stmt> later = first(pv_first);
    Stmt rest = build::for_loop(jr, build::binary(BinOp::Sub, blocks, build::int_imm(1)),
                                substitute(build::seq(step), {{jo.get(), build::binary(BinOp::Add, build::var(jr),
                                                                                     build::int_imm(1))}}));
    later.push_back(rest);
    later.insert(later.end(), fin.begin(), fin.end());
    if (pv_either) {
      // first block; if (more blocks) { the others; the root's final value }
      std::erase(row, root_init);
      std::vector<Stmt> one = first(pv_either);
      row.insert(row.end(), one.begin(), one.end());
      std::vector<Stmt> more = {rest, root_fin};
      row.push_back(build::if_then_else(build::binary(BinOp::LT, jb, c.extent), build::seq(more)));
      for (const auto& st : fin)
        if (st != root_fin) row.push_back(st);
    } else {
      // The first block stores the root's accumulator whole: no zero fill.
      if (root_init) std::erase(row, root_init);
      row.insert(row.end(), later.begin(), later.end());
    }
  } else {
    row.push_back(build::for_loop(c.j, c.extent, build::seq(step)));
  }
  if (!blocked) row.insert(row.end(), fin.begin(), fin.end());
  Stmt s = build::seq(row);
  bool unread = false;
  std::vector<Var> row_vars;
  std::vector<Expr> row_extents;
  for (size_t k = 0; k < c.rows; ++k) {
    row_vars.push_back(root.lhs[k]);
    row_extents.push_back(root.loops[k]->extent);
  }
  std::vector<size_t> order = row_order(step, {c.j, jo}, row_vars, row_extents, unread);
  for (size_t k = c.rows; k-- > 0;) {
    const StmtNode& l = *root.loops[order[k]];
    Stmt tiled;
    // The innermost row, when the keys do not read it, a tile of rows at a time.
    // Its block rows (the scratch tensors) become one per row of the tile.
    if (blocked && unread && k + 1 == c.rows) {
      std::vector<RowScratch> rs;
      for (const auto& b : scratch) {
        bool read = false;
        for (const auto& d : b->dims) read |= mentions(d.extent, b->dims[order[k]].var);
        if (!read) rs.push_back({b, order[k]});
      }
      auto local = [&](const Buffer& like, size_t dim, const std::string& suffix) {
        auto b = std::make_shared<BufferNode>(*like);
        b->name = c.scalar(like->name + "." + suffix, like->type)->name;
        c.new_buffers.pop_back();
        b->dims.clear();
        b->pad.clear();
        std::map<const VarNode*, Expr> dv;
        for (size_t d = 0; d < like->dims.size(); ++d) {
          if (d == dim) continue;
          Var v = make_var(like->dims[d].var->name);
          b->dims.push_back({v, substitute(like->dims[d].extent, dv)});
          dv[like->dims[d].var.get()] = build::var(v);
        }
        c.new_buffers.push_back(b);
        return b;
      };
      tiled = tile_rows(s, root.lhs[order[k]], l.extent, l.loop, kCpuOnlineRows, rs,
                        [&](const std::string& base, Scalar t) { return c.scalar(base, t); }, local);
      if (tiled)
        for (const auto& r : rs) std::erase(c.new_buffers, r.buffer);
    }
    s = tiled ? tiled : build::for_loop(root.lhs[order[k]], l.extent, s, l.loop);
  }
  // --explain.
  std::string steps;
  for (const auto& h : how) steps += (steps.empty() ? "" : ", ") + h;
  std::vector<std::string> inside;
  for (size_t k : c.inlined) inside.push_back("`" + c.nests[k]->target->name + "`");
  for (const auto& p : c.producers) inside.push_back("`" + p.nest->target->name + "` (per j)");
  std::string in;
  for (const auto& x : inside) in += (in.empty() ? "" : ", ") + x;
  note = fmt::format("online reductions: one pass over {} in 0 .. {}{} computes {}{}", c.j->name, expr_text(c.extent),
                     blocked ? fmt::format(" in blocks of {}", block) : "", steps,
                     in.empty() ? "" : "; computed in the loop, not stored: " + in);
  return s;
}

}  // namespace dccc::ir
