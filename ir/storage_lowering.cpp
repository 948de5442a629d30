#include "ir/storage_lowering.h"

#include <algorithm>

#include <fmt/format.h>

#include <functional>
#include <set>

#include "ir/fuse_dims.h"
#include "ir/nested_prefix.h"
#include "ir/printer.h"
#include "ir/written_first.h"

namespace dccc::ir {
namespace {

/// A layout the lowering cannot handle, at the declaration of the buffer
/// that has it.
struct Unsupported {
  std::string what;
  SourceRange at;
};

class StorageLowerer {
 public:
  explicit StorageLowerer(Func& f) : f_(f) {}

  void run() {
    std::vector<Buffer> tensors;
    for (const auto& b : f_.buffers)
      if (!b->dims.empty()) tensors.push_back(b);
    for (const auto& b : tensors) b->total = size_from(*b, 0, identity(*b));
    // A flag cleared earlier (ir/mark_written_first.h) stays cleared.
    for (const auto& b : tensors) b->zero_fill = b->zero_fill && !written_first(f_, b.get());
    f_.body = lower_accesses(f_.body);
    for (auto& c : f_.checks) {
      c.pre = lower_accesses(c.pre);
      c.cond = lower_expr(c.cond);
      for (auto& [v, e] : c.vars) e = lower_expr(e);
    }
    f_.storage_lowered = true;
  }

 private:
  static std::map<const VarNode*, Expr> identity(const BufferNode& b) {
    std::map<const VarNode*, Expr> m;
    for (const auto& d : b.dims) m[d.var.get()] = build::var(d.var);
    return m;
  }

  static bool has_dependents(const BufferNode& b, size_t k) {
    for (size_t j = k + 1; j < b.dims.size(); ++j)
      if (mentions(b.dims[j].extent, b.dims[k].var)) return true;
    return false;
  }

  /// The buffers `exprs` load, by their place in Func::buffers. A key
  /// printed from a probe function names a buffer by its name alone, and
  /// two buffers may share one (two inlined calls of `f` both have `f.n`,
  /// which the whole function prints as `f.n` and `f.n.1`): without this,
  /// the offsets of the second call's tensor would be the first call's.
  std::string loads_key(const std::vector<Expr>& exprs) const {
    std::string key;
    for (const Expr& e : exprs)
      each_expr(e, [&](const ExprNode& x) {
        if (x.kind != ExprKind::Load) return;
        size_t k = 0;
        while (k < f_.buffers.size() && f_.buffers[k].get() != x.buffer.get()) ++k;
        key += fmt::format(" #{}", k);
      });
    return key;
  }

  static Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }
  static Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }

  /// Elements in the slice of `b` from dimension k inward, with the outer
  /// dimensions' variables replaced according to `env`.
  Expr size_from(const BufferNode& b, size_t k, const std::map<const VarNode*, Expr>& env) {
    Expr size = build::int_imm(1);
    for (size_t j = k; j < b.dims.size(); ++j) {
      Expr extent = substitute(b.dims[j].extent, env);
      if (!has_dependents(b, j)) {
        // Storage padding (a schedule's `pad_storage`): the dimension holds
        // its extent rounded up, so padded loop iterations have room.
        if (j < b.pad.size() && b.pad[j] > 1) extent = build::round_up(extent, b.pad[j]);
        size = mul(size, extent);
        continue;
      }
      // Everything from j inward depends on dimension j: a prefix array.
      if (j < b.pad.size() && b.pad[j] > 1)
        throw Unsupported{fmt::format("buffer `{}`: storage padding of dimension {}, which sizes inner dimensions",
                                      b.name, j), b.at};
      return mul(size, build::cast(Scalar::I64, prefix_at(prefix_for(b, j), env, extent)));
    }
    return size;
  }

  /// The prefix array of dimension j (which sizes inner dimensions): a flat
  /// A_j, or a nested one (ir/nested_prefix.h) indexed through the outer
  /// dimension its extent or the slices below it depend on.
  struct Prefix {
    Buffer flat;                        // A_j[i], or null
    const NestedPrefix* nested = nullptr;  // A_j[S_j[i_o] + i]
    const VarNode* outer = nullptr;     // o's variable, for nested
  };

