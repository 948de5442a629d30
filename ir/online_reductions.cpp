#include "ir/online_reductions.h"

#include "ir/online_tile.h"
#include "ir/separate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace dccc::ir {
namespace {

// ---------------------------------------------------------------------------
// The assignments of the function's top level.

/// A top-level statement that computes every element of one local (or
/// output) tensor exactly once: element-wise (`T[v] = value`) or a reduction
/// (`acc = init; for r.. { acc = acc OP x }; T[v] = post`).
struct Nest {
  size_t item = 0;
  Buffer target;
  std::vector<const StmtNode*> loops;  // left-side loops, outermost first
  std::vector<Var> lhs;                // their variables, T's dimensions in order
  bool reduction = false;
  Expr value;                          // element-wise: the value stored
  Buffer acc;                          // reduction: the accumulator
  Expr init, x, post;                  // acc's initial value, the operand, the stored value
  BinOp op = BinOp::Add;
  std::vector<const StmtNode*> rloops;  // the reduction loops, outermost first
};

bool constant(const Expr& e) {
  bool c = true;
  each_expr(e, [&](const ExprNode& x) {
    c &= x.kind != ExprKind::Load && x.kind != ExprKind::VarRef && x.kind != ExprKind::SizeRef;
  });
  return c;
}

/// The store's indices are the loops' variables, its extents the tensor's.
bool stores_whole(const StmtNode& st, const std::vector<const StmtNode*>& loops) {
  const Buffer& t = st.buffer;
  if (st.flat || t->dims.size() != loops.size() || st.args.size() != loops.size()) return false;
  std::map<const VarNode*, Expr> dim_to_loop;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (st.args[k]->kind != ExprKind::VarRef || st.args[k]->var != loops[k]->var) return false;
    dim_to_loop[t->dims[k].var.get()] = build::var(loops[k]->var);
  }
  for (size_t k = 0; k < loops.size(); ++k)
    if (!same_expr(loops[k]->extent, substitute(t->dims[k].extent, dim_to_loop))) return false;
  return true;
}

std::optional<Nest> parse_nest(const Stmt& item, size_t index) {
  Nest n;
  n.item = index;
  Stmt s = unwrap(item);
  while (s && s->kind == StmtKind::For) {
    n.loops.push_back(s.get());
    s = unwrap(s->body[0]);
  }
  if (!s || n.loops.empty()) return std::nullopt;
  if (s->kind == StmtKind::Store) {
    if (!stores_whole(*s, n.loops)) return std::nullopt;
    n.target = s->buffer;
    n.value = s->value;
  } else if (s->kind == StmtKind::Seq && s->body.size() == 3) {
    const Stmt& init = s->body[0];
    const Stmt& post = s->body[2];
    if (init->kind != StmtKind::Store || !init->buffer->dims.empty() || init->flat || !constant(init->value))
      return std::nullopt;
    n.acc = init->buffer;
    Stmt r = unwrap(s->body[1]);
    while (r && r->kind == StmtKind::For) {
      n.rloops.push_back(r.get());
      r = unwrap(r->body[0]);
    }
    if (n.rloops.empty() || !r || r->kind != StmtKind::Store || r->buffer != n.acc) return std::nullopt;
    const Expr& v = r->value;
    if (v->kind != ExprKind::Binary || v->args[0]->kind != ExprKind::Load || v->args[0]->buffer != n.acc ||
        loads_from(v->args[1], n.acc.get()))
      return std::nullopt;
    if (v->binop != BinOp::Add && v->binop != BinOp::Mul && v->binop != BinOp::Max && v->binop != BinOp::Min)
      return std::nullopt;
    if (post->kind != StmtKind::Store || !stores_whole(*post, n.loops)) return std::nullopt;
    n.reduction = true;
    n.op = v->binop;
    n.x = v->args[1];
    n.init = init->value;
    n.post = post->value;
    n.target = post->buffer;
  } else {
    return std::nullopt;
  }
  for (const auto* l : n.loops) n.lhs.push_back(l->var);
  return n;
}

Expr fimm(double v, Scalar t) { return build::float_imm(v, t); }

