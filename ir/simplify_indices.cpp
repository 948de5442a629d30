// Index simplification (ir/simplify_indices.h): the entry points, the
// rewriting of index sums, divisions and bound checks, and the hoisting of
// loop-invariant loads, with the helpers on IR the simplifier's files share.
// The recognised arrays are ir/simplify_facts.cpp, the prover
// ir/simplify_prover.cpp; the class is ir/index_simplifier.h.
#include "ir/simplify_indices.h"

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ir/index_simplifier.h"

namespace dccc::ir::simplify {

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

SimplifyReport Simplifier::run() {
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

bool Simplifier::prove_at_end(const std::vector<std::pair<Var, Expr>>& loops, const Expr& goal) {
  recognise();
  std::vector<Stmt> items;
  flatten_items(f_.body, items);
  pos_ = items.size();
  for (const auto& [v, e] : loops) context_.push_back(range_fact(v, e));
  return prove(goal);
}

void Simplifier::terms_of(const Expr& e, bool neg, std::vector<Term>& out) {
  if (e->kind == ExprKind::Binary && is_int(e->type) && (e->binop == BinOp::Add || e->binop == BinOp::Sub)) {
    terms_of(e->args[0], neg, out);
    terms_of(e->args[1], e->binop == BinOp::Sub ? !neg : neg, out);
    return;
  }
  out.push_back({neg, e});
}

Expr Simplifier::reshape(const Expr& e, const std::vector<Term>& leaves, size_t& k) {
  if (e->kind == ExprKind::Binary && is_int(e->type) && (e->binop == BinOp::Add || e->binop == BinOp::Sub)) {
    Expr a = reshape(e->args[0], leaves, k);
    Expr b = reshape(e->args[1], leaves, k);
    if (a == e->args[0] && b == e->args[1]) return e;
    return build::binary(e->binop, a, b);
  }
  return leaves[k++].e;
}

Expr Simplifier::sum(const std::vector<Term>& terms, Scalar type) {
  Expr out;
  for (const auto& t : terms) {
    if (!out) out = t.neg ? build::binary(BinOp::Sub, build::int_imm(0, type), t.e) : t.e;
    else out = build::binary(t.neg ? BinOp::Sub : BinOp::Add, out, t.e);
  }
  return out ? out : build::int_imm(0, type);
}

Expr Simplifier::typed(const Expr& x, Scalar t) {
  if (x->type == t) return x;
  if (x->kind == ExprKind::IntImm) return build::int_imm(x->int_value, t);
  return build::cast(t, x);
}

Expr Simplifier::times(const Expr& x, const Expr& k) {
  if (!k || is_imm(k, 1)) return x;
  return mul(x, k);
}

Expr Simplifier::simplify_sum(const Expr& e) {
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

Expr Simplifier::simplify_divmod(const Expr& e) {
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

Expr Simplifier::simplify_expr(const Expr& e) {
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

bool Simplifier::stable(const Expr& fact, const Stmt& s) {
  auto reads = loaded_buffers(fact);
  for (const auto* b : stored_buffers(s))
    if (reads.count(b)) return false;
  return true;
}

Stmt Simplifier::simplify(const Stmt& s) {
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
bool Simplifier::hoistable(const Expr& e, const std::set<const VarNode*>& inner,
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

bool Simplifier::in_bounds(const Expr& e) {
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

Expr Simplifier::replace_expr(const Expr& e, const std::vector<std::pair<Expr, Expr>>& m) {
  return replace_exprs(e, [&](const Expr& x) -> Expr {
    for (const auto& [from, to] : m)
      if (same_expr(x, from)) return to;
    return nullptr;
  });
}

std::string Simplifier::fresh_name() {
  for (;;) {
    std::string n = fmt::format("hoist{}", hoist_id_++);
    bool used = false;
    for (const auto& b : f_.buffers) used |= b->name == n;
    if (!used) return n;
  }
}

Stmt Simplifier::hoist(const Stmt& s) {
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

}  // namespace dccc::ir::simplify

namespace dccc::ir {

using simplify::Simplifier;

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
