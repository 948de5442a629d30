#include "ir/simplify_indices.h"

#include <fmt/format.h>
#include <z3++.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace dccc::ir {
namespace {

// ------------------------------------------------------------ structure


/// A readable text of `e` for --explain notes (not the IR printer's: that
/// one prints whole functions).
std::string show(const Expr& e) {
  if (!e) return "?";
  switch (e->kind) {
    case ExprKind::IntImm: return std::to_string(e->int_value);
    case ExprKind::FloatImm: return fmt::format("{}", e->float_value);
    case ExprKind::VarRef: return e->var->name;
    case ExprKind::SizeRef: return e->name;
    case ExprKind::Binary: {
      std::string a = show(e->args[0]), b = show(e->args[1]);
      if (e->binop == BinOp::Min || e->binop == BinOp::Max || e->binop == BinOp::Pow)
        return fmt::format("{}({}, {})", op_text(e->binop), a, b);
      return fmt::format("({} {} {})", a, op_text(e->binop), b);
    }
    case ExprKind::Unary: return fmt::format("{}({})", op_text(e->unop), show(e->args[0]));
    case ExprKind::Select:
      return fmt::format("select({}, {}, {})", show(e->args[0]), show(e->args[1]), show(e->args[2]));
    case ExprKind::Cast: return fmt::format("{}({})", scalar_name(e->type), show(e->args[0]));
    case ExprKind::Load: {
      std::string s = e->buffer->name + (e->flat ? "@(" : "[");
      for (size_t k = 0; k < e->args.size(); ++k) s += (k ? ", " : "") + show(e->args[k]);
      return s + (e->flat ? ")" : "]");
    }
  }
  return "?";
}

/// A key identifying `e` by structure (variables and buffers by identity).
std::string key(const Expr& e) {
  if (!e) return "_";
  std::string s = fmt::format("{}:{}:", static_cast<int>(e->kind), static_cast<int>(e->type));
  switch (e->kind) {
    case ExprKind::IntImm: s += std::to_string(e->int_value); break;
    case ExprKind::FloatImm: s += fmt::format("{}", e->float_value); break;
    case ExprKind::VarRef: s += fmt::format("{}", static_cast<const void*>(e->var.get())); break;
    case ExprKind::SizeRef: s += e->name; break;
    case ExprKind::Binary: s += std::to_string(static_cast<int>(e->binop)); break;
    case ExprKind::Unary: s += std::to_string(static_cast<int>(e->unop)); break;
    case ExprKind::Load: s += fmt::format("{}{}", static_cast<const void*>(e->buffer.get()), e->flat ? "@" : ""); break;
    default: break;
  }
  s += "(";
  for (const auto& a : e->args) s += key(a) + ",";
  return s + ")";
}

Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }
Expr land(Expr a, Expr b) { return build::binary(BinOp::And, std::move(a), std::move(b)); }

bool is_imm(const Expr& e, int64_t v) { return e && e->kind == ExprKind::IntImm && e->int_value == v; }

/// The index of a one-index access (flat, or a one-dimensional buffer).
const Expr* single_index(const Expr& e) {
  if (!e || e->kind != ExprKind::Load || e->args.size() != 1) return nullptr;
  if (!e->flat && e->buffer->dims.size() != 1) return nullptr;
  return &e->args[0];
}

/// `v`'s range as an IR fact: 0 <= v && v < extent.
Expr range_fact(const Var& v, const Expr& extent) {
  return land(build::binary(BinOp::LE, build::int_imm(0), build::var(v)),
              build::binary(BinOp::LT, build::var(v), extent));
}

void flatten_items(const Stmt& s, std::vector<Stmt>& out) {
  if (!s) return;
  if (s->kind == StmtKind::Seq) {
    for (const auto& c : s->body) flatten_items(c, out);
    return;
  }
  out.push_back(s);
}

Stmt single(const Stmt& s) {
  Stmt x = s;
  while (x && x->kind == StmtKind::Seq && x->body.size() == 1) x = x->body[0];
  return x;
}

std::set<const BufferNode*> loaded_buffers(const Expr& e) {
  std::set<const BufferNode*> out;
  each_expr(e, [&](const ExprNode& x) {
    if (x.kind == ExprKind::Load) out.insert(x.buffer.get());
  });
  return out;
}

std::set<const BufferNode*> stored_buffers(const Stmt& s) {
  std::set<const BufferNode*> out;
  each_stmt(s, [&](const StmtNode& x) {
    if (x.kind == StmtKind::Store) out.insert(x.buffer.get());
  });
  return out;
}

// ------------------------------------------------------------ facts

/// A recognised prefix-sum array: P[0] = 0; for y in 0..extent: P[y+1] = P[y] + slice.
struct Prefix {
  Buffer buf;
  Expr extent;
  Var y;
  Expr slice;
  size_t ready = 0;  // first top-level body item at which its axioms hold
  bool nonneg = false;
};

/// A recognised vloop fusion: maps fo, fi filled from the prefix oif.
struct Fusion {
  const Prefix* oif = nullptr;
  Buffer fo, fi;
  size_t ready = 0;
};

/// P[y] = c * Q[y] for y in [0, extent].
struct Ratio {
  const Prefix* p = nullptr;
  const Prefix* q = nullptr;
  Expr c;
};

/// Splits a product into its integer-constant factor and the other factors.
void factors(const Expr& e, int64_t& c, std::vector<Expr>& rest) {
  if (e->kind == ExprKind::Binary && e->binop == BinOp::Mul && is_int(e->type)) {
    factors(e->args[0], c, rest);
    factors(e->args[1], c, rest);
  } else if (e->kind == ExprKind::IntImm) {
    c *= e->int_value;
  } else {
    rest.push_back(e);
  }
}

class Simplifier {
 public:
  Simplifier(Func& f, const SimplifyOptions& o) : f_(f), o_(o) {}

  SimplifyReport run() {
    recognise();
    std::vector<Stmt> items;
    flatten_items(f_.body, items);
    bool changed = false;
    for (size_t k = 0; k < items.size(); ++k) {
      pos_ = k;
      Stmt s = simplify(items[k]);
      if (o_.hoist) s = hoist(s);
      changed |= s != items[k];
      items[k] = s;
    }
    if (changed) f_.body = build::seq(items);
    return std::move(report_);
  }