bool stores_to(const Stmt& s, const BufferNode* b) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Store && x.buffer.get() == b; });
  return found;
}

bool uses(const Stmt& s, const BufferNode* b) {
  bool found = touches(s, b);
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Print && x.buffer.get() == b; });
  return found;
}

// ---------------------------------------------------------------------------
// One chain: a root reduction, the earlier reductions over the same j it
// reads (members), and the tensors computed in the fused body.

struct Member {
  const Nest* nest = nullptr;
  std::vector<Expr> args;  // where the chain reads it (the root: its own left side)
  Expr x, post;            // expanded, in the root's variables
  bool deps = false;       // x reads earlier results
  AddForm add;
  MulForm mul;
  Buffer cur, old;  // the result over the prefix so far, and before this step
  bool store = false;
};

struct Producer {
  const Nest* nest = nullptr;
  std::vector<Expr> args;
  Buffer scalar;
};

bool same_args(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_expr(a[k], b[k])) return false;
  return true;
}

class Chain {
 public:
  Chain(Func& f, const std::vector<Stmt>& items, const std::vector<std::optional<Nest>>& nests, size_t root)
      : f_(f), items_(items), nests_(nests), root_item_(root) {
    for (size_t k = 0; k < root; ++k) {
      if (!nests[k]) continue;
      const Buffer& t = nests[k]->target;
      if (t->kind != BufferKind::Local && t->kind != BufferKind::Output) continue;
      size_t writers = 0;
      for (const auto& it : items) writers += stores_to(it, t.get());
      if (writers == 1) def_[t.get()] = &*nests[k];
    }
  }

  std::string why;  // why the chain is not fused (empty: no chain at all)

