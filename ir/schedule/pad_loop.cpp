#include "ir/schedule/pad_loop.h"

#include <fmt/format.h>

#include <optional>

namespace dccc::ir {

bool into_padding(ScheduleState& st, const Stmt& loop, int64_t k, const Directive& d, std::string& why) {
  const Var& v = loop->var;
  const Stmt& body = loop->body[0];
  bool ok = true;
  auto refuse = [&](std::string reason) {
    if (ok) why = std::move(reason);
    ok = false;
  };
  auto access = [&](const BufferNode* b, const std::vector<Expr>& args, bool store) {
    if (b->dims.empty()) return;
    std::optional<size_t> at;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!mentions(args[i], v)) continue;
      if (args[i]->kind != ExprKind::VarRef || at) {
        refuse(fmt::format("`{}` is indexed by an expression of `{}`", b->name, v->name));
        return;
      }
      at = i;
    }
    if (!at) {
      if (store) refuse(fmt::format("`{}` is stored at indices that do not name `{}`", b->name, v->name));
      return;
    }
    int64_t p = *at < b->pad.size() ? b->pad[*at] : 1;
    if (p <= 1) {
      refuse(fmt::format("`{}` has no storage padding in the dimension `{}` indexes", b->name, v->name));
      return;
    }
    if (p < k || p % k != 0) {
      auto it = st.storage_at.find({b, *at});
      SourceRange at_range = it != st.storage_at.end() ? it->second : d.at;
      st.error(at_range, fmt::format("storage padding {} of `{}` is {} the loop padding {} of `{}`, so padded "
                                     "iterations would access storage that does not exist",
                                     p, b->name, p < k ? "below" : "not a multiple of", k,
                                     d.loops[0].tensor + "." + d.loops[0].index));
      st.note(d.at, "the loop is padded here");
      refuse("");
    }
  };
  each_stmt(body, [&](const StmtNode& x) {
    if (x.kind == StmtKind::Print || x.kind == StmtKind::Assert) refuse("the body prints or checks a condition");
    if (x.kind == StmtKind::For && mentions(x.extent, v))
      refuse(fmt::format("an inner loop's extent depends on `{}`", v->name));
    own_exprs(x, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) access(e.buffer.get(), e.args, false);
    });
    if (may_fail(x.extent) || may_fail(x.value)) refuse("the body divides integers, which may fail on padding values");
    for (const auto& a : x.args)
      if (may_fail(a)) refuse("the body divides integers, which may fail on padding values");
    if (x.kind != StmtKind::Store) return;
    if (x.buffer->dims.empty()) {
      if (x.buffer->kind != BufferKind::Scalar || !written_before_read(body, x.buffer.get()) ||
          touches_outside(st.f.body, loop.get(), x.buffer.get()))
        refuse(fmt::format("`{}` accumulates across iterations", x.buffer->name));
      return;
    }
    access(x.buffer.get(), x.args, true);
  });
  return ok;
}

void apply_pad_loop(ScheduleState& st, const Directive& d) {
  const LoopRef& r = d.loops[0];
  int64_t k = d.factors[0];
  auto res = st.resolve(r);
  if (!res) return;
  bool was_ok = st.ok;
  Stmt loop;
  st.f.body = replace_for(st.f.body, res->var.get(), [&](const Stmt& s) {
    loop = s;
    return s;
  });
  Expr padded = build::round_up(loop->extent, k);
  if (padded == loop->extent) {
    st.notes[res->nest].push_back(
        fmt::format("{}: `{}` already runs a multiple of {} iterations; nothing to pad", st.where(d), r.index, k));
    return;
  }
  std::string why;
  bool unguarded = into_padding(st, loop, k, d, why);
  if (!st.ok && was_ok) return;
  auto copy = std::make_shared<StmtNode>(*loop);
  copy->extent = padded;
  if (!unguarded)
    copy->body = {build::if_then_else(build::binary(BinOp::LT, build::var(loop->var), loop->extent), loop->body[0])};
  st.f.body = replace_for(st.f.body, res->var.get(), [&](const Stmt&) { return Stmt(copy); });
  st.notes[res->nest].push_back(
      unguarded ? fmt::format("{}: `{}` runs to a multiple of {}; the extra iterations compute into storage padding "
                              "(directive)",
                              st.where(d), r.index, k)
                : fmt::format("{}: `{}` runs to a multiple of {}; the extra iterations are guarded by `{} < extent` "
                              "because {} (directive)",
                              st.where(d), r.index, k, r.index, why));
}

}  // namespace dccc::ir