  /// For prove_in_func: the axioms available after the whole body.
  bool prove_at_end(const std::vector<std::pair<Var, Expr>>& loops, const Expr& goal) {
    recognise();
    std::vector<Stmt> items;
    flatten_items(f_.body, items);
    pos_ = items.size();
    for (const auto& [v, e] : loops) context_.push_back(range_fact(v, e));
    return prove(goal);
  }

 private:
  // ---------------------------------------------------------- recognition
  void recognise() {
    std::vector<Stmt> pre, body;
    flatten_items(f_.prelude, pre);
    flatten_items(f_.body, body);
    std::map<const BufferNode*, int> stores;
    std::map<const BufferNode*, size_t> last_body_store;  // last top-level body item storing it, +1
    for (const auto* list : {&pre, &body})
      for (size_t k = 0; k < list->size(); ++k)
        each_stmt((*list)[k], [&](const StmtNode& x) {
          if (x.kind != StmtKind::Store) return;
          ++stores[x.buffer.get()];
          if (list == &body) last_body_store[x.buffer.get()] = k + 1;
        });
    auto first_body_load = [&](const BufferNode* b) {
      for (size_t k = 0; k < body.size(); ++k) {
        bool uses = false;
        each_stmt(body[k], [&](const StmtNode& x) {
          own_exprs(x, [&](const ExprNode& e) { uses |= e.kind == ExprKind::Load && e.buffer.get() == b; });
        });
        if (uses) return k;
      }
      return body.size();
    };
    // Inputs of a fill must be final: never written in the body, or only
    // by items before the fill (`at`; SIZE_MAX for the prelude).
    auto final_before = [&](const std::set<const BufferNode*>& bufs, const BufferNode* self, size_t at) {
      for (const auto* b : bufs) {
        if (b == self) continue;
        auto it = last_body_store.find(b);
        if (it == last_body_store.end()) continue;
        if (at == SIZE_MAX || it->second > at) return false;
      }
      return true;
    };

    for (const auto* list : {&pre, &body}) {
      bool in_prelude = list == &pre;
      for (size_t k = 0; k + 1 < list->size(); ++k) {
        const Stmt& init = (*list)[k];
        const Stmt loop = (*list)[k + 1];
        if (init->kind != StmtKind::Store || init->args.size() != 1 || !is_imm(init->args[0], 0) ||
            !is_imm(init->value, 0) || !is_int(init->buffer->type))
          continue;
        const Buffer& p = init->buffer;
        if (!init->flat && p->dims.size() != 1) continue;
        if (loop->kind != StmtKind::For) continue;
        Stmt st = single(loop->body[0]);
        if (!st || st->kind != StmtKind::Store || st->buffer != p || st->args.size() != 1) continue;
        const Expr& at = st->args[0];
        if (!(at->kind == ExprKind::Binary && at->binop == BinOp::Add && at->args[0]->kind == ExprKind::VarRef &&
              at->args[0]->var == loop->var && is_imm(at->args[1], 1)))
          continue;
        const Expr& v = st->value;
        if (!(v->kind == ExprKind::Binary && v->binop == BinOp::Add)) continue;
        const Expr* prev = single_index(v->args[0]);
        if (!prev || v->args[0]->buffer != p || (*prev)->kind != ExprKind::VarRef || (*prev)->var != loop->var)
          continue;
        const Expr& slice = v->args[1];
        if (stores[p.get()] != 2 || loads_from(slice, p.get()) || loads_from(loop->extent, p.get())) continue;
        bool has_var = false;
        each_expr(loop->extent, [&](const ExprNode& x) { has_var |= x.kind == ExprKind::VarRef; });
        if (has_var) continue;
        auto inputs = loaded_buffers(slice);
        for (const auto* b : loaded_buffers(loop->extent)) inputs.insert(b);
        size_t ready = in_prelude ? 0 : k + 2;
        if (!final_before(inputs, p.get(), in_prelude ? SIZE_MAX : k)) continue;
        if (!in_prelude && first_body_load(p.get()) < k) continue;
        prefixes_.push_back(std::make_unique<Prefix>(Prefix{p, loop->extent, loop->var, slice, ready, false}));
      }
    }
    // Lengths: integer arrays that size a tensor dimension (the runtime and
    // the allocation checks reject negative ones).
    for (const auto& b : f_.buffers)
      for (const auto& d : b->dims)
        for (const auto* l : loaded_buffers(d.extent))
          if (is_int(l->type) && l->kind != BufferKind::Aux) lengths_.insert(l);
    // Fusion maps: for y in 0..E { for z in 0..s(y) { fo[oif[y] + z] = y; fi[oif[y] + z] = z } }.
    // In the prelude (`fuse` over input lengths) they are ready before the body.
    for (const auto* list : {&pre, &body})
    for (size_t k = 0; k < list->size(); ++k) {
      const bool in_prelude = list == &pre;
      const Stmt& outer = (*list)[k];
      if (outer->kind != StmtKind::For) continue;
      Stmt inner = single(outer->body[0]);
      if (!inner || inner->kind != StmtKind::For) continue;
      Stmt pair = inner->body[0];
      if (!pair || pair->kind != StmtKind::Seq || pair->body.size() != 2) continue;
      const Stmt &sfo = pair->body[0], &sfi = pair->body[1];
      if (sfo->kind != StmtKind::Store || sfi->kind != StmtKind::Store || sfo->args.size() != 1 ||
          sfi->args.size() != 1 || !same_expr(sfo->args[0], sfi->args[0]))
        continue;
      if (!(sfo->value->kind == ExprKind::VarRef && sfo->value->var == outer->var &&
            sfi->value->kind == ExprKind::VarRef && sfi->value->var == inner->var))
        continue;
      const Expr& slot = sfo->args[0];
      if (!(slot->kind == ExprKind::Binary && slot->binop == BinOp::Add && slot->args[1]->kind == ExprKind::VarRef &&
            slot->args[1]->var == inner->var))
        continue;
      const Expr* oy = single_index(slot->args[0]);
      if (!oy || (*oy)->kind != ExprKind::VarRef || (*oy)->var != outer->var) continue;
      const Prefix* oif = prefix_of(slot->args[0]->buffer.get());
      if (!oif || (in_prelude ? oif->ready != 0 : oif->ready > k) || !same_expr(oif->extent, outer->extent)) continue;
      if (!same_expr(substitute(oif->slice, {{oif->y.get(), build::var(outer->var)}}), inner->extent)) continue;
      const Buffer &fo = sfo->buffer, &fi = sfi->buffer;
      if (fo == fi || stores[fo.get()] != 1 || stores[fi.get()] != 1) continue;
      if (!in_prelude && (first_body_load(fo.get()) < k || first_body_load(fi.get()) < k)) continue;
      fusions_.push_back(std::make_unique<Fusion>(Fusion{oif, fo, fi, in_prelude ? 0 : k + 1}));
    }
    // Proportional prefix sums over the same extent.
    for (const auto& p : prefixes_)
      for (const auto& q : prefixes_) {
        if (p == q || !same_expr(p->extent, q->extent)) continue;
        int64_t cp = 1, cq = 1;
        std::vector<Expr> rp, rq;
        factors(substitute(p->slice, {{p->y.get(), build::var(q->y)}}), cp, rp);
        factors(q->slice, cq, rq);
        if (cq == 0 || cp % cq != 0) continue;
        bool ok = true;
        for (const auto& x : rq) {
          auto it = rp.begin();
          while (it != rp.end() && !same_expr(*it, x)) ++it;
          if (it == rp.end()) {
            ok = false;
            break;
          }
          rp.erase(it);
        }
        if (!ok) continue;
        Expr c = build::int_imm(cp / cq);
        for (const auto& x : rp) {
          bool invariant = true;
          each_expr(x, [&](const ExprNode& n) {
            invariant &= n.kind == ExprKind::IntImm || n.kind == ExprKind::SizeRef ||
                         (n.kind == ExprKind::Binary && n.binop == BinOp::Mul) ||
                         (n.kind == ExprKind::Cast && is_int(n.type));
          });
          if (!invariant || !is_int(x->type)) ok = false;
          c = mul(c, build::cast(Scalar::I64, x));
        }
        if (ok) ratios_.push_back(Ratio{p.get(), q.get(), c});
      }
    // Non-negative slices (monotone prefix sums, sound fusion maps).
    for (auto& p : prefixes_) {
      size_t saved = pos_;
      pos_ = p->ready;
      context_.push_back(range_fact(p->y, p->extent));
      p->nonneg = plainly_nonneg(p->slice) || prove(build::binary(BinOp::LE, build::int_imm(0), p->slice));
      context_.pop_back();
      pos_ = saved;
    }
  }