  /// Finds the members and separates their bodies; false when nothing is
  /// fused (`why` empty: the root reads no earlier reduction over j).
  bool analyse(const std::set<std::string>& keep, const std::set<std::string>& scheduled) {
    const Nest& root = *nests_[root_item_];
    if (root.rloops.size() != 1 || root.op == BinOp::Mul) return false;
    j_ = root.rloops[0]->var;
    extent_ = root.rloops[0]->extent;
    for (const auto& v : root.lhs) lhs_.insert(v.get());
    Member rm;
    rm.nest = &root;
    rm.x = expand(root.x);
    rm.post = expand(root.post);
    if (!why.empty()) return false;
    if (members_.empty()) return false;
    members_.push_back(std::move(rm));
    // Rows: the variables the results are read at, the root's outer loops.
    std::set<const VarNode*> rows;
    for (size_t m = 0; m + 1 < members_.size(); ++m)
      for (const auto& a : members_[m].args) rows.insert(a->var.get());
    rows_ = rows.size();
    for (size_t k = 0; k < root.lhs.size(); ++k)
      if ((k < rows_) != (rows.count(root.lhs[k].get()) > 0))
        return refuse(fmt::format("the results are read at rows ({}) that are not the outer loops of `{}`",
                                  names(rows), root.target->name));
    // Every tensor the fused loop computes instead of storing.
    std::set<const BufferNode*> gone;
    for (size_t k : inlined_) gone.insert(nests_[k]->target.get());
    for (const auto& p : producers_) gone.insert(p.nest->target.get());
    std::set<size_t> removed = inlined_;
    for (const auto& p : producers_) removed.insert(p.nest->item);
    for (size_t m = 0; m + 1 < members_.size(); ++m) removed.insert(members_[m].nest->item);
    std::vector<std::string> chain_names;
    for (size_t k : removed) chain_names.push_back(nests_[k]->target->name);
    chain_names.push_back(root.target->name);
    for (const auto& n : chain_names) {
      if (keep.count(n)) return refuse(fmt::format("`materialize({})` keeps it stored", n));
      if (scheduled.count(n)) return refuse(fmt::format("a `schedule` directive names the assignment to `{}`", n));
    }
    for (const BufferNode* t : gone) {
      if (t->kind != BufferKind::Local) return refuse(fmt::format("`{}` is not a local tensor", t->name));
      for (size_t k = 0; k < items_.size(); ++k)
        if (k != root_item_ && !removed.count(k) && uses(items_[k], t))
          return refuse(fmt::format("`{}` is read outside the chain", t->name));
    }
    for (size_t m = 0; m + 1 < members_.size(); ++m) {
      Member& mm = members_[m];
      const Buffer& t = mm.nest->target;
      mm.store = t->kind != BufferKind::Local;
      for (size_t k = 0; k < items_.size(); ++k) {
        if (k == root_item_ || removed.count(k) || !uses(items_[k], t.get())) continue;
        if (k < root_item_) return refuse(fmt::format("`{}` is read before `{}` is computed", t->name, root.target->name));
        mm.store = true;
      }
    }
    // A per-j producer is computed once per j for the whole row, outside
    // the root's loops over its other indices: it may not be indexed by one
    // (transformer_block's v = y . wv per key, indexed by d).
    for (const auto& p : producers_)
      for (const auto& a : p.args)
        for (size_t k = rows_; k < root.lhs.size(); ++k)
          if (mentions(a, root.lhs[k]))
            return refuse(fmt::format("`{}` (a reduction per j) is indexed by {}, an index of `{}` beyond the rows",
                                      p.nest->target->name, root.lhs[k]->name, root.target->name));
    // Per-j producers read only what stays stored.
    for (const auto& p : producers_) {
      bool bad = false;
      auto check = [&](const Expr& e) {
        each_expr(e, [&](const ExprNode& x) {
          bad |= x.kind == ExprKind::Load && (gone.count(x.buffer.get()) || is_member(x.buffer.get()));
        });
      };
      check(p.nest->x);
      check(p.nest->post);
      if (bad) return refuse(fmt::format("`{}` (a reduction per j) reads a tensor of the chain", p.nest->target->name));
    }
    // Nothing between the chain's statements writes what they read.
    std::vector<size_t> all(removed.begin(), removed.end());
    for (size_t k : all) {
      std::set<const BufferNode*> reads;
      each_stmt(items_[k], [&](const StmtNode& s) {
        own_exprs(s, [&](const ExprNode& x) {
          if (x.kind == ExprKind::Load) reads.insert(x.buffer.get());
        });
      });
      for (size_t w = k + 1; w < root_item_; ++w) {
        if (removed.count(w)) continue;
        for (const BufferNode* b : reads)
          if (stores_to(items_[w], b))
            return refuse(fmt::format("a statement between the chain's assignments writes `{}`", b->name));
      }
    }
    // A tensor computed in the loop is not read where the loop's value is
    // not at hand (the root's result read at another index than j).
    for (const auto& m : members_) {
      const BufferNode* left = nullptr;
      for (const Expr& e : {m.x, m.post})
        each_expr(e, [&](const ExprNode& x) {
          if (x.kind == ExprKind::Load && gone.count(x.buffer.get())) left = x.buffer.get();
        });
      if (left) return refuse(fmt::format("`{}` is also read outside the loop over {}", left->name, j_->name));
    }
    bool reads_target = false;
    for (const auto& m : members_) reads_target |= loads_from(m.x, root.target.get()) || loads_from(m.post, root.target.get());
    if (reads_target) return refuse(fmt::format("the chain reads `{}`", root.target->name));
    // Separation.
    Separator sep([&](const Expr& e) { return dep_j(e); }, [&](const Expr& e) { return dep_r(e); });
    for (auto& m : members_) {
      m.deps = dep_r(m.x);
      if (!m.deps) continue;
      bool ok = m.nest->op == BinOp::Add ? sep.mul_form(m.x, m.mul, false) : sep.add_form(m.x, m.add, false);
      if (!ok)
        return refuse(fmt::format("the body of `{}` ({}) does not separate: {}", m.nest->target->name,
                                  m.nest->op == BinOp::Add ? "+: G(j) * H(results)" : "max/min: G(j) + H(results)",
                                  sep.why));
      if (m.nest->op != BinOp::Add && m.add.j.items.empty())
        return refuse(fmt::format("the body of `{}` does not depend on j", m.nest->target->name));
    }
    removed_ = removed;
    gone_ = gone;
    return true;
  }