  /// The prefix of `p` at index `index` of its dimension, the outer
  /// dimensions' variables replaced according to `env` (unlowered, i64).
  static Expr prefix_at(const Prefix& p, const std::map<const VarNode*, Expr>& env, const Expr& index) {
    if (p.flat) return build::load(p.flat, {index});
    auto it = env.find(p.outer);
    return nested_prefix_at(*p.nested, it->second, index);
  }

  Prefix prefix_for(const BufferNode& b, size_t j) {
    const Var& v = b.dims[j].var;
    Expr extent = b.dims[j].extent;
    Var y = make_var("y");
    auto env = identity(b);
    env[v.get()] = build::var(y);
    Expr slice = size_from(b, j + 1, env);
    bool outer = false;
    for (size_t o = 0; o < j; ++o) outer |= mentions(extent, b.dims[o].var) || mentions(slice, b.dims[o].var);
    if (outer) return nested_for(b, j);
    return {aux_for(b, j, y, slice), nullptr, nullptr};
  }

  /// A nested prefix (ir/nested_prefix.h) for dimension j whose extent or
  /// slices depend on exactly one outer dimension o, itself of an extent
  /// that depends on no other dimension: `[b: B][i: seqlen[b]][i + 1, H]`,
  /// `[d: D][s: nsent[d]][ntok[d][s], H]`.
  Prefix nested_for(const BufferNode& b, size_t j) {
    std::vector<size_t> outer;
    Var y = make_var("y"), yo = make_var("yo");
    auto env = identity(b);
    env[b.dims[j].var.get()] = build::var(y);
    Expr slice = size_from(b, j + 1, env);
    for (size_t o = 0; o < j; ++o)
      if (mentions(b.dims[j].extent, b.dims[o].var) || mentions(slice, b.dims[o].var)) outer.push_back(o);
    if (outer.size() > 1)
      throw Unsupported{fmt::format("buffer `{}`: dimension {} sizes inner dimensions and its extent or the slices "
                                    "below it depend on {} outer dimensions (nested raggedness is lowered for one)",
                                    b.name, j, outer.size()), b.at};
    size_t o = outer[0];
    for (size_t k = 0; k < b.dims.size(); ++k)
      if (k != o && mentions(b.dims[o].extent, b.dims[k].var))
        throw Unsupported{fmt::format("buffer `{}`: dimension {} sizes inner dimensions through dimension {}, whose "
                                      "own extent depends on another dimension (nested raggedness is lowered for "
                                      "two levels)", b.name, j, o), b.at};
    std::map<const VarNode*, Expr> at_o = {{b.dims[o].var.get(), build::var(yo)}};
    Expr extent = substitute(b.dims[j].extent, at_o);
    slice = substitute(slice, at_o);
    Expr outer_extent = b.dims[o].extent;
    // Shared by definition: the outer extent, the extent and the slice.
    auto probe = std::make_shared<BufferNode>();
    probe->name = "probe";
    probe->dims = {{yo, outer_extent}, {y, extent}};
    Func tmp;
    tmp.buffers = {probe};
    tmp.body = build::store(probe, {build::var(yo), build::var(y)}, slice);
    std::string key = print(tmp) + loads_key({outer_extent, extent, slice});
    auto it = nested_by_key_.find(key);
    if (it == nested_by_key_.end()) {
      size_t n = aux_by_key_.size() + nested_by_key_.size();
      auto p = std::make_unique<NestedPrefix>(nested_prefix(fmt::format("S{}", n), fmt::format("A{}", n), yo,
                                                            outer_extent, y, extent, slice));
      f_.buffers.push_back(p->starts);
      f_.buffers.push_back(p->prefix);
      prelude_.push_back({p->starts, p->fill_starts});
      prelude_.push_back({p->prefix, p->fill_prefix});
      it = nested_by_key_.emplace(key, std::move(p)).first;
    }
    return {nullptr, it->second.get(), b.dims[o].var.get()};
  }

