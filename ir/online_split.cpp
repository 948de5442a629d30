#include "ir/online_split.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "ir/online_nest.h"

namespace dccc::ir {

std::optional<SplitReductions> split_reductions(const Stmt& item,
                                                const std::function<bool(const std::string&)>& taken) {
  std::vector<const StmtNode*> loops;
  Stmt s = unwrap(item);
  while (s && s->kind == StmtKind::For) {
    loops.push_back(s.get());
    s = unwrap(s->body[0]);
  }
  // acc1 = c1; for ..; acc2 = c2; for ..; [...]; T[v] = post
  if (!s || loops.empty() || s->kind != StmtKind::Seq || s->body.size() < 5 || s->body.size() % 2 != 1) return std::nullopt;
  const size_t n = s->body.size() / 2;
  std::vector<Buffer> accs;
  for (size_t k = 0; k < n; ++k) {
    const Stmt& init = s->body[2 * k];
    if (init->kind != StmtKind::Store || !init->buffer->dims.empty() || init->flat) return std::nullopt;
    for (const auto& a : accs)
      if (a == init->buffer) return std::nullopt;
    accs.push_back(init->buffer);
  }
  // Each reduction reads no other's accumulator (their order is free).
  for (size_t k = 0; k < n; ++k)
    for (size_t o = 0; o < n; ++o)
      if (o != k && (touches(s->body[2 * k], accs[o].get()) || touches(s->body[2 * k + 1], accs[o].get())))
        return std::nullopt;
  const Stmt& post = s->body.back();
  if (post->kind != StmtKind::Store || post->flat || post->buffer->dims.empty()) return std::nullopt;
  const Buffer& t = post->buffer;
  // Each extra reduction as `loops' { accK = cK; for ..; T.reduceK[v'] = accK }`,
  // parsed as parse_nest parses any reduction (so its shape is checked there).
  SplitReductions out;
  std::map<const BufferNode*, Buffer> stored;
  for (size_t k = 1; k < n; ++k) {
    auto b = std::make_shared<BufferNode>();
    std::string name = fmt::format("{}.reduce{}", t->name, k);
    for (int u = 1; taken(name); ++u) name = fmt::format("{}.reduce{}.{}", t->name, k, u);
    b->name = name;
    b->type = accs[k]->type;
    b->kind = BufferKind::Local;
    b->at = accs[k]->at;
    std::map<const VarNode*, Expr> dv;
    for (const auto& d : t->dims) {
      Var v = make_var(d.var->name);
      b->dims.push_back({v, substitute(d.extent, dv)});
      dv[d.var.get()] = build::var(v);
    }
    std::map<const VarNode*, Expr> lv;
    std::vector<Var> vars;
    for (const auto* l : loops) {
      vars.push_back(make_var(l->var->name));
      lv[l->var.get()] = build::var(vars.back());
    }
    std::vector<Expr> idx;
    for (const auto& a : post->args) idx.push_back(substitute(a, lv));
    auto store = std::make_shared<StmtNode>(*post);
    store->buffer = b;
    store->args = idx;
    store->value = build::load(accs[k], {});
    Stmt body = build::seq({substitute(s->body[2 * k], lv), substitute(s->body[2 * k + 1], lv), store});
    for (size_t l = loops.size(); l-- > 0;) {
      auto loop = std::make_shared<StmtNode>(*loops[l]);
      loop->var = vars[l];
      loop->extent = substitute(loops[l]->extent, lv);
      loop->body = {body};
      body = loop;
    }
    if (!parse_nest(body, 0)) return std::nullopt;
    out.items.push_back(body);
    out.new_buffers.push_back(b);
    stored[accs[k].get()] = b;
  }
  // The statement itself with the first reduction only.
  Expr value = replace_exprs(post->value, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Load) return nullptr;
    auto it = stored.find(x->buffer.get());
    return it == stored.end() ? nullptr : build::load(it->second, post->args);
  });
  auto store = std::make_shared<StmtNode>(*post);
  store->value = value;
  auto inner = std::make_shared<StmtNode>(*s);
  inner->body = {s->body[0], s->body[1], store};
  Stmt body = replace_stmt(item, s.get(), inner);
  if (!parse_nest(body, 0)) return std::nullopt;
  out.items.push_back(body);
  return out;
}

}  // namespace dccc::ir