  /// The fused statement, replacing the root, over blocks of `block` values
  /// of j (1: one at a time); records what --explain says.
  Stmt build(int64_t block, std::string& note);

  const std::set<size_t>& removed() const { return removed_; }
  std::set<const BufferNode*> dropped() const {
    std::set<const BufferNode*> out = gone_;
    for (size_t m = 0; m + 1 < members_.size(); ++m)
      if (!members_[m].store) out.insert(members_[m].nest->target.get());
    return out;
  }
  std::vector<Buffer> new_buffers;
  std::vector<Stmt> pre;  // run before the fused statement (transposed copies)

 private:
  bool refuse(std::string w) {
    why = std::move(w);
    return false;
  }

  std::string names(const std::set<const VarNode*>& vs) const {
    std::string s;
    for (const auto* v : vs) s += (s.empty() ? "" : ", ") + v->name;
    return s;
  }

  bool is_member(const BufferNode* b) const {
    for (size_t m = 0; m < members_.size(); ++m)
      if (members_[m].nest->target.get() == b && members_[m].nest->item != root_item_) return true;
    return false;
  }

  bool dep_j(const Expr& e) const {
    bool d = mentions(e, j_);
    each_expr(e, [&](const ExprNode& x) {
      if (x.kind != ExprKind::Load) return;
      for (const auto& p : producers_) d |= x.buffer == p.scalar;
    });
    return d;
  }

  bool dep_r(const Expr& e) const {
    bool d = false;
    each_expr(e, [&](const ExprNode& x) { d |= x.kind == ExprKind::Load && is_member(x.buffer.get()); });
    return d;
  }

  bool at_j(const std::vector<Expr>& args) const {
    for (const auto& a : args)
      if (dep_j(a)) return true;
    return false;
  }

  std::map<const VarNode*, Expr> bind(const Nest& n, const std::vector<Expr>& args) const {
    std::map<const VarNode*, Expr> m;
    for (size_t k = 0; k < n.lhs.size(); ++k) m[n.lhs[k].get()] = args[k];
    return m;
  }

  Buffer scalar(const std::string& base, Scalar t) {
    std::string name = base;
    for (int k = 1;; ++k) {
      bool taken = false;
      for (const auto& b : f_.buffers) taken |= b->name == name;
      for (const auto& b : new_buffers) taken |= b->name == name;
      if (!taken) break;
      name = fmt::format("{}.{}", base, k);
    }
    auto b = std::make_shared<BufferNode>();
    b->name = name;
    b->type = t;
    b->kind = BufferKind::Scalar;
    new_buffers.push_back(b);
    return b;
  }

  /// `e` with the chain's tensors replaced: element-wise ones by their
  /// values, reductions over other indices by per-j scalars, earlier
  /// reductions over j registered as members (their loads stay).
  Expr expand(const Expr& e) {
    return replace_exprs(e, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Load || x->flat) return nullptr;
      auto it = def_.find(x->buffer.get());
      if (it == def_.end()) return nullptr;
      const Nest& n = *it->second;
      if (n.reduction && !at_j(x->args)) {
        bool row = n.rloops.size() == 1 && n.op != BinOp::Mul;
        for (const auto& a : x->args) row &= a->kind == ExprKind::VarRef && lhs_.count(a->var.get()) > 0;
        if (row && same_expr(substitute(n.rloops[0]->extent, bind(n, x->args)), extent_)) {
          member(n, x->args);
          return x;
        }
        return nullptr;
      }
      if (n.reduction) return producer(n, x->args);
      Expr v = expand(substitute(n.value, bind(n, x->args)));
      if (at_j(x->args) || dep_r(v)) {
        inlined_.insert(n.item);
        return v;
      }
      return nullptr;
    });
  }

  void member(const Nest& n, const std::vector<Expr>& args) {
    for (const auto& m : members_)
      if (m.nest == &n) {
        if (!same_args(m.args, args) && why.empty())
          why = fmt::format("`{}` is read at two different rows", n.target->name);
        return;
      }
    Member m;
    m.nest = &n;
    m.args = args;
    auto b = bind(n, args);
    b[n.rloops[0]->var.get()] = build::var(j_);
    m.x = expand(substitute(n.x, b));
    m.post = expand(substitute(n.post, b));
    members_.push_back(std::move(m));
  }

  Expr producer(const Nest& n, const std::vector<Expr>& args) {
    for (const auto& p : producers_)
      if (p.nest == &n && same_args(p.args, args)) return build::load(p.scalar, {});
    Producer p;
    p.nest = &n;
    p.args = args;
    p.scalar = scalar(n.target->name + ".j", n.target->type);
    producers_.push_back(p);
    return build::load(p.scalar, {});
  }

  Func& f_;
  const std::vector<Stmt>& items_;
  const std::vector<std::optional<Nest>>& nests_;
  size_t root_item_;
  std::map<const BufferNode*, const Nest*> def_;
  Var j_;
  Expr extent_;
  std::set<const VarNode*> lhs_;
  size_t rows_ = 0;
  std::vector<Member> members_;  // dependency order, the root last
  std::vector<Producer> producers_;
  std::set<size_t> inlined_, removed_;
  std::set<const BufferNode*> gone_;
  std::map<const BufferNode*, Buffer> transposed_;
};