  /// A_j: A_j[x] = number of elements below dimension j for indices < x
  /// (`slice`: the elements below index y of dimension j).
  Buffer aux_for(const BufferNode& b, size_t j, const Var& y, const Expr& slice) {
    Expr extent = b.dims[j].extent;
    // Share identical definitions, up to the order of the slice's factors
    // (`(seqlen * H) * D` and `(H * D) * seqlen`: the same i64 products).
    std::vector<Expr> factors;
    std::function<void(const Expr&)> split = [&](const Expr& e) {
      if (e->kind == ExprKind::Binary && e->binop == BinOp::Mul && e->type == Scalar::I64) {
        split(e->args[0]);
        split(e->args[1]);
      } else {
        factors.push_back(e);
      }
    };
    split(slice);
    std::vector<std::pair<std::string, Expr>> keyed;
    for (const Expr& e : factors) {
      Func one;
      auto probe = std::make_shared<BufferNode>();
      probe->name = "probe";
      probe->dims = {{y, extent}};
      one.buffers = {probe};
      one.body = build::store(probe, {build::var(y)}, e);
      keyed.emplace_back(print(one) + loads_key({extent, e}), e);
    }
    std::sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& z) { return x.first < z.first; });
    Expr canonical = keyed[0].second;
    for (size_t k = 1; k < keyed.size(); ++k) canonical = build::binary(BinOp::Mul, canonical, keyed[k].second);
    Func tmp;
    auto probe = std::make_shared<BufferNode>();
    probe->name = "probe";
    probe->dims = {{y, extent}};
    tmp.buffers = {probe};
    tmp.body = build::store(probe, {build::var(y)}, canonical);
    std::string key = print(tmp) + loads_key({extent, canonical});
    auto it = aux_by_key_.find(key);
    if (it != aux_by_key_.end()) return it->second;

    auto a = std::make_shared<BufferNode>();
    a->name = fmt::format("A{}", aux_by_key_.size() + nested_by_key_.size());
    a->type = Scalar::I64;
    a->kind = BufferKind::Aux;
    a->at = b.at;  // the first buffer it serves
    Var ad = make_var("x");
    a->dims = {{ad, add(extent, build::int_imm(1))}};
    a->pad = {1};
    a->total = add(extent, build::int_imm(1));
    f_.buffers.push_back(a);
    aux_by_key_[key] = a;
    // A[0] = 0; A[y + 1] = A[y] + slice(y)
    Expr yv = build::var(y);
    prelude_.push_back({a, build::seq({build::flat_store(a, build::int_imm(0), build::int_imm(0)),
                                       build::for_loop(y, extent,
                                                       build::flat_store(a, add(yv, build::int_imm(1)),
                                                                         add(build::flat_load(a, yv), slice)))})});
    return a;
  }

  /// Whether indices k and k + 1 of `idx` are `X / C` and `X % C` over a
  /// dimension k + 1 of extent C (unpadded, sizing nothing): a split of X,
  /// whose row-major place (X / C) C + X % C is X itself. Exact wherever the
  /// access runs: the checker proved X % C within [0, C), so C > 0 there
  /// (transformer_block's q[b][i, h, e] = rq[b][i, h, e / K, e % K]: q's
  /// offset is then affine in e, a contraction the GPU planners read).
  bool split_pair(const BufferNode& b, const std::vector<Expr>& idx, size_t k) const {
    if (k + 1 >= idx.size() || has_dependents(b, k) || has_dependents(b, k + 1)) return false;
    if (k + 1 < b.pad.size() && b.pad[k + 1] > 1) return false;
    const Expr &q = idx[k], &r = idx[k + 1];
    if (q->kind != ExprKind::Binary || q->binop != BinOp::Div || r->kind != ExprKind::Binary || r->binop != BinOp::Mod)
      return false;
    return same_expr(q->args[0], r->args[0]) && same_expr(q->args[1], r->args[1]) &&
           same_expr(b.dims[k + 1].extent, q->args[1]);
  }

  /// CoRa Algorithm 1: the flat offset of `idx` in `b`.
  Expr offset(const BufferNode& b, const std::vector<Expr>& idx) {
    std::map<const VarNode*, Expr> env;
    for (size_t k = 0; k < idx.size(); ++k) env[b.dims[k].var.get()] = idx[k];
    Expr off = build::int_imm(0);
    for (size_t k = 0; k < b.dims.size(); ++k) {
      Expr d;
      if (has_dependents(b, k)) {
        d = build::cast(Scalar::I64, prefix_at(prefix_for(b, k), env, idx[k]));
      } else if (split_pair(b, idx, k)) {
        d = mul(idx[k]->args[0], size_from(b, k + 2, env));
        ++k;
      } else {
        d = mul(idx[k], size_from(b, k + 1, env));
      }
      off = add(off, d);
    }
    return off;
  }

  Expr lower_expr(const Expr& e) {
    if (!e) return e;
    std::vector<Expr> args;
    for (const auto& a : e->args) args.push_back(lower_expr(a));
    if (e->kind == ExprKind::Load && !e->flat && !e->buffer->dims.empty()) {
      // Aux loads inserted above are built flat-free; lower them too.
      if (e->buffer->kind == BufferKind::Aux) return build::flat_load(e->buffer, args[0]);
      return build::flat_load(e->buffer, lower_expr(offset(*e->buffer, args)));
    }
    if (args == e->args) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    copy->args = std::move(args);
    return copy;
  }

  Stmt lower_accesses(const Stmt& s) {
    if (!s) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    if (copy->extent) copy->extent = lower_expr(copy->extent);
    if (copy->value) copy->value = lower_expr(copy->value);
    for (auto& a : copy->args) a = lower_expr(a);
    for (auto& c : copy->body) c = lower_accesses(c);
    if (s->kind == StmtKind::Store && !s->flat && !s->buffer->dims.empty()) {
      Expr off = offset(*s->buffer, copy->args);
      copy->args = {lower_expr(off)};
      copy->flat = true;
    }
    return copy;
  }

 public:
  /// Totals and aux extents contain unlowered aux loads; lower them last.
  /// An aux array whose lengths are all inputs goes to the prelude; one
  /// that reads lengths the body computes is filled just before the first
  /// top-level statement that needs it (lengths are final by then: the
  /// checker forbids assigning a length array after it shapes a tensor),
  /// after a check that every element of each computed length array it
  /// reads is >= 0 (length_checks): a negative length would make the
  /// offsets step back, so that rows overlap or leave the tensor's storage.
  /// The checker proves what it can about lengths the function computes
  /// (an integer `let` extent) but not the elements of an array; the entry
  /// checks cover the arguments' lengths only.
  void finish() {
    for (auto& b : f_.buffers)
      if (b->total) b->total = lower_expr(b->total);
    std::vector<Stmt> prelude;
    std::vector<std::pair<Buffer, Stmt>> deferred;
    std::set<const BufferNode*> deferred_aux;
    // By index: lowering a fill may add prefix arrays (and their fills). A
    // fill that reads an aux array filled later in the body (A1 summing the
    // runs of a nested A0 over a local length array) is deferred too.
    for (size_t k = 0; k < prelude_.size(); ++k) {
      Buffer aux = prelude_[k].first;
      Stmt fill = lower_accesses(prelude_[k].second);
      bool inputs_only = true;
      visit_loads(fill, [&](const BufferNode* b) {
        if (b == aux.get()) return;
        if (b->kind != BufferKind::Input && b->kind != BufferKind::Aux) inputs_only = false;
        if (deferred_aux.count(b)) inputs_only = false;
      });
      if (inputs_only) {
        prelude.push_back(fill);
      } else {
        deferred.push_back({aux, fill});
        deferred_aux.insert(aux.get());
      }
    }
    move_aux_fills(prelude);
    f_.prelude = build::seq(prelude);
    if (deferred.empty()) return;
    std::vector<Stmt> items = f_.body->kind == StmtKind::Seq ? f_.body->body : std::vector<Stmt>{f_.body};
    std::vector<Stmt> out;
    std::set<const BufferNode*> done, checked;
    // A fill goes before the first statement that needs it, after the
    // deferred fills it reads itself.
    std::function<void(size_t)> emit = [&](size_t k) {
      const auto& [aux, fill] = deferred[k];
      if (done.count(aux.get())) return;
      done.insert(aux.get());
      for (size_t j = 0; j < deferred.size(); ++j) {
        if (j == k) continue;
        bool reads = false;
        visit_loads(fill, [&](const BufferNode* b) { reads |= b == deferred[j].first.get(); });
        if (reads) emit(j);
      }
      for (Stmt& check : length_checks(fill, checked)) out.push_back(std::move(check));
      out.push_back(fill);
    };
    for (const auto& item : items) {
      for (size_t k = 0; k < deferred.size(); ++k) {
        bool uses = false;
        visit_loads(item, [&](const BufferNode* b) { uses |= b == deferred[k].first.get(); });
        if (uses) emit(k);
      }
      out.push_back(item);
    }
    f_.body = build::seq(out);
  }

  /// For each length array the function computes that `fill` reads and
  /// `checked` does not hold yet (then added): `for x in 0 .. total {
  /// assert 0 <= n@(x) length "n" (x, n@(x)); }`, one statement per array,
  /// unless every value stored to it is plainly non-negative.
  std::vector<Stmt> length_checks(const Stmt& fill, std::set<const BufferNode*>& checked) {
    std::set<const BufferNode*> shaping;
    for (const auto& b : f_.buffers)
      for (const auto& d : b->dims)
        each_expr(d.extent, [&](const ExprNode& x) {
          if (x.kind == ExprKind::Load) shaping.insert(x.buffer.get());
        });
    std::vector<Stmt> out;
    for (const auto& b : f_.buffers) {
      const BufferNode* l = b.get();
      if (checked.count(l) || !shaping.count(l) || !is_int(l->type) || l->dims.empty() || !l->total) continue;
      if (l->kind == BufferKind::Input || l->kind == BufferKind::Aux) continue;  // entry-checked; offsets
      bool reads = false;
      visit_loads(fill, [&](const BufferNode* x) { reads |= x == l; });
      if (!reads) continue;
      checked.insert(l);
      std::set<const BufferNode*> seen;
      if (stores_nonneg(l, shaping, seen)) continue;
      Var x = make_var("x");
      out.push_back(build::for_loop(x, l->total, build::assert_length(b, build::var(x))));
    }
    return out;
  }

  /// Whether every store to `l` in the body stores a value that cannot be
  /// negative: a literal >= 0, a size, `max(e, c)` with c non-negative, a
  /// `select` or `min` of such values, a (widening) cast of one, or an
  /// element of an argument's length array (checked on entry) or of another
  /// such array. Sums and products may wrap, and count as unknown.
  bool stores_nonneg(const BufferNode* l, const std::set<const BufferNode*>& shaping,
                     std::set<const BufferNode*>& seen) {
    if (!seen.insert(l).second) return true;  // a cycle: each store is judged on its own
    std::function<bool(const Expr&)> nonneg = [&](const Expr& e) -> bool {
      switch (e->kind) {
        case ExprKind::IntImm: return e->int_value >= 0;
        case ExprKind::SizeRef: return true;
        case ExprKind::Cast:
          // i64 -> i32 may wrap.
          return is_int(e->type) && is_int(e->args[0]->type) &&
                 (e->type == Scalar::I64 || e->args[0]->type != Scalar::I64) && nonneg(e->args[0]);
        case ExprKind::Select: return nonneg(e->args[1]) && nonneg(e->args[2]);
        case ExprKind::Binary:
          if (e->binop == BinOp::Max) return nonneg(e->args[0]) || nonneg(e->args[1]);
          if (e->binop == BinOp::Min) return nonneg(e->args[0]) && nonneg(e->args[1]);
          return false;
        case ExprKind::Load:
          if (!is_int(e->type) || !shaping.count(e->buffer.get())) return false;
          if (e->buffer->kind == BufferKind::Input) return true;
          return e->buffer->kind == BufferKind::Local && stores_nonneg(e->buffer.get(), shaping, seen);
        default: return false;
      }
    };
    bool ok = true;
    each_stmt(f_.body, [&](const StmtNode& x) {
      if (x.kind == StmtKind::Store && x.buffer.get() == l && !nonneg(x.value)) ok = false;
    });
    return ok;
  }

  /// Top-level body statements that store only aux arrays and read only
  /// inputs and aux arrays the prelude has filled by then (`fuse`'s maps,
  /// ir/schedule/fuse.cpp) move to the end of the prelude: they are
  /// computed once per length pattern, like the offset arrays. An aux array
  /// a moved statement sizes from another (`F_fo0` of `F_oif0@(E)`) is then
  /// allocated after the statements before it have run.
  void move_aux_fills(std::vector<Stmt>& prelude) {
    if (!f_.body) return;
    std::vector<Stmt> items = f_.body->kind == StmtKind::Seq ? f_.body->body : std::vector<Stmt>{f_.body};
    std::set<const BufferNode*> filled;
    for (const auto& st : prelude)
      each_stmt(st, [&](const StmtNode& x) {
        if (x.kind == StmtKind::Store) filled.insert(x.buffer.get());
      });
    std::vector<Stmt> rest;
    bool moved = false;
    for (const auto& item : items) {
      bool ok = true, stores = false;
      each_stmt(item, [&](const StmtNode& x) {
        if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) ok = false;
        if (x.kind != StmtKind::Store) return;
        stores = true;
        if (x.buffer->kind != BufferKind::Aux) ok = false;
      });
      std::set<const BufferNode*> mine;
      each_stmt(item, [&](const StmtNode& x) {
        if (x.kind == StmtKind::Store) mine.insert(x.buffer.get());
      });
      visit_loads(item, [&](const BufferNode* b) {
        if (b->kind == BufferKind::Input || mine.count(b) || filled.count(b)) return;
        ok = false;
      });
      if (!ok || !stores) {
        rest.push_back(item);
        continue;
      }
      prelude.push_back(item);
      filled.insert(mine.begin(), mine.end());
      moved = true;
    }
    if (moved) f_.body = build::seq(rest);
  }

  /// Calls `fn` for every buffer a statement loads from or stores to,
  /// including buffers that its accessed buffers' totals read.
  static void visit_loads(const Stmt& s, const std::function<void(const BufferNode*)>& fn) {
    std::function<void(const Expr&)> ex = [&](const Expr& e) {
      if (!e) return;
      if (e->kind == ExprKind::Load) {
        fn(e->buffer.get());
        if (e->buffer->total) ex(e->buffer->total);
      }
      for (const auto& a : e->args) ex(a);
    };
    std::function<void(const Stmt&)> st = [&](const Stmt& x) {
      if (!x) return;
      ex(x->extent);
      ex(x->value);
      for (const auto& a : x->args) ex(a);
      if (x->buffer) {
        fn(x->buffer.get());
        if (x->buffer->total) ex(x->buffer->total);
      }
      for (const auto& c : x->body) st(c);
    };
    st(s);
  }

 private:
  Func& f_;
  std::map<std::string, Buffer> aux_by_key_;
  std::map<std::string, std::unique_ptr<NestedPrefix>> nested_by_key_;
  // Each prefix array and the (unlowered) statements that fill it, in the
  // order they are needed.
  std::vector<std::pair<Buffer, Stmt>> prelude_;
};

}  // namespace

bool lower_storage(Func& f, DiagnosticEngine& diags) {
  try {
    apply_dim_fusions(f);
    StorageLowerer s(f);
    s.run();
    s.finish();
    return true;
  } catch (const Unsupported& u) {
    diags.report(DiagKind::Unsupported, u.at.valid() ? u.at : f.at, fmt::format("in `{}`: {}", f.name, u.what));
    return false;
  }
}

}  // namespace dccc::ir
