#include "ir/schedule/hfuse.h"

#include <fmt/format.h>

#include <set>

#include "ir/hfuse.h"

namespace dccc::ir {

void apply_hfuse(ScheduleState& st, const Directive& d) {
  std::vector<ResolvedLoop> loops;
  std::vector<Var> vars;
  std::string name;
  for (const auto& r : d.loops) {
    auto res = st.resolve(r);
    if (!res) return;
    loops.push_back(*res);
    vars.push_back(res->var);
    name += (name.empty() ? "" : "_") + r.index;
  }
  for (size_t q = 0; q < loops.size(); ++q)
    if (st.names[loops[q].nest].count(name)) {
      st.error(d.loops[q].at, fmt::format("fusing would name a loop `{}`, which the assignment to `{}` already has",
                                          name, d.loops[q].tensor));
      return;
    }
  // Parts of one split operation (neither part holding the other) store
  // disjoint elements.
  auto disjoint = [&](size_t p, size_t q) {
    auto a = st.part_of.find(vars[p].get()), b = st.part_of.find(vars[q].get());
    if (a == st.part_of.end() || b == st.part_of.end()) return false;
    auto holds = [&](int outer, int inner) {
      for (int x = inner; x >= 0; x = st.part_parent[static_cast<size_t>(x)])
        if (x == outer) return true;
      return false;
    };
    return !holds(a->second, b->second) && !holds(b->second, a->second);
  };
  HFuseRefusal why;
  std::vector<std::string> shown;
  for (const auto& r : d.loops) shown.push_back(r.tensor + "." + r.index);
  Var fv = ir::hfuse(st.f, vars, shown, name, disjoint, why);
  if (!fv) {
    st.error(why.arg < 0 ? d.at : d.loops[static_cast<size_t>(why.arg)].at, "cannot fuse horizontally: " + why.message);
    return;
  }
  const StmtNode* fused = find_for(st.f.body, fv.get());
  std::set<size_t> done;
  for (size_t q = 0; q < loops.size(); ++q) {
    size_t n = loops[q].nest;
    st.names[n].erase(d.loops[q].index);
    st.names[n][name] = fv;
    st.fused_into[n][d.loops[q].index] = name;
  }
  std::string refs;
  for (const auto& r : d.loops) refs += (refs.empty() ? "`" : ", `") + r.tensor + "." + r.index + "`";
  for (size_t q = 0; q < loops.size(); ++q)
    if (done.insert(loops[q].nest).second)
      st.notes[loops[q].nest].push_back(fmt::format(
          "{}: loops {} run as one loop `{}` over the sum of their extents, each range of iterations running "
          "its own statement's body{} (directive)",
          st.where(d), refs, name,
          fused->loop == LoopKind::Parallel ? "; it runs in parallel, one dispatch for all"
                                            : "; it runs serially, since not every fused loop was `parallel`"));
}

}  // namespace dccc::ir
