#include "ir/schedule/default_padding.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/schedule/pad_loop.h"

namespace dccc::ir {
namespace {

/// Pads nest `n` by default (see apply_default_padding); "" when done, else why not.
std::string default_pad(ScheduleState& st, size_t n, int64_t k) {
  const NamedNest& nest = st.f.nests[n];
  std::set<const VarNode*> mine;
  for (const auto& [name, v] : st.names[n]) mine.insert(v.get());
  const StmtNode* inner = nullptr;
  each_stmt(st.f.body, [&](const StmtNode& x) {
    if (x.kind == StmtKind::For && mine.count(x.var.get())) inner = &x;
  });
  if (!inner) return "the assignment has no loops";
  bool nested = false;
  each_stmt(inner->body[0], [&](const StmtNode& x) { nested |= x.kind == StmtKind::For; });
  std::string name = st.name_of(n, inner->var.get());
  if (nested) return fmt::format("its innermost loop `{}` contains other loops", name);
  if (std::find(nest.lhs.begin(), nest.lhs.end(), inner->var) == nest.lhs.end())
    return fmt::format("its innermost loop `{}` is a `reduce` loop, which accumulates across iterations", name);
  bool vloop = false;
  for (const auto& [loop_name, v] : st.names[n]) vloop |= mentions(inner->extent, v);
  if (!vloop)
    return fmt::format("its innermost loop `{}` is not a vloop (its extent depends on no outer loop)", name);
  if (build::round_up(inner->extent, k) == inner->extent)
    return fmt::format("its innermost loop `{}` already runs a multiple of {} iterations", name, k);
  // The tensors the body indexes with the loop, and the dimension of each.
  std::vector<std::pair<BufferNode*, size_t>> dims;
  std::string bad;
  auto access = [&](const Buffer& b, const std::vector<Expr>& args) {
    if (!bad.empty() || b->dims.empty()) return;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!mentions(args[i], inner->var)) continue;
      if (args[i]->kind != ExprKind::VarRef) {
        bad = fmt::format("`{}` is indexed by an expression of `{}`", b->name, name);
        return;
      }
      if (b->kind != BufferKind::Local) {
        bad = fmt::format("`{}` is {} indexed by `{}`, whose storage stays packed (C ABI)", b->name,
                          b->kind == BufferKind::Input ? "an input" : "the result", name);
        return;
      }
      for (size_t j = i + 1; j < b->dims.size(); ++j)
        if (mentions(b->dims[j].extent, b->dims[i].var)) {
          bad = fmt::format("the dimension of `{}` that `{}` indexes sizes an inner dimension", b->name, name);
          return;
        }
      int64_t p = i < b->pad.size() ? b->pad[i] : 1;
      if (p > 1 && p % k != 0) {
        bad = fmt::format("`{}` is already padded to a multiple of {} there", b->name, p);
        return;
      }
      dims.emplace_back(b.get(), i);
    }
  };
  each_stmt(inner->body[0], [&](const StmtNode& x) {
    own_exprs(x, [&](const ExprNode& e) {
      if (e.kind == ExprKind::Load) access(e.buffer, e.args);
    });
    if (x.kind == StmtKind::Store) access(x.buffer, x.args);
  });
  if (!bad.empty()) return bad;
  // Pad the storage, then let pad_loop's analysis (which cannot report an
  // error now: every padding is a multiple of k) decide about guards.
  std::vector<std::vector<int64_t>> saved;
  for (auto& [b, i] : dims) saved.push_back(b->pad);
  for (auto& [b, i] : dims) {
    if (b->pad.size() < b->dims.size()) b->pad.resize(b->dims.size(), 1);
    if (b->pad[i] <= 1) b->pad[i] = k;
  }
  Stmt loop;
  st.f.body = replace_for(st.f.body, inner->var.get(), [&](const Stmt& s) {
    loop = s;
    return s;
  });
  Directive d{DirectiveKind::PadLoop, {LoopRef{nest.tensor, name, nest.at}}, {k}, nest.at};
  std::string why;
  bool was_ok = st.ok;
  if (!into_padding(st, loop, k, d, why) || st.ok != was_ok) {
    st.ok = was_ok;
    for (size_t q = 0; q < dims.size(); ++q) dims[q].first->pad = saved[q];
    return why.empty() ? "the loop cannot run into storage padding" : why;
  }
  auto copy = std::make_shared<StmtNode>(*loop);
  copy->extent = build::round_up(loop->extent, k);
  st.f.body = replace_for(st.f.body, loop->var.get(), [&](const Stmt&) { return Stmt(copy); });
  std::string tensors;
  std::set<const BufferNode*> seen;
  for (auto& [b, i] : dims)
    if (seen.insert(b).second) tensors += (tensors.empty() ? "`" : ", `") + b->name + "`";
  st.defaults[n] = fmt::format(
      "default: `{}` runs to a multiple of {} and the storage of {} along it holds a multiple of {} per row, so "
      "the innermost loop vectorises with no remainder; the extra iterations compute into that padding (all "
      "local tensors; the body cannot fail or accumulate)",
      name, k, tensors, k);
  return "";
}

}  // namespace

void apply_default_padding(ScheduleState& st, int64_t k, const std::string& off_reason, const std::string& order_note) {
  st.order_note = order_note;
  for (size_t n = 0; n < st.f.nests.size(); ++n) {
    if (st.directed.count(n)) {
      st.defaults[n] = "default: no default padding, since the schedule names this assignment";
      continue;
    }
    if (k <= 1) {
      st.defaults[n] = "default: no padding (" + off_reason + ")";
      continue;
    }
    std::string why = default_pad(st, n, k);
    if (!why.empty()) st.defaults[n] = "default: no padding (loops run to their extents, storage packed): " + why;
  }
}

}  // namespace dccc::ir
