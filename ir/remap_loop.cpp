#include "ir/remap_loop.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "ir/fuse_elementwise.h"

namespace dccc::ir {
namespace {

Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return build::binary(BinOp::Mul, std::move(a), std::move(b)); }

/// Integer division or remainder by anything but a positive constant.
bool divides_unsafely(const Expr& e) {
  bool found = false;
  each_expr(e, [&](const ExprNode& x) {
    found |= x.kind == ExprKind::Binary && (x.binop == BinOp::Div || x.binop == BinOp::Mod) && !is_float(x.type) &&
             !(x.args[1]->kind == ExprKind::IntImm && x.args[1]->int_value > 0);
  });
  return found;
}

/// The statements one execution of `s` runs, every inner loop counted at its
/// extent; `bound` maps inner loop variables to their extents (an inner loop
/// variable in an extent counts at its upper bound).
Expr work(const Stmt& s, std::map<const VarNode*, Expr>& bound) {
  if (!s) return build::int_imm(0);
  switch (s->kind) {
    case StmtKind::For: {
      Expr ext = substitute(s->extent, bound);
      bound[s->var.get()] = ext;
      return mul(ext, work(s->body[0], bound));
    }
    case StmtKind::Seq: {
      Expr sum = build::int_imm(0);
      for (const auto& c : s->body) sum = add(sum, work(c, bound));
      return sum;
    }
    case StmtKind::IfThenElse: {
      Expr sum = build::int_imm(1);
      for (const auto& c : s->body) sum = add(sum, work(c, bound));
      return sum;
    }
    default: return build::int_imm(1);
  }
}

Stmt replace_loop(const Stmt& s, const VarNode* v, const Stmt& with) {
  if (!s) return s;
  if (s->kind == StmtKind::For && s->var.get() == v) return with;
  if (s->body.empty()) return s;
  auto copy = std::make_shared<StmtNode>(*s);
  for (auto& c : copy->body) c = replace_loop(c, v, with);
  return copy;
}


/// The user's key as an i64 expression of `v`.
class KeyReader {
 public:
  KeyReader(const Func& f, const Var& v, const std::string& name, const Expr& extent, RemapResult& r)
      : f_(f), v_(v), name_(name), extent_(extent), r_(r) {}

  Expr read(const Term& t) {
    if (!r_.error.empty()) return nullptr;
    switch (t.kind) {
      case Term::Int: return build::int_imm(t.value);
      case Term::Name: {
        if (t.text == name_) return build::var(v_);
        for (const auto& s : f_.sizes)
          if (s.name == t.text) return build::size(t.text);
        return fail(t.at, fmt::format("unknown name `{}` in the `remap` key: a key uses the loop index `{}`, sizes, "
                                      "constants and tensor elements",
                                      t.text, name_));
      }
      case Term::Load: {
        std::vector<Buffer> hits;
        for (const auto& b : f_.buffers)
          if (b->name == t.text && !b->dims.empty()) hits.push_back(b);
        if (hits.size() != 1)
          return fail(t.at, hits.empty() ? fmt::format("unknown tensor `{}` in the `remap` key", t.text)
                                         : fmt::format("`{}` names {} tensors of `{}`", t.text, hits.size(), f_.name));
        const Buffer& b = hits[0];
        if (!is_int(b->type) || b->type == Scalar::Bool)
          return fail(t.at, fmt::format("`{}` is not an integer tensor; a `remap` key is an integer", t.text));
        // Only `x[v]` over the loop's own extent: the key is evaluated for
        // every iteration before the statement, and must stay in bounds.
        if (b->dims.size() != 1 || t.args.size() != 1 || t.args[0].kind != Term::Name || t.args[0].text != name_ ||
            !same_expr(substitute(b->dims[0].extent, {}), extent_))
          return fail(t.at, fmt::format("a `remap` key reads a tensor of one dimension over the loop's extent, at "
                                        "the loop index itself (`{}[{}]`), so that it stays in bounds",
                                        t.text, name_));
        return build::cast(Scalar::I64, build::load(b, {build::var(v_)}));
      }
      case Term::Binary: {
        Expr a = read(t.args[0]), c = read(t.args[1]);
        if (!a || !c) return nullptr;
        BinOp op = t.text == "+" ? BinOp::Add : t.text == "-" ? BinOp::Sub : BinOp::Mul;
        return build::binary(op, a, c);
      }
      case Term::Neg: {
        Expr a = read(t.args[0]);
        return a ? build::binary(BinOp::Sub, build::int_imm(0), a) : nullptr;
      }
    }
    return nullptr;
  }

 private:
  Expr fail(SourceRange at, std::string msg) {
    r_.error = std::move(msg);
    r_.at = at;
    return nullptr;
  }

  const Func& f_;
  const Var& v_;
  const std::string& name_;
  const Expr& extent_;
  RemapResult& r_;
};

Buffer local_i64(Func& f, const std::string& name, const Expr& extent, BufferKind kind) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->type = Scalar::I64;
  b->kind = kind;
  b->dims = {{make_var("x"), extent}};
  b->pad = {1};
  f.buffers.push_back(b);
  return b;
}

}  // namespace

