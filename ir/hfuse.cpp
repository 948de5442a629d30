#include "ir/hfuse.h"

#include <fmt/format.h>

#include <set>

namespace dccc::ir {
namespace {

/// The buffers `s` reads (its expressions' loads, and the loads in the
/// extents of every buffer it touches, which storage lowering turns into
/// offset computations) and writes.
struct Access {
  std::set<const BufferNode*> reads, writes;
  std::map<const BufferNode*, std::string> names;
};

void add_shape(const BufferNode* b, Access& a) {
  for (const auto& d : b->dims)
    each_expr(d.extent, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) {
        a.reads.insert(e.buffer.get());
        a.names[e.buffer.get()] = e.buffer->name;
      }
    });
}

Access access_of(const Stmt& s) {
  Access a;
  each_stmt(s, [&](const StmtNode& x) {
    own_exprs(x, [&](const ExprNode& e) {
      if (e.kind != ExprKind::Load) return;
      a.reads.insert(e.buffer.get());
      a.names[e.buffer.get()] = e.buffer->name;
      add_shape(e.buffer.get(), a);
    });
    if (x.kind == StmtKind::Store) {
      a.writes.insert(x.buffer.get());
      a.names[x.buffer.get()] = x.buffer->name;
      add_shape(x.buffer.get(), a);
    }
  });
  return a;
}

/// Scalars that `loop` keeps private to each iteration (written before
/// read in its body) do not make two nests dependent.
void drop_private_scalars(const StmtNode& loop, Access& a) {
  for (auto it = a.writes.begin(); it != a.writes.end();) {
    const BufferNode* b = *it;
    if (b->dims.empty() && b->kind == BufferKind::Scalar && written_before_read(loop.body[0], b)) {
      a.reads.erase(b);
      it = a.writes.erase(it);
    } else {
      ++it;
    }
  }
}

/// Why `later` cannot run before `earlier` (or the two in any order); "" when it can.
std::string conflict(const Access& earlier, const Access& later, bool disjoint = false) {
  for (const BufferNode* b : later.writes) {
    if (earlier.writes.count(b) && !disjoint) return fmt::format("both store `{}`", later.names.at(b));
    if (earlier.reads.count(b)) return fmt::format("one stores `{}`, which the other reads", later.names.at(b));
  }
  for (const BufferNode* b : later.reads)
    if (earlier.writes.count(b)) return fmt::format("one stores `{}`, which the other reads", earlier.names.at(b));
  return "";
}

bool prints(const Stmt& s) {
  bool found = false;
  each_stmt(s, [&](const StmtNode& x) { found |= x.kind == StmtKind::Print || x.kind == StmtKind::Assert; });
  return found;
}

/// How --explain and errors name a top-level statement: by what it stores.
std::string describe(const Stmt& s) {
  std::string stored;
  each_stmt(s, [&](const StmtNode& x) {
    if (stored.empty() && x.kind == StmtKind::Store) stored = x.buffer->name;
  });
  if (!stored.empty()) return fmt::format("the statement storing `{}`", stored);
  return prints(s) ? "a print" : "a statement";
}

}  // namespace

