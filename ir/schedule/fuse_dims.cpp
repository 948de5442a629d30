#include "ir/schedule/fuse_dims.h"

#include <fmt/format.h>

#include "ir/fuse_dims.h"

namespace dccc::ir {

void apply_fuse_dims(ScheduleState& st, const Directive& d) {
  const LoopRef &ro = d.loops[0], &ri = d.loops[1];
  if (ro.tensor != ri.tensor) {
    st.error(ri.at,
             fmt::format("`fuse_dims` names loops of different assignments (`{}` and `{}`)", ro.tensor, ri.tensor));
    return;
  }
  std::vector<size_t> hits;
  for (size_t i = 0; i < st.f.nests.size(); ++i)
    if (st.f.nests[i].tensor == ro.tensor) hits.push_back(i);
  if (hits.size() != 1) {
    st.resolve(ro);  // reports the unknown or ambiguous name
    return;
  }
  size_t n = hits[0];
  st.directed.insert(n);
  const FusionMaps* m = nullptr;
  for (const auto& x : st.fusion_maps)
    if (x.nest == n && x.outer == ro.index && x.inner == ri.index) m = &x;
  if (!m) {
    st.error(d.at, fmt::format("`fuse_dims` needs loops `{}` and `{}` of `{}` fused first, outer loop first, by "
                               "`fuse({}.{}, {}.{})` (the packed order of the rows)",
                               ro.index, ri.index, ro.tensor, ro.tensor, ro.index, ro.tensor, ri.index));
    return;
  }
  std::vector<std::string> rewritten, skipped;
  std::string why = ir::fuse_dims(st.f, m->maps, st.f.nests[n].target, rewritten, skipped);
  if (!why.empty()) {
    st.error(d.at, fmt::format("cannot fuse dimensions `{}` and `{}` of `{}`: {}", ro.index, ri.index, ro.tensor, why));
    return;
  }
  std::string names;
  for (const auto& x : rewritten) names += (names.empty() ? "`" : ", `") + x + "`";
  std::string skip;
  for (const auto& x : skipped) skip += "; not rewritten: " + x;
  st.notes[n].push_back(fmt::format(
      "{}: accesses of {} at ({}, {}) index their packed rows by the fused loop `{}` directly ({} * row size, "
      "from storage lowering on), "
      "not through {}, {} and the offset array (packed order: A[{}] + {} * R = ({}[{}] + {}) * R){} (directive)",
      st.where(d), names, ro.index, ri.index, m->name, m->name, m->maps.fo->name, m->maps.fi->name, ro.index, ri.index,
      m->maps.oif->name, ro.index, ri.index, skip));
}

}  // namespace dccc::ir
