#include "ir/schedule/pad_storage.h"

#include <fmt/format.h>

#include <algorithm>

namespace dccc::ir {

void apply_pad_storage(ScheduleState& st, const Directive& d) {
  const LoopRef& r = d.loops[0];
  int64_t p = d.factors[0];
  auto res = st.resolve(r);
  if (!res) return;
  const NamedNest& nest = st.f.nests[res->nest];
  auto pos = std::find(nest.lhs.begin(), nest.lhs.end(), res->var);
  if (pos == nest.lhs.end()) {
    st.error(r.at,
             fmt::format("`{}` is a `reduce` index of the assignment to `{}`; storage padding names a dimension of "
                         "`{}` by its left-side index",
                         r.index, r.tensor, r.tensor));
    return;
  }
  size_t dim = static_cast<size_t>(pos - nest.lhs.begin());
  BufferNode& b = *nest.target;
  if (b.dims.empty() || dim >= b.dims.size()) {
    st.error(r.at, fmt::format("`{}` is a scalar; only tensors have storage", r.tensor));
    return;
  }
  if (b.kind != BufferKind::Local) {
    st.error(r.at, fmt::format("`{}` is {} of `{}`: storage padding would change its layout in the C ABI, which "
                               "stays packed; only local tensors (`let`) can be padded",
                               r.tensor, b.kind == BufferKind::Input ? "an input" : "the result", st.f.name));
    return;
  }
  for (size_t j = dim + 1; j < b.dims.size(); ++j)
    if (mentions(b.dims[j].extent, b.dims[dim].var)) {
      st.error(r.at, fmt::format("the dimension of `{}` that `{}` indexes sizes inner dimensions (a ragged extent "
                                 "depends on it); only a dimension no extent depends on can be padded",
                                 r.tensor, r.index));
      return;
    }
  if (b.pad.size() < b.dims.size()) b.pad.resize(b.dims.size(), 1);
  auto key = std::make_pair(nest.target.get(), dim);
  if (b.pad[dim] > 1 && b.pad[dim] != p) {
    st.error(r.at, fmt::format("the dimension of `{}` that `{}` indexes is already padded to a multiple of {}",
                               r.tensor, r.index, b.pad[dim]));
    st.note(st.storage_at[key], "padded here");
    return;
  }
  b.pad[dim] = p;
  st.storage_at[key] = d.at;
  st.notes[res->nest].push_back(
      fmt::format("{}: storage of `{}` along `{}` holds a multiple of {} elements per row "
                  "(directive)",
                  st.where(d), r.tensor, r.index, p));
}

}  // namespace dccc::ir
