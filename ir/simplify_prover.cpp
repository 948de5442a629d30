// The simplifier's prover (ir/index_simplifier.h): IR expressions as Z3
// terms, the axioms of the recognised arrays, and the queries (with a
// deterministic resource limit each, and a cache).
#include <fmt/format.h>
#include <z3++.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ir/index_simplifier.h"

namespace dccc::ir::simplify {

// Here, where Z3 is a complete type (z3_ owns one).
Simplifier::Simplifier(Func& f, const SimplifyOptions& o) : f_(f), o_(o) {}
Simplifier::~Simplifier() = default;

// ---------------------------------------------------------- Z3
struct Simplifier::Z3 {
  z3::context ctx;
};

struct Simplifier::Tr {
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

void Simplifier::axioms(z3::solver& sol, std::set<const BufferNode*> bufs) {
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

std::optional<int64_t> Simplifier::at_corner(const Expr& e, int corner) const {
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

bool Simplifier::false_at_a_corner(const Expr& c) const {
  for (int corner : {0, 1}) {
    auto v = at_corner(c, corner);
    if (v && *v == 0) return true;
  }
  return false;
}

bool Simplifier::prove(const Expr& goal) {
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

}  // namespace dccc::ir::simplify
