#include "ir/schedule/inline.h"

#include <fmt/format.h>

#include "ir/fuse_elementwise.h"

namespace dccc::ir {

void apply_inline(ScheduleState& st, const Directive& d) {
  const LoopRef& r = d.loops[0];
  std::vector<size_t> hits;
  for (size_t i = 0; i < st.f.nests.size(); ++i)
    if (st.f.nests[i].tensor == r.tensor) hits.push_back(i);
  if (hits.empty()) {
    bool param = false;
    for (const auto& b : st.f.buffers) param |= b->name == r.tensor && b->kind == BufferKind::Input;
    st.error(r.at, param ? fmt::format("`{}` is a parameter of `{}`; only a local tensor (`let`) can be computed in "
                                       "its readers",
                                       r.tensor, st.f.name)
                         : fmt::format("`{}` has no assignment to `{}`", st.f.name, r.tensor));
    return;
  }
  if (hits.size() > 1) {
    st.error(r.at, fmt::format("`{}` is written by {} statements of `{}`; only a tensor one statement computes can "
                               "be computed in its readers",
                               r.tensor, hits.size(), st.f.name));
    for (size_t h : hits) st.note(st.f.nests[h].at, fmt::format("`{}` is assigned here", r.tensor));
    return;
  }
  size_t n = hits[0];
  st.directed.insert(n);
  std::string why = fuse_tensor(st.f, st.f.nests[n].target);
  if (!why.empty()) {
    st.error(r.at, fmt::format("cannot compute `{}` in its readers: {}", r.tensor, why));
    return;
  }
  st.inlined.insert(n);
  st.notes[n].push_back(
      fmt::format("{}: not stored; each read of `{}` computes its element instead (kernel "
                  "fusion into its readers) (directive)",
                  st.where(d), r.tensor));
}

}  // namespace dccc::ir
