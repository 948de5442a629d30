#include "ir/schedule/split_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/split_op.h"

namespace dccc::ir {
namespace {

/// The twins' names in nest order (split_op's note).
std::string loop_order_of(const ScheduleState& st, size_t n, const std::map<const VarNode*, Var>& twins) {
  std::set<const VarNode*> rest;
  for (const auto& [old, v] : twins) rest.insert(v.get());
  std::string out;
  each_stmt(st.f.body, [&](const StmtNode& x) {
    if (x.kind == StmtKind::For && rest.count(x.var.get()))
      out += (out.empty() ? "" : ", ") + st.name_of(n, x.var.get());
  });
  return out;
}

}  // namespace

void apply_split_op(ScheduleState& st, const Directive& d) {
  const LoopRef& r = d.loops[0];
  int64_t k = d.factors[0];
  auto res = st.resolve(r);
  if (!res) return;
  size_t n = res->nest;
  const NamedNest& nest = st.f.nests[n];
  bool lhs = std::find(nest.lhs.begin(), nest.lhs.end(), res->var) != nest.lhs.end();
  bool reduce = !lhs && std::any_of(nest.loops.begin(), nest.loops.end(),
                                    [&](const auto& l) { return l.second == res->var; });
  if (reduce) {
    st.error(r.at, fmt::format("`{}` is a `reduce` loop: splitting it would split the accumulation across two "
                               "statements; only loops over left-side indices can be split into operations",
                               r.index));
    return;
  }
  std::set<const VarNode*> mine;
  for (const auto& [name, v] : st.names[n]) mine.insert(v.get());
  // `_rest`, or `_rest2`, `_rest3`, ... where an earlier split_op of the
  // assignment took it: the first suffix no loop name clashes with.
  std::string suffix = "_rest";
  for (int q = 2;; ++q) {
    bool clash = false;
    for (const auto& [name, v] : st.names[n]) clash |= st.names[n].count(name + suffix) > 0;
    if (!clash) break;
    suffix = fmt::format("_rest{}", q);
  }
  std::string why;
  auto out = ir::split_op(
      st.f, res->var, k, [&](const VarNode* v) { return st.name_of(n, v) + suffix; }, why);
  if (!out) {
    st.error(r.at, fmt::format("cannot split the operation at `{}`: {}", r.index, why));
    return;
  }
  for (const auto& [old, v] : out->rest_loops)
    if (mine.count(old)) st.names[n][v->name] = v;
  // The two statements are parts of one operation, storing disjoint elements.
  int whole = st.part_of.count(res->var.get()) ? st.part_of.at(res->var.get()) : -1;
  int bulk = static_cast<int>(st.part_parent.size()), remainder = bulk + 1;
  st.part_parent.push_back(whole);
  st.part_parent.push_back(whole);
  for (const auto& [old, v] : out->rest_loops) {
    st.part_of[old] = bulk;
    st.part_of[v.get()] = remainder;
  }
  st.notes[n].push_back(
      fmt::format("{}: `{}` runs its bulk, a multiple of {} iterations; a second statement runs the "
                  "remaining `{}` % {} with loops {} (directive)",
                  st.where(d), r.index, k, r.index, k, loop_order_of(st, n, out->rest_loops)));
}

}  // namespace dccc::ir