RemapResult remap_loop(Func& f, const Var& v, const std::string& name, const Term* key, int id) {
  RemapResult r;
  std::vector<Stmt> items = f.body->kind == StmtKind::Seq ? f.body->body : std::vector<Stmt>{f.body};
  size_t at = items.size();
  for (size_t k = 0; k < items.size() && at == items.size(); ++k)
    if (find_for(items[k], v.get())) at = k;
  if (at == items.size()) {
    r.error = fmt::format("loop `{}` is not in the lowered code", name);
    return r;
  }
  const StmtNode* loop = find_for(items[at], v.get());
  std::string outer;
  each_expr(loop->extent, [&](const ExprNode& e) {
    if (e.kind == ExprKind::VarRef && outer.empty()) outer = e.var->name;
  });
  if (!outer.empty()) {
    r.error = fmt::format("the extent of `{}` depends on the enclosing loop `{}`; the permutation is computed once, "
                          "before the statement, so only a loop whose extent depends on no loop can be remapped",
                          name, outer);
    return r;
  }
  std::set<const BufferNode*> written;
  each_stmt(items[at], [&](const StmtNode& x) {
    if (x.kind == StmtKind::Store) written.insert(x.buffer.get());
  });
  auto reads_written = [&](const Expr& e) {
    std::string found;
    each_expr(e, [&](const ExprNode& x) {
      if (x.kind == ExprKind::Load && written.count(x.buffer.get()) && found.empty()) found = x.buffer->name;
    });
    return found;
  };
  if (std::string w = reads_written(loop->extent); !w.empty()) {
    r.error = fmt::format("the extent of `{}` reads `{}`, which the same statement writes", name, w);
    return r;
  }
  // The key, as an expression of a fresh y.
  Expr k;
  if (key) {
    k = KeyReader(f, v, name, loop->extent, r).read(*key);
    if (!k) return r;
    r.key = "`" + term_text(*key) + "`";
  } else {
    std::map<const VarNode*, Expr> bound;
    k = work(loop->body[0], bound);
    if (divides_unsafely(k)) {
      r.error = fmt::format("the work of an iteration of `{}` (its inner loops' extents) divides by a value that "
                            "may be zero; give the order as a key instead",
                            name);
      return r;
    }
    r.key = "work (the inner iterations of each)";
  }
  if (std::string w = reads_written(k); !w.empty()) {
    r.error = fmt::format("the `remap` key reads `{}`, which the statement writes; it is evaluated before the "
                          "statement runs",
                          w);
    return r;
  }
  Var y = make_var("y"), z = make_var("z");
  Expr key_y = substitute(k, {{v.get(), build::var(y)}});
  // From the arguments' sizes and length arrays only: the prelude's (aux
  // arrays, moved there by storage lowering, cached per length pattern).
  BufferKind kind = reads_only_lengths(f, {loop->extent, k}) ? BufferKind::Aux : BufferKind::Local;
  Buffer keys = local_i64(f, fmt::format("R_key{}", id), loop->extent, kind);
  Buffer rank = local_i64(f, fmt::format("R_rank{}", id), loop->extent, kind);
  Buffer perm = local_i64(f, fmt::format("R_perm{}", id), loop->extent, kind);
  Expr yv = build::var(y), zv = build::var(z);
  Stmt fill_keys = build::for_loop(
      y, loop->extent,
      build::seq({build::store(keys, {yv}, key_y), build::store(rank, {yv}, build::int_imm(0))}));
  // z comes before y: a larger key, or the same key and a smaller index.
  Expr kz = build::load(keys, {zv}), ky = build::load(keys, {yv});
  Expr before = build::binary(
      BinOp::Or, build::binary(BinOp::LT, ky, kz),
      build::binary(BinOp::And, build::binary(BinOp::EQ, kz, ky), build::binary(BinOp::LT, zv, yv)));
  Stmt rank_all = build::for_loop(
      y, loop->extent,
      build::seq({build::for_loop(z, loop->extent,
                                  build::store(rank, {yv},
                                               add(build::load(rank, {yv}),
                                                   build::select(before, build::int_imm(1), build::int_imm(0))))),
                  build::store(perm, {build::load(rank, {yv})}, yv)}));
  Var t = make_var(name + "_r");
  Stmt body = rewrite(loop->body[0], [&](const Expr& e) {
    return e ? substitute(e, {{v.get(), build::load(perm, {build::var(t)})}}) : e;
  });
  Stmt remapped = build::for_loop(t, loop->extent, body, loop->loop);
  items[at] = replace_loop(items[at], v.get(), remapped);
  items.insert(items.begin() + static_cast<long>(at), {fill_keys, rank_all});
  f.body = build::seq(items);
  r.loop = t;
  r.perm = perm;
  return r;
}

}  // namespace dccc::ir
