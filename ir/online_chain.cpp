#include "ir/online_chain.h"

#include <fmt/format.h>

#include <algorithm>

namespace dccc::ir {
namespace {

bool same_args(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_expr(a[k], b[k])) return false;
  return true;
}

}  // namespace

Chain::Chain(Func& func, const std::vector<Stmt>& all_items, const std::vector<std::optional<Nest>>& all_nests,
             size_t root)
    : f(func), items(all_items), nests(all_nests), root_item(root) {
  for (size_t k = 0; k < root; ++k) {
    if (!nests[k]) continue;
    const Buffer& t = nests[k]->target;
    if (t->kind != BufferKind::Local && t->kind != BufferKind::Output) continue;
    size_t writers = 0;
    for (const auto& it : items) writers += stores_to(it, t.get());
    if (writers == 1) def_[t.get()] = &*nests[k];
  }
}

bool Chain::analyse(const std::set<std::string>& keep, const std::set<std::string>& scheduled) {
  const Nest& root = *nests[root_item];
  if (root.rloops.size() != 1 || root.op == BinOp::Mul) return false;
  j = root.rloops[0]->var;
  extent = root.rloops[0]->extent;
  for (const auto& v : root.lhs) lhs_.insert(v.get());
  Member rm;
  rm.nest = &root;
  rm.x = expand(root.x);
  rm.post = expand(root.post);
  if (!why.empty()) return false;
  if (members.empty()) return false;
  members.push_back(std::move(rm));
  // Rows: the variables the results are read at, the root's outer loops.
  std::set<const VarNode*> read_at;
  for (size_t m = 0; m + 1 < members.size(); ++m)
    for (const auto& a : members[m].args) read_at.insert(a->var.get());
  rows = read_at.size();
  for (size_t k = 0; k < root.lhs.size(); ++k)
    if ((k < rows) != (read_at.count(root.lhs[k].get()) > 0))
      return refuse(fmt::format("the results are read at rows ({}) that are not the outer loops of `{}`",
                                names(read_at), root.target->name));
  // Every tensor the fused loop computes instead of storing.
  std::set<const BufferNode*> gone;
  for (size_t k : inlined) gone.insert(nests[k]->target.get());
  for (const auto& p : producers) gone.insert(p.nest->target.get());
  std::set<size_t> removed = inlined;
  for (const auto& p : producers) removed.insert(p.nest->item);
  for (size_t m = 0; m + 1 < members.size(); ++m) removed.insert(members[m].nest->item);
  std::vector<std::string> chain_names;
  for (size_t k : removed) chain_names.push_back(nests[k]->target->name);
  chain_names.push_back(root.target->name);
  for (const auto& n : chain_names) {
    if (keep.count(n)) return refuse(fmt::format("`materialize({})` keeps it stored", n));
    if (scheduled.count(n)) return refuse(fmt::format("a `schedule` directive names the assignment to `{}`", n));
  }
  for (const BufferNode* t : gone) {
    if (t->kind != BufferKind::Local) return refuse(fmt::format("`{}` is not a local tensor", t->name));
    for (size_t k = 0; k < items.size(); ++k)
      if (k != root_item && !removed.count(k) && uses(items[k], t))
        return refuse(fmt::format("`{}` is read outside the chain", t->name));
  }
  for (size_t m = 0; m + 1 < members.size(); ++m) {
    Member& mm = members[m];
    const Buffer& t = mm.nest->target;
    mm.store = t->kind != BufferKind::Local;
    for (size_t k = 0; k < items.size(); ++k) {
      if (k == root_item || removed.count(k) || !uses(items[k], t.get())) continue;
      if (k < root_item) return refuse(fmt::format("`{}` is read before `{}` is computed", t->name, root.target->name));
      mm.store = true;
    }
  }
  // A per-j producer is computed once per j for the whole row, outside
  // the root's loops over its other indices: it may not be indexed by one
  // (transformer_block's v = y . wv per key, indexed by d).
  std::string beyond;
  for (const auto& p : producers)
    for (const auto& a : p.args)
      for (size_t k = rows; k < root.lhs.size(); ++k)
        if (mentions(a, root.lhs[k])) {
          if (std::find(beyond_rows.begin(), beyond_rows.end(), p.nest->target.get()) == beyond_rows.end())
            beyond_rows.push_back(p.nest->target.get());
          if (beyond.empty())
            beyond = fmt::format("`{}` (a reduction per j) is indexed by {}, an index of `{}` beyond the rows",
                                 p.nest->target->name, root.lhs[k]->name, root.target->name);
        }
  if (!beyond.empty()) return refuse(beyond);
  // Per-j producers read only what stays stored.
  for (const auto& p : producers) {
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
    each_stmt(items[k], [&](const StmtNode& s) {
      own_exprs(s, [&](const ExprNode& x) {
        if (x.kind == ExprKind::Load) reads.insert(x.buffer.get());
      });
    });
    for (size_t w = k + 1; w < root_item; ++w) {
      if (removed.count(w)) continue;
      for (const BufferNode* b : reads)
        if (stores_to(items[w], b))
          return refuse(fmt::format("a statement between the chain's assignments writes `{}`", b->name));
    }
  }
  // A tensor computed in the loop is not read where the loop's value is
  // not at hand (the root's result read at another index than j).
  for (const auto& m : members) {
    const BufferNode* left = nullptr;
    for (const Expr& e : {m.x, m.post})
      each_expr(e, [&](const ExprNode& x) {
        if (x.kind == ExprKind::Load && gone.count(x.buffer.get())) left = x.buffer.get();
      });
    if (left) return refuse(fmt::format("`{}` is also read outside the loop over {}", left->name, j->name));
  }
  bool reads_target = false;
  for (const auto& m : members) reads_target |= loads_from(m.x, root.target.get()) || loads_from(m.post, root.target.get());
  if (reads_target) return refuse(fmt::format("the chain reads `{}`", root.target->name));
  // Separation.
  Separator sep([&](const Expr& e) { return dep_j(e); }, [&](const Expr& e) { return dep_r(e); });
  for (auto& m : members) {
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

std::set<const BufferNode*> Chain::dropped() const {
  std::set<const BufferNode*> out = gone_;
  for (size_t m = 0; m + 1 < members.size(); ++m)
    if (!members[m].store) out.insert(members[m].nest->target.get());
  return out;
}

bool Chain::refuse(std::string w) {
  why = std::move(w);
  return false;
}

std::string Chain::names(const std::set<const VarNode*>& vs) const {
  std::string s;
  for (const auto* v : vs) s += (s.empty() ? "" : ", ") + v->name;
  return s;
}

bool Chain::is_member(const BufferNode* b) const {
  for (size_t m = 0; m < members.size(); ++m)
    if (members[m].nest->target.get() == b && members[m].nest->item != root_item) return true;
  return false;
}

bool Chain::dep_j(const Expr& e) const {
  bool d = mentions(e, j);
  each_expr(e, [&](const ExprNode& x) {
    if (x.kind != ExprKind::Load) return;
    for (const auto& p : producers) d |= x.buffer == p.scalar;
  });
  return d;
}

bool Chain::dep_r(const Expr& e) const {
  bool d = false;
  each_expr(e, [&](const ExprNode& x) { d |= x.kind == ExprKind::Load && is_member(x.buffer.get()); });
  return d;
}

bool Chain::at_j(const std::vector<Expr>& args) const {
  for (const auto& a : args)
    if (dep_j(a)) return true;
  return false;
}

std::map<const VarNode*, Expr> Chain::bind(const Nest& n, const std::vector<Expr>& args) const {
  std::map<const VarNode*, Expr> m;
  for (size_t k = 0; k < n.lhs.size(); ++k) m[n.lhs[k].get()] = args[k];
  return m;
}

Buffer Chain::scalar(const std::string& base, Scalar t) {
  std::string name = base;
  for (int k = 1;; ++k) {
    bool taken = false;
    for (const auto& b : f.buffers) taken |= b->name == name;
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

Expr Chain::expand(const Expr& e) {
  return replace_exprs(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Load || x->flat) return nullptr;
    auto it = def_.find(x->buffer.get());
    if (it == def_.end()) return nullptr;
    const Nest& n = *it->second;
    if (n.reduction && !at_j(x->args)) {
      bool row = n.rloops.size() == 1 && n.op != BinOp::Mul;
      for (const auto& a : x->args) row &= a->kind == ExprKind::VarRef && lhs_.count(a->var.get()) > 0;
      if (row && same_expr(substitute(n.rloops[0]->extent, bind(n, x->args)), extent)) {
        member(n, x->args);
        return x;
      }
      return nullptr;
    }
    if (n.reduction) return producer(n, x->args);
    Expr v = expand(substitute(n.value, bind(n, x->args)));
    if (at_j(x->args) || dep_r(v)) {
      inlined.insert(n.item);
      return v;
    }
    return nullptr;
  });
}

void Chain::member(const Nest& n, const std::vector<Expr>& args) {
  for (const auto& m : members)
    if (m.nest == &n) {
      if (!same_args(m.args, args) && why.empty())
        why = fmt::format("`{}` is read at two different rows", n.target->name);
      return;
    }
  Member m;
  m.nest = &n;
  m.args = args;
  auto b = bind(n, args);
  b[n.rloops[0]->var.get()] = build::var(j);
  m.x = expand(substitute(n.x, b));
  m.post = expand(substitute(n.post, b));
  members.push_back(std::move(m));
}

Expr Chain::producer(const Nest& n, const std::vector<Expr>& args) {
  for (const auto& p : producers)
    if (p.nest == &n && same_args(p.args, args)) return build::load(p.scalar, {});
  Producer p;
  p.nest = &n;
  p.args = args;
  p.scalar = scalar(n.target->name + ".j", n.target->type);
  producers.push_back(p);
  return build::load(p.scalar, {});
}

}  // namespace dccc::ir