Stmt Chain::build(int64_t block, std::string& note) {
  const Nest& root = *nests_[root_item_];
  const size_t n = root.lhs.size();
  const bool extras = n > rows_;
  // Blocks of JB values of j: j = j0 + jj, jj in 0 .. min(JB, extent - j0).
  // A per-j scalar (scores.j, e.j) becomes a row of JB values in a local
  // tensor indexed by the rows (blk_of); `lift` moves an expression of j to jj.
  const bool blocked = block > 1;
  Var jo = make_var(j_->name + ".o");
  Expr jb = build::int_imm(block), j0 = build::binary(BinOp::Mul, build::var(jo), jb);
  Expr jn = build::binary(BinOp::Min, jb, build::binary(BinOp::Sub, extent_, j0));
  std::map<const BufferNode*, Buffer> blk_of;
  std::vector<Buffer> scratch;  // the local tensors of block rows
  std::vector<Expr> row_idx;
  for (size_t k = 0; k < rows_; ++k) row_idx.push_back(build::var(root.lhs[k]));
  auto block_of = [&](const Buffer& sc) {
    auto b = std::make_shared<BufferNode>();
    b->name = scalar(sc->name + ".blk", sc->type)->name;
    new_buffers.pop_back();
    b->type = sc->type;
    b->kind = BufferKind::Local;
    b->zero_fill = false;  // each block writes its row before reading it
    std::map<const VarNode*, Expr> dv;
    for (size_t k = 0; k < rows_; ++k) {
      Var v = make_var(root.target->dims[k].var->name);
      b->dims.push_back({v, substitute(root.target->dims[k].extent, dv)});
      dv[root.target->dims[k].var.get()] = build::var(v);
    }
    b->dims.push_back({make_var("jj"), jb});
    new_buffers.push_back(b);
    blk_of[sc.get()] = b;
    scratch.push_back(b);
    return b;
  };
  auto lift = [&](const Expr& e, const Var& jj) {
    std::map<const VarNode*, Expr> at;
    at[j_.get()] = build::binary(BinOp::Add, j0, build::var(jj));
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
                          build::binary(BinOp::Sub, build::round_up(extent_, kTransposePad), j0));
  auto over_block = [&](const std::function<Stmt(const Var&)>& body, bool padded = false) {
    Var jj = make_var(j_->name + ".i");
    return build::for_loop(jj, padded ? jp : jn, body(jj));
  };
  // Whether `e`, computed for values of j past the extent, reads only `ok`
  // there (and no integer division that could trap).
  auto pad_safe = [&](const Expr& e, const std::map<const BufferNode*, Buffer>& ok) {
    bool safe = true;
    each_expr(e, [&](const ExprNode& x) {
      if (x.kind == ExprKind::Load) {
        bool moves = false;
        for (const auto& a : x.args) moves |= mentions(a, j_);
        bool mine = false;
        for (const auto& [from, to] : ok) mine |= to == x.buffer;
        safe &= !moves || mine;
      }
      if (x.kind == ExprKind::Binary && (x.binop == BinOp::Div || x.binop == BinOp::Mod) && !is_float(x.type))
        for (const auto& a : x.args) safe &= !mentions(a, j_);
    });
    return safe;
  };
  auto identity = [&](BinOp op, Scalar t) {
    return fimm(op == BinOp::Add ? 0.0 : op == BinOp::Max ? -INFINITY : INFINITY, t);
  };
  for (size_t m = 0; m + 1 < members_.size(); ++m) {
    const Buffer& t = members_[m].nest->target;
    members_[m].cur = scalar(t->name + ".run", t->type);
  }
  // Loads of results read the running value (or the one before this step).
  auto code = [&](const Expr& e, bool old) {
    return replace_exprs(e, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Load) return nullptr;
      for (size_t m = 0; m + 1 < members_.size(); ++m) {
        Member& mm = members_[m];
        if (x->buffer != mm.nest->target) continue;
        if (!old) return build::load(mm.cur, {});
        if (!mm.old) mm.old = scalar(mm.nest->target->name + ".prev", mm.nest->target->type);
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
    b->name = scalar(base, t)->name;
    new_buffers.pop_back();
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
    new_buffers.push_back(b);
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
      if (k < rows_) {
        idx.push_back(build::var(root.lhs[k]));
        continue;
      }
      Var v = fresh ? make_var(root.lhs[k]->name) : root.lhs[k];
      vars.push_back(v);
      sub[root.lhs[k].get()] = build::var(v);
      idx.push_back(build::var(v));
    }
    Stmt s = body(sub, idx);
    for (size_t k = n; k-- > rows_;)
      s = build::for_loop(vars[k - rows_], substitute(root.loops[k]->extent, sub), s, root.loops[k]->loop);
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
  // zero fill, no rescaling pass); `pv_single` is that store with the
  // root's final value when the first block is the only one, and
  // `pv_either` (the root being its own accumulator) one store that is
  // either, chosen by the number of blocks (one copy of the first block).
  std::set<const StmtNode*> ratio_ifs;
  Stmt pv_part, pv_first, pv_single, pv_either, root_init, root_fin;
  std::vector<std::string> how;
  // The per-j scalars (a reduction over other indices, such as q k^T).
  for (const auto& p : producers_) {
    const Nest& pn = *p.nest;
    auto b = bind(pn, p.args);
    std::vector<Var> fresh;
    for (const auto* l : pn.rloops) {
      fresh.push_back(make_var(l->var->name));
      b[l->var.get()] = build::var(fresh.back());
    }
    Expr px = substitute(pn.x, b);
    // Blocks read the operands indexed by j and r transposed (along j).
    if (blocked && fresh.size() == 1)
      px = transpose_loads(px, j_, fresh[0], transposed_, pre, new_buffers, [&](const std::string& base) {
        std::string nm = scalar(base, Scalar::F32)->name;
        new_buffers.pop_back();
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
    const bool padded = fresh.size() == 1 && pad_safe(px, transposed_) && pad_safe(substitute(pn.post, b), transposed_);
    step.push_back(over_block(
        [&](const Var& jj) {
          std::map<const VarNode*, Expr> at;
          at[j_.get()] = build::binary(BinOp::Add, j0, build::var(jj));
          std::vector<Stmt> body;
          for (const auto& st : one) body.push_back(substitute(st, at));
          std::vector<Expr> idx = row_idx;
          idx.push_back(build::var(jj));
          body.back() = build::store(blk, idx, substitute(substitute(pn.post, b), at));
          return build::seq(body);
        },
        padded));
    std::erase(new_buffers, p.scalar);
  }
  size_t olds_at = step.size();
  for (size_t m = 0; m < members_.size(); ++m) {
    Member& mm = members_[m];
    const Nest& mn = *mm.nest;
    const bool is_root = m + 1 == members_.size();
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
          ratio = scalar("rescale", at);
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
      for (size_t k = rows_; k < n; ++k)
        if (mentions(x, root.lhs[k])) return nullptr;
      for (const auto& [e, b] : shared)
        if (same_expr(e, x)) return build::load(b, {});
      Buffer b = scalar("e.j", x->type);
      if (blocked) {
        Buffer blk = block_of(b);
        std::erase(new_buffers, b);
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
      Buffer bacc = scalar(name + ".blk_acc", at);
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
        Buffer bacc = scalar(name + ".blk_acc", at);
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
        pv_single = sums([&](const auto& sub, const std::vector<Expr>& idx, Expr v) {
          return build::store(root.target, idx, substitute(value(mm, v, true), sub));
        });
        if (out_acc == root.target)
          pv_either = sums([&](const auto& sub, const std::vector<Expr>& idx, Expr v) {
            return build::store(root.target, idx,
                                build::select(build::binary(BinOp::LE, extent_, jb), substitute(value(mm, v, true), sub), v));
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
  for (const auto& m : members_)
    if (m.old) olds.push_back(build::store(m.old, {}, build::load(m.cur, {})));
  step.insert(step.begin() + static_cast<std::ptrdiff_t>(olds_at), olds.begin(), olds.end());
  std::vector<Stmt> row = init;
  if (blocked) {
    // The first block on its own (j.o = 0), then the others. With a root
    // indexed beyond the rows (d), a row of at most one block (short
    // sequences) stores the root's final value from the block's sums
    // directly: the materialised form's own loop, no pass over d after it.
    Expr blocks = build::binary(BinOp::Div, build::binary(BinOp::Add, extent_, build::int_imm(block - 1)), jb);
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
      row.push_back(build::if_then_else(build::binary(BinOp::LT, jb, extent_), build::seq(more)));
      for (const auto& st : fin)
        if (st != root_fin) row.push_back(st);
    } else if (pv_single) {
      std::erase(row, root_init);
      std::vector<Stmt> one = first(pv_single);
      for (const auto& st : fin)
        if (st != root_fin) one.push_back(st);
      row.push_back(build::if_then_else(build::binary(BinOp::LE, extent_, jb), build::seq(one), build::seq(later)));
    } else {
      row.insert(row.end(), later.begin(), later.end());
    }
  } else {
    row.push_back(build::for_loop(j_, extent_, build::seq(step)));
  }
  if (!blocked) row.insert(row.end(), fin.begin(), fin.end());
  Stmt s = build::seq(row);
  bool unread = false;
  std::vector<Var> row_vars;
  std::vector<Expr> row_extents;
  for (size_t k = 0; k < rows_; ++k) {
    row_vars.push_back(root.lhs[k]);
    row_extents.push_back(root.loops[k]->extent);
  }
  std::vector<size_t> order = row_order(step, {j_, jo}, row_vars, row_extents, unread);
  for (size_t k = rows_; k-- > 0;) {
    const StmtNode& l = *root.loops[order[k]];
    Stmt tiled;
    // The innermost row, when the keys do not read it, a tile of rows at a time.
    // Its block rows (the scratch tensors) become one per row of the tile.
    if (blocked && unread && k + 1 == rows_) {
      std::vector<RowScratch> rs;
      for (const auto& b : scratch) {
        bool read = false;
        for (const auto& d : b->dims) read |= mentions(d.extent, b->dims[order[k]].var);
        if (!read) rs.push_back({b, order[k]});
      }
      auto local = [&](const Buffer& like, size_t dim, const std::string& suffix) {
        auto b = std::make_shared<BufferNode>(*like);
        b->name = scalar(like->name + "." + suffix, like->type)->name;
        new_buffers.pop_back();
        b->dims.clear();
        b->pad.clear();
        std::map<const VarNode*, Expr> dv;
        for (size_t d = 0; d < like->dims.size(); ++d) {
          if (d == dim) continue;
          Var v = make_var(like->dims[d].var->name);
          b->dims.push_back({v, substitute(like->dims[d].extent, dv)});
          dv[like->dims[d].var.get()] = build::var(v);
        }
        new_buffers.push_back(b);
        return b;
      };
      tiled = tile_rows(s, root.lhs[order[k]], l.extent, l.loop, kCpuOnlineRows, rs,
                        [&](const std::string& base, Scalar t) { return scalar(base, t); }, local);
      if (tiled)
        for (const auto& r : rs) std::erase(new_buffers, r.buffer);
    }
    s = tiled ? tiled : build::for_loop(root.lhs[order[k]], l.extent, s, l.loop);
  }
  // --explain.
  std::string steps;
  for (const auto& h : how) steps += (steps.empty() ? "" : ", ") + h;
  std::vector<std::string> inside;
  for (size_t k : inlined_) inside.push_back("`" + nests_[k]->target->name + "`");
  for (const auto& p : producers_) inside.push_back("`" + p.nest->target->name + "` (per j)");
  std::string in;
  for (const auto& x : inside) in += (in.empty() ? "" : ", ") + x;
  note = fmt::format("online reductions: one pass over {} in 0 .. {}{} computes {}{}", j_->name, expr_text(extent_),
                     blocked ? fmt::format(" in blocks of {}", block) : "", steps,
                     in.empty() ? "" : "; computed in the loop, not stored: " + in);
  return s;
}

}  // namespace

void online_reductions(Func& f, const std::set<std::string>& keep, const std::set<std::string>& scheduled,
                       int64_t block, std::string* explain) {
  if (f.storage_lowered) return;
  std::set<const BufferNode*> tried;
  std::string text;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Stmt> items = items_of(f.body);
    std::vector<std::optional<Nest>> nests;
    for (size_t k = 0; k < items.size(); ++k) nests.push_back(parse_nest(items[k], k));
    for (size_t r = items.size(); r-- > 0 && !changed;) {
      if (!nests[r] || !nests[r]->reduction || tried.count(nests[r]->target.get())) continue;
      tried.insert(nests[r]->target.get());
      Chain c(f, items, nests, r);
      if (!c.analyse(keep, scheduled)) {
        if (!c.why.empty())
          text += fmt::format("  `{}`: online reductions not applied: {}\n", nests[r]->target->name, c.why);
        continue;
      }
      std::string note;
      Stmt fused = c.build(block, note);
      text += fmt::format("  `{}`: {}\n", nests[r]->target->name, note);
      std::vector<Stmt> out;
      std::set<const BufferNode*> accs, assigned;
      for (size_t k = 0; k < items.size(); ++k) {
        if (k == r) {
          out.insert(out.end(), c.pre.begin(), c.pre.end());
          out.push_back(fused);
        } else if (!c.removed().count(k)) {
          out.push_back(items[k]);
        } else {
          accs.insert(nests[k]->acc.get());
          assigned.insert(nests[k]->target.get());
        }
      }
      f.body = build::seq(out);
      std::set<const BufferNode*> drop = c.dropped();
      std::set<const BufferNode*> used;
      each_stmt(f.body, [&](const StmtNode& s) {
        if (s.buffer) used.insert(s.buffer.get());
        own_exprs(s, [&](const ExprNode& x) {
          if (x.kind == ExprKind::Load) used.insert(x.buffer.get());
        });
      });
      for (const BufferNode* a : accs)
        if (a && !used.count(a)) drop.insert(a);
      if (!used.count(nests[r]->acc.get())) drop.insert(nests[r]->acc.get());
      std::erase_if(f.buffers, [&](const Buffer& b) {
        return drop.count(b.get()) && (b->kind == BufferKind::Local || b->kind == BufferKind::Scalar);
      });
      f.buffers.insert(f.buffers.end(), c.new_buffers.begin(), c.new_buffers.end());
      // The chain's assignments other than the root's are gone (a result
      // stored after the loop has no loops of its own a schedule could name).
      std::erase_if(f.nests, [&](const NamedNest& nn) { return assigned.count(nn.target.get()) > 0; });
      changed = true;
    }
  }
  if (explain && !text.empty()) *explain += fmt::format("fn {}:\n{}", f.name, text);
}

}  // namespace dccc::ir