  /// Settled without Z3 (most queries of unscheduled programs): sums and
  /// products of constants >= 0, sizes, loop variables and lengths.
  bool plainly_nonneg(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return e->int_value >= 0;
      case ExprKind::SizeRef: return true;
      case ExprKind::VarRef: return true;  // a loop variable: 0 <= v < extent
      case ExprKind::Cast: return is_int(e->type) && is_int(e->args[0]->type) && plainly_nonneg(e->args[0]);
      case ExprKind::Load: return is_int(e->type) && lengths_.count(e->buffer.get()) > 0;
      case ExprKind::Binary:
        if (e->binop == BinOp::Add || e->binop == BinOp::Mul)
          return plainly_nonneg(e->args[0]) && plainly_nonneg(e->args[1]);
        if (e->binop == BinOp::Div)
          return plainly_nonneg(e->args[0]) && e->args[1]->kind == ExprKind::IntImm && e->args[1]->int_value > 0;
        return false;
      default: return false;
    }
  }

  /// `v < bound` settled without Z3: v is a loop variable of the context
  /// whose extent is `bound` or `bound - 1`.
  bool plainly_below(const Expr& v, const Expr& bound) const {
    if (v->kind != ExprKind::VarRef) return false;
    for (const auto& c : context_) {
      // range_fact: (0 <= v) && (v < E)
      if (c->kind != ExprKind::Binary || c->binop != BinOp::And) continue;
      const Expr& lt = c->args[1];
      if (lt->kind != ExprKind::Binary || lt->binop != BinOp::LT || !same_expr(lt->args[0], v)) continue;
      const Expr& e = lt->args[1];
      if (same_expr(e, bound)) return true;
      if (e->kind == ExprKind::IntImm && bound->kind == ExprKind::IntImm && e->int_value <= bound->int_value)
        return true;
      if (bound->kind == ExprKind::Binary && bound->binop == BinOp::Add && same_expr(bound->args[0], e) &&
          bound->args[1]->kind == ExprKind::IntImm && bound->args[1]->int_value >= 0)
        return true;
    }
    return false;
  }

  const Prefix* prefix_of(const BufferNode* b) const {
    for (const auto& p : prefixes_)
      if (p->buf.get() == b) return p.get();
    return nullptr;
  }
  const Fusion* fusion_of_fo(const BufferNode* b) const {
    for (const auto& u : fusions_)
      if (u->fo.get() == b && u->ready <= pos_) return u.get();
    return nullptr;
  }
  bool aux_like(const BufferNode* b) const {
    if (b->kind == BufferKind::Aux || lengths_.count(b) || prefix_of(b)) return true;
    for (const auto& u : fusions_)
      if (u->fo.get() == b || u->fi.get() == b) return true;
    return false;
  }

  // ---------------------------------------------------------- Z3
  struct Z3 {
    z3::context ctx;
  };

  struct Tr {
    Simplifier& s;
    std::map<const VarNode*, z3::expr> bound;
    std::set<const BufferNode*> loads;
    std::set<std::string> sizes;
    bool ok = true;
    std::vector<z3::expr> lengths;  // loads of length arrays met (each >= 0)

    z3::context& ctx() { return s.z3_->ctx; }
    z3::expr fail() {
      ok = false;
      return ctx().int_val(0);
    }
    z3::expr fn_app(const BufferNode* b, const std::vector<z3::expr>& args) {
      z3::sort_vector dom(ctx());
      for (size_t k = 0; k < args.size(); ++k) dom.push_back(ctx().int_sort());
      std::string name = fmt::format("{}#{}/{}", b->name, static_cast<const void*>(b), args.size());
      z3::func_decl f = ctx().function(name.c_str(), dom, ctx().int_sort());
      z3::expr_vector av(ctx());
      for (const auto& a : args) av.push_back(a);
      return f(av);
    }
    z3::expr trunc_div(const z3::expr& a, int64_t k) {
      z3::expr kk = ctx().int_val(k);
      return z3::ite(a >= 0, a / kk, -((-a) / kk));
    }
    z3::expr tr(const Expr& e) {
      if (!ok) return ctx().int_val(0);
      switch (e->kind) {
        case ExprKind::IntImm:
          if (e->type == Scalar::Bool) return ctx().bool_val(e->int_value != 0);
          if (!is_int(e->type)) return fail();
          return ctx().int_val(e->int_value);
        case ExprKind::FloatImm: return fail();
        case ExprKind::VarRef: {
          auto it = bound.find(e->var.get());
          if (it != bound.end()) return it->second;
          return ctx().int_const(fmt::format("{}#{}", e->var->name, static_cast<const void*>(e->var.get())).c_str());
        }
        case ExprKind::SizeRef:
          sizes.insert(e->name);
          return ctx().int_const(("size:" + e->name).c_str());
        case ExprKind::Binary: {
          if (!is_int(e->type) && e->type != Scalar::Bool) return fail();
          if (!is_int(e->args[0]->type) && e->args[0]->type != Scalar::Bool) return fail();
          z3::expr a = tr(e->args[0]), b = tr(e->args[1]);
          if (!ok) return a;
          switch (e->binop) {
            case BinOp::Add: return a + b;
            case BinOp::Sub: return a - b;
            case BinOp::Mul: return a * b;
            case BinOp::Div:
            case BinOp::Mod: {
              const Expr& d = e->args[1];
              if (d->kind == ExprKind::IntImm && d->int_value > 0) {
                z3::expr q = trunc_div(a, d->int_value);
                return e->binop == BinOp::Div ? q : a - ctx().int_val(d->int_value) * q;
              }
              z3::sort_vector dom(ctx());
              dom.push_back(ctx().int_sort());
              dom.push_back(ctx().int_sort());
              z3::func_decl f = ctx().function(e->binop == BinOp::Div ? "idiv" : "imod", dom, ctx().int_sort());
              return f(a, b);
            }
            case BinOp::Min: return z3::ite(a <= b, a, b);
            case BinOp::Max: return z3::ite(a >= b, a, b);
            case BinOp::EQ: return a == b;
            case BinOp::NE: return a != b;
            case BinOp::LT: return a < b;
            case BinOp::LE: return a <= b;
            case BinOp::And: return a && b;
            case BinOp::Or: return a || b;
            default: return fail();
          }
        }
        case ExprKind::Unary: {
          z3::expr a = tr(e->args[0]);
          if (!ok) return a;
          if (e->unop == UnOp::Neg && is_int(e->type)) return -a;
          if (e->unop == UnOp::Not && e->type == Scalar::Bool) return !a;
          if (e->unop == UnOp::Abs && is_int(e->type)) return z3::ite(a >= 0, a, -a);
          return fail();
        }
        case ExprKind::Select: {
          if (!is_int(e->type)) return fail();
          z3::expr c = tr(e->args[0]), a = tr(e->args[1]), b = tr(e->args[2]);
          if (!ok) return a;
          return z3::ite(c, a, b);
        }
        case ExprKind::Cast: {
          const Expr& a = e->args[0];
          if (!is_int(e->type) || !is_int(a->type)) return fail();
          z3::expr x = tr(a);
          // Widening is exact; a narrowing cast is an unknown function.
          if (e->type == Scalar::I64 || a->type == Scalar::I32) return x;
          z3::func_decl f = ctx().function("narrow", ctx().int_sort(), ctx().int_sort());
          return f(x);
        }
        case ExprKind::Load: {
          if (!is_int(e->type)) return fail();
          std::vector<z3::expr> args;
          for (const auto& a : e->args) args.push_back(tr(a));
          if (!ok) return ctx().int_val(0);
          // A hoisted scalar holds its load's value wherever it is read.
          if (auto h = s.hoisted_.find(e->buffer.get()); h != s.hoisted_.end()) return tr(h->second);
          // One-index loads of one array share a function (flat or not:
          // the buffers this pass reasons about are one-dimensional).
          loads.insert(e->buffer.get());
          z3::expr app = fn_app(e->buffer.get(), args);
          if (s.lengths_.count(e->buffer.get())) lengths.push_back(app);
          return app;
        }
      }
      return fail();
    }
  };

  /// Axioms about the arrays in `bufs` (closed over what they mention).
  void axioms(z3::solver& sol, std::set<const BufferNode*> bufs) {
    z3::context& c = z3_->ctx;
    // Close over fusions and prefixes.
    bool grew = true;
    std::set<std::string> sizes;
    while (grew) {
      grew = false;
      auto take = [&](const BufferNode* b) { grew |= bufs.insert(b).second; };
      for (const auto& u : fusions_)
        if (u->ready <= pos_ && (bufs.count(u->fo.get()) || bufs.count(u->fi.get()))) take(u->oif->buf.get());
      for (const auto& r : ratios_)
        if (r.p->ready <= pos_ && r.q->ready <= pos_ && bufs.count(r.p->buf.get())) take(r.q->buf.get());
      for (const auto& p : prefixes_)
        if (p->ready <= pos_ && bufs.count(p->buf.get())) {
          for (const auto* b : loaded_buffers(p->slice)) take(b);
          for (const auto* b : loaded_buffers(p->extent)) take(b);
        }
    }
    auto z0 = c.int_val(0);
    for (const auto& p : prefixes_) {
      if (p->ready > pos_ || !bufs.count(p->buf.get())) continue;
      Tr t{*this, {}, {}, {}, true, {}};
      z3::expr y = c.int_const(("y!" + p->buf->name).c_str());
      t.bound.emplace(p->y.get(), y);
      z3::expr e = t.tr(p->extent), s = t.tr(p->slice);
      if (!t.ok) continue;
      for (const auto& n : t.sizes) sizes.insert(n);
      auto P = [&](const z3::expr& x) { return t.fn_app(p->buf.get(), {x}); };
      sol.add(P(z0) == 0);
      sol.add(z3::forall(y, z3::implies(0 <= y && y < e, P(y + 1) == P(y) + s)));
      if (p->nonneg) {
        sol.add(z3::forall(y, z3::implies(0 <= y && y < e, s >= 0)));
        sol.add(z3::forall(y, z3::implies(0 <= y && y <= e, P(y) >= 0 && P(y) <= P(e))));
      }
    }
    for (const auto& r : ratios_) {
      if (r.p->ready > pos_ || r.q->ready > pos_ || !bufs.count(r.p->buf.get())) continue;
      Tr t{*this, {}, {}, {}, true, {}};
      z3::expr y = c.int_const(("r!" + r.p->buf->name + r.q->buf->name).c_str());
      z3::expr e = t.tr(r.p->extent), k = t.tr(r.c);
      if (!t.ok) continue;
      for (const auto& n : t.sizes) sizes.insert(n);
      sol.add(z3::forall(y, z3::implies(0 <= y && y <= e,
                                        t.fn_app(r.p->buf.get(), {y}) == k * t.fn_app(r.q->buf.get(), {y}))));
    }
    for (const auto& u : fusions_) {
      if (u->ready > pos_ || !u->oif->nonneg || !(bufs.count(u->fo.get()) || bufs.count(u->fi.get()))) continue;
      const Prefix& p = *u->oif;
      Tr t{*this, {}, {}, {}, true, {}};
      z3::expr f = c.int_const(("f!" + u->fo->name).c_str());
      z3::expr o = c.int_const(("o!" + u->fo->name).c_str()), i = c.int_const(("i!" + u->fo->name).c_str());
      z3::expr e = t.tr(p.extent);
      auto oif = [&](const z3::expr& x) { return t.fn_app(p.buf.get(), {x}); };
      auto fo = [&](const z3::expr& x) { return t.fn_app(u->fo.get(), {x}); };
      auto fi = [&](const z3::expr& x) { return t.fn_app(u->fi.get(), {x}); };
      t.bound.insert_or_assign(p.y.get(), fo(f));
      z3::expr s_fo = t.tr(p.slice);
      t.bound.insert_or_assign(p.y.get(), o);
      z3::expr s_o = t.tr(p.slice);
      if (!t.ok) continue;
      for (const auto& n : t.sizes) sizes.insert(n);
      sol.add(z3::forall(f, z3::implies(0 <= f && f < oif(e), 0 <= fo(f) && fo(f) < e && 0 <= fi(f) &&
                                                                  fi(f) < s_fo && oif(fo(f)) + fi(f) == f)));
      sol.add(z3::forall(o, i, z3::implies(0 <= o && o < e && 0 <= i && i < s_o,
                                           fo(oif(o) + i) == o && fi(oif(o) + i) == i)));
    }
    for (const auto& n : sizes) sol.add(c.int_const(("size:" + n).c_str()) >= 0);
  }

  /// The value of `e` with every loop variable at `corner` (0: the first
  /// iteration, 1: the last, for variables with a constant extent); none
  /// where it reads memory or a size.
  std::optional<int64_t> at_corner(const Expr& e, int corner) const {
    switch (e->kind) {
      case ExprKind::IntImm: return e->int_value;
      case ExprKind::VarRef: {
        if (corner == 0) return 0;
        for (const auto& c : context_) {
          if (c->kind != ExprKind::Binary || c->binop != BinOp::And) continue;
          const Expr& lt = c->args[1];
          if (lt->kind == ExprKind::Binary && lt->binop == BinOp::LT && same_expr(lt->args[0], e) &&
              lt->args[1]->kind == ExprKind::IntImm && lt->args[1]->int_value >= 1)
            return lt->args[1]->int_value - 1;
        }
        return std::nullopt;
      }
      case ExprKind::Cast:
        if (!is_int(e->type) || !is_int(e->args[0]->type)) return std::nullopt;
        return at_corner(e->args[0], corner);
      case ExprKind::Unary: {
        auto a = at_corner(e->args[0], corner);
        if (!a) return a;
        if (e->unop == UnOp::Not) return *a ? 0 : 1;
        if (e->unop == UnOp::Neg) return -*a;
        return std::nullopt;
      }
      case ExprKind::Binary: {
        auto a = at_corner(e->args[0], corner), b = at_corner(e->args[1], corner);
        if (!a || !b) return std::nullopt;
        switch (e->binop) {
          case BinOp::Add: return *a + *b;
          case BinOp::Sub: return *a - *b;
          case BinOp::Mul: return *a * *b;
          case BinOp::LT: return *a < *b;
          case BinOp::LE: return *a <= *b;
          case BinOp::EQ: return *a == *b;
          case BinOp::NE: return *a != *b;
          case BinOp::And: return *a && *b;
          case BinOp::Or: return *a || *b;
          default: return std::nullopt;
        }
      }
      default: return std::nullopt;
    }
  }

  /// Whether `c` is false at a corner of the loop ranges: then it cannot
  /// always hold and Z3 need not be asked (a filter only: skipping a proof
  /// is always safe).
  bool false_at_a_corner(const Expr& c) const {
    for (int corner : {0, 1}) {
      auto v = at_corner(c, corner);
      if (v && *v == 0) return true;
    }
    return false;
  }

  /// Is `goal` true here (context_, the arrays ready at pos_)?
  bool prove(const Expr& goal) {
    if (!z3_) z3_ = std::make_unique<Z3>();
    std::string k = std::to_string(pos_) + "|" + key(goal);
    for (const auto& c : context_) k += "|" + key(c);
    if (auto it = cache_.find(k); it != cache_.end()) return it->second;
    bool result = false;
    try {
      Tr t{*this, {}, {}, {}, true, {}};
      z3::expr g = t.tr(goal);
      if (t.ok && g.is_bool()) {
        z3::solver sol(z3_->ctx);
        z3::params p(z3_->ctx);
        p.set("rlimit", o_.budget);
        sol.set(p);
        for (const auto& c : context_) {
          Tr tc{*this, {}, {}, {}, true, {}};
          z3::expr x = tc.tr(c);
          if (!tc.ok || !x.is_bool()) continue;
          sol.add(x);
          for (const auto& l : tc.lengths) t.lengths.push_back(l);
          t.loads.insert(tc.loads.begin(), tc.loads.end());
          t.sizes.insert(tc.sizes.begin(), tc.sizes.end());
        }
        for (const auto& n : t.sizes) sol.add(z3_->ctx.int_const(("size:" + n).c_str()) >= 0);
        // Lengths are >= 0 where they are read (ground facts: cheaper than
        // a quantified axiom, and the prefix sums carry their slices' signs).
        for (const auto& l : t.lengths) sol.add(l >= 0);
        axioms(sol, t.loads);
        sol.add(!g);
        ++report_.queries;
        static const bool trace = std::getenv("DCCC_SIMPLIFY_TRACE") != nullptr;
        auto t0 = std::chrono::steady_clock::now();
        z3::check_result r = sol.check();
        result = r == z3::unsat;
        if (trace)
          std::fprintf(stderr, "simplify: %s %s (%.1f ms)\n", show(goal).c_str(),
                       r == z3::unsat ? "proved" : r == z3::sat ? "refuted" : "unknown",
                       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    } catch (const z3::exception&) {
      result = false;
    }
    cache_.emplace(std::move(k), result);
    return result;
  }

  bool prove_equal(const Expr& a, const Expr& b) { return prove(build::binary(BinOp::EQ, a, b)); }

  // ---------------------------------------------------------- rewriting
  struct Term {
    bool neg;
    Expr e;
  };

  static void terms_of(const Expr& e, bool neg, std::vector<Term>& out) {
    if (e->kind == ExprKind::Binary && is_int(e->type) && (e->binop == BinOp::Add || e->binop == BinOp::Sub)) {
      terms_of(e->args[0], neg, out);
      terms_of(e->args[1], e->binop == BinOp::Sub ? !neg : neg, out);
      return;
    }
    out.push_back({neg, e});
  }

  /// Rebuilds the sum `e` with its leaves replaced in order by `leaves`.
  static Expr reshape(const Expr& e, const std::vector<Term>& leaves, size_t& k) {
    if (e->kind == ExprKind::Binary && is_int(e->type) && (e->binop == BinOp::Add || e->binop == BinOp::Sub)) {
      Expr a = reshape(e->args[0], leaves, k);
      Expr b = reshape(e->args[1], leaves, k);
      if (a == e->args[0] && b == e->args[1]) return e;
      return build::binary(e->binop, a, b);
    }
    return leaves[k++].e;
  }

  /// The sum of `terms`, an integer expression of type `type` (its
  /// constants take that type: an i64 zero beside an i32 value is ill-typed
  /// IR).
  static Expr sum(const std::vector<Term>& terms, Scalar type) {
    Expr out;
    for (const auto& t : terms) {
      if (!out) out = t.neg ? build::binary(BinOp::Sub, build::int_imm(0, type), t.e) : t.e;
      else out = build::binary(t.neg ? BinOp::Sub : BinOp::Add, out, t.e);
    }
    return out ? out : build::int_imm(0, type);
  }

  /// `x` as an expression of type `t`: a rewrite never changes the type of
  /// what it replaces.
  static Expr typed(const Expr& x, Scalar t) {
    if (x->type == t) return x;
    if (x->kind == ExprKind::IntImm) return build::int_imm(x->int_value, t);
    return build::cast(t, x);
  }

  static Expr times(const Expr& x, const Expr& k) {
    if (!k || is_imm(k, 1)) return x;
    return mul(x, k);
  }

  /// A sum of integer terms: A[F_fo[X]] + F_fi[X] * K -> X * K, and x - x -> 0,
  /// each kept only when Z3 proves the whole sum unchanged.
  Expr simplify_sum(const Expr& e) {
    std::vector<Term> terms;
    terms_of(e, false, terms);
    bool leaves_changed = false;
    for (auto& t : terms) {
      Expr x = simplify_expr(t.e);
      leaves_changed |= x != t.e;
      t.e = x;
    }
    bool rewritten = false;
    for (bool again = true; again;) {
      again = false;
      // x - x
      for (size_t i = 0; i < terms.size() && !again; ++i)
        for (size_t j = 0; j < terms.size() && !again; ++j)
          if (i != j && terms[i].neg != terms[j].neg && same_expr(terms[i].e, terms[j].e)) {
            report_.notes.push_back(fmt::format("`{}` cancels in `{}`", show(terms[i].e), show(e)));
            std::vector<Term> cand;
            for (size_t k = 0; k < terms.size(); ++k)
              if (k != i && k != j) cand.push_back(terms[k]);
            terms = cand;
            rewritten = again = true;
            ++report_.indices;
          }
      // A[F_fo[X]] + F_fi[X] * K
      for (size_t i = 0; i < terms.size() && !again; ++i) {
        if (terms[i].neg) continue;
        Expr t1 = terms[i].e;
        if (t1->kind == ExprKind::Cast && is_int(t1->type)) t1 = t1->args[0];
        const Expr* in1 = single_index(t1);
        if (!in1) continue;
        const Prefix* p = prefix_of(t1->buffer.get());
        if (!p || p->ready > pos_) continue;
        const Expr* in2 = single_index(*in1);
        if (!in2) continue;
        const Fusion* u = fusion_of_fo((*in1)->buffer.get());
        if (!u) continue;
        // Only P = F_oif or P proportional to it can give K * F_oif[F_fo[X]].
        bool related = p == u->oif;
        for (const auto& r : ratios_) related |= r.p == p && r.q == u->oif;
        if (!related) continue;
        const Expr& x = *in2;
        for (size_t j = 0; j < terms.size() && !again; ++j) {
          if (j == i || terms[j].neg) continue;
          const Expr& t2 = terms[j].e;
          Expr k;
          auto is_fi = [&](const Expr& l) {
            const Expr* ix = single_index(l);
            return ix && l->buffer == u->fi && same_expr(*ix, x);
          };
          if (is_fi(t2)) k = nullptr;
          else if (t2->kind == ExprKind::Binary && t2->binop == BinOp::Mul && is_fi(t2->args[0])) k = t2->args[1];
          else if (t2->kind == ExprKind::Binary && t2->binop == BinOp::Mul && is_fi(t2->args[1])) k = t2->args[0];
          else continue;
          std::vector<Term> cand;
          for (size_t m = 0; m < terms.size(); ++m) {
            if (m == j) continue;
            cand.push_back(m == i ? Term{false, times(x, k)} : terms[m]);
          }
          // t1 + t2 = K * (F_oif[F_fo[X]] + F_fi[X]) = K * X: two proofs,
          // each linear in the unknown arrays (Z3 is weak at the product
          // with a symbolic K that proving the whole sum would need).
          Expr oif_fo = build::flat_load(u->oif->buf, *in1);
          if (!prove_equal(terms[i].e, k ? mul(k, oif_fo) : oif_fo)) continue;
          if (!prove_equal(add(oif_fo, build::flat_load(u->fi, x)), x)) continue;
          report_.notes.push_back(
              fmt::format("`{} + {}` is `{}` (fusion maps `{}`, `{}`)", show(terms[i].e), show(t2),
                          show(times(x, k)), u->fo->name, u->fi->name));
          terms = cand;
          rewritten = again = true;
          ++report_.indices;
        }
      }
    }
    if (rewritten) return typed(sum(terms, e->type), e->type);
    if (!leaves_changed) return e;
    size_t k = 0;
    return reshape(e, terms, k);
  }

  /// (Q * k + r) / k -> Q and (Q * k + r) % k -> r when 0 <= r < k (proved).
  Expr simplify_divmod(const Expr& e) {
    const Expr& d = e->args[1];
    if (d->kind != ExprKind::IntImm || d->int_value <= 0) return e;
    int64_t k = d->int_value;
    std::vector<Term> terms, q, r;
    terms_of(e->args[0], false, terms);
    for (const auto& t : terms) {
      const Expr& x = t.e;
      if (x->kind == ExprKind::IntImm && x->int_value % k == 0) {
        q.push_back({t.neg, build::int_imm(x->int_value / k, x->type)});
      } else if (x->kind == ExprKind::Binary && x->binop == BinOp::Mul && x->args[1]->kind == ExprKind::IntImm &&
                 x->args[1]->int_value % k == 0) {
        q.push_back({t.neg, times(x->args[0], build::int_imm(x->args[1]->int_value / k, x->type))});
      } else if (x->kind == ExprKind::Binary && x->binop == BinOp::Mul && x->args[0]->kind == ExprKind::IntImm &&
                 x->args[0]->int_value % k == 0) {
        q.push_back({t.neg, times(x->args[1], build::int_imm(x->args[0]->int_value / k, x->type))});
      } else {
        r.push_back(t);
      }
    }
    if (q.empty()) return e;
    std::vector<Expr> cands;
    const Scalar type = e->type;
    if (e->binop == BinOp::Div) {
      cands.push_back(sum(q, type));
      if (!r.empty()) cands.push_back(add(sum(q, type), build::binary(BinOp::Div, sum(r, type), d)));
    } else {
      cands.push_back(sum(r, type));
      if (!r.empty()) cands.push_back(build::binary(BinOp::Mod, sum(r, type), d));
    }
    for (auto& c : cands) c = typed(c, type);
    for (const auto& c : cands)
      if (prove_equal(e, c)) {
        ++report_.indices;
        report_.notes.push_back(fmt::format("`{}` is `{}`", show(e), show(c)));
        return c;
      }
    return e;
  }

  Expr simplify_expr(const Expr& e) {
    if (!e) return e;
    if (is_int(e->type) && e->kind == ExprKind::Binary && (e->binop == BinOp::Add || e->binop == BinOp::Sub))
      return simplify_sum(e);
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : e->args) {
      args.push_back(simplify_expr(a));
      changed |= args.back() != a;
    }
    Expr out = e;
    if (changed) {
      auto copy = std::make_shared<ExprNode>(*e);
      copy->args = std::move(args);
      out = copy;
    }
    if (is_int(out->type) && out->kind == ExprKind::Binary && (out->binop == BinOp::Div || out->binop == BinOp::Mod))
      out = simplify_divmod(out);
    return out;
  }

  /// A fact about the loop or condition `s` is valid inside it only when
  /// nothing inside writes what it reads.
  static bool stable(const Expr& fact, const Stmt& s) {
    auto reads = loaded_buffers(fact);
    for (const auto* b : stored_buffers(s))
      if (reads.count(b)) return false;
    return true;
  }

  Stmt simplify(const Stmt& s) {
    if (!s) return s;
    auto copy = std::make_shared<StmtNode>(*s);
    bool changed = false;
    auto ex = [&](Expr& e) {
      Expr x = simplify_expr(e);
      changed |= x != e;
      e = x;
    };
    switch (s->kind) {
      case StmtKind::For: {
        ex(copy->extent);
        Expr fact = range_fact(s->var, copy->extent);
        bool push = is_int(copy->extent->type) && stable(fact, s);
        if (push) context_.push_back(fact);
        Stmt b = simplify(s->body[0]);
        if (push) context_.pop_back();
        changed |= b != s->body[0];
        copy->body[0] = b;
        break;
      }
      case StmtKind::IfThenElse: {
        ex(copy->value);
        const Expr& c = copy->value;
        bool has_else = s->body.size() > 1 && s->body[1];
        if (!false_at_a_corner(c) && prove(c)) {
          ++report_.checks;
          report_.notes.push_back(fmt::format("the check `{}` always holds: removed", show(c)));
          return simplify(s->body[0]);
        }
        Expr not_c = build::unary(UnOp::Not, c);
        if (!false_at_a_corner(not_c) && prove(not_c)) {
          ++report_.checks;
          report_.notes.push_back(fmt::format("the check `{}` never holds: removed with its body", show(c)));
          return has_else ? simplify(s->body[1]) : build::seq({});
        }
        bool push = stable(c, s);
        if (push) context_.push_back(c);
        Stmt t = simplify(s->body[0]);
        if (push) context_.pop_back();
        changed |= t != s->body[0];
        copy->body[0] = t;
        if (has_else) {
          if (push) context_.push_back(build::unary(UnOp::Not, c));
          Stmt x = simplify(s->body[1]);
          if (push) context_.pop_back();
          changed |= x != s->body[1];
          copy->body[1] = x;
        }
        break;
      }
      case StmtKind::Seq:
        for (auto& c : copy->body) {
          Stmt x = simplify(c);
          changed |= x != c;
          c = x;
        }
        break;
      default:
        if (copy->value) ex(copy->value);
        for (auto& a : copy->args) ex(a);
        break;
    }
    return changed ? Stmt(copy) : s;
  }

  // ---------------------------------------------------------- hoisting
  /// Whether load `e` may move out of loop `loop` (vars bound in it:
  /// `inner`; buffers stored in it: `written`).
  bool hoistable(const Expr& e, const std::set<const VarNode*>& inner,
                 const std::set<const BufferNode*>& written) const {
    if (e->kind != ExprKind::Load || !is_int(e->type) || e->args.size() != 1 || !e->flat) return false;
    bool ok = true;
    each_expr(e, [&](const ExprNode& x) {
      if (x.kind == ExprKind::VarRef && inner.count(x.var.get())) ok = false;
      if (x.kind == ExprKind::Load &&
          (x.args.size() != 1 || !x.flat || !x.buffer->total || written.count(x.buffer.get()) ||
           !aux_like(x.buffer.get())))
        ok = false;
    });
    return ok;
  }

  bool in_bounds(const Expr& e) {
    bool ok = true;
    each_expr(e, [&](const ExprNode& x) {
      if (!ok || x.kind != ExprKind::Load) return;
      const Expr& i = x.args[0];
      const Expr& t = x.buffer->total;
      if (plainly_nonneg(i)) {
        if (plainly_below(i, t)) return;
        if (t->kind == ExprKind::Binary && t->binop == BinOp::Add && same_expr(t->args[0], i) &&
            t->args[1]->kind == ExprKind::IntImm && t->args[1]->int_value > 0)
          return;  // i < i + c
        if (i->kind == ExprKind::IntImm && t->kind == ExprKind::IntImm && i->int_value < t->int_value) return;
      }
      ok = prove(land(build::binary(BinOp::LE, build::int_imm(0), i), build::binary(BinOp::LT, i, x.buffer->total)));
    });
    return ok;
  }

  static Expr replace_expr(const Expr& e, const std::vector<std::pair<Expr, Expr>>& m) {
    if (!e) return e;
    for (const auto& [from, to] : m)
      if (same_expr(e, from)) return to;
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : e->args) {
      args.push_back(replace_expr(a, m));
      changed |= args.back() != a;
    }
    if (!changed) return e;
    auto copy = std::make_shared<ExprNode>(*e);
    copy->args = std::move(args);
    return copy;
  }

  std::string fresh_name() {
    for (;;) {
      std::string n = fmt::format("hoist{}", hoist_id_++);
      bool used = false;
      for (const auto& b : f_.buffers) used |= b->name == n;
      if (!used) return n;
    }
  }

  Stmt hoist(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::For: {
        std::set<const VarNode*> inner{s->var.get()};
        each_stmt(s->body[0], [&](const StmtNode& x) {
          if (x.kind == StmtKind::For) inner.insert(x.var.get());
        });
        auto written = stored_buffers(s);
        std::vector<Expr> found;
        std::function<void(const Expr&)> visit = [&](const Expr& e) {
          if (!e) return;
          if (hoistable(e, inner, written)) {
            for (const auto& x : found)
              if (same_expr(x, e)) return;
            found.push_back(e);
            return;
          }
          for (const auto& a : e->args) visit(a);
        };
        each_stmt(s->body[0], [&](const StmtNode& x) {
          visit(x.extent);
          visit(x.value);
          for (const auto& a : x.args) visit(a);
        });
        std::vector<std::pair<Expr, Expr>> m;
        std::vector<Stmt> stores;
        for (const auto& e : found) {
          if (!in_bounds(e)) continue;
          auto b = std::make_shared<BufferNode>();
          b->name = fresh_name();
          b->type = e->type;
          b->kind = BufferKind::Scalar;
          f_.buffers.push_back(b);
          stores.push_back(build::store(b, {}, e));
          hoisted_[b.get()] = e;
          m.push_back({e, build::load(b, {})});
          ++report_.hoisted;
          report_.notes.push_back(fmt::format("`{}` does not change in loop `{}`: read once before it, into `{}`",
                                              show(e), s->var->name, b->name));
        }
        Stmt body = m.empty() ? s->body[0] : rewrite(s->body[0], [&](const Expr& x) { return replace_expr(x, m); });
        Expr fact = range_fact(s->var, s->extent);
        bool push = is_int(s->extent->type) && stable(fact, s);
        if (push) context_.push_back(fact);
        Stmt b2 = hoist(body);
        if (push) context_.pop_back();
        Stmt out = s;
        if (b2 != s->body[0]) {
          auto copy = std::make_shared<StmtNode>(*s);
          copy->body[0] = b2;
          out = copy;
        }
        if (stores.empty()) return out;
        stores.push_back(out);
        return build::seq(stores);
      }
      case StmtKind::IfThenElse: {
        auto copy = std::make_shared<StmtNode>(*s);
        bool push = stable(s->value, s);
        if (push) context_.push_back(s->value);
        copy->body[0] = hoist(s->body[0]);
        if (push) context_.pop_back();
        if (s->body.size() > 1 && s->body[1]) {
          if (push) context_.push_back(build::unary(UnOp::Not, s->value));
          copy->body[1] = hoist(s->body[1]);
          if (push) context_.pop_back();
        }
        if (copy->body == s->body) return s;
        return copy;
      }
      case StmtKind::Seq: {
        auto copy = std::make_shared<StmtNode>(*s);
        for (auto& c : copy->body) c = hoist(c);
        if (copy->body == s->body) return s;
        return copy;
      }
      default: return s;
    }
  }

  Func& f_;
  SimplifyOptions o_;
  SimplifyReport report_;
  std::vector<std::unique_ptr<Prefix>> prefixes_;
  std::vector<std::unique_ptr<Fusion>> fusions_;
  std::vector<Ratio> ratios_;
  std::set<const BufferNode*> lengths_;
  std::vector<Expr> context_;
  size_t pos_ = 0;
  std::unique_ptr<Z3> z3_;
  std::map<std::string, bool> cache_;
  int hoist_id_ = 0;
  std::map<const BufferNode*, Expr> hoisted_;  // scalar hoistN -> the load it holds
};

}  // namespace

SimplifyReport simplify_indices(Func& f, const SimplifyOptions& options) {
  Simplifier s(f, options);
  return s.run();
}

bool prove_in_func(const Func& f, const std::vector<std::pair<Var, Expr>>& loops, const Expr& goal,
                   unsigned budget) {
  Func copy = f;
  SimplifyOptions o;
  o.budget = budget;
  Simplifier s(copy, o);
  return s.prove_at_end(loops, goal);
}

}  // namespace dccc::ir