Var hfuse(Func& f, const std::vector<Var>& loops, const std::vector<std::string>& shown, const std::string& name,
          const std::function<bool(size_t, size_t)>& disjoint, HFuseRefusal& why) {
  std::vector<Stmt> items = f.body && f.body->kind == StmtKind::Seq ? f.body->body : std::vector<Stmt>{f.body};
  std::vector<size_t> at;
  for (size_t q = 0; q < loops.size(); ++q) {
    size_t found = items.size();
    for (size_t j = 0; j < items.size(); ++j)
      if (items[j] && items[j]->kind == StmtKind::For && items[j]->var == loops[q]) found = j;
    if (found == items.size()) {
      why = {static_cast<int>(q), fmt::format("`{}` is not the outermost loop of a top-level statement; `hfuse` "
                                              "fuses the outermost loops of whole loop nests",
                                              shown[q])};
      return nullptr;
    }
    for (size_t p = 0; p < q; ++p)
      if (at[p] == found) {
        why = {static_cast<int>(q), fmt::format("loop `{}` is named twice", shown[q])};
        return nullptr;
      }
    if (!at.empty() && found < at.back()) {
      why = {static_cast<int>(q), fmt::format("`hfuse` takes the loops in program order, and `{}` runs before `{}`",
                                              shown[q], shown[q - 1])};
      return nullptr;
    }
    at.push_back(found);
  }
  std::vector<Access> acc;
  for (size_t q = 0; q < loops.size(); ++q) {
    const Stmt& s = items[at[q]];
    if (prints(s)) {
      why = {static_cast<int>(q), fmt::format("the nest of `{}` prints or checks a condition, whose order would "
                                              "change",
                                              shown[q])};
      return nullptr;
    }
    acc.push_back(access_of(s));
    drop_private_scalars(*s, acc.back());
    for (const BufferNode* b : acc.back().writes)
      if (b->dims.empty()) {
        why = {static_cast<int>(q), fmt::format("`{}` accumulates across iterations of `{}`", b->name,
                                                shown[q])};
        return nullptr;
      }
    for (size_t p = 0; p < q; ++p) {
      std::string c = conflict(acc[p], acc[q], disjoint(p, q));
      if (!c.empty()) {
        why = {static_cast<int>(q), fmt::format("the nests of `{}` and `{}` are not independent: {}", shown[p],
                                                shown[q], c)};
        return nullptr;
      }
    }
  }
  // Statements between the nests move before the first one.
  std::vector<Stmt> moved;
  for (size_t q = 1; q < loops.size(); ++q)
    for (size_t j = at[q - 1] + 1; j < at[q]; ++j) {
      Access between = access_of(items[j]);
      for (size_t p = 0; p < q; ++p) {
        std::string c = conflict(acc[p], between);
        if (!c.empty()) {
          why = {static_cast<int>(q), fmt::format("{} lies between the nests and would run before the nest of `{}`, "
                                                  "on which it depends: {}",
                                                  describe(items[j]), shown[p], c)};
          return nullptr;
        }
      }
      moved.push_back(items[j]);
    }
  // The fused loop: range q runs nest q's body with its loop at fused - offset.
  Var fv = make_var(name);
  bool parallel = true;
  std::vector<Expr> starts{build::int_imm(0)};
  for (size_t q = 0; q < loops.size(); ++q) {
    const Expr& e = items[at[q]]->extent;
    starts.push_back(q == 0 ? e : build::binary(BinOp::Add, starts.back(), e));
    parallel &= items[at[q]]->loop == LoopKind::Parallel;
  }
  Stmt body;
  for (size_t q = loops.size(); q-- > 0;) {
    const Stmt& s = items[at[q]];
    Expr index = q == 0 ? build::var(fv) : build::binary(BinOp::Sub, build::var(fv), starts[q]);
    std::map<const VarNode*, Expr> m{{s->var.get(), index}};
    Stmt part = rewrite(s->body[0], [&](const Expr& x) { return x ? substitute(x, m) : x; });
    body = body ? build::if_then_else(build::binary(BinOp::LT, build::var(fv), starts[q + 1]), part, body) : part;
  }
  Stmt fused = build::for_loop(fv, starts.back(), body, parallel ? LoopKind::Parallel : LoopKind::Serial);
  std::vector<Stmt> out(items.begin(), items.begin() + static_cast<long>(at[0]));
  out.insert(out.end(), moved.begin(), moved.end());
  out.push_back(fused);
  out.insert(out.end(), items.begin() + static_cast<long>(at.back()) + 1, items.end());
  f.body = build::seq(out);
  return fv;
}

}  // namespace dccc::ir
